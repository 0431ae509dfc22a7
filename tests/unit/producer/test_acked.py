"""A producer's acknowledged records, kept as runs of consecutive numbers and offsets."""

from __future__ import annotations

from actors.producer.acked import AckedRecords


def test_acknowledgements_merge_into_runs_of_numbers_and_offsets() -> None:
    acked = AckedRecords()
    acked.add(3, 100, [0, 1, 2])
    acked.add(3, 103, [3, 4])  # continues the run
    acked.add(5, 10, [5, 6])  # another partition
    acked.add(5, 12, [9, 10, 12])  # numbers with gaps: one run each
    acked.add(3, 105, [7])  # continues the offsets of partition 3, not the last run
    assert list(acked.runs()) == [(3, 100, 0, 5), (5, 10, 5, 2), (5, 12, 9, 2), (5, 14, 12, 1), (3, 105, 7, 1)]
    assert len(acked) == acked.count == 11
    copy = acked.copy()
    acked.add(9, 0, [100])
    assert len(copy) == 11 and len(list(copy.runs())) == 5
