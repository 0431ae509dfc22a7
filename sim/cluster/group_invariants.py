"""The consumer groups' invariants, checked after every event like `sim.cluster.invariants`.

`single_owner_per_partition_per_generation`: in one generation of a group, no partition is in
two members' assignments (a static member that replaced itself hands its assignment to its new
member id in the same generation: the old id is no longer a member; a group created again after
it went Dead numbers its generations from 1 again).
`consumer_reads_committed`: no record is processed at or above the highest HW its partition's
leaders have reported (a read past the HW).
`monotonic_committed_offset`: a group's committed offset for a partition never moves back,
unless a member reset its position (`auto.offset.reset`), the offsets expired or were deleted,
or the commit came from outside the group (generation -1 with no member: an operator's reset,
a standalone consumer). Commits are taken in the order of their records in `__consumer_offsets`:
by the leader epoch they were appended in (`coordinator_epoch`), then by when they were
answered, which within one epoch is the log's order (the HW completes appends in offset order).
A commit answered NONE by a coordinator of an older epoch than one already seen is an old
leader's append completed late: a coordinator paused past its failover whose followers had
fetched the record before they moved to the new leader, so the new coordinator loaded it and
wrote the later commits after it. It does not move the group's offset back.
`cooperative_single_owner`: in a group whose members all rebalance COOPERATIVE (KIP-429), a
partition is given to a member only once every other member that acts on its assignments has
revoked it: a member assigned a partition another live member still holds is two owners at once.
A holder whose ownership already ended (its node crashed, its poll timer expired, its generation
was reset, the coordinator removed it) is a zombie, not an owner. Where the leader's assignor
threw that holder's claim away for its older generation (`owned_partitions_ignored`, the 2.6.0 to
3.4.0 validation), it is KAFKA-14639, Kafka's own behaviour in those releases: a finding labelled
`kafka_14639` (summary.json's `known_bug_findings`), not a violation.
`commit_accepted_only_when_valid`: a coordinator accepts a commit only as Kafka's
`validateOffsetCommit` allows: from a member of the group's current generation while it is
Stable or PreparingRebalance, or with generation -1 while the group is Empty: from 3.3
(KAFKA-14201) whatever member id it names, before only with none. In a KIP-848 consumer group
(`ConsumerGroup.validateOffsetCommit`): from a member at the epoch it names (the one it had
when the commit was validated: its current or, if it moved on before the commit was stored,
its previous one), or with epoch -1 while the group has no members.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from actors.profiles import NEWEST, Version
from sim.cluster.invariants import Violation

__all__ = ["GroupInvariants"]

Key = tuple[str, str]  # (group, "topic-partition")


class GroupInvariants:
    def __init__(self, version: Version = NEWEST) -> None:
        self._unmanaged_commit_to_empty = version >= (3, 3, 0)
        """KAFKA-14201: generation -1 to an Empty group is valid whatever member id it names."""
        self._consumers: set[str] = set()
        self._consumer_protocol: set[str] = set()
        """Consumer nodes of the consumer protocol: their assignments carry member epochs, not
        generations (`sim.cluster.consumer_group_invariants` checks those)."""
        self._cooperative: dict[str, bool] = {}
        """Per consumer node: whether its assignors make it rebalance COOPERATIVE."""
        self._holders: dict[tuple[str, str], dict[str, str]] = {}
        """(group, partition) -> {node: member id} of the members that hold it and act on it."""
        self._thrown_away: dict[tuple[str, int, str], set[str]] = {}
        """(group, generation, member) -> partitions whose claim the assignor threw away."""
        self.findings: list[dict[str, Any]] = []
        """Known Kafka bugs the run showed (summary.json's `known_bug_findings`)."""
        self._owners: dict[tuple[str, int], dict[str, str]] = {}
        self._generation_members: dict[tuple[str, int], set[str]] = {}
        self._max_hw: dict[str, int] = {}
        self._committed: dict[Key, tuple[int, int]] = {}
        """(group, partition) -> (the leader epoch its last commit was appended in, its offset)."""
        self._reset: set[Key] = set()
        """Partitions a member reset since the group's last commit of them."""
        self._consumer_groups: dict[tuple[str, str], dict[str, tuple[int, int]]] = {}
        """KIP-848 consumer groups, per (coordinator node, group): member id -> (epoch, previous epoch)."""

    def __call__(self, event: Mapping[str, Any]) -> list[Violation]:
        handler = _HANDLERS.get(event["event"])
        if handler is None:
            return []
        return handler(self, event) or []

    def _started(self, e: Mapping[str, Any]) -> None:
        self._consumers.add(e["node"])
        # Only cooperative-sticky supports COOPERATIVE: the protocol is the one all support. The
        # consumer protocol (KIP-848) is incremental too: a partition moves once released.
        consumer_protocol = e.get("group_protocol") == "consumer"
        self._cooperative[e["node"]] = consumer_protocol or all(name == "cooperative-sticky" for name in e["assignment_strategy"])
        if consumer_protocol:
            self._consumer_protocol.add(e["node"])
        else:
            self._consumer_protocol.discard(e["node"])
        self._drop_holds(e["node"])

    def _drop_holds(self, node: str, member_id: str | None = None) -> None:
        for holders in self._holders.values():
            if node in holders and (member_id is None or holders[node] == member_id):
                del holders[node]

    def _ended(self, e: Mapping[str, Any]) -> None:
        """The node's ownership ended: a crash, a poll timeout, a reset of its generation."""
        self._drop_holds(e["target"] if e["event"] == "node_crashed" else e["node"])

    def _released(self, e: Mapping[str, Any]) -> None:
        for tp in e["partitions"]:
            self._holders.get((e["group_id"], tp), {}).pop(e["node"], None)

    def _claims_ignored(self, e: Mapping[str, Any]) -> None:
        self._thrown_away.setdefault((e["group_id"], e["generation_id"], e["owner"]), set()).update(e["partitions"])

    def _second_owner(self, e: Mapping[str, Any]) -> list[Violation]:
        """`cooperative_single_owner` for the partitions this assignment adds."""
        found = []
        group, node = e["group_id"], e["node"]
        for tp in e["partitions"]:
            holders = self._holders.setdefault((group, tp), {})
            for other, member_id in sorted(holders.items()):
                if other == node or not (self._cooperative.get(node) and self._cooperative.get(other)):
                    continue
                detail = f"{tp} of {group} is assigned to {e['member_id']} in generation {e['generation_id']} while {member_id} holds it"
                if tp in self._thrown_away.get((group, e["generation_id"], member_id), ()):
                    finding = {"invariant": "cooperative_single_owner", "label": "kafka_14639"}
                    self.findings.append({**finding, "ts_ms": e["ts_ms"], "node": node, "detail": detail})
                else:
                    found.append(Violation("cooperative_single_owner", e["ts_ms"], node, detail))
            holders[node] = e["member_id"]
        return found

    def _assigned(self, e: Mapping[str, Any]) -> list[Violation]:
        if e["node"] not in self._consumers:
            return []
        second = self._second_owner(e)
        if e["node"] in self._consumer_protocol:
            return second
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
        return found + second

    def _drop_member_holds(self, e: Mapping[str, Any]) -> None:
        """The coordinator removed the member: whoever still holds its partitions is a zombie."""
        for holders in (h for (group, _), h in self._holders.items() if group == e["group_id"]):
            for node in [n for n, member in holders.items() if member == e["member_id"]]:
                del holders[node]

    def _group_member(self, e: Mapping[str, Any]) -> None:
        if e["event"] == "group_member_removed":
            self._drop_member_holds(e)
        if e["event"] == "group_member_added":
            # A loaded member, or a static member's new id, belongs to the current generation.
            self._generation_members.setdefault((e["group_id"], e["generation_id"]), set()).add(e["member_id"])
        elif e["reason"] == "replaced":
            # A static member's new id takes over the old one's assignment in the same
            # generation (`GroupMetadata.replaceStaticMember`): the old id owns nothing now.
            owners = self._owners.get((e["group_id"], e["generation_id"]), {})
            for tp in [tp for tp, owner in owners.items() if owner == e["member_id"]]:
                del owners[tp]

    def _group_state(self, e: Mapping[str, Any]) -> None:
        if e["previous_state"] is None and e["generation_id"] == 0:
            # A group that comes into being with no generation (a first JoinGroup, or again
            # after its offsets expired and it went Dead) numbers its generations from 1
            # again: what the group's earlier life assigned no longer applies.
            group = e["group_id"]
            for key in [k for k in self._owners if k[0] == group]:
                del self._owners[key]
            for key in [k for k in self._generation_members if k[0] == group]:
                del self._generation_members[key]

    def _generation(self, e: Mapping[str, Any]) -> None:
        self._generation_members[(e["group_id"], e["generation_id"])] = set(e["members"])

    def _consumer_group(self, e: Mapping[str, Any]) -> None:
        view = (e["node"], e["group_id"])  # each coordinator's own: a failover loads its copy
        members = self._consumer_groups.setdefault(view, {})
        if e["event"] == "consumer_member_changed":
            members[e["member_id"]] = (e["member_epoch"], e["previous_member_epoch"])
        elif e["event"] == "consumer_member_removed":
            members.pop(e["member_id"], None)
            self._drop_member_holds(e)
        elif e["state"] == "Dead":
            del self._consumer_groups[view]

    def _commit_completed(self, e: Mapping[str, Any]) -> list[Violation]:
        if e["error"] != "NONE":
            return []
        found = []
        generation, member, state = e["generation_id"], e["member_id"], e["group_state"]
        consumer_group = self._consumer_groups.get((e["node"], e["group_id"]))
        if consumer_group is not None:
            valid = generation in consumer_group.get(member, ()) or (generation < 0 and not consumer_group)
        elif generation < 0 and state == "Empty" and self._unmanaged_commit_to_empty:
            valid = True
        elif generation >= 0 or member:
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
        outside = generation < 0 and not member  # the operator's reset, or a standalone client
        epoch = e.get("coordinator_epoch")
        epoch = -1 if epoch is None else epoch
        for topic, partition, offset in e["offsets"]:
            key = (e["group_id"], f"{topic}-{partition}")
            before_epoch, before = self._committed.get(key, (-1, -1))
            if epoch < before_epoch:
                continue  # an older epoch's record, answered late: earlier in the log
            if offset < before and key not in self._reset and not outside:
                found.append(
                    Violation(
                        "monotonic_committed_offset",
                        e["ts_ms"],
                        e["node"],
                        f"{key[0]} committed {key[1]} at {offset} after {before}",
                    )
                )
            self._committed[key] = (epoch, offset)
            self._reset.discard(key)
        return found

    def _removed(self, e: Mapping[str, Any]) -> None:
        """Offsets expired (KIP-211) or deleted by an operator: the next commit starts the
        partition's history again."""
        if e.get("error", "NONE") != "NONE":
            return
        group = e["group_id"]
        if e["event"] == "group_deleted":
            gone = [k for k in self._committed if k[0] == group]
        else:
            gone = [(group, tp) for tp in e["partitions"]]
        for key in gone:
            self._committed.pop(key, None)

    def _position_set(self, e: Mapping[str, Any]) -> None:
        if e["source"] != "committed":
            self._reset.add((e["group_id"], f"{e['topic']}-{e['partition']}"))

    def _offsets(self, e: Mapping[str, Any]) -> None:
        if e["role"] == "leader":
            tp = f"{e['topic']}-{e['partition']}"
            if e["high_watermark"] > self._max_hw.get(tp, 0):
                self._max_hw[tp] = e["high_watermark"]

    def _processed(self, e: Mapping[str, Any]) -> list[Violation]:
        tp = f"{e['topic']}-{e['partition']}"
        if e["node"] not in self._consumers or e["end_offset"] <= self._max_hw.get(tp, 0):
            return []
        detail = f"{tp} processed to {e['end_offset']} above the highest HW {self._max_hw.get(tp, 0)}"
        return [Violation("consumer_reads_committed", e["ts_ms"], e["node"], detail)]


_HANDLERS: dict[str, Any] = {
    "consumer_started": GroupInvariants._started,
    "partitions_assigned": GroupInvariants._assigned,
    "partitions_revoked": GroupInvariants._released,
    "partitions_lost": GroupInvariants._released,
    "owned_partitions_ignored": GroupInvariants._claims_ignored,
    "node_crashed": GroupInvariants._ended,
    "poll_timeout_expired": GroupInvariants._ended,
    "member_reset": GroupInvariants._ended,
    "group_member_added": GroupInvariants._group_member,
    "group_member_removed": GroupInvariants._group_member,
    "group_state_changed": GroupInvariants._group_state,
    "generation_started": GroupInvariants._generation,
    "offset_commit_completed": GroupInvariants._commit_completed,
    "consumer_group_state_changed": GroupInvariants._consumer_group,
    "consumer_member_changed": GroupInvariants._consumer_group,
    "consumer_member_removed": GroupInvariants._consumer_group,
    "offsets_expired": GroupInvariants._removed,
    "group_offsets_deleted": GroupInvariants._removed,
    "group_deleted": GroupInvariants._removed,
    "fetch_position_set": GroupInvariants._position_set,
    "replica_offsets_changed": GroupInvariants._offsets,
    "records_processed": GroupInvariants._processed,
}
