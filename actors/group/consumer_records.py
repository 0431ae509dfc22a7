"""The `__consumer_offsets` records of a consumer group, and their replay.

Kafka's new coordinator writes a consumer group as several record types, each keyed by group
(and member), the last one of a key winning on replay and a tombstone deleting it:
`ConsumerGroupMetadata` (the group epoch), `ConsumerGroupMemberMetadata` (a member's
subscription), `ConsumerGroupTargetAssignmentMember` and `...Metadata` (a member's target, the
assignment epoch) and `ConsumerGroupCurrentMemberAssignment` (a member's epochs, state and
current assignment). Here each is one compact JSON object with sorted keys, as the classic
records are (`records.py`):

- `{"type": "cg_epoch", "group", "epoch"}`; `{"type": "cg_tombstone", "group"}` deletes the group;
- `{"type": "cg_member", "group", "member_id", "instance_id", "rack_id",
  "rebalance_timeout_ms", "topics", "assignor"}`, with `"classic": {"session_timeout_ms",
  "client_id", "protocols": [[name, topics, owned [[topic, p], ...], generation], ...]}` for a
  member speaking the classic protocol (`ClassicMemberMetadata`, 3.8+; absent otherwise);
- `{"type": "cg_target", "group", "member_id", "partitions": [[topic, p], ...]}` and
  `{"type": "cg_target_epoch", "group", "epoch"}`;
- `{"type": "cg_current", "group", "member_id", "state", "epoch", "previous_epoch",
  "assigned": [[topic, p], ...], "revoking": [...]}`;
- `cg_member_tombstone`, `cg_target_tombstone`, `cg_current_tombstone` with `group` and
  `member_id`.

`changes` writes what one operation changed, by comparing the membership before and after it,
in Kafka's order: a removed member's tombstones, subscriptions, the group epoch, targets, the
assignment epoch, current assignments.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from actors.group.consumer_group import Assignment, ClassicMemberMetadata, ConsumerGroup, ConsumerGroupMember, Membership
from actors.group.consumer_protocol.states import MemberState
from actors.group.records import encode
from protocols.group import JoinGroupProtocol, Subscription, TopicPartitions

__all__ = ["CONSUMER_RECORD_TYPES", "ConsumerReplay", "changes", "group_tombstone"]

CONSUMER_RECORD_TYPES = frozenset(
    {
        "cg_epoch",
        "cg_tombstone",
        "cg_member",
        "cg_target",
        "cg_target_epoch",
        "cg_current",
        "cg_member_tombstone",
        "cg_target_tombstone",
        "cg_current_tombstone",
    }
)


def _pairs(assignment: Assignment) -> list[list[Any]]:
    return [[topic, p] for topic in sorted(assignment) for p in sorted(assignment[topic])]


def _assignment(pairs: list[list[Any]]) -> dict[str, frozenset[int]]:
    found: dict[str, set[int]] = {}
    for topic, p in pairs:
        found.setdefault(topic, set()).add(p)
    return {topic: frozenset(ps) for topic, ps in sorted(found.items())}


def _subscription(member: ConsumerGroupMember) -> tuple[Any, ...]:
    return (
        member.instance_id, member.rack_id, member.rebalance_timeout_ms, member.subscribed_topics,
        member.server_assignor, member.classic,
    )


def _classic_value(classic: ClassicMemberMetadata) -> dict[str, Any]:
    protocols = [
        [p.name, list(p.metadata.topics), [[t.topic, q] for t in p.metadata.owned_partitions for q in t.partitions], p.metadata.generation_id]
        for p in classic.protocols
    ]
    return {"session_timeout_ms": classic.session_timeout_ms, "client_id": classic.client_id, "protocols": protocols}


def _classic_metadata(value: Mapping[str, Any]) -> ClassicMemberMetadata:
    protocols = tuple(
        JoinGroupProtocol(
            name,
            Subscription(
                tuple(topics),
                tuple(TopicPartitions(t, tuple(sorted(ps))) for t, ps in sorted(_assignment(owned).items())),
                generation,
            ),
        )
        for name, topics, owned, generation in value["protocols"]
    )
    return ClassicMemberMetadata(value["session_timeout_ms"], protocols, value["client_id"])


def _current(member: ConsumerGroupMember) -> tuple[Any, ...]:
    return (member.state, member.member_epoch, member.previous_member_epoch, member.assigned, member.pending_revocation)


def group_tombstone(group_id: str) -> str:
    return encode({"type": "cg_tombstone", "group": group_id})


def changes(group_id: str, before: Membership, after: Membership) -> tuple[str, ...]:
    """The records that take the stored group from `before` to `after`."""
    g = {"group": group_id}
    out: list[dict[str, Any]] = []
    for mid in sorted(set(before.members) - set(after.members)):
        out += [{"type": f"cg_{kind}_tombstone", **g, "member_id": mid} for kind in ("current", "target", "member")]
    for mid, member in sorted(after.members.items()):
        old = before.members.get(mid)
        if old is None or _subscription(old) != _subscription(member):
            out.append(
                {
                    "type": "cg_member",
                    **g,
                    "member_id": mid,
                    "instance_id": member.instance_id,
                    "rack_id": member.rack_id,
                    "rebalance_timeout_ms": member.rebalance_timeout_ms,
                    "topics": list(member.subscribed_topics),
                    "assignor": member.server_assignor,
                    **({"classic": _classic_value(member.classic)} if member.classic is not None else {}),
                }
            )
    if after.group_epoch != before.group_epoch:
        out.append({"type": "cg_epoch", **g, "epoch": after.group_epoch})
    for mid, target in sorted(after.target.items()):
        if before.target.get(mid) != target:
            out.append({"type": "cg_target", **g, "member_id": mid, "partitions": _pairs(target)})
    if after.assignment_epoch != before.assignment_epoch:
        out.append({"type": "cg_target_epoch", **g, "epoch": after.assignment_epoch})
    for mid, member in sorted(after.members.items()):
        old = before.members.get(mid)
        if old is None or _current(old) != _current(member):
            out.append(
                {
                    "type": "cg_current",
                    **g,
                    "member_id": mid,
                    "state": member.state.value,
                    "epoch": member.member_epoch,
                    "previous_epoch": member.previous_member_epoch,
                    "assigned": _pairs(member.assigned),
                    "revoking": _pairs(member.pending_revocation),
                }
            )
    return tuple(encode(r) for r in out)


class ConsumerReplay:
    """The consumer groups a partition's log holds, record by record (`replay`)."""

    def __init__(self) -> None:
        self.groups: dict[str, dict[str, Any] | None] = {}

    def apply(self, record: Mapping[str, Any]) -> None:
        kind, group_id = record["type"], record["group"]
        if kind == "cg_tombstone":
            self.groups[group_id] = None
            return
        g = self.groups.get(group_id)
        if g is None:
            g = self.groups[group_id] = {"epoch": 0, "target_epoch": 0, "members": {}, "targets": {}, "current": {}}
        if kind == "cg_epoch":
            g["epoch"] = record["epoch"]
        elif kind == "cg_target_epoch":
            g["target_epoch"] = record["epoch"]
        else:
            table = {"member": "members", "target": "targets", "current": "current"}[kind.split("_")[1]]
            if kind.endswith("_tombstone"):
                g[table].pop(record["member_id"], None)
            else:
                g[table][record["member_id"]] = record

    def build(self) -> dict[str, ConsumerGroup]:
        built = {}
        for group_id, g in sorted(self.groups.items()):
            if g is None:
                continue
            membership = Membership(g["epoch"], g["target_epoch"])
            for mid, target in sorted(g["targets"].items()):
                membership.target[mid] = _assignment(target["partitions"])
            group = ConsumerGroup(group_id, membership)
            for mid, meta in sorted(g["members"].items()):
                current = g["current"].get(mid)
                member = ConsumerGroupMember(
                    mid,
                    meta["instance_id"],
                    meta["rack_id"],
                    meta["rebalance_timeout_ms"],
                    tuple(meta["topics"]),
                    meta["assignor"],
                )
                if current is not None:
                    member = ConsumerGroupMember(
                        *(member.member_id, member.instance_id, member.rack_id, member.rebalance_timeout_ms),
                        *(member.subscribed_topics, member.server_assignor, MemberState(current["state"])),
                        *(current["epoch"], current["previous_epoch"]),
                        *(_assignment(current["assigned"]), _assignment(current["revoking"])),
                    )
                if meta.get("classic") is not None:
                    member = replace(member, classic=_classic_metadata(meta["classic"]))
                group.put(member)
            built[group_id] = group
        return built
