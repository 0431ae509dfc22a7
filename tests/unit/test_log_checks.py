"""The end-of-run checks on logs held as runs give what a record-by-record reading gives: each
check against its plain reference, on seeded random logs with retries, round-robin strides,
values that are no run, truncations and unclean elections."""

from __future__ import annotations

import random
from typing import Any

from protocols.records import LogEntries, ValueRun, compact_values
from protocols.replication import RecordBatch
from sim.cluster.log_checks import ValueIndex, at_offsets, diverged_replicas, runs_of, written_twice

Entries = list[tuple[int, int, str]]


def _written_twice(tp: str, log: Entries) -> list[dict[str, Any]]:
    offsets: dict[str, list[int]] = {}
    for offset, _, value in log:
        offsets.setdefault(value, []).append(offset)
    return [
        {"partition": tp, "value": value, "offsets": at}
        for value, at in sorted(offsets.items(), key=lambda item: item[1][0])
        if len(at) > 1
    ]


def _diverged(replicas: dict[int, tuple[Entries, int]]) -> list[dict[str, Any]]:
    found = []
    for a in sorted(replicas):
        for b in sorted(replicas):
            if b <= a:
                continue
            (log_a, hw_a), (log_b, hw_b) = replicas[a], replicas[b]
            for offset in range(min(hw_a, hw_b, len(log_a), len(log_b))):
                if log_a[offset] != log_b[offset]:
                    found.append({"replicas": [a, b], "offset": offset, "values": [log_a[offset][2], log_b[offset][2]]})
                    break
    return found


def _batches(rng: random.Random, numbers: list[int], epoch: int, base: int = 0) -> list[RecordBatch]:
    """`numbers` as batches of 1 to 6 records, most of them runs, some not."""
    batches, i = [], 0
    while i < len(numbers):
        count = rng.randint(1, 6)
        values = tuple(f"p{rng.choice('12') if rng.random() < 0.1 else '1'}:{n}" for n in numbers[i : i + count])
        if rng.random() < 0.1:
            values = (*values, rng.choice(("a", "b", "p1:07")))
        batches.append(RecordBatch(base, epoch, compact_values(values)))
        base += len(values)
        i += count
    return batches


def _numbers(rng: random.Random, n: int) -> list[int]:
    """Record numbers as producers write them: in order, strided, with retries written twice."""
    stride = rng.choice((1, 1, 3))
    numbers = [k * stride + rng.choice((0, 0, 1)) for k in range(n)]
    for _ in range(rng.randint(0, 3) if n else 0):  # a retry writes a few records again
        at = rng.randrange(n)
        numbers[at:at] = numbers[max(0, at - rng.randint(1, 8)) : at]
    return numbers


def test_the_checks_on_runs_agree_with_a_record_by_record_reading() -> None:
    for seed in range(300):
        rng = random.Random(seed)
        numbers = _numbers(rng, rng.randint(0, 60))
        batches = _batches(rng, numbers, 0)
        log = LogEntries(batches)
        entries = list(log)
        # written twice
        assert written_twice("T-0", runs_of(log)) == _written_twice("T-0", entries), seed
        # a second replica: the same batches (shared or copied), then another history
        keep = rng.randint(0, len(batches))
        copied = [b if rng.random() < 0.5 else RecordBatch(b.base_offset, b.leader_epoch, tuple(b.values)) for b in batches[:keep]]
        end = copied[-1].base_offset + len(copied[-1].values) if copied else 0
        tail = _batches(rng, _numbers(rng, rng.randint(0, 20)), rng.choice((0, 1)), end)
        other = LogEntries(copied + tail)
        replicas = {1: (log, rng.randint(0, len(log))), 2: (other, rng.randint(0, len(other))), 3: (entries, len(entries))}
        plain = {b: (list(r), hw) for b, (r, hw) in replicas.items()}
        assert diverged_replicas(replicas) == _diverged(plain), seed
        # acknowledged runs: lost (absent anywhere) and reused (another record at their offset)
        present = ValueIndex(values for _, _, values in runs_of(other))
        values_held = {value for _, _, value in other}
        at = {offset: value for offset, _, value in other}
        for _ in range(5):
            acked = ValueRun(rng.choice(("p1:", "p2:")), rng.randint(0, 80), rng.randint(0, 20), rng.choice((1, 1, 2)))
            offset = rng.randint(-2, len(other) + 2)
            assert [v for v in acked if v not in present] == [v for v in acked if v not in values_held], seed
            reused = sum(1 for i, v in enumerate(acked) if at.get(offset + i, v) != v)
            absent = [i for i, v in enumerate(acked) if at.get(offset + i) != v]
            assert at_offsets(runs_of(other), offset, acked) == (reused, absent), seed
            assert at_offsets(runs_of(list(other)), offset, acked) == (reused, absent), seed


def test_replicas_are_compared_from_the_higher_of_their_log_starts() -> None:
    """A replica whose log starts at 4 (retention) agrees with one holding 0-7 where both hold
    records; a record that differs above both log starts is still found."""
    full = LogEntries([RecordBatch(0, 0, ("a", "b", "c", "d")), RecordBatch(4, 0, ("e", "f")), RecordBatch(6, 1, ("g", "h"))])
    assert (full.start, len(full)) == (0, 8)
    tail = LogEntries([RecordBatch(4, 0, ("e", "f")), RecordBatch(6, 1, ("g", "h"))])
    assert (tail.start, len(tail), tail[5]) == (4, 8, (5, 0, "f"))
    assert diverged_replicas({1: (full, 8), 2: (tail, 8)}) == []
    other = LogEntries([RecordBatch(4, 0, ("e", "x")), RecordBatch(6, 1, ("g", "h"))])
    assert diverged_replicas({1: (full, 8), 2: (other, 8)}) == [{"replicas": [1, 2], "offset": 5, "values": ["f", "x"]}]
    empty = LogEntries([], 8)  # every segment deleted: an empty log from 8 to 8
    assert (empty.start, len(empty), list(empty)) == (8, 8, [])
    assert diverged_replicas({1: (full, 8), 2: (empty, 8)}) == []
