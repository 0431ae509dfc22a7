"""The `__consumer_offsets` records the coordinator writes, and the replay that loads them.

Models `GroupMetadataManager`'s record formats and `doLoadGroupsAndOffsets`. Kafka writes binary
key/value records; a partition log here holds strings, so each record is one compact JSON object
with sorted keys (the same record is the same bytes on every run):

- an offset commit (`offsetCommitValue`): `{"type": "offset", "group", "topic", "partition",
  "offset", "leader_epoch", "commit_ms"}`;
- a group (`groupMetadataValue`), written when a generation's assignment is stored, when a
  generation completes with no members, and when a static member is replaced in Stable:
  `{"type": "group", "group", "generation", "protocol_type", "protocol", "leader", "state_ms",
  "members": [...]}`, each member `{"member_id", "group_instance_id", "client_id",
  "session_timeout_ms", "rebalance_timeout_ms", "subscription": [topics], "owned_partitions":
  [[topic, partition], ...], "subscription_generation", "assignment": [[topic, partition], ...]}`
  (Kafka stores the chosen protocol's subscription bytes whole, so the owned partitions and
  generation of KIP-429/792 are kept too: a reloaded member's metadata compares equal);
- tombstones (a record with a key and no value in Kafka): `{"type": "offset_tombstone", "group",
  "topic", "partition"}` for an expired offset, `{"type": "group_tombstone", "group"}` for a
  group removed after its last offset expired.

Replay reads a partition's log in order: the last group record of a group wins (a group tombstone
drops it), the last offset record of a partition wins (a tombstone drops it). A group with a
group record comes back Stable (members) or Empty (none), as `loadGroup` asserts; a group with
offsets only comes back Empty with no protocol type (a standalone group).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from actors.group.state import ClassicGroup, CommittedOffset, GroupState, MemberMetadata
from protocols.group import Assignment, JoinGroupProtocol, Subscription, TopicPartitions
from protocols.replication import RECORD_BATCH_OVERHEAD, RECORD_OVERHEAD, RecordBatch
from protocols.types import TopicPartition

__all__ = [
    "batch_size_bytes",
    "encode",
    "group_record",
    "group_tombstone",
    "offset_record",
    "offset_tombstone",
    "replay",
]


def encode(record: Mapping[str, Any]) -> str:
    return json.dumps(record, sort_keys=True, separators=(",", ":"))


def batch_size_bytes(values: Iterable[str]) -> int:
    """A batch's size on the wire: its header and each record's overhead and value."""
    return RECORD_BATCH_OVERHEAD + sum(len(v.encode()) + RECORD_OVERHEAD for v in values)


def offset_record(group_id: str, tp: TopicPartition, offset: int, leader_epoch: int, commit_ms: int) -> str:
    return encode(
        {
            "type": "offset",
            "group": group_id,
            "topic": tp.topic,
            "partition": tp.partition,
            "offset": offset,
            "leader_epoch": leader_epoch,
            "commit_ms": commit_ms,
        }
    )


def offset_tombstone(group_id: str, tp: TopicPartition) -> str:
    return encode({"type": "offset_tombstone", "group": group_id, "topic": tp.topic, "partition": tp.partition})


def group_tombstone(group_id: str) -> str:
    return encode({"type": "group_tombstone", "group": group_id})


def _pairs(partitions: Iterable[TopicPartitions]) -> list[list[Any]]:
    return [[tps.topic, p] for tps in partitions for p in tps.partitions]


def _grouped(pairs: Iterable[list[Any]]) -> tuple[TopicPartitions, ...]:
    """[[topic, partition], ...] back to one TopicPartitions per run of the same topic."""
    runs: list[tuple[str, list[int]]] = []
    for topic, partition in pairs:
        if not runs or runs[-1][0] != topic:
            runs.append((topic, []))
        runs[-1][1].append(partition)
    return tuple(TopicPartitions(topic, tuple(ps)) for topic, ps in runs)


def group_record(group: ClassicGroup, assignment: Mapping[str, Assignment]) -> str:
    """`groupMetadataValue`: the group as it is now, with `assignment` for its members."""
    members = []
    for member in group.sorted_members():
        subscription = member.metadata(group.protocol_name) if group.protocol_name else Subscription(())
        members.append(
            {
                "member_id": member.member_id,
                "group_instance_id": member.group_instance_id,
                "client_id": member.client_id,
                "session_timeout_ms": member.session_timeout_ms,
                "rebalance_timeout_ms": member.rebalance_timeout_ms,
                "subscription": list(subscription.topics),
                "owned_partitions": _pairs(subscription.owned_partitions),
                "subscription_generation": subscription.generation_id,
                "assignment": _pairs(assignment.get(member.member_id, Assignment()).partitions),
            }
        )
    return encode(
        {
            "type": "group",
            "group": group.group_id,
            "generation": group.generation_id,
            "protocol_type": group.protocol_type,
            "protocol": group.protocol_name,
            "leader": group.leader_id,
            "state_ms": group.state_timestamp_ms,
            "members": members,
        }
    )


def _loaded_group(record: Mapping[str, Any]) -> ClassicGroup:
    """`GroupMetadata.loadGroup`: Stable with members, Empty without."""
    protocol = record["protocol"]
    group = ClassicGroup(
        record["group"],
        state=GroupState.STABLE if record["members"] else GroupState.EMPTY,
        state_timestamp_ms=record["state_ms"],
        generation_id=record["generation"],
        protocol_type=record["protocol_type"],
        protocol_name=protocol,
        leader_id=record["leader"],
    )
    for m in record["members"]:
        subscription = Subscription(
            tuple(m["subscription"]), _grouped(m["owned_partitions"]), m["subscription_generation"]
        )
        member = MemberMetadata(
            member_id=m["member_id"],
            group_instance_id=m["group_instance_id"],
            client_id=m["client_id"],
            rebalance_timeout_ms=m["rebalance_timeout_ms"],
            session_timeout_ms=m["session_timeout_ms"],
            protocol_type=record["protocol_type"] or "",
            protocols=(JoinGroupProtocol(protocol, subscription),),
            assignment=Assignment(_grouped(m["assignment"])),
        )
        group.members[member.member_id] = member
        if member.group_instance_id is not None:
            group.static_members[member.group_instance_id] = member.member_id
    group.subscribed_topics = group.compute_subscribed_topics()
    return group


def replay(batches: Iterable[RecordBatch], other: Callable[[Mapping[str, Any]], None] | None = None) -> dict[str, ClassicGroup]:
    """The groups and offsets a partition's log holds, by group id; a record of another kind
    (a consumer group's, `consumer_records`) goes to `other`."""
    groups: dict[str, Mapping[str, Any] | None] = {}
    offsets: dict[str, dict[TopicPartition, CommittedOffset]] = {}
    for batch in batches:
        for value in batch.values:
            record = json.loads(value)
            kind, group_id = record["type"], record["group"]
            if kind.startswith("cg_") and other is not None:
                other(record)
            elif kind == "group":
                groups[group_id] = record
            elif kind == "group_tombstone":
                groups[group_id] = None
            else:
                tp = TopicPartition(record["topic"], record["partition"])
                found = offsets.setdefault(group_id, {})
                if kind == "offset":
                    found[tp] = CommittedOffset(
                        record["offset"], record["leader_epoch"], record["commit_ms"], batch.base_offset
                    )
                else:
                    found.pop(tp, None)
    loaded: dict[str, ClassicGroup] = {}
    for group_id in sorted(set(groups) | set(offsets)):
        record = groups.get(group_id)
        committed = offsets.get(group_id, {})
        if record is None and not committed:
            continue
        group = _loaded_group(record) if record is not None else ClassicGroup(group_id)
        group.offsets = dict(sorted(committed.items()))
        loaded[group_id] = group
    return loaded
