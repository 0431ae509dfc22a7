"""What the replica manager does for consumer groups: FindCoordinator, and telling its node's
group coordinator about `__consumer_offsets` leadership (`KafkaApis.handleFindCoordinatorRequest`,
`ReplicaManager.becomeLeaderOrFollower`'s `onLeadershipChange`, `stopReplicas`).

- FindCoordinator: the group's partition (`placement.partition_for`), and its leader from the
  metadata cache (as Metadata is answered), which must be a live broker; without ZooKeeper the
  leaders are the fixed ones of the bootstrap. COORDINATOR_NOT_AVAILABLE when the partition or
  its leader is unknown.
- A LeaderAndIsr that makes this broker leader of a `__consumer_offsets` partition sends the
  coordinator `CoordinatorElected` with the partition's log up to its end (Kafka loads to the
  log end); one that makes it a follower (or leaves the partition without a leader) after it
  led sends `CoordinatorResigned`, as does a StopReplica. Both carry the leader epoch, so the
  coordinator can ignore one that arrives after a newer one.

In a cluster without consumer groups there is no coordinator and none of this sends anything.
"""

from __future__ import annotations

from actors.broker.context import MetadataContext
from actors.broker.partition import Partition
from actors.core import Inbound, Out
from actors.group.placement import OFFSETS_TOPIC, partition_for
from protocols.errors import ErrorCode
from protocols.group import (
    GROUP_KEY_TYPE,
    CoordinatorElected,
    CoordinatorResigned,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from protocols.types import TopicPartition

__all__ = ["leadership_changed", "on_find_coordinator", "replica_stopped"]


def on_find_coordinator(b: MetadataContext, out: Out, inbound: Inbound, req: FindCoordinatorRequest) -> None:
    leader = _coordinator_of(b, req.key) if req.key_type == GROUP_KEY_TYPE else -1
    if leader < 0:
        out.reply(inbound, FindCoordinatorResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE))
    else:
        out.reply(inbound, FindCoordinatorResponse(ErrorCode.NONE, leader))


def _coordinator_of(b: MetadataContext, group_id: str) -> int:
    """The live leader of the group's partition, or -1."""
    config = b.config
    if config.group_coordinator is None:
        return -1
    partition = partition_for(group_id, config.offsets_topic_num_partitions)
    cached = b.state.metadata.get(TopicPartition(OFFSETS_TOPIC, partition))
    if cached is not None:
        alive = cached.leader in b.state.live_brokers
        return cached.leader if cached.leader >= 0 and alive else -1
    if partition < len(config.offsets_topic_leaders):
        return config.offsets_topic_leaders[partition]
    return -1


def leadership_changed(b: MetadataContext, out: Out, partition: Partition, *, was_leader: bool) -> None:
    """After LeaderAndIsr applied a new epoch to `partition`: tell the coordinator."""
    coordinator = b.config.group_coordinator
    if coordinator is None or partition.tp.topic != OFFSETS_TOPIC:
        return
    if partition.is_leader:
        batches = tuple(partition.log.batches)
        out.send(coordinator, CoordinatorElected(partition.tp.partition, partition.leader_epoch, batches))
    elif was_leader:
        out.send(coordinator, CoordinatorResigned(partition.tp.partition, partition.leader_epoch))


def replica_stopped(b: MetadataContext, out: Out, tp: TopicPartition, leader_epoch: int) -> None:
    """StopReplica: the coordinator unloads the partition if it has it (a negative epoch, the
    controller's "no epoch", resigns whatever the epoch)."""
    coordinator = b.config.group_coordinator
    if coordinator is not None and tp.topic == OFFSETS_TOPIC:
        out.send(coordinator, CoordinatorResigned(tp.partition, leader_epoch))
