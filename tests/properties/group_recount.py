"""A recount of a run's consumed duplicates from its `events.jsonl` alone.

It reads only fields that docs/log-schema.md documents and shares no code with `sim/cluster/accounting.py`,
whose figures `summary.json` reports: the two are written separately from Kafka's rules, so a
mistake in either shows as a disagreement.

The rules (Kafka's at-least-once delivery, as the summary's `duplicates_by_cause` documents them):
- A record is a (group, topic-partition, offset) written in one leader epoch: one leader
  writes an offset once in its epoch (KIP-101), so a record written at the same offset after a
  truncation has a later epoch and is another record. Every processing of a record after the
  first is one duplicate; `records_processed` gives the processings.
- A *hold* is one consumer's ownership of one partition: from the `partitions_assigned` that gave
  it (or a position reset, which starts reading again) to the first event that ends it. That
  event fixes the hold's label, and later events do not change it:

  | the first event that ends the hold | label |
  | --- | --- |
  | `node_crashed` of the consumer's node | `crash_before_commit` |
  | `group_member_removed` of its member for `session_timeout` | `expelled_session_timeout` |
  | `group_member_removed` of its member for `not_rejoined` in 3.2.0, after the consumer's `join_prepare` commit in that member id and generation (stuck re-sending it, KAFKA-14024) | `kafka_14024` |
  | `group_member_removed` of its member for `not_rejoined` (the rebalance timeout is `max.poll.interval.ms`) | `poll_interval_exceeded` |
  | `group_member_removed` of its member for `replaced` (another process took its `group.instance.id`) | `commit_failed_or_fenced` |
  | `consumer_member_removed` (the consumer protocol's coordinator) of its member for `session_timeout`, `rebalance_timeout` (it did not give up its revoked partitions within its `max.poll.interval.ms`) or `replaced` | as the three rows above |
  | `poll_timeout_expired` on the consumer (static member: no rebalance) | `poll_interval_exceeded` (`static_poll_timeout_self_replay`) |
  | `partitions_assigned` of the partition to another member of the group in a generation whose leader logged `owned_partitions_ignored` for this member and partition, in 2.6.0 to 3.4.0 | `kafka_14639` |
  | `partitions_assigned` of the partition to another member of the group (it had not rejoined) | `poll_interval_exceeded` |
  | `partitions_revoked` or `partitions_lost` for `unsubscribe` | `unsubscribe_without_commit` |
  | `partitions_revoked` for an eager `rebalance` with auto-commit, in 3.2.0 or 3.2.1 to 3.2.2 | `kafka_14024`, `kafka_14196` |
  | `partitions_revoked` for a consumer-protocol `reconciliation` with auto-commit, in 3.7 to 3.9 (the commit went before the partitions were marked pending revocation) | `kafka_16460` |
  | `partitions_revoked` for `cooperative` of a partition named by that generation's `owned_partitions_ignored` for the member, in 2.6.0 to 3.4.0 | `kafka_14639` |
  | a revocation or loss after the member's last commit failed for its coordinator (moved, unknown or unreachable) | `coordinator_failover` |
  | a revocation or loss after the member's last commit failed otherwise (rejected, fenced, refused in the client) | `commit_failed_or_fenced` |
  | a cooperative revocation with auto-commit and no commit in `onPartitionsRevoked` (KIP-429: auto-commit does not commit before it) | `cooperative_revocation_gap` |
  | a revocation (eager or cooperative) with manual commits and none in `onPartitionsRevoked` | `revoked_without_commit` |
  | any other revocation or loss | `commit_failed_or_fenced` |
  | `generation_started` without its member, no removal logged (a new coordinator loaded the group without it) | `coordinator_failover` |
  | a position reset (`fetch_position_set` not from a committed offset) | `log_truncation_or_reset` |

  A hold that begins at a reset to `s` below the group's committed offset `c` for the
  partition reads `[s, c)` again because of the reset: `log_truncation_or_reset`, whatever
  ended the hold before; or, if `offsets_expired` removed `c` and the group has not committed
  the partition since, because of the expiry: `offsets_expired_reset`.

  Where several rows hold at once, the first wins.
- Records processed after the consumer gave their partition up (records the application had
  in hand when a revocation or loss came from the background thread) are processed under the
  hold that ended then.
- A duplicate takes the label of the hold that processed the record before, once that hold has
  ended. If it has not (two holds process the partition at once), the one processing now is a
  zombie, a member whose ownership ended while it went on processing, and the duplicate takes
  the label that made it one. A duplicate neither explains is counted as `unexplained`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

__all__ = ["Recount", "recount", "recount_file"]

COORDINATOR_FAILURES = frozenset(
    {"NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS", "DISCONNECTED", "TIMEOUT"}
)
"""Commit outcomes that say the coordinator was gone: its broker's errors when the group's
partition moved or is loading, and the client's when its connection failed
(`ConsumerCoordinator.OffsetCommitResponseHandler`, `markCoordinatorUnknown`)."""


REMOVALS = {
    "session_timeout": "expelled_session_timeout",
    "not_rejoined": "poll_interval_exceeded",
    "rebalance_timeout": "poll_interval_exceeded",
    "replaced": "commit_failed_or_fenced",
}
"""A coordinator's removal of a member that still holds partitions: its session expired, or it
did not rejoin within the rebalance timeout (classic), or did not release its revoked
partitions within it (the consumer protocol), which is its `max.poll.interval.ms` (a dynamic
member whose processing outlasted it; static members are not removed so by the classic
coordinator), or another process took its `group.instance.id` and fenced it
(`FENCED_INSTANCE_ID`, KIP-345)."""

RECONCILE_BUG = ((3, 7, 0), (3, 9, 9))
"""The releases whose consumer-protocol client commits before marking the revoked partitions
pending revocation (KAFKA-16460, fixed in 4.0)."""

JOIN_PREPARE_BUGS = {(3, 2, 0): "kafka_14024", (3, 2, 1): "kafka_14196", (3, 2, 2): "kafka_14196"}
"""Releases whose eager pre-rebalance auto-commit has a bug (KAFKA-13310 made it asynchronous
and not awaited in 3.2.0, KAFKA-14024; 3.2.1 awaits it while polls return records of the
partitions about to be revoked, KAFKA-14196, fixed in 3.2.3). The first row of the table
after `unsubscribe()` when the revocation is such a rebalance's with auto-commit."""


OLDER_CLAIMS_IGNORED = ((2, 6, 0), (3, 4, 0))
"""The releases whose sticky assignors counted only the highest generation's claims
(KAFKA-9987 to KAFKA-14639's fix in 3.4.1)."""


@dataclass(slots=True)
class Hold:
    node: str
    member_id: str
    label: str | None = None
    replays: range = range(0)
    """Offsets it reads again because its reset went below the group's committed offset."""
    replay_label: str = ""


@dataclass(slots=True)
class Consumer:
    """One consumer process, from its `consumer_started`."""

    group: str
    auto_commit: bool
    listener_commits: bool
    """`commit = on_revoke`: `onPartitionsRevoked` commits what it gives up."""
    holds: dict[str, Hold] = field(default_factory=dict)
    given_up: dict[str, Hold] = field(default_factory=dict)
    """Per partition, the hold that a revocation or loss ended last: what the application
    processes of it afterwards (records it had in hand) was processed under that hold."""
    last_commit_error: str = "NONE"
    join_prepare_in: tuple[str, int] | None = None
    """(member id, generation) of its last pre-rebalance auto-commit."""


@dataclass(slots=True)
class Recount:
    consumed: int = 0
    duplicates: int = 0
    by_cause: dict[str, int] = field(default_factory=dict)

    def count(self, label: str) -> None:
        self.duplicates += 1
        self.by_cause[label] = self.by_cause.get(label, 0) + 1


def recount_file(path: Path) -> Recount:
    with path.open("rb") as lines:
        return recount(orjson.loads(line) for line in lines)


def recount(events: Iterable[Mapping[str, Any]]) -> Recount:
    """Consumed records and duplicates by cause, from the events in log order."""
    consumers: dict[str, Consumer] = {}
    last: dict[tuple[str, str, int], tuple[int, Hold]] = {}
    """(group, partition, offset) -> the leader epoch its record was written in, and the hold
    that processed it last."""
    result = Recount()
    bug: str | None = None
    """The run's version bug of the eager pre-rebalance auto-commit, from `run_started`."""
    reconcile_bug = False
    """Whether the run's consumer-protocol client has KAFKA-16460."""
    claims_bug = False
    """Whether the run's version throws away older generations' claims (KAFKA-14639)."""
    thrown_away: set[tuple[str, int, str, str]] = set()
    """(group, generation, member, partition) the leader's assignor logged as thrown away."""
    committed: dict[tuple[str, str], int] = {}
    expired: dict[tuple[str, str], int] = {}
    """(group, partition) -> the committed offset the retention sweep removed, until the group
    commits that partition again."""
    for e in events:
        name = e["event"]
        if name == "run_started":
            bug = JOIN_PREPARE_BUGS.get(_release(e["kafka_version"]))
            claims_bug = OLDER_CLAIMS_IGNORED[0] <= _release(e["kafka_version"]) <= OLDER_CLAIMS_IGNORED[1]
            reconcile_bug = RECONCILE_BUG[0] <= _release(e["kafka_version"]) <= RECONCILE_BUG[1]
            continue
        if name == "owned_partitions_ignored":
            thrown_away.update((e["group_id"], e["generation_id"], e["owner"], tp) for tp in e["partitions"])
            continue
        if name == "offset_commit_completed" and e["error"] == "NONE":
            for topic, partition, offset in e["offsets"]:
                committed[(e["group_id"], f"{topic}-{partition}")] = offset
                expired.pop((e["group_id"], f"{topic}-{partition}"), None)
            continue
        if name == "offsets_expired":
            for tp in e["partitions"]:
                if (e["group_id"], tp) in committed:
                    expired[(e["group_id"], tp)] = committed.pop((e["group_id"], tp))
            continue
        if name == "consumer_started":
            consumers[e["node"]] = Consumer(e["group_id"], e["enable_auto_commit"], e["commit"] in ("on_revoke", "processed"))
            continue
        if name == "node_crashed":
            crashed = consumers.get(e["target"])
            if crashed is not None:
                _end_all(crashed.holds.values(), "crash_before_commit")
                crashed.holds.clear()
            continue
        if name == "generation_started":
            # Still holding partitions, yet not in the new generation, with no removal logged:
            # the coordinator that formed it never knew the member (it loaded the group without it).
            for c in consumers.values():
                if c.group == e["group_id"]:
                    _end_all((h for h in c.holds.values() if h.member_id not in e["members"]), "coordinator_failover")
            continue
        if name in ("group_member_removed", "consumer_member_removed"):
            label = REMOVALS.get(e["reason"])
            stuck = any(
                c.group == e["group_id"] and c.join_prepare_in == (e["member_id"], e.get("generation_id")) for c in consumers.values()
            )
            if e["reason"] == "not_rejoined" and bug == "kafka_14024" and stuck:
                label = "kafka_14024"
            if label is not None:
                for c in consumers.values():
                    if c.group == e["group_id"]:
                        _end_all((h for h in c.holds.values() if h.member_id == e["member_id"]), label)
            continue
        consumer = consumers.get(e["node"])
        if consumer is None:
            continue
        if name == "partitions_assigned":
            for tp in e["partitions"]:
                consumer.holds[tp] = Hold(e["node"], e["member_id"])
                for other in consumers.values():
                    if other is not consumer and other.group == consumer.group and tp in other.holds:
                        held = other.holds[tp]
                        lost_claim = claims_bug and (consumer.group, e["generation_id"], held.member_id, tp) in thrown_away
                        _end_all((held,), "kafka_14639" if lost_claim else "poll_interval_exceeded")
        elif name in ("partitions_revoked", "partitions_lost"):
            label = _release_label(consumer, name, e["reason"], bug)
            if reconcile_bug and name == "partitions_revoked" and e["reason"] == "reconciliation" and consumer.auto_commit:
                label = "kafka_16460" if label != "unsubscribe_without_commit" else label
            for tp in e["partitions"]:
                hold = consumer.holds.pop(tp, None)
                if hold is None:
                    continue
                consumer.given_up[tp] = hold
                same_round = name == "partitions_revoked" and e["reason"] == "cooperative"
                if claims_bug and same_round and (consumer.group, e["generation_id"], e["member_id"], tp) in thrown_away:
                    _end_all((hold,), "kafka_14639")
                else:
                    _end_all((hold,), label)
        elif name == "poll_timeout_expired":
            label = "static_poll_timeout_self_replay" if e["static"] else "poll_interval_exceeded"
            _end_all(consumer.holds.values(), label)
        elif name == "offset_commit_answered":
            consumer.last_commit_error = e["error"]
        elif name == "offset_commit_sent" and e["kind"] == "join_prepare":
            consumer.join_prepare_in = (e["member_id"], e["generation_id"])
        elif name == "fetch_position_set" and e["source"] != "committed":
            tp = f"{e['topic']}-{e['partition']}"
            hold = consumer.holds.get(tp)
            if hold is not None:
                _end_all((hold,), "log_truncation_or_reset")
                key = (e["group_id"], tp)
                if key in committed:
                    replays, why = range(e["offset"], committed[key]), "log_truncation_or_reset"
                else:
                    replays, why = range(e["offset"], expired.get(key, 0)), "offsets_expired_reset"
                consumer.holds[tp] = Hold(e["node"], hold.member_id, replays=replays, replay_label=why)
        elif name == "records_processed":
            tp = f"{e['topic']}-{e['partition']}"
            hold = consumer.holds.get(tp) or consumer.given_up.get(tp)
            if hold is None:
                hold = consumer.holds[tp] = Hold(e["node"], e["member_id"])
            record = e["leader_epoch"]
            for offset in range(e["first_offset"], e["end_offset"]):
                key = (e["group_id"], tp, offset)
                epoch, earlier = last.get(key, (None, None))
                if earlier is not None and epoch == record:
                    result.count(hold.replay_label if offset in hold.replays else earlier.label or hold.label or "unexplained")
                last[key] = (record, hold)
            result.consumed += e["end_offset"] - e["first_offset"]
    return result


def _end_all(holds: Iterable[Hold], label: str) -> None:
    for hold in holds:
        if hold.label is None:
            hold.label = label


def _release(version: str) -> tuple[int, ...]:
    """'3.2' -> (3, 2, 0)."""
    numbers = [int(n) for n in version.split(".")]
    return tuple(numbers + [0] * (3 - len(numbers)))


def _release_label(consumer: Consumer, event: str, reason: str, bug: str | None) -> str:
    """The label of a revocation or loss, by the first row of the table that holds."""
    error = consumer.last_commit_error
    if reason == "unsubscribe":
        return "unsubscribe_without_commit"
    if bug is not None and event == "partitions_revoked" and reason == "rebalance" and consumer.auto_commit:
        return bug
    if error in COORDINATOR_FAILURES:
        return "coordinator_failover"
    if error != "NONE":
        return "commit_failed_or_fenced"
    revoked_without_listener = event == "partitions_revoked" and not consumer.listener_commits
    if revoked_without_listener and consumer.auto_commit and reason == "cooperative":
        return "cooperative_revocation_gap"
    if revoked_without_listener and not consumer.auto_commit:
        return "revoked_without_commit"
    return "commit_failed_or_fenced"
