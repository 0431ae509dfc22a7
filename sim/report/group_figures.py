"""Consumer-group figures read from one run's event log, beyond what summary.json counts: when
a member last committed, who took its partitions and when, how it left its group, and which
commit errors it saw. The example studies (examples/04 to 07) print them.

The functions are pure: they take the run's events in log order (docs/log-schema.md), as
`sim.studies.variants.run_once` returns them or `read_events` there reads them from events.jsonl, and a consumer node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Handover",
    "causes_text",
    "commit_errors",
    "commits_sent",
    "handovers",
    "last_commit_ms",
    "removal",
    "table",
    "unowned_ms",
]

Event = Mapping[str, Any]


def last_commit_ms(events: Iterable[Event], node: str, before_ms: int) -> int | None:
    """When `node` sent the last commit, sent before `before_ms`, that was answered NONE: what
    it had processed after that commit's positions is not committed."""
    sent: dict[int, int] = {}
    last = None
    for e in events:
        if e["ts_ms"] >= before_ms:
            break
        if e["node"] != node:
            continue
        if e["event"] == "offset_commit_sent":
            sent[e["commit_id"]] = e["ts_ms"]
        elif e["event"] == "offset_commit_answered" and e["error"] == "NONE":
            last = sent[e["commit_id"]]
    return last


@dataclass(frozen=True, slots=True)
class Handover:
    """A partition `node` owned at a moment, taken by another member afterwards."""

    partition: str
    owner: str
    """The consumer node that got it next."""
    assigned_ms: int
    """When its `onPartitionsAssigned` ran: until then nobody fetched the partition."""
    start_offset: int
    """Where that owner began reading it: the committed offset (or `auto.offset.reset`)."""


def handovers(events: Iterable[Event], node: str, at_ms: int) -> list[Handover]:
    """Each partition `node` owned at `at_ms`, with the first other consumer assigned it after
    that moment, when, and where it started reading (partitions never taken are left out)."""
    owned: list[str] = []
    taken: dict[str, tuple[str, int]] = {}
    starts: dict[str, int] = {}
    for e in events:
        name = e["event"]
        if e["ts_ms"] < at_ms:
            if name == "partitions_assigned" and e["node"] == node:
                owned = list(e["assignment"])
            continue
        if name == "partitions_assigned" and e["node"] != node:
            for tp in e["partitions"]:
                if tp in owned and tp not in taken:
                    taken[tp] = (e["node"], e["ts_ms"])
        elif name == "fetch_position_set":
            tp = f"{e['topic']}-{e['partition']}"
            if taken.get(tp, ("",))[0] == e["node"] and tp not in starts:
                starts[tp] = e["offset"]
    return [Handover(tp, taken[tp][0], taken[tp][1], starts[tp]) for tp in owned if tp in starts]


def removal(events: Iterable[Event], node: str, at_ms: int) -> tuple[int, str] | None:
    """When and why (`leave`, `session_timeout`, `replaced`, ...) the coordinator removed the
    member `node` was at `at_ms`; None if it stayed in the group."""
    member = None
    for e in events:
        if e["ts_ms"] < at_ms:
            if e["event"] == "partitions_assigned" and e["node"] == node:
                member = e["member_id"]
        elif e["event"] == "group_member_removed" and e["member_id"] == member:
            return e["ts_ms"], e["reason"]
    return None


def unowned_ms(events: Iterable[Event], group_id: str, end_ms: int) -> int:
    """How long the group's partitions went without an owner, in partition-milliseconds: for
    each partition, from the first time a member of `group_id` was assigned it to `end_ms`, the
    time no running consumer process held it (between its revocation or loss, or its holder's
    crash or exit, and its next `onPartitionsAssigned`). A member that still holds a partition
    its coordinator gave away (a zombie) counts as holding it."""
    holders: dict[str, set[str]] = {}
    """Partition -> the consumer nodes that hold it."""
    nodes: dict[str, set[str]] = {}
    """Consumer node -> the partitions it holds."""
    since: dict[str, int] = {}
    """Partitions without a holder -> since when."""
    total = 0

    def release(node: str, partitions: Iterable[str], now: int) -> None:
        for tp in partitions:
            if node in holders.get(tp, ()):
                holders[tp].discard(node)
                nodes[node].discard(tp)
                if not holders[tp]:
                    since[tp] = now

    for e in events:
        name, now = e["event"], e["ts_ms"]
        if name == "partitions_assigned" and e["group_id"] == group_id:
            for tp in e["partitions"]:
                total += now - since.pop(tp, now)
                holders.setdefault(tp, set()).add(e["node"])
                nodes.setdefault(e["node"], set()).add(tp)
        elif name in ("partitions_revoked", "partitions_lost") and e["group_id"] == group_id:
            release(e["node"], e["partitions"], now)
        elif name in ("node_crashed", "node_stopped") and e["target"] in nodes:
            release(e["target"], sorted(nodes[e["target"]]), now)
    return total + sum(end_ms - at for at in since.values())


def commit_errors(events: Iterable[Event], node: str) -> list[str]:
    """The errors `node`'s commits were answered with, each once, in the order first seen:
    the coordinator's (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS, ...) or
    the client's own (COMMIT_FAILED when it is out of its generation, DISCONNECTED)."""
    seen: list[str] = []
    for e in events:
        if e["event"] == "offset_commit_answered" and e["node"] == node and e["error"] not in ("NONE", *seen):
            seen.append(e["error"])
    return seen


def commits_sent(events: Iterable[Event]) -> int:
    """Commits the group's consumers made, of every kind (some fail before they are sent)."""
    return sum(1 for e in events if e["event"] == "offset_commit_sent")


def causes_text(by_cause: Mapping[str, int]) -> str:
    """`duplicates_by_cause` as `80 crash_before_commit, 5 ...`; `-` for none."""
    return ", ".join(f"{count} {cause}" for cause, count in sorted(by_cause.items())) or "-"


def table(rows: list[tuple[object, ...]]) -> str:
    """The rows (the first a header) as left-aligned columns two spaces apart."""
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in rows)
