"""Consumer groups seen from the event log: duplicates with their causes, and rebalances.

**Duplicates.** For each record (group, partition, offset, and the leader epoch it was written
in), every processing after the first is one duplicate (`records_processed` gives offset
ranges, so the count costs the number of ranges). A record written at an offset after a
truncation removed the one before (a new leader that lacked it: a power or disk loss, an
unclean election) has a later epoch: it is a new record, and reading it is no duplicate.
A *hold* is one consumer's ownership of one partition, from its assignment to the first event
that ends it; that event gives the hold its label, and later ones do not change it (a member
expelled for its session and crashed later was expelled: its partitions had moved already).
Records the application processes after its consumer gave their partition up (they were in
its hands when the consumer protocol's background thread revoked or lost it) are processed
under the hold that ended then. A duplicate takes the label of the hold that processed the
offset before, once that hold has ended; if it has not, the processing one is a zombie (its hold ended while it went on
processing) and the duplicate takes the label that made it one:

| what ended the hold first | label |
| --- | --- |
| its node crashed | `crash_before_commit` |
| the coordinator removed it for its session | `expelled_session_timeout` |
| a poll timeout (dynamic member; LeaveGroup) | `poll_interval_exceeded` |
| the coordinator removed it for not rejoining within the rebalance timeout, in 3.2.0 with auto-commit after a pre-rebalance commit in that generation (its `onJoinPrepare` sent the commit again at every poll and never JoinGroup, KAFKA-14024) | `kafka_14024` |
| the coordinator removed it for not rejoining within the rebalance timeout (its `max.poll.interval.ms`), or (the consumer protocol) for not giving up its revoked partitions within it | `poll_interval_exceeded` |
| another member was assigned the partition while it held it, its claim on it thrown away for its older generation (`owned_partitions_ignored`, 2.6.0 to 3.4.0) | `kafka_14639` |
| another member was assigned the partition while it held it, not having rejoined (a static member the rebalance kept without it) | `poll_interval_exceeded` |
| a poll timeout (static member; no rebalance) | `static_poll_timeout_self_replay` |
| the coordinator replaced its static member id with another process's (the same `group.instance.id`): it is fenced | `commit_failed_or_fenced` |
| `unsubscribe()` | `unsubscribe_without_commit` |
| a cooperative revocation of a partition whose claim the leader's assignor threw away for the member's older generation in that generation (KAFKA-14639, 2.6.0 to 3.4.0): it was given to another member in the same rebalance | `kafka_14639` |
| an eager revocation with auto-commit in 3.2.0 (the pre-rebalance commit not awaited, KAFKA-14024) or 3.2.1 and 3.2.2 (awaited while polls return the partitions' records, KAFKA-14196) | `kafka_14024`, `kafka_14196` |
| a consumer-protocol revocation with auto-commit in 3.7 to 3.9 (the commit sent before the partitions are marked pending revocation, so polls return their records until it is answered, KAFKA-16460) | `kafka_16460` |
| a revocation or loss after the member's last commit failed while the coordinator moved or was out of reach | `coordinator_failover` |
| a revocation or loss after the member's last commit failed otherwise (rejected, fenced, refused in the client) | `commit_failed_or_fenced` |
| a cooperative revocation with auto-commit, no commit in `onPartitionsRevoked` | `cooperative_revocation_gap` |
| a revocation (eager or cooperative) with manual commits, no commit in `onPartitionsRevoked` | `revoked_without_commit` |
| any other revocation or loss | `commit_failed_or_fenced` |
| a new generation without it, no removal logged (its coordinator moved and loaded the group without it) | `coordinator_failover` |
| a reset of its position: the same consumer reads the offsets again under a new hold | `log_truncation_or_reset` |

A hold that began at a reset to `s` below the group's committed offset `c` (an
`auto.offset.reset` after OFFSET_OUT_OF_RANGE, say, once an unclean election cut the log
below `c`) reads `[s, c)` again because of the reset: its duplicates there are
`log_truncation_or_reset`, whatever ended the earlier hold. If `c` had expired instead (and
the group had not committed since), they are `offsets_expired_reset`.

Each duplicate is also kept in a *span*: one consumer's re-processing of a run of offsets of
one partition under one label, from the time of its first such processing to its last
(`duplicate_spans` in summary.json, which the report marks on the ownership timeline).

Where several rows hold for one event, the first wins (a revocation with a failed last commit
is `commit_failed_or_fenced` even when it is cooperative). Two holds that have not ended
processing the same offset would be `unexplained`: no run should show it.

The groups' invariants are `sim.cluster.group_invariants`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from actors.consumer.config import JoinPrepareCommit
from actors.profiles import NEWEST, Version
from sim.cluster.holds import Hold, Member, Range, replace_range, rewound

__all__ = ["GroupAccounting"]

Key = tuple[str, str]  # (group, "topic-partition")


_FAILOVER_ERRORS = frozenset({"NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "DISCONNECTED", "TIMEOUT", "COORDINATOR_LOAD_IN_PROGRESS"})
_REMOVALS = {
    "session_timeout": "expelled_session_timeout",
    "not_rejoined": "poll_interval_exceeded",
    "rebalance_timeout": "poll_interval_exceeded",
    "join_timeout": "poll_interval_exceeded",
    "sync_timeout": "poll_interval_exceeded",
    "replaced": "commit_failed_or_fenced",
}
"""Removals by the coordinator that end a member's holds: the rebalance timeout a member did
not rejoin within (classic), or did not give up its revoked partitions within (the consumer
protocol), is its `max.poll.interval.ms` (only dynamic members are removed so by the classic
coordinator); a static member's id replaced by another process with its `group.instance.id` is
fenced (its commits are answered FENCED_INSTANCE_ID), and a crash or poll timeout that came
first keeps its own label. A classic member inside a consumer group (3.8+) is fenced by its
join or sync timeout, each its rebalance timeout, instead."""
_RECONCILE_BUG_VERSIONS = ((3, 7, 0), (4, 0, 0))
"""KAFKA-16460: the consumer protocol's client commits before marking the revoked partitions
pending revocation from 3.7 (its first release) until 4.0."""
_JOIN_PREPARE_BUGS = {JoinPrepareCommit.ASYNC_NOT_AWAITED: "kafka_14024", JoinPrepareCommit.ASYNC_AWAITED: "kafka_14196"}
"""The version bugs of the pre-rebalance auto-commit: 3.2.0 sends it and does not wait for it
(a failure is never retried; a cooperative member sends it at every poll and never rejoins),
and 3.2.1 and 3.2.2 wait for it while polls go on returning records of the partitions about
to be revoked."""
LISTENER_COMMITS = ("on_revoke", "processed")
"""The `commit` settings whose `onPartitionsRevoked` commits the revoked partitions."""
_TWO_HOLDERS = "unexplained"
"""Two holds that have not ended processed the same offset: no label of Kafka's explains it."""


class GroupAccounting:
    def __init__(self, version: Version = NEWEST) -> None:
        self._join_prepare_bug = _JOIN_PREPARE_BUGS.get(JoinPrepareCommit.for_version(version))
        """The label of an eager revocation with auto-commit in this Kafka version, if its
        pre-rebalance commit has a bug."""
        low, high = _RECONCILE_BUG_VERSIONS
        self._reconcile_bug = "kafka_16460" if low <= version < high else None
        """The label of a consumer-protocol revocation with auto-commit, if the version has the bug."""
        self.consumed = 0
        self.duplicates = 0
        self.by_cause: dict[str, int] = {}
        self.rebalances = 0
        self.consumer_failures: list[dict[str, Any]] = []
        """Consumers whose `poll()` threw a fatal error (`consumer_failed`): they stopped."""
        self._members: dict[str, Member] = {}
        self._processed: dict[Key, list[Range]] = {}
        """Per (group, partition): processed offset ranges [start, end) with the leader epoch
        their records were written in and the hold that processed them last, sorted and
        disjoint."""
        self._committed: dict[tuple[str, str], int] = {}
        self._expired: dict[tuple[str, str], int] = {}
        """The committed offset the retention sweep removed, until the group commits again."""
        self._rewinds: dict[tuple[str, str], tuple[int, int]] = {}
        """[new, old) committed offsets an operator's reset moved back, until a member starts
        from the new one."""
        self._admin_resets: dict[str, list[list[Any]]] = {}
        """Per group, the offsets an operator's reset is committing now."""
        self._admin_deleted: set[tuple[str, str]] = set()
        """Committed offsets an operator deleted, until the group commits again."""
        self._stuck_in_join_prepare: set[tuple[str, str, int]] = set()
        """(group, member, generation) of each pre-rebalance commit in 3.2.0: a member removed
        for not rejoining after one was stuck in `onJoinPrepare` (KAFKA-14024)."""
        self._ignored: dict[tuple[str, int, str], set[str]] = {}
        """(group, generation, member) -> the partitions whose claim the leader's assignor threw
        away in that generation for the member's older one (KAFKA-14639)."""
        self._spans: list[dict[str, Any]] = []
        self._open_span: dict[tuple[str, str, str, str], dict[str, Any]] = {}
        """The last span per (group, consumer, partition, label): a contiguous duplicate extends it."""

    def summary(self) -> dict[str, Any]:
        return {
            "consumed": self.consumed,
            "duplicates": self.duplicates,
            "duplicates_by_cause": dict(sorted(self.by_cause.items())),
            "duplicate_spans": list(self._spans),
            "rebalances": self.rebalances,
            "consumer_failures": list(self.consumer_failures),
        }

    def _span(self, e: Mapping[str, Any], group: str, tp: str, start: int, end: int, label: str) -> None:
        key = (group, e["node"], tp, label)
        span = self._open_span.get(key)
        if span is not None and span["end_offset"] == start:
            span["end_offset"], span["to_ms"] = end, e["ts_ms"]
            return
        span = {
            "group_id": group,
            "consumer": e["node"],
            "partition": tp,
            "first_offset": start,
            "end_offset": end,
            "from_ms": e["ts_ms"],
            "to_ms": e["ts_ms"],
            "cause": label,
        }
        self._open_span[key] = span
        self._spans.append(span)

    def __call__(self, event: Mapping[str, Any]) -> None:
        handler = _HANDLERS.get(event["event"])
        if handler is not None:
            handler(self, event)

    # ------------------------------------------------------------------ events

    def _started(self, e: Mapping[str, Any]) -> None:
        self._members[e["node"]] = Member(e["group_id"], e["enable_auto_commit"], e["commit"] in LISTENER_COMMITS)

    def _assigned(self, e: Mapping[str, Any]) -> None:
        member = self._members.get(e["node"])
        if member is None:
            return
        for tp in e["partitions"]:
            member.holds[tp] = Hold(e["node"], e["member_id"])
        # Another member that still holds one of these did not rejoin (a static member is kept
        # in the group without rejoining), or rejoined with a claim the assignor threw away for
        # its older generation (KAFKA-14639): the rebalance gave its partition away meanwhile.
        for other in self._members.values():
            if other is not member and other.group == member.group:
                for tp in e["partitions"]:
                    if tp in other.holds:
                        ignored = self._ignored.get((member.group, e["generation_id"], other.holds[tp].member_id), set())
                        other.holds[tp].end("kafka_14639" if tp in ignored else "poll_interval_exceeded")

    def _claims_ignored(self, e: Mapping[str, Any]) -> None:
        self._ignored.setdefault((e["group_id"], e["generation_id"], e["owner"]), set()).update(e["partitions"])

    def _released(self, e: Mapping[str, Any]) -> None:
        member = self._members.get(e["node"])
        if member is None:
            return
        label = self._label_for_release(member, e["event"], e["reason"])
        ignored = self._ignored.get((member.group, e["generation_id"], e["member_id"]), set())
        for tp in e["partitions"]:
            hold = member.holds.pop(tp, None)
            if hold is not None:
                member.released[tp] = hold
                # KAFKA-14639: the partition went to another member in this same rebalance.
                bug = e["event"] == "partitions_revoked" and e["reason"] == "cooperative" and tp in ignored
                hold.end("kafka_14639" if bug and label != "unsubscribe_without_commit" else label)

    def _label_for_release(self, member: Member, event: str, reason: str) -> str:
        if reason == "unsubscribe":
            return "unsubscribe_without_commit"
        if self._join_prepare_bug and event == "partitions_revoked" and reason == "rebalance" and member.auto_commit:
            return self._join_prepare_bug
        if self._reconcile_bug and event == "partitions_revoked" and reason == "reconciliation" and member.auto_commit:
            return self._reconcile_bug
        if member.last_commit_error in _FAILOVER_ERRORS:
            return "coordinator_failover"
        if member.last_commit_error != "NONE":
            return "commit_failed_or_fenced"
        if event == "partitions_revoked" and not member.listener_commits:
            if member.auto_commit and reason == "cooperative":
                return "cooperative_revocation_gap"
            if not member.auto_commit:
                return "revoked_without_commit"
        return "commit_failed_or_fenced"

    def _crashed(self, e: Mapping[str, Any]) -> None:
        member = self._members.get(e["target"])
        if member is None:
            return
        for hold in member.holds.values():
            hold.end("crash_before_commit")
        member.holds = {}

    def _poll_timeout(self, e: Mapping[str, Any]) -> None:
        """The member goes on holding its partitions (a zombie) until its next `poll()`."""
        member = self._members.get(e["node"])
        if member is not None:
            label = "static_poll_timeout_self_replay" if e["static"] else "poll_interval_exceeded"
            for hold in member.holds.values():
                hold.end(label)

    def _member_removed(self, e: Mapping[str, Any]) -> None:
        label = _REMOVALS.get(e["reason"])
        if label is None:
            return
        if e["reason"] == "not_rejoined" and (e["group_id"], e["member_id"], e["generation_id"]) in self._stuck_in_join_prepare:
            label = "kafka_14024"
        for member in self._members.values():
            if member.group == e["group_id"]:
                for hold in member.holds.values():
                    if hold.member_id == e["member_id"]:
                        hold.end(label)

    def _failed(self, e: Mapping[str, Any]) -> None:
        self.consumer_failures.append({"node": e["node"], "ts_ms": e["ts_ms"], "error": e["error"]})

    def _commit_sent(self, e: Mapping[str, Any]) -> None:
        if e["kind"] == "join_prepare" and self._join_prepare_bug == "kafka_14024":
            self._stuck_in_join_prepare.add((e["group_id"], e["member_id"], e["generation_id"]))

    def _commit_answered(self, e: Mapping[str, Any]) -> None:
        member = self._members.get(e["node"])
        if member is not None:
            member.last_commit_error = e["error"]

    def _commit_completed(self, e: Mapping[str, Any]) -> None:
        """What a commit means for offsets read again: an operator's reset that moved them back
        (generation -1, no member, the offsets of the reset under way)."""
        if e["error"] != "NONE":
            return
        member, generation = e["member_id"], e["generation_id"]
        admin = self._admin_resets.get(e["group_id"]) == e["offsets"] and not member and generation < 0
        for topic, partition, offset in e["offsets"]:
            key = (e["group_id"], f"{topic}-{partition}")
            before = self._committed.get(key, -1)
            if admin and offset < before:
                self._rewinds[key] = (offset, before)
            else:
                self._rewinds.pop(key, None)
            self._committed[key] = offset
            self._expired.pop(key, None)
            self._admin_deleted.discard(key)

    def _admin_reset_sent(self, e: Mapping[str, Any]) -> None:
        self._admin_resets[e["group_id"]] = e["offsets"]

    def _admin_reset_answered(self, e: Mapping[str, Any]) -> None:
        self._admin_resets.pop(e["group_id"], None)

    def _offsets_expired(self, e: Mapping[str, Any]) -> None:
        for tp in e["partitions"]:
            committed = self._committed.pop((e["group_id"], tp), None)
            if committed is not None:
                self._expired[(e["group_id"], tp)] = committed
                self._admin_deleted.discard((e["group_id"], tp))

    def _offsets_deleted(self, e: Mapping[str, Any]) -> None:
        """The operator deleted offsets (OffsetDelete) or the group (DeleteGroups): the next
        commit starts the partition's history again, and a reset for want of an offset is the
        operator's doing."""
        if e["error"] != "NONE":
            return
        group = e["group_id"]
        gone = [k for k in self._committed if k[0] == group and (e["event"] == "group_deleted" or k[1] in e["partitions"])]
        for key in gone:
            self._expired[key] = self._committed.pop(key)
            self._admin_deleted.add(key)

    def _position_set(self, e: Mapping[str, Any]) -> None:
        tp = f"{e['topic']}-{e['partition']}"
        key = (e["group_id"], tp)
        member = self._members.get(e["node"])
        if e["source"] == "committed":
            # Offsets an operator moved back are read again because of it.
            rewind = self._rewinds.pop(key, None)
            if rewind is not None and member is not None and tp in member.holds and e["offset"] < rewind[1]:
                member.holds[tp].rewound = (e["offset"], rewind[1], "admin_reset")
            return
        if member is not None and tp in member.holds:
            # A reset re-reads under a new hold, so earlier reads by this one count as replaced.
            old = member.holds[tp]
            old.end("log_truncation_or_reset")
            hold = member.holds[tp] = Hold(e["node"], old.member_id)
            key = (e["group_id"], tp)
            if key in self._committed and e["offset"] < self._committed[key]:
                hold.rewound = (e["offset"], self._committed[key], "log_truncation_or_reset")
            elif key in self._expired and e["offset"] < self._expired[key]:
                why = "admin_reset" if key in self._admin_deleted else "offsets_expired_reset"
                hold.rewound = (e["offset"], self._expired[key], why)

    def _target_assignment(self, e: Mapping[str, Any]) -> None:
        """A consumer group's rebalance (KIP-848): a new target assignment, as Kafka's
        coordinator counts one (`updateTargetAssignment`)."""
        self.rebalances += 1

    def _generation(self, e: Mapping[str, Any]) -> None:
        if e["members"]:
            self.rebalances += 1
        members = set(e["members"])
        # A member that still holds partitions but is not in the new generation, with no
        # removal logged, was lost by its coordinator: a new one loaded the group without it.
        for member in self._members.values():
            if member.group == e["group_id"]:
                for hold in member.holds.values():
                    if hold.member_id not in members:
                        hold.end("coordinator_failover")

    def _processed_event(self, e: Mapping[str, Any]) -> None:
        member = self._members.get(e["node"])
        if member is None:
            return
        tp = f"{e['topic']}-{e['partition']}"
        start, end = e["first_offset"], e["end_offset"]
        self.consumed += end - start
        hold = member.holds.get(tp) or member.released.get(tp)
        if hold is None:
            hold = member.holds[tp] = Hold(e["node"], e["member_id"])
        epoch = e["leader_epoch"]
        ranges = self._processed.setdefault((member.group, tp), [])
        for s, t, written, earlier in ranges:
            overlap = min(t, end) - max(s, start)
            # Records of another epoch at these offsets were other records, truncated since.
            if overlap > 0 and written == epoch:
                # The earlier reader's hold ended and its records came back; or it still holds
                # the partition, and the one processing now is the zombie.
                label = earlier.ended or hold.ended or _TWO_HOLDERS
                for lo, hi, why in rewound(max(s, start), min(t, end), hold.rewound, label):
                    self.duplicates += hi - lo
                    self.by_cause[why] = self.by_cause.get(why, 0) + hi - lo
                    self._span(e, member.group, tp, lo, hi, why)
        self._processed[(member.group, tp)] = replace_range(ranges, (start, end, epoch, hold))


_HANDLERS: dict[str, Any] = {
    "consumer_started": GroupAccounting._started,
    "partitions_assigned": GroupAccounting._assigned,
    "owned_partitions_ignored": GroupAccounting._claims_ignored,
    "partitions_revoked": GroupAccounting._released,
    "partitions_lost": GroupAccounting._released,
    "node_crashed": GroupAccounting._crashed,
    "poll_timeout_expired": GroupAccounting._poll_timeout,
    "group_member_removed": GroupAccounting._member_removed,
    "consumer_member_removed": GroupAccounting._member_removed,
    "target_assignment_computed": GroupAccounting._target_assignment,
    "offset_commit_completed": GroupAccounting._commit_completed,
    "offsets_expired": GroupAccounting._offsets_expired,
    "group_offsets_deleted": GroupAccounting._offsets_deleted,
    "group_deleted": GroupAccounting._offsets_deleted,
    "offset_commit_sent": GroupAccounting._commit_sent,
    "offset_commit_answered": GroupAccounting._commit_answered,
    "fetch_position_set": GroupAccounting._position_set,
    "generation_started": GroupAccounting._generation,
    "records_processed": GroupAccounting._processed_event,
    "consumer_failed": GroupAccounting._failed,
    "admin_offsets_reset_sent": GroupAccounting._admin_reset_sent,
    "admin_offsets_reset": GroupAccounting._admin_reset_answered,
}
