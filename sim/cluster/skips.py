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

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sim.cluster.ranges import Span, add_range, intersect, subtract

__all__ = ["ADMIN", "FinalLog", "SkipAccounting", "SkipLedger", "final_log"]

ADMIN = "admin"
"""The consumer named in a span of records an operator's action skipped."""
Key = tuple[str, str]  # (group, "topic-partition")

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


class SkipAccounting:
    """The passes and processings of every group, from the event stream (a kernel observer,
    like `sim.cluster.accounting.GroupAccounting`)."""

    def __init__(self) -> None:
        self.ledger = SkipLedger()
        self._committed: dict[Key, int] = {}
        """The last offset each group committed for each partition: where a pass starts, even
        once the offset expired or was deleted."""
        self._status: dict[Key, str] = {}
        """`committed`, `expired` or `deleted`: what last happened to the committed offset."""
        self._member_nodes: dict[Key, str] = {}
        """The consumer node of each (group, member id) assigned partitions."""
        self._admin_resets: dict[str, list[list[Any]]] = {}
        """Per group, the offsets an operator's reset is committing now."""

    def figures(self, final: Mapping[str, FinalLog]) -> dict[str, Any]:
        return self.ledger.figures(final)

    def __call__(self, e: Mapping[str, Any]) -> None:
        handler = _HANDLERS.get(e["event"])
        if handler is not None:
            handler(self, e)

    def _assigned(self, e: Mapping[str, Any]) -> None:
        self._member_nodes[(e["group_id"], e["member_id"])] = e["node"]

    def _processed(self, e: Mapping[str, Any]) -> None:
        tp = f"{e['topic']}-{e['partition']}"
        self.ledger.processed(e["group_id"], tp, e["first_offset"], e["end_offset"], e["leader_epoch"])

    def _commit_completed(self, e: Mapping[str, Any]) -> None:
        if e["error"] != "NONE":
            return
        group = e["group_id"]
        admin = self._admin_resets.get(group) == e["offsets"] and not e["member_id"] and e["generation_id"] < 0
        cause, node = ("admin_reset", ADMIN) if admin else ("committed_before_processed", self._member_nodes.get((group, e["member_id"]), ""))
        for topic, partition, offset in e["offsets"]:
            key = (group, f"{topic}-{partition}")
            self.ledger.passed(group, key[1], self._committed.get(key, 0), offset, cause, node, e["ts_ms"])
            self._committed[key], self._status[key] = offset, "committed"

    def _removed(self, e: Mapping[str, Any]) -> None:
        """Offsets expired (KIP-211) or deleted by an operator (OffsetDelete, DeleteGroups)."""
        if e.get("error", "NONE") != "NONE":
            return
        group = e["group_id"]
        if e["event"] == "group_deleted":
            keys = [k for k in self._committed if k[0] == group]
        else:
            keys = [(group, tp) for tp in e["partitions"]]
        for key in keys:
            self._status[key] = "expired" if e["event"] == "offsets_expired" else "deleted"

    def _position_set(self, e: Mapping[str, Any]) -> None:
        if e["source"] == "committed":
            return
        key = (e["group_id"], f"{e['topic']}-{e['partition']}")
        self.ledger.passed(key[0], key[1], self._committed.get(key, 0), e["offset"], self._reset_cause(e, key), e["node"], e["ts_ms"])

    def _reset_cause(self, e: Mapping[str, Any], key: Key) -> str:
        """Why a reset position passes the offsets below it."""
        if e["reason"] != "no_committed_offset":
            return "out_of_range_reset"
        status = self._status.get(key)
        if status == "deleted":
            return "admin_reset"
        if status == "expired":
            return "offsets_expired_reset"
        return "reset_latest_no_commit" if e["source"] == "latest" else "out_of_range_reset"

    def _admin_reset_sent(self, e: Mapping[str, Any]) -> None:
        self._admin_resets[e["group_id"]] = e["offsets"]

    def _admin_reset_answered(self, e: Mapping[str, Any]) -> None:
        self._admin_resets.pop(e["group_id"], None)


_HANDLERS: dict[str, Any] = {
    "partitions_assigned": SkipAccounting._assigned,
    "records_processed": SkipAccounting._processed,
    "offset_commit_completed": SkipAccounting._commit_completed,
    "offsets_expired": SkipAccounting._removed,
    "group_offsets_deleted": SkipAccounting._removed,
    "group_deleted": SkipAccounting._removed,
    "fetch_position_set": SkipAccounting._position_set,
    "admin_offsets_reset_sent": SkipAccounting._admin_reset_sent,
    "admin_offsets_reset": SkipAccounting._admin_reset_answered,
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
