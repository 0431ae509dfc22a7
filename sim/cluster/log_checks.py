"""The end-of-run checks against ground truth, on logs held as runs of values.

A log here is a list of runs `(base offset, leader epoch, values)` in offset order from its log
start offset (0 for a log given record by record; offsets below it were deleted by retention),
the values a `ValueRun` or a tuple of strings: a replica's batches (`LogEntries.runs`) or, for
a log given record by record, one run per record (`runs_of`). The checks compare runs whole
where they can and make strings only of what they report, so checking an hour's logs costs
memory per batch, not per record:
- `diverged_replicas`: replicas whose committed prefixes differ (`WeakIsr`'s consequence);
- `at_offsets`: acknowledged offsets that now hold another record (an unclean election), and
  the acknowledged records not where they were written, the only ones that can be lost;
- `ValueIndex` and `lost_acknowledged`: acknowledged records, by value, absent from the logs;
- `written_twice`: records a log holds at more than one offset (a producer's retries).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from protocols.records import LogEntries, Run, ValueRun, numbered

__all__ = [
    "ValueIndex",
    "diverged_replicas",
    "at_offsets",
    "log_start",
    "lost_acknowledged",
    "runs_of",
    "written_twice",
]

Log = Sequence[tuple[int, int, str]]
"""(offset, leader epoch, value) by offset."""


def runs_of(log: Log) -> Sequence[Run]:
    """A log's runs: its batches, or one per record for a log given record by record."""
    if isinstance(log, LogEntries):
        return log.runs()
    return [(offset, epoch, (value,)) for offset, epoch, value in log]


def log_start(log: Log) -> int:
    """A log's first offset: its log start offset (0 for a log given record by record)."""
    return log.start if isinstance(log, LogEntries) else 0


def _run_at(runs: Sequence[Run], offset: int) -> int:
    """The index of the run holding `offset` (or the first after it)."""
    i = bisect_right(runs, offset, key=lambda run: run[0]) - 1
    return i if i >= 0 and offset < runs[i][0] + len(runs[i][2]) else i + 1


def _first_difference(a: Sequence[Run], b: Sequence[Run], start: int, limit: int) -> tuple[int, str, str] | None:
    """The first offset in [start, limit) where two logs hold different records (another epoch
    or another value), with both values."""
    i, j, offset = _run_at(a, start), _run_at(b, start), start
    while offset < limit and i < len(a) and j < len(b):
        (a_base, a_epoch, a_values), (b_base, b_epoch, b_values) = a[i], b[j]
        a_end, b_end = a_base + len(a_values), b_base + len(b_values)
        end = min(a_end, b_end, limit)
        if a_epoch != b_epoch:
            return offset, a_values[offset - a_base], b_values[offset - b_base]
        if a_values is not b_values or a_base != b_base:  # the same batch object: equal
            mine = a_values[offset - a_base : end - a_base]
            theirs = b_values[offset - b_base : end - b_base]
            if mine != theirs:
                for k, (x, y) in enumerate(zip(mine, theirs, strict=True)):
                    if x != y:
                        return offset + k, x, y
        offset = end
        i += offset >= a_end
        j += offset >= b_end
    return None


def diverged_replicas(replicas: Mapping[int, tuple[Log, int]]) -> list[dict[str, Any]]:
    """Pairs of replicas whose committed prefixes differ: records below both HWs, from both
    log starts on, that are not the same record (`WeakIsr`'s consequence: committed data is the
    same everywhere)."""
    found = []
    brokers = sorted(replicas)
    runs = {b: runs_of(replicas[b][0]) for b in brokers}
    for i, a in enumerate(brokers):
        for b in brokers[i + 1 :]:
            (log_a, hw_a), (log_b, hw_b) = replicas[a], replicas[b]
            limit = min(hw_a, hw_b, len(log_a), len(log_b))
            start = max(log_start(log_a), log_start(log_b))
            difference = _first_difference(runs[a], runs[b], start, limit)
            if difference is not None:
                offset, value_a, value_b = difference
                found.append({"replicas": [a, b], "offset": offset, "values": [value_a, value_b]})
    return found


def _merged(intervals: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """Sorted, disjoint [start, end) intervals covering the same numbers, as two lists."""
    starts: list[int] = []
    ends: list[int] = []
    for start, end in sorted(intervals):
        if ends and start <= ends[-1]:
            ends[-1] = max(ends[-1], end)
        else:
            starts.append(start)
            ends.append(end)
    return starts, ends


class ValueIndex:
    """Which values some logs hold: per prefix, the numbers as merged intervals (a batch of
    consecutive numbers is one), and any other value as itself."""

    def __init__(self, values: Iterable[Sequence[str]]) -> None:
        intervals: dict[str, list[tuple[int, int]]] = {}
        self._other: set[str] = set()
        for run in values:
            if type(run) is ValueRun and run.step == 1:
                intervals.setdefault(run.prefix, []).append((run.first, run.first + run.count))
                continue
            for value in run:
                split = numbered(value)
                if split is None:
                    self._other.add(value)
                else:
                    intervals.setdefault(split[0], []).append((split[1], split[1] + 1))
        self._numbers = {prefix: _merged(found) for prefix, found in intervals.items()}

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, str):
            return False
        split = numbered(value)
        if split is None:
            return value in self._other
        starts, ends = self._numbers.get(split[0], ((), ()))
        i = bisect_right(starts, split[1]) - 1
        return i >= 0 and split[1] < ends[i]

def lost_acknowledged(acknowledged: Sequence[str], committed_values: Sequence[str]) -> list[str]:
    """Acknowledged records (by value: producer and sequence) absent from the committed log."""
    index = ValueIndex((committed_values,))
    return [value for value in acknowledged if value not in index]


def _differing(a: Sequence[str], b: Sequence[str]) -> Sequence[int]:
    """The positions where two equally long value sequences differ. Two runs of one step agree
    everywhere or nowhere (a prefix never ends in a digit)."""
    if type(a) is ValueRun and type(b) is ValueRun and a.step == b.step:
        return range(0) if a.prefix == b.prefix and a.first == b.first else range(len(a))
    return [k for k, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]


def at_offsets(log: Sequence[Run], offset: int, values: Sequence[str]) -> tuple[int, list[int]]:
    """`values`, written from `offset` on, against what `log` holds now: how many of their
    offsets hold another record (an offset reused), and the indexes of the values not at their
    offset (those, and the ones at offsets the log does not have): only these can be lost."""
    start, end = offset, offset + len(values)
    reused, absent = 0, []
    compared = start  # the offsets below were compared, or are past the log
    i = max(0, bisect_right(log, start, key=lambda run: run[0]) - 1)
    while i < len(log) and log[i][0] < end:
        base, _, held = log[i]
        lo, hi = max(start, base), min(end, base + len(held))
        if lo < hi:
            absent.extend(range(compared - start, lo - start))
            differing = _differing(held[lo - base : hi - base], values[lo - start : hi - start])
            reused += len(differing)
            absent.extend(lo - start + k for k in differing)
            compared = hi
        i += 1
    absent.extend(range(compared - start, len(values)))
    return reused, absent


_Span = tuple[int, int, int, range]
"""Numbers of one prefix in a run: (lowest, highest + 1, offset of the first, the numbers)."""


def written_twice(tp: str, log: Sequence[Run]) -> list[dict[str, Any]]:
    """The records a log holds more than once: partition, value (`producer:number`) and every
    offset it is at, ordered by the first. Runs whose numbers cannot overlap are never
    expanded: only the runs of a prefix whose ranges overlap are compared number by number."""
    spans: dict[str, list[_Span]] = {}
    others: dict[str, list[int]] = {}
    for base, _, values in log:
        if type(values) is ValueRun:
            if values.count:
                numbers = values.numbers()
                low, high = min(numbers[0], numbers[-1]), max(numbers[0], numbers[-1]) + 1
                spans.setdefault(values.prefix, []).append((low, high, base, numbers))
            continue
        for i, value in enumerate(values):
            split = numbered(value)
            if split is None:
                others.setdefault(value, []).append(base + i)
            else:
                n = split[1]
                spans.setdefault(split[0], []).append((n, n + 1, base + i, range(n, n + 1)))
    found = [(value, at) for value, at in others.items() if len(at) > 1]
    for prefix, items in spans.items():
        items.sort(key=lambda item: item[0])
        cluster, reach = [items[0]], items[0][1]
        for item in items[1:]:
            if item[0] < reach:  # its numbers may repeat the cluster's
                cluster.append(item)
                reach = max(reach, item[1])
                continue
            if len(cluster) > 1:
                found += _repeated(prefix, cluster)
            cluster, reach = [item], item[1]
        if len(cluster) > 1:
            found += _repeated(prefix, cluster)
    found.sort(key=lambda item: item[1][0])
    return [{"partition": tp, "value": value, "offsets": at} for value, at in found]


def _repeated(prefix: str, cluster: list[_Span]) -> list[tuple[str, list[int]]]:
    """The numbers several of `cluster`'s runs hold, with their offsets in order."""
    offsets: dict[int, list[int]] = {}
    for _, _, base, numbers in cluster:
        for i, n in enumerate(numbers):
            offsets.setdefault(n, []).append(base + i)
    return [(prefix + str(n), sorted(at)) for n, at in offsets.items() if len(at) > 1]
