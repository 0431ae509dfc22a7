"""Records a group skipped, and records it processed that the log no longer holds: the other
half of at-least-once, counted from the event log and the final logs.

**Skipped.** A record acknowledged to its producer is skipped by a group when the group's
committed offset for its partition moved past it and no member of the group processed it by
the end of the run. What moves the group past offsets is a *pass*; the first pass over an
offset gives a record skipped there its cause:

| pass | cause |
| --- | --- |
| `auto.offset.reset=latest` with no committed offset: from the offset the group last had committed (0 if none) to the log end | `reset_latest_no_commit` |
| a reset whose committed offset the retention sweep had removed | `offsets_expired_reset` |
| a reset after OFFSET_OUT_OF_RANGE (retention deleted records ahead of the group), or with no committed offset to the earliest offset (what lay below it was deleted), or after a truncation | `out_of_range_reset` |
| an operator's offset reset forward, or a reset after the operator deleted the group's offsets | `admin_reset` |
| any other commit that moves the committed offset forward: positions committed for records the application had not processed | `committed_before_processed` |

A record written at an offset where the group had processed another record, since truncated
(a new leader that lacked it), is behind the group's position from the moment it is written:
if the group never processes it, it is skipped as `out_of_range_reset` (the position fell past
the log end after the truncation). Acknowledged records the retention sweep deleted count
where a pass moved the group past them; acknowledged records the brokers lost are
`lost_acked`, not skipped.

**Processed, then lost.** A record a group processed whose offset the final log no longer
holds, or holds with another leader epoch (an unclean election, `acks=1` and a power loss): the
application acted on data that no longer exists. Offsets below the final log start offset were
deleted by retention and do not count.

Each skipped run of offsets is kept as a *span* (group, the consumer whose pass it was or
`admin`, partition, offsets, the times of the pass, cause), as duplicates are.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ADMIN", "FinalLog", "SkipLedger", "add_range", "final_log", "spans_of", "subtract"]

ADMIN = "admin"
"""The consumer named in a span of records an operator's action skipped."""

Span = tuple[int, int]


def add_range(ranges: list[Span], lo: int, hi: int) -> None:
    """Adds [lo, hi) to sorted, disjoint, merged ranges, in place."""
    if hi <= lo:
        return
    if not ranges or lo > ranges[-1][1]:
        ranges.append((lo, hi))
        return
    if lo >= ranges[-1][0]:  # the common case: reading on in order
        ranges[-1] = (ranges[-1][0], max(hi, ranges[-1][1]))
        return
    i = bisect_left(ranges, lo, key=lambda r: r[1])  # the first range ending at or after lo
    j = bisect_right(ranges, hi, key=lambda r: r[0])  # past the last range starting at or before hi
    if i < j:
        lo, hi = min(lo, ranges[i][0]), max(hi, ranges[j - 1][1])
    ranges[i:j] = [(lo, hi)]


def subtract(pieces: Sequence[Span], ranges: Sequence[Span]) -> list[Span]:
    """`pieces` (sorted, disjoint) without the offsets of `ranges` (sorted, disjoint)."""
    out: list[Span] = []
    for lo, hi in pieces:
        i = bisect_right(ranges, lo, key=lambda r: r[1])  # the first range ending after lo
        at = lo
        while i < len(ranges) and ranges[i][0] < hi:
            if ranges[i][0] > at:
                out.append((at, ranges[i][0]))
            at = max(at, ranges[i][1])
            i += 1
        if at < hi:
            out.append((at, hi))
    return out


def intersect(pieces: Sequence[Span], ranges: Sequence[Span]) -> list[Span]:
    """The offsets in both (each sorted and disjoint)."""
    out: list[Span] = []
    for lo, hi in pieces:
        i = bisect_right(ranges, lo, key=lambda r: r[1])
        while i < len(ranges) and ranges[i][0] < hi:
            a, b = max(lo, ranges[i][0]), min(hi, ranges[i][1])
            if a < b:
                out.append((a, b))
            i += 1
    return out


@dataclass(frozen=True, slots=True)
class FinalLog:
    """What a partition's final log holds, for the group figures."""

    start: int
    """Its log start offset: below it, records were deleted by retention."""
    records: Sequence[tuple[int, int, int]]
    """[lo, hi) and the leader epoch its records were written in, in offset order."""
    acked: Sequence[tuple[int, int, int]]
    """The acknowledged records it holds where they were acknowledged: [lo, hi) and epoch."""
    deleted: Sequence[Span]
    """Acknowledged records below `start`: deleted by retention."""


def spans_of(base: int, indexes: Sequence[int]) -> list[Span]:
    """Offsets `base + i` for the sorted indexes, as ranges."""
    out: list[Span] = []
    for i in indexes:
        add_range(out, base + i, base + i + 1)
    return out


def final_log(start: int, runs: Sequence[tuple[int, int, Sequence[Any]]], acked: Sequence[Span]) -> FinalLog:
    """A partition's `FinalLog` from its runs (offset, epoch, values) and the offsets where its
    acknowledged records are (or were, below `start`)."""
    records: list[tuple[int, int, int]] = []
    for offset, epoch, values in runs:
        if records and records[-1][1] == offset and records[-1][2] == epoch:
            records[-1] = (records[-1][0], offset + len(values), epoch)
        else:
            records.append((offset, offset + len(values), epoch))
    spans: list[Span] = []
    for lo, hi in sorted(acked):
        add_range(spans, lo, hi)
    below = [(0, start)]
    present = subtract(spans, below)
    held = [(a, b, epoch) for lo, hi, epoch in records for a, b in intersect(present, [(lo, hi)])]
    return FinalLog(start, records, held, intersect(spans, below))


@dataclass(slots=True)
class Pass:
    """Offsets [lo, hi) a group's committed offset first moved past, and why."""

    lo: int
    hi: int
    cause: str
    node: str
    ts_ms: int


class SkipLedger:
    """Per group and partition: the offsets processed (by leader epoch) and the passes."""

    def __init__(self) -> None:
        self._processed: dict[tuple[str, str], dict[int, list[Span]]] = {}
        self._passes: dict[tuple[str, str], list[Pass]] = {}
        """Sorted and disjoint: an offset keeps the first pass over it."""

    def processed(self, group: str, tp: str, lo: int, hi: int, epoch: int) -> None:
        add_range(self._processed.setdefault((group, tp), {}).setdefault(epoch, []), lo, hi)

    def passed(self, group: str, tp: str, lo: int, hi: int, cause: str, node: str, ts_ms: int) -> None:
        """The group's committed offset (or a member's reset position) moved over [lo, hi)."""
        if hi <= lo:
            return
        passes = self._passes.setdefault((group, tp), [])
        if not passes or lo >= passes[-1].hi:  # the common case: the frontier moves on
            passes.append(Pass(lo, hi, cause, node, ts_ms))
            return
        covered = [(p.lo, p.hi) for p in passes]
        for a, b in subtract([(lo, hi)], covered):
            passes.insert(bisect_left(passes, a, key=lambda p: p.lo), Pass(a, b, cause, node, ts_ms))

    def figures(self, final: Mapping[str, FinalLog]) -> dict[str, Any]:
        """`skipped`, `skipped_by_cause`, `skip_spans` and `processed_then_lost`."""
        by_cause: dict[str, int] = {}
        spans: list[dict[str, Any]] = []
        for (group, tp), passes in sorted(self._passes.items()):
            log = final.get(tp)
            if log is None:
                continue
            processed = self._processed.get((group, tp), {})
            everywhere = _union(processed.values())
            for p in passes:
                for lo, hi, cause in _skipped_in(p, log, processed, everywhere):
                    by_cause[cause] = by_cause.get(cause, 0) + hi - lo
                    last = spans[-1] if spans else None
                    if last is not None and (last["group_id"], last["partition"], last["consumer"], last["cause"], last["end_offset"]) == (
                        group, tp, p.node, cause, lo
                    ):
                        last["end_offset"], last["to_ms"] = hi, p.ts_ms  # one consumer's passes, one after the other
                        continue
                    spans.append(
                        {
                            "group_id": group,
                            "consumer": p.node,
                            "partition": tp,
                            "first_offset": lo,
                            "end_offset": hi,
                            "from_ms": p.ts_ms,
                            "to_ms": p.ts_ms,
                            "cause": cause,
                        }
                    )
        lost = 0
        for (_group, tp), by_epoch in sorted(self._processed.items()):
            log = final.get(tp)
            if log is not None:
                lost += _processed_then_lost(by_epoch, log)
        return {
            "skipped": sum(by_cause.values()),
            "skipped_by_cause": dict(sorted(by_cause.items())),
            "skip_spans": spans,
            "processed_then_lost": lost,
        }


def _union(groups: Any) -> list[Span]:
    merged: list[Span] = []
    for ranges in groups:
        for lo, hi in ranges:
            add_range(merged, lo, hi)
    return merged


def _skipped_in(p: Pass, log: FinalLog, processed: Mapping[int, list[Span]], everywhere: list[Span]) -> list[tuple[int, int, str]]:
    """The acknowledged records in pass `p` the group never processed, with their causes."""
    found: list[tuple[int, int, str]] = []
    for lo, hi, epoch in log.acked:
        a, b = max(lo, p.lo), min(hi, p.hi)
        if a >= b:
            continue
        unread = subtract([(a, b)], processed.get(epoch, []))
        # Where the group processed a record of another epoch, since truncated, this one was
        # written behind its position.
        behind = intersect(unread, everywhere)
        found += [(x, y, "out_of_range_reset") for x, y in behind]
        found += [(x, y, p.cause) for x, y in subtract(unread, behind)]
    for lo, hi in log.deleted:
        a, b = max(lo, p.lo), min(hi, p.hi)
        if a < b:
            found += [(x, y, p.cause) for x, y in subtract([(a, b)], everywhere)]
    merged: list[tuple[int, int, str]] = []
    for lo, hi, cause in sorted(found):
        if merged and merged[-1][1] == lo and merged[-1][2] == cause:
            merged[-1] = (merged[-1][0], hi, cause)
        else:
            merged.append((lo, hi, cause))
    return merged


def _processed_then_lost(by_epoch: Mapping[int, list[Span]], log: FinalLog) -> int:
    lost = 0
    for epoch, ranges in sorted(by_epoch.items()):
        kept = [(lo, hi) for lo, hi, e in log.records if e == epoch]
        for lo, hi in subtract(ranges, kept):
            lost += max(0, hi - max(lo, log.start))
    return lost
