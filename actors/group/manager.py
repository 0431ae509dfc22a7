"""What the coordinator owns and the primitives its handlers share (`GroupMetadataManager`).

The owned `__consumer_offsets` partitions with their coordinator epochs, the groups loaded from
them (as `Group`s; classic groups are the only type yet), the appends in flight, and the
operations every handler uses: `validateGroupStatus`, looking up or creating a classic group,
appending records through the broker's produce path (acks=-1, as `appendForGroup`), member
ids, and the timers (named by what they time, so arming one again replaces it, as completing
Kafka's delayed operation under the same key does).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from actors.core import Ctx, Inbound, Out
from actors.group.config import GroupCoordinatorConfig
from actors.group.consumer_group import ConsumerGroup, consumer_group_snapshot
from actors.group.group import Group
from actors.group.placement import OFFSETS_TOPIC, partition_for
from actors.group.records import batch_size_bytes
from actors.group.state import ClassicGroup, MemberMetadata, as_classic
from protocols.errors import ErrorCode
from protocols.group import Assignment, JoinGroupProtocol
from protocols.replication import ProducePartitionData, ProduceRequest, RecordBatch
from protocols.types import TopicPartition

__all__ = ["GroupManager", "PendingCommit", "PendingStore", "StoreKind", "timer_key"]


def timer_key(kind: str, *args: Any) -> str:
    """A timer's key: its kind and what it is for (group and member ids may hold any character)."""
    return json.dumps([kind, *args], separators=(",", ":"))


class StoreKind:
    """Why a group record is written."""

    SYNC = "sync"
    EMPTY = "empty"
    STATIC = "static"


@dataclass(slots=True)
class StaticRevert:
    """What a static member replacement in Stable restores if its group record fails."""

    instance_id: str
    old_member_id: str
    protocols: tuple[JoinGroupProtocol, ...]
    rebalance_timeout_ms: int
    session_timeout_ms: int
    leader_before: str | None
    join: Inbound


@dataclass(slots=True)
class PendingStore:
    """A group record in flight (`storeGroup`)."""

    kind: str
    group: ClassicGroup
    generation_id: int
    assignment: dict[str, Assignment]
    member_id: str
    """The leader whose SyncGroup stores it, or the static member that replaced itself."""
    revert: StaticRevert | None = None


@dataclass(slots=True)
class PendingCommit:
    """An offset commit in flight (`storeOffsets`)."""

    group: ClassicGroup | ConsumerGroup
    inbound: Inbound
    member_id: str
    generation_id: int
    offsets: list[tuple[TopicPartition, int, int]]
    """(partition, offset, leader epoch), in the request's order."""
    commit_ms: int
    group_state: str = ""
    """The group's state when the commit was validated (it may change before the append ends)."""
    coordinator_epoch: int | None = None
    """The leader epoch of the group's partition this coordinator loaded it in: its records'."""


@dataclass(slots=True)
class GroupManager:
    config: GroupCoordinatorConfig
    groups: dict[str, Group] = field(default_factory=dict)
    """Every loaded group, of any type (`Group`); only classic ones exist yet."""
    owned: dict[int, int] = field(default_factory=dict)
    """Loaded partitions and the leader epoch they were loaded in."""
    loading: dict[int, int] = field(default_factory=dict)
    """Partitions being loaded, with their leader epoch (only when `load_ms` > 0)."""
    pending_loads: dict[int, tuple[RecordBatch, ...]] = field(default_factory=dict)
    """The log each loading partition is loaded from."""
    epochs: dict[int, int] = field(default_factory=dict)
    """`epochForPartitionId`: the newest leader epoch heard per partition."""
    appends: dict[int, Any] = field(default_factory=dict)
    """Correlation id -> a `PendingStore`, `PendingCommit` or `PendingConsumerWrite`."""
    next_id: int = 0
    consumer_writes: dict[str, list[Any]] = field(default_factory=dict)
    """Consumer groups with records in flight, and the heartbeats (inbounds) and timeouts
    ((kind, member id)) that wait for them, in order."""
    rebalance_epochs: dict[tuple[str, str], int] = field(default_factory=dict)
    """(group, member) -> the epoch its armed rebalance timeout fences it at."""
    join_deadlines: dict[tuple[str, str], int] = field(default_factory=dict)
    """(group, classic member of a consumer group) -> when its armed join timeout fires."""

    # ------------------------------------------------------------------ ownership

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.config.offsets_topic_num_partitions)

    def status_error(self, group_id: str, *, offsets_api: bool = False) -> ErrorCode:
        """`validateGroupStatus`: an invalid group id, loading, or not this coordinator's group.

        `isValidGroupId` is per API: OffsetCommit and OffsetFetch (with DescribeGroups and
        DeleteGroups) accept the empty group id, which clients committing without group
        management used before 2.2 (KIP-289); every API of group membership refuses it."""
        if not group_id and not offsets_api:
            return ErrorCode.INVALID_GROUP_ID
        partition = self.partition_for(group_id)
        if partition in self.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if partition not in self.owned:
            return ErrorCode.NOT_COORDINATOR
        return ErrorCode.NONE

    def maybe_update_epoch(self, partition: int, leader_epoch: int | None) -> bool:
        """`maybeUpdateCoordinatorEpoch`: keep the newest epoch; False for an older one (a
        stale election or resignation). None (StopReplica without an epoch) always passes."""
        current = self.epochs.get(partition)
        if leader_epoch is not None and (current is None or leader_epoch > current):
            self.epochs[partition] = leader_epoch
        return leader_epoch is None or self.epochs.get(partition) == leader_epoch

    def groups_of(self, partition: int) -> list[Group]:
        return [g for gid, g in sorted(self.groups.items()) if self.partition_for(gid) == partition]

    # ------------------------------------------------------------------ groups and members

    def classic_group(self, group_id: str) -> ClassicGroup | None:
        """`getOrMaybeCreateClassicGroup` without creating: the group a classic protocol's
        request names, if it is loaded here and classic (Kafka's classic lookups do not find a
        consumer group; the coordinator answers the classic membership requests to one itself)."""
        group = self.groups.get(group_id)
        return None if group is None or isinstance(group, ConsumerGroup) else as_classic(group)

    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        """`consumerGroup`: the consumer group of that id, if it is loaded here."""
        group = self.groups.get(group_id)
        return group if isinstance(group, ConsumerGroup) else None

    def create_classic_group(self, out: Out, group_id: str, now_ms: int) -> ClassicGroup:
        """`getOrMaybeCreateClassicGroup`/`addGroup`: a new group starts Empty at generation 0."""
        group = ClassicGroup(group_id, state_timestamp_ms=now_ms)
        self.groups[group_id] = group
        announce_group(out, group)
        return group

    def new_member_id(self, ctx: Ctx, prefix: str) -> str:
        """`generateMemberId`: the client id (or a static member's instance id), a dash, and a
        UUID drawn from the actor's random stream."""
        return f"{prefix}-{self.new_uuid(ctx)}"

    def new_uuid(self, ctx: Ctx) -> str:
        """A UUID from the actor's random stream (`Uuid.randomUuid`: a consumer-protocol member
        id made by the coordinator)."""
        return str(uuid.UUID(int=ctx.rng.getrandbits(128), version=4))

    # ------------------------------------------------------------------ appends

    def append(self, out: Out, group_id: str, values: tuple[str, ...], pending: PendingStore | PendingCommit | None) -> None:
        """Write records to the group's partition through the broker's produce path: acks=-1
        with `offsets.commit.timeout.ms`, or (tombstones, `pending` None) acks=0 as
        `cleanupGroupMetadata` does, with no answer."""
        self.next_id += 1
        data = ProducePartitionData(
            OFFSETS_TOPIC, self.partition_for(group_id), values, size_bytes=batch_size_bytes(values)
        )
        acks = 0 if pending is None else -1
        request = ProduceRequest(acks, self.config.offsets_commit_timeout_ms, (data,))
        out.send(self.config.broker, request, self.next_id)
        if pending is not None:
            self.appends[self.next_id] = pending

    # ------------------------------------------------------------------ timers

    def schedule_session(self, out: Out, group: ClassicGroup, member: MemberMetadata, timeout_ms: int | None = None) -> None:
        """`completeAndScheduleNextExpiration`: the member's expiry, `timeout_ms` (default its
        session timeout) from now, replacing the one before."""
        after = member.session_timeout_ms if timeout_ms is None else timeout_ms
        out.set_timer(timer_key("session", group.group_id, member.member_id), after)

    def cancel_session(self, out: Out, group: ClassicGroup, member_id: str) -> None:
        """`removeHeartbeatForLeavingMember`."""
        out.cancel_timer(timer_key("session", group.group_id, member_id))

    def snapshot(self) -> dict[str, Any]:
        return {
            "broker_id": self.config.broker_id,
            "loaded_partitions": dict(sorted(self.owned.items())),
            "loading_partitions": sorted(self.loading),
            "groups": {
                gid: consumer_group_snapshot(g) if isinstance(g, ConsumerGroup) else group_snapshot(as_classic(g))
                for gid, g in sorted(self.groups.items())
            },
        }


def announce_group(out: Out, group: ClassicGroup) -> None:
    """A group comes into being here (created, or loaded): its state with no previous one."""
    out.emit(
        "group_state_changed",
        group_id=group.group_id,
        previous_state=None,
        state=group.state.value,
        generation_id=group.generation_id,
    )


def assignment_strings(assignment: Assignment) -> list[str]:
    return [f"{tps.topic}-{p}" for tps in assignment.partitions for p in tps.partitions]


def group_snapshot(group: ClassicGroup) -> dict[str, Any]:
    return {
        "state": group.state.value,
        "generation_id": group.generation_id,
        "protocol_type": group.protocol_type,
        "protocol_name": group.protocol_name,
        "leader": group.leader_id,
        "members": {
            m.member_id: {
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "session_timeout_ms": m.session_timeout_ms,
                "rebalance_timeout_ms": m.rebalance_timeout_ms,
                "protocols": [p.name for p in m.protocols],
                "assignment": assignment_strings(m.assignment),
                "awaiting_join": m.awaiting_join is not None,
                "awaiting_sync": m.awaiting_sync is not None,
                "is_new": m.is_new,
            }
            for m in group.sorted_members()
        },
        "pending_members": list(group.pending_members),
        "offsets": {str(tp): c.offset for tp, c in sorted(group.offsets.items())},
        "pending_offsets": {str(tp): staged[0] for tp, staged in sorted(group.pending_offset_commits.items())},
        "state_timestamp_ms": group.state_timestamp_ms,
    }
