"""Consumer groups seen from the event log: duplicates with their causes, rebalances, and the
group invariants, checked after every event like `sim.invariants`.

**Duplicates.** For each (group, partition, offset), every processing after the first is one
duplicate (`records_processed` gives offset ranges, so the count costs the number of ranges).
Each duplicate gets one label: the reason the earlier processor's hold on the partition ended,
or, if it had not ended (a zombie still processing), the reason it became a zombie:

| what ended the earlier hold | label |
| --- | --- |
| its node crashed | `crash_before_commit` |
| a poll timeout (dynamic member; LeaveGroup) | `poll_interval_exceeded` |
| a poll timeout (static member; no rebalance) | `static_poll_timeout_self_replay` |
| the coordinator removed it for its session | `expelled_session_timeout` |
| `unsubscribe()` | `unsubscribe_without_commit` |
| a revocation, manual commits, no commit in `onPartitionsRevoked` | `revoked_without_commit` |
| a cooperative revocation with auto-commit | `cooperative_revocation_gap` |
| a revocation after the covering commit failed while the coordinator moved | `coordinator_failover` |
| any other revocation or loss (a failed, fenced or abandoned commit) | `commit_failed_or_fenced` |
| the same hold read the offsets again after its position was reset | `log_truncation_or_reset` |

A record written again at a truncated offset is a new record; the log does not carry record
identities per range, so such a re-read is counted (and labelled `log_truncation_or_reset`).

**Invariants.** `single_owner_per_partition_per_generation`: in one generation of a group, no
partition is in two members' assignments. `consumer_reads_committed`: no record is processed at
or above the highest HW its partition's leaders have reported (a read past the HW).
`monotonic_committed_offset`: a group's committed offset for a partition never moves back,
unless a member reset its position (`auto.offset.reset`) or the offsets expired.
`commit_accepted_only_when_valid`: a coordinator accepts a commit only as Kafka's
`validateOffsetCommit` allows: from a member of the group's current generation while it is
Stable or PreparingRebalance, or with no member and generation -1 while the group is Empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sim.invariants import Violation

__all__ = ["GroupAccounting"]

Key = tuple[str, str]  # (group, "topic-partition")


@dataclass(slots=True)
class _Hold:
    """One consumer's hold on one partition, from its assignment to its end."""

    node: str
    member_id: str
    static: bool
    ended: str | None = None
    """The label of what ended it; None while it lasts."""


@dataclass(slots=True)
class _Member:
    """What the accounting knows of one consumer node."""

    group: str
    member_id: str = ""
    static: bool = False
    manual_commits: bool = False
    """Auto-commit off and no commit in `onPartitionsRevoked`."""
    expelled: bool = False
    poll_timeout: bool = False
    last_commit_error: str = "NONE"
    holds: dict[str, _Hold] = field(default_factory=dict)


_FAILOVER_ERRORS = frozenset({"NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "DISCONNECTED", "TIMEOUT", "COORDINATOR_LOAD_IN_PROGRESS"})


class GroupAccounting:
    def __init__(self) -> None:
        self.consumed = 0
        self.duplicates = 0
        self.by_cause: dict[str, int] = {}
        self.rebalances = 0
        self._members: dict[str, _Member] = {}
        self._processed: dict[Key, list[tuple[int, int, _Hold]]] = {}
        """Per (group, partition): processed offset ranges [start, end) with the hold that
        processed them last, sorted and disjoint."""
        self._owners: dict[tuple[str, int], dict[str, str]] = {}
        self._max_hw: dict[str, int] = {}
        self._committed: dict[tuple[str, str], int] = {}
        self._reset: set[tuple[str, str]] = set()
        self._generation_members: dict[tuple[str, int], set[str]] = {}

    def summary(self) -> dict[str, Any]:
        return {
            "consumed": self.consumed,
            "duplicates": self.duplicates,
            "duplicates_by_cause": dict(sorted(self.by_cause.items())),
            "rebalances": self.rebalances,
        }

    def __call__(self, event: Mapping[str, Any]) -> list[Violation]:
        name = event["event"]
        handler = _HANDLERS.get(name)
        if handler is None:
            return []
        return handler(self, event) or []

    # ------------------------------------------------------------------ events

    def _started(self, e: Mapping[str, Any]) -> None:
        self._members[e["node"]] = _Member(
            e["group_id"],
            static=e["group_instance_id"] is not None,
            manual_commits=not e["enable_auto_commit"] and e["commit"] != "on_revoke",
        )

    def _assigned(self, e: Mapping[str, Any]) -> list[Violation]:
        member = self._members.get(e["node"])
        if member is None:
            return []
        member.member_id = e["member_id"]
        member.expelled = member.poll_timeout = False
        for tp in e["partitions"]:
            member.holds[tp] = _Hold(e["node"], e["member_id"], member.static)
        owners = self._owners.setdefault((e["group_id"], e["generation_id"]), {})
        found = []
        for tp in e["assignment"]:
            other = owners.setdefault(tp, e["member_id"])
            if other != e["member_id"]:
                found.append(
                    Violation(
                        "single_owner_per_partition_per_generation",
                        e["ts_ms"],
                        e["node"],
                        f"{tp} is assigned to {other} and {e['member_id']} in generation {e['generation_id']} of {e['group_id']}",
                    )
                )
        return found

    def _released(self, e: Mapping[str, Any]) -> None:
        member = self._members.get(e["node"])
        if member is None:
            return
        label = self._label_for_release(member, e["event"], e["reason"])
        for tp in e["partitions"]:
            hold = member.holds.pop(tp, None)
            if hold is not None and hold.ended is None:
                hold.ended = label

    def _label_for_release(self, member: _Member, event: str, reason: str) -> str:
        if reason == "unsubscribe":
            return "unsubscribe_without_commit"
        if member.poll_timeout:
            return "static_poll_timeout_self_replay" if member.static else "poll_interval_exceeded"
        if member.expelled:
            return "expelled_session_timeout"
        if member.last_commit_error in _FAILOVER_ERRORS:
            return "coordinator_failover"
        if event == "partitions_revoked" and reason == "cooperative":
            return "cooperative_revocation_gap"
        if event == "partitions_revoked" and member.manual_commits:
            return "revoked_without_commit"
        return "commit_failed_or_fenced"

    def _crashed(self, e: Mapping[str, Any]) -> None:
        member = self._members.get(e["target"])
        if member is None:
            return
        for hold in member.holds.values():
            if hold.ended is None:
                hold.ended = "crash_before_commit"
        member.holds = {}

    def _poll_timeout(self, e: Mapping[str, Any]) -> None:
        member = self._members.get(e["node"])
        if member is not None:
            member.poll_timeout = True

    def _member_removed(self, e: Mapping[str, Any]) -> None:
        if e["reason"] != "session_timeout":
            return
        for member in self._members.values():
            if member.member_id == e["member_id"] and member.group == e["group_id"]:
                member.expelled = True

    def _commit_answered(self, e: Mapping[str, Any]) -> None:
        member = self._members.get(e["node"])
        if member is not None:
            member.last_commit_error = e["error"]

    def _group_member(self, e: Mapping[str, Any]) -> None:
        if e["event"] == "group_member_added":
            # A loaded member, or a static member's new id, belongs to the current generation.
            key = (e["group_id"], e["generation_id"])
            self._generation_members.setdefault(key, set()).add(e["member_id"])
        else:
            self._member_removed(e)

    def _commit_completed(self, e: Mapping[str, Any]) -> list[Violation]:
        if e["error"] != "NONE":
            return []
        found = []
        generation, member, state = e["generation_id"], e["member_id"], e["group_state"]
        if generation >= 0 or member:
            valid = member in self._generation_members.get((e["group_id"], generation), ()) and state in (
                "Stable",
                "PreparingRebalance",
            )
        else:
            valid = state == "Empty"
        if not valid:
            found.append(
                Violation(
                    "commit_accepted_only_when_valid",
                    e["ts_ms"],
                    e["node"],
                    f"{e['group_id']} accepted a commit of {member or 'no member'} in generation {generation} "
                    f"validated while {state}",
                )
            )
        for topic, partition, offset in e["offsets"]:
            key = (e["group_id"], f"{topic}-{partition}")
            before = self._committed.get(key, -1)
            if offset < before and key not in self._reset:
                found.append(
                    Violation(
                        "monotonic_committed_offset",
                        e["ts_ms"],
                        e["node"],
                        f"{key[0]} committed {key[1]} at {offset} after {before}",
                    )
                )
            self._committed[key] = offset
            self._reset.discard(key)
        return found

    def _offsets_expired(self, e: Mapping[str, Any]) -> None:
        for tp in e["partitions"]:
            self._committed.pop((e["group_id"], tp), None)

    def _position_set(self, e: Mapping[str, Any]) -> None:
        if e["source"] == "committed":
            return
        self._reset.add((e["group_id"], f"{e['topic']}-{e['partition']}"))
        member = self._members.get(e["node"])
        tp = f"{e['topic']}-{e['partition']}"
        if member is not None and tp in member.holds:
            # A reset re-reads under a new hold, so earlier reads by this one count as replaced.
            old = member.holds[tp]
            old.ended = old.ended or "log_truncation_or_reset"
            member.holds[tp] = _Hold(e["node"], old.member_id, old.static)

    def _generation(self, e: Mapping[str, Any]) -> None:
        if e["members"]:
            self.rebalances += 1
        self._generation_members[(e["group_id"], e["generation_id"])] = set(e["members"])

    def _offsets(self, e: Mapping[str, Any]) -> None:
        if e["role"] == "leader":
            tp = f"{e['topic']}-{e['partition']}"
            if e["high_watermark"] > self._max_hw.get(tp, 0):
                self._max_hw[tp] = e["high_watermark"]

    def _processed_event(self, e: Mapping[str, Any]) -> list[Violation]:
        member = self._members.get(e["node"])
        if member is None:
            return []
        tp = f"{e['topic']}-{e['partition']}"
        start, end = e["first_offset"], e["end_offset"]
        self.consumed += end - start
        found = []
        if end > self._max_hw.get(tp, 0):
            found.append(
                Violation(
                    "consumer_reads_committed",
                    e["ts_ms"],
                    e["node"],
                    f"{tp} processed to {end} above the highest HW {self._max_hw.get(tp, 0)}",
                )
            )
        hold = member.holds.get(tp)
        if hold is None:
            hold = member.holds[tp] = _Hold(e["node"], e["member_id"], member.static)
        ranges = self._processed.setdefault((member.group, tp), [])
        for s, t, earlier in list(ranges):
            overlap = min(t, end) - max(s, start)
            if overlap > 0:
                label = earlier.ended or self._zombie_label(earlier)
                self.duplicates += overlap
                self.by_cause[label] = self.by_cause.get(label, 0) + overlap
        self._processed[(member.group, tp)] = _replace(ranges, start, end, hold)
        return found

    def _zombie_label(self, hold: _Hold) -> str:
        member = self._members.get(hold.node)
        if member is not None and member.poll_timeout:
            return "static_poll_timeout_self_replay" if hold.static else "poll_interval_exceeded"
        return "expelled_session_timeout"


def _replace(ranges: list[tuple[int, int, _Hold]], start: int, end: int, hold: _Hold) -> list[tuple[int, int, _Hold]]:
    """The ranges with [start, end) now last processed by `hold`; neighbours of the same hold
    merge, so a partition read in order keeps one range per hold."""
    kept: list[tuple[int, int, _Hold]] = []
    for s, t, h in ranges:
        if t <= start or s >= end:
            kept.append((s, t, h))
            continue
        if s < start:
            kept.append((s, start, h))
        if t > end:
            kept.append((end, t, h))
    kept.append((start, end, hold))
    kept.sort(key=lambda r: r[0])
    merged: list[tuple[int, int, _Hold]] = []
    for s, t, h in kept:
        if merged and merged[-1][2] is h and merged[-1][1] == s:
            merged[-1] = (merged[-1][0], t, h)
        else:
            merged.append((s, t, h))
    return merged


_HANDLERS: dict[str, Any] = {
    "consumer_started": GroupAccounting._started,
    "partitions_assigned": GroupAccounting._assigned,
    "partitions_revoked": GroupAccounting._released,
    "partitions_lost": GroupAccounting._released,
    "node_crashed": GroupAccounting._crashed,
    "poll_timeout_expired": GroupAccounting._poll_timeout,
    "group_member_added": GroupAccounting._group_member,
    "group_member_removed": GroupAccounting._group_member,
    "offset_commit_completed": GroupAccounting._commit_completed,
    "offsets_expired": GroupAccounting._offsets_expired,
    "offset_commit_answered": GroupAccounting._commit_answered,
    "fetch_position_set": GroupAccounting._position_set,
    "generation_started": GroupAccounting._generation,
    "replica_offsets_changed": GroupAccounting._offsets,
    "records_processed": GroupAccounting._processed_event,
}
