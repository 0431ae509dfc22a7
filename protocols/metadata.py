"""The controller's other requests and the clients' view of the cluster: UpdateMetadata,
StopReplica, ControlledShutdown and Metadata; the messages between a broker's replica manager
and the ZooKeeper client on its own node; and the operator's signal that stops a broker.

UpdateMetadata fills every broker's metadata cache (`MetadataCache`); clients read that cache
with Metadata. Field names are Kafka's (`offline_replicas`, `zk_version`, `delete_partition`).
"""

from __future__ import annotations

from dataclasses import dataclass

from protocols.errors import ErrorCode
from protocols.keys import ApiKey, SimKey
from protocols.registry import Kind, message, struct

# --------------------------------------------------------------------------- UpdateMetadata (6)


@struct
@dataclass(frozen=True, slots=True)
class UpdateMetadataPartition:
    topic: str
    partition: int
    controller_epoch: int
    leader: int
    """-1: no leader (offline)."""
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int
    replicas: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()


@message(ApiKey.UPDATE_METADATA, kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class UpdateMetadataResponse:
    error_code: ErrorCode


@message(ApiKey.UPDATE_METADATA, kind=Kind.REQUEST, response=UpdateMetadataResponse)
@dataclass(frozen=True, slots=True)
class UpdateMetadataRequest:
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partitions: tuple[UpdateMetadataPartition, ...]
    live_brokers: tuple[int, ...]


# --------------------------------------------------------------------------- StopReplica (5)


@struct
@dataclass(frozen=True, slots=True)
class StopReplicaPartition:
    topic: str
    partition: int
    leader_epoch: int
    delete_partition: bool = False


@message(ApiKey.STOP_REPLICA, kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class StopReplicaResponse:
    error_code: ErrorCode


@message(ApiKey.STOP_REPLICA, kind=Kind.REQUEST, response=StopReplicaResponse)
@dataclass(frozen=True, slots=True)
class StopReplicaRequest:
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partitions: tuple[StopReplicaPartition, ...]


# --------------------------------------------------------------------------- ControlledShutdown (7)


@struct
@dataclass(frozen=True, slots=True)
class RemainingPartition:
    topic: str
    partition: int


@message(ApiKey.CONTROLLED_SHUTDOWN, kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class ControlledShutdownResponse:
    error_code: ErrorCode
    remaining_partitions: tuple[RemainingPartition, ...] = ()
    """The partitions the broker still leads: no other live replica of the ISR could take them."""


@message(ApiKey.CONTROLLED_SHUTDOWN, kind=Kind.REQUEST, response=ControlledShutdownResponse)
@dataclass(frozen=True, slots=True)
class ControlledShutdownRequest:
    """A stopping broker asks the controller to move its leaderships (`KafkaServer.controlledShutdown`)."""

    broker_id: int
    broker_epoch: int


# --------------------------------------------------------------------------- Metadata (3)


@struct
@dataclass(frozen=True, slots=True)
class MetadataPartition:
    topic: str
    partition: int
    error_code: ErrorCode
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@message(ApiKey.METADATA, kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class MetadataResponse:
    brokers: tuple[int, ...]
    controller_id: int
    partitions: tuple[MetadataPartition, ...]
    """The partitions of the topics asked for; an unknown topic is one entry with partition -1
    and UNKNOWN_TOPIC_OR_PARTITION."""


@message(ApiKey.METADATA, kind=Kind.REQUEST, response=MetadataResponse)
@dataclass(frozen=True, slots=True)
class MetadataRequest:
    topics: tuple[str, ...]


# --------------------------------------------------------------------------- inside a broker node


@message(SimKey.BROKER_REGISTERED, kind=Kind.ONE_WAY)
@dataclass(frozen=True, slots=True)
class BrokerRegistered:
    """The ZooKeeper client tells its replica manager the broker epoch it registered with (the
    czxid of /brokers/ids/N); requests aimed at an older epoch get STALE_BROKER_EPOCH."""

    broker_epoch: int


@message(SimKey.ISR_UPDATE, kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class IsrUpdateResponse:
    error_code: ErrorCode
    """NONE, or INVALID_UPDATE_VERSION when the znode's version moved (ZooKeeper's BADVERSION)."""
    zk_version: int = -1


@message(SimKey.ISR_UPDATE, kind=Kind.REQUEST, response=IsrUpdateResponse)
@dataclass(frozen=True, slots=True)
class IsrUpdateRequest:
    """Before 2.7 a leader writes its ISR change itself (`Partition.updateIsr`): a conditional
    setData of the partition-state znode, then an `/isr_change_notification` sequential node
    the controller watches. The replica manager asks its node's ZooKeeper client to do both."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    zk_version: int


@message(SimKey.SHUTDOWN_SIGNAL, kind=Kind.ONE_WAY)
@dataclass(frozen=True, slots=True)
class ShutdownSignal:
    """The operator stops a broker (SIGTERM, then `KafkaServer.shutdown`). The node's ZooKeeper
    client runs the controlled shutdown, then hands the signal to the replica manager, which
    checkpoints and exits. `exit_after_ms`: the process exits no earlier than this long after
    the signal (the rest of the shutdown sequence), answering requests until then."""

    exit_after_ms: int = 0

    @property
    def action(self) -> str:
        return "shutdown"
