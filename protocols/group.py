"""Consumer-group messages: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
OffsetCommit and OffsetFetch, the classic consumer protocol's subscription and assignment, and
KIP-848's ConsumerGroupHeartbeat, which replaces JoinGroup, SyncGroup, Heartbeat and LeaveGroup
for a member of a consumer group.

Field names are Kafka's (`JoinGroupRequest.json`, `ConsumerProtocolSubscription.json`, ...).
Kafka carries a member's subscription and assignment as opaque bytes that only the consumer
reads; here they are registered structures, so the coordinator can store them in its log and a
log line can show them. Versions here are this registry's own: what changed between Kafka's
client versions (KIP-394's MEMBER_ID_REQUIRED from 2.2, static membership from 2.3, ...) is
chosen by the version profile of the cluster, not by a wire version.

Two messages exist only inside the simulator: a broker tells the group coordinator of its node
that it became, or stopped being, the leader of a `__consumer_offsets` partition
(`GroupCoordinator.onElection` and `onResignation`, which Kafka calls in-process), the first
with the partition's log to load the groups from.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocols.errors import ErrorCode
from protocols.keys import ApiKey, SimKey
from protocols.registry import Kind, field, message, struct
from protocols.replication import RecordBatch

__all__ = [
    "Assignment",
    "CoordinatorElected",
    "CoordinatorResigned",
    "ConsumerGroupHeartbeatAssignment",
    "ConsumerGroupHeartbeatRequest",
    "ConsumerGroupHeartbeatResponse",
    "FindCoordinatorRequest",
    "FindCoordinatorResponse",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "JoinGroupMember",
    "JoinGroupProtocol",
    "JoinGroupRequest",
    "JoinGroupResponse",
    "JOIN_EPOCH",
    "LEAVE_EPOCH",
    "LeaveGroupRequest",
    "LeaveGroupResponse",
    "MemberIdentity",
    "OffsetCommitPartition",
    "OffsetCommitRequest",
    "OffsetCommitResponse",
    "OffsetCommitTopic",
    "OffsetFetchPartition",
    "OffsetFetchRequest",
    "OffsetFetchResponse",
    "OffsetFetchTopic",
    "PartitionError",
    "STATIC_LEAVE_EPOCH",
    "Subscription",
    "SyncGroupAssignment",
    "SyncGroupRequest",
    "SyncGroupResponse",
    "TopicPartitions",
]

GROUP_KEY_TYPE = 0
"""`FindCoordinator` key type of a consumer group (1 is a transactional id)."""


# --------------------------------------------------------------------------- the consumer protocol


@struct
@dataclass(frozen=True, slots=True)
class TopicPartitions:
    topic: str
    partitions: tuple[int, ...]


@struct
@dataclass(frozen=True, slots=True)
class Subscription:
    """`ConsumerProtocolSubscription`: what a member asks for, and (cooperative, KIP-429) what
    it owns and in which generation (KIP-792)."""

    topics: tuple[str, ...]
    owned_partitions: tuple[TopicPartitions, ...] = ()
    generation_id: int = -1


@struct
@dataclass(frozen=True, slots=True)
class Assignment:
    """`ConsumerProtocolAssignment`: the partitions the leader gave a member."""

    partitions: tuple[TopicPartitions, ...] = ()


# --------------------------------------------------------------------------- FindCoordinator (10)


@message(ApiKey.FIND_COORDINATOR, kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class FindCoordinatorResponse:
    error_code: ErrorCode
    node_id: int = -1
    """The coordinator's broker id (the leader of the group's `__consumer_offsets` partition)."""


@message(ApiKey.FIND_COORDINATOR, kind=Kind.REQUEST, response=FindCoordinatorResponse)
@dataclass(frozen=True, slots=True)
class FindCoordinatorRequest:
    key: str
    """The group id."""
    key_type: int = GROUP_KEY_TYPE


# --------------------------------------------------------------------------- JoinGroup (11)


@struct
@dataclass(frozen=True, slots=True)
class JoinGroupProtocol:
    """One assignor the member supports, in its order of preference."""

    name: str
    metadata: Subscription


@struct
@dataclass(frozen=True, slots=True)
class JoinGroupMember:
    member_id: str
    group_instance_id: str | None
    metadata: Subscription


@message(ApiKey.JOIN_GROUP, kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class JoinGroupResponse:
    error_code: ErrorCode
    generation_id: int = -1
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    """KIP-814 (3.2): a static leader that replaced itself must not assign again."""
    member_id: str = ""
    members: tuple[JoinGroupMember, ...] = ()
    """Only in the leader's response: every member with its subscription."""


@message(ApiKey.JOIN_GROUP, kind=Kind.REQUEST, response=JoinGroupResponse)
@dataclass(frozen=True, slots=True)
class JoinGroupRequest:
    group_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    """The consumer's `max.poll.interval.ms`."""
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str = "consumer"
    protocols: tuple[JoinGroupProtocol, ...] = ()
    client_id: str = ""
    """The request header's `clientId`, which the coordinator makes the member id's prefix;
    "" from a client that does not say: Java's default for its group."""


# --------------------------------------------------------------------------- SyncGroup (14)


@struct
@dataclass(frozen=True, slots=True)
class SyncGroupAssignment:
    member_id: str
    assignment: Assignment


@message(ApiKey.SYNC_GROUP, kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class SyncGroupResponse:
    error_code: ErrorCode
    protocol_name: str | None = None
    assignment: Assignment = Assignment()


@message(ApiKey.SYNC_GROUP, kind=Kind.REQUEST, response=SyncGroupResponse)
@dataclass(frozen=True, slots=True)
class SyncGroupRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    protocol_name: str | None = None
    assignments: tuple[SyncGroupAssignment, ...] = ()
    """Only the leader's request carries them."""


# --------------------------------------------------------------------------- Heartbeat (12)


@message(ApiKey.HEARTBEAT, kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    error_code: ErrorCode


@message(ApiKey.HEARTBEAT, kind=Kind.REQUEST, response=HeartbeatResponse)
@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


# --------------------------------------------------------------------------- LeaveGroup (13)


@struct
@dataclass(frozen=True, slots=True)
class MemberIdentity:
    member_id: str
    group_instance_id: str | None = None


@message(ApiKey.LEAVE_GROUP, kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class LeaveGroupResponse:
    error_code: ErrorCode


@message(ApiKey.LEAVE_GROUP, kind=Kind.REQUEST, response=LeaveGroupResponse)
@dataclass(frozen=True, slots=True)
class LeaveGroupRequest:
    group_id: str
    members: tuple[MemberIdentity, ...]


# --------------------------------------------------------------------------- ConsumerGroupHeartbeat (68)

JOIN_EPOCH = 0
"""The member epoch of a heartbeat that joins (or rejoins after being fenced)."""
LEAVE_EPOCH = -1
"""The member epoch of a dynamic member's leave: it is removed and the group epoch bumped."""
STATIC_LEAVE_EPOCH = -2
"""The member epoch of a static member's leave: it keeps its assignment until its session
expires, and a member with its instance id may replace it meanwhile."""


@struct
@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatAssignment:
    """The member's assignment at its member epoch (Kafka names topics by id; here by name)."""

    topic_partitions: tuple[TopicPartitions, ...] = ()


@message(ApiKey.CONSUMER_GROUP_HEARTBEAT, kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatResponse:
    error_code: ErrorCode
    member_id: str | None = None
    member_epoch: int = -1
    heartbeat_interval_ms: int = 0
    assignment: ConsumerGroupHeartbeatAssignment | None = None
    """Set for a full request and whenever the assignment changed; None: unchanged."""


@message(ApiKey.CONSUMER_GROUP_HEARTBEAT, kind=Kind.REQUEST, response=ConsumerGroupHeartbeatResponse)
@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatRequest:
    """A join (epoch 0), a heartbeat, or a leave (-1, or -2 for a static member). A field left
    None (or -1 for the rebalance timeout) is unchanged since the member's last request; a join
    and every request after an error are full."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    server_assignor: str | None = None
    topic_partitions: tuple[TopicPartitions, ...] | None = None
    """What the member owns: the partitions it has acted on (revoked or assigned)."""


# --------------------------------------------------------------------------- OffsetCommit (8)


@struct
@dataclass(frozen=True, slots=True)
class OffsetCommitPartition:
    partition: int
    committed_offset: int
    committed_leader_epoch: int = -1


@struct
@dataclass(frozen=True, slots=True)
class OffsetCommitTopic:
    name: str
    partitions: tuple[OffsetCommitPartition, ...]


@struct
@dataclass(frozen=True, slots=True)
class PartitionError:
    topic: str
    partition: int
    error_code: ErrorCode


@message(ApiKey.OFFSET_COMMIT, kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class OffsetCommitResponse:
    """Kafka answers an error per partition; a commit is validated as a whole, so they agree."""

    partitions: tuple[PartitionError, ...]


@message(ApiKey.OFFSET_COMMIT, kind=Kind.REQUEST, response=OffsetCommitResponse)
@dataclass(frozen=True, slots=True)
class OffsetCommitRequest:
    group_id: str
    generation_id: int = -1
    """-1: a commit from outside the group protocol (manual assignment, an admin client). A
    consumer-protocol member sends its member epoch here (OffsetCommit v9's
    `GenerationIdOrMemberEpoch`)."""
    member_id: str = ""
    group_instance_id: str | None = None
    topics: tuple[OffsetCommitTopic, ...] = ()


# --------------------------------------------------------------------------- OffsetFetch (9)


@struct
@dataclass(frozen=True, slots=True)
class OffsetFetchPartition:
    partition: int
    committed_offset: int = -1
    """-1: the group has no committed offset for it."""
    committed_leader_epoch: int = -1


@struct
@dataclass(frozen=True, slots=True)
class OffsetFetchTopic:
    name: str
    partitions: tuple[OffsetFetchPartition, ...]


@message(ApiKey.OFFSET_FETCH, kind=Kind.RESPONSE, versions=(0, 1))
@dataclass(frozen=True, slots=True)
class OffsetFetchResponse:
    error_code: ErrorCode
    topics: tuple[OffsetFetchTopic, ...] = ()


@message(ApiKey.OFFSET_FETCH, kind=Kind.REQUEST, versions=(0, 1), response=OffsetFetchResponse)
@dataclass(frozen=True, slots=True)
class OffsetFetchRequest:
    """Version 1 is Kafka's OffsetFetch v9 (KIP-848): it adds the member's id and epoch."""

    group_id: str
    topics: tuple[TopicPartitions, ...]
    require_stable: bool = True
    member_id: str | None = field(default=None, since=1)
    """A consumer-protocol member's id and epoch, which a consumer group checks; None and -1
    from anyone else (a classic consumer, an admin tool)."""
    member_epoch: int = field(default=-1, since=1)


# --------------------------------------------------------------------------- inside a broker node


@message(SimKey.COORDINATOR_ELECTED, kind=Kind.ONE_WAY)
@dataclass(frozen=True, slots=True)
class CoordinatorElected:
    """The broker became the leader of `__consumer_offsets-<partition>`: load its groups from
    `batches`, the partition's log up to its end (`scheduleLoadGroupAndOffsets`)."""

    partition: int
    leader_epoch: int
    batches: tuple[RecordBatch, ...]


@message(SimKey.COORDINATOR_RESIGNED, kind=Kind.ONE_WAY)
@dataclass(frozen=True, slots=True)
class CoordinatorResigned:
    """The broker is no longer the leader of `__consumer_offsets-<partition>`: unload its
    groups (`removeGroupsForPartition`)."""

    partition: int
    leader_epoch: int
