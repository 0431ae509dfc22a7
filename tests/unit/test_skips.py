"""The range arithmetic and the rules of skipped and processed-then-lost records
(`sim.cluster.skips`), on hand-made passes and final logs."""

from __future__ import annotations

from sim.cluster.ranges import add_range, spans_of, subtract
from sim.cluster.skips import FinalLog, SkipLedger, final_log


def test_add_range_merges_touching_and_overlapping_ranges() -> None:
    ranges: list[tuple[int, int]] = []
    for lo, hi in [(10, 20), (20, 25), (40, 50), (0, 5), (4, 12), (30, 41), (60, 60)]:
        add_range(ranges, lo, hi)
    assert ranges == [(0, 25), (30, 50)]


def test_subtract_keeps_what_no_range_covers() -> None:
    assert subtract([(0, 100)], [(10, 20), (50, 60), (95, 120)]) == [(0, 10), (20, 50), (60, 95)]
    assert subtract([(0, 5), (8, 9)], []) == [(0, 5), (8, 9)]
    assert spans_of(100, [0, 1, 2, 7]) == [(100, 103), (107, 108)]


def test_final_log_splits_acknowledged_records_at_the_log_start_and_by_epoch() -> None:
    runs = [(10, 1, "abc"), (13, 1, "de"), (15, 2, "fgh")]  # offsets 10-17, epochs 1 then 2
    log = final_log(10, runs, [(0, 12), (14, 18)])
    assert log.records == [(10, 15, 1), (15, 18, 2)]
    assert log.deleted == [(0, 10)]
    assert list(log.acked) == [(10, 12, 1), (14, 15, 1), (15, 18, 2)]


def _log(end: int, epoch: int = 0) -> dict[str, FinalLog]:
    return {"T-0": FinalLog(0, [(0, end, epoch)], [(0, end, epoch)], [])}


def test_the_first_pass_over_an_offset_gives_its_cause() -> None:
    ledger = SkipLedger()
    ledger.processed("g", "T-0", 0, 10, 0)
    ledger.passed("g", "T-0", 0, 30, "reset_latest_no_commit", "consumer-1", 100)
    ledger.passed("g", "T-0", 5, 50, "committed_before_processed", "consumer-1", 200)
    figures = ledger.figures(_log(60))
    assert figures["skipped_by_cause"] == {"committed_before_processed": 20, "reset_latest_no_commit": 20}
    assert [(s["first_offset"], s["end_offset"], s["cause"], s["from_ms"]) for s in figures["skip_spans"]] == [
        (10, 30, "reset_latest_no_commit", 100),
        (30, 50, "committed_before_processed", 200),
    ]
    assert figures["processed_then_lost"] == 0


def test_contiguous_passes_of_one_cause_make_one_span() -> None:
    ledger = SkipLedger()
    for end, at in [(10, 1000), (20, 2000), (35, 3000)]:
        ledger.passed("g", "T-0", end - 10 if end != 35 else 20, end, "committed_before_processed", "consumer-2", at)
    [span] = ledger.figures(_log(40))["skip_spans"]
    assert (span["first_offset"], span["end_offset"], span["from_ms"], span["to_ms"]) == (0, 35, 1000, 3000)


def test_a_record_written_where_the_group_read_a_truncated_one_is_skipped_out_of_range() -> None:
    """The group read offsets 0-20 in epoch 1; the final log holds 10-20 in epoch 2 (a new
    leader that lacked them wrote others there): those are behind the group's position."""
    ledger = SkipLedger()
    ledger.processed("g", "T-0", 0, 20, 1)
    ledger.passed("g", "T-0", 0, 20, "committed_before_processed", "consumer-1", 500)
    log = {"T-0": FinalLog(0, [(0, 10, 1), (10, 20, 2)], [(0, 10, 1), (10, 20, 2)], [])}
    figures = ledger.figures(log)
    assert figures["skipped_by_cause"] == {"out_of_range_reset": 10}
    assert figures["processed_then_lost"] == 10


def test_records_deleted_by_retention_count_once_passed_and_unread() -> None:
    ledger = SkipLedger()
    ledger.processed("g", "T-0", 0, 4, 0)
    ledger.passed("g", "T-0", 0, 12, "out_of_range_reset", "consumer-1", 700)
    log = {"T-0": FinalLog(10, [(10, 20, 0)], [(10, 20, 0)], [(0, 10)])}
    figures = ledger.figures(log)
    assert figures["skipped_by_cause"] == {"out_of_range_reset": 8}
    assert figures["processed_then_lost"] == 0  # deleted below the log start, not lost


def test_records_not_acknowledged_or_not_passed_are_not_skipped() -> None:
    ledger = SkipLedger()
    ledger.passed("g", "T-0", 0, 10, "committed_before_processed", "consumer-1", 1)
    log = {"T-0": FinalLog(0, [(0, 30, 0)], [(0, 5, 0), (20, 30, 0)], [])}
    assert ledger.figures(log)["skipped"] == 5
