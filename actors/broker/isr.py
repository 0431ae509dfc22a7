"""A leader's ISR changes: shrinking at the `isr-expiration` task, expanding on a follower's
fetch, and committing the change through the controller or ZooKeeper.

Models `Partition.maybeShrinkIsr` and `maybeExpandIsr` (with KAFKA-7128's epoch-start condition,
`replica_state.can_join_isr`) and the way the change is made by version: from 2.7 (KIP-497) an
AlterPartition to the controller through `AlterPartitionManager`, pending until answered and
sent again after a timeout, or at once to the next controller when the one it went to cannot
take it (`controller_unreachable`, `controller_changed`); before, a conditional write of the
partition-state znode (`ReplicationUtils.updateLeaderAndIsr`). While a change is pending the
leader counts the *maximal* ISR (`Partition.maximal_isr`). A committed change moves the HW and
completes the purgatory (`DelayedOperations`); a refused one leaves the committed ISR as it was
(`Partition.handleAlterPartitionError`).
"""

from __future__ import annotations

from dataclasses import replace

from actors.addresses import controller_address
from actors.broker.context import IsrContext
from actors.broker.partition import Partition, PendingIsr
from actors.broker.replica_state import can_join_isr, out_of_sync_replicas
from actors.core import Address, Ctx, Out
from protocols.errors import ErrorCode
from protocols.metadata import IsrUpdateRequest, IsrUpdateResponse
from protocols.replication import AlterPartitionItem, AlterPartitionRequest, AlterPartitionResponse
from protocols.types import TopicPartition

__all__ = [
    "alter_partition_timed_out",
    "controller_changed",
    "controller_unreachable",
    "maybe_expand_isr",
    "maybe_shrink_isr",
    "on_alter_partition_response",
    "on_isr_update_response",
]


def maybe_shrink_isr(b: IsrContext, ctx: Ctx, out: Out) -> None:
    """The `isr-expiration` task: drop followers that are not caught up."""
    for tp in sorted(b.state.partitions):
        partition = b.state.partitions[tp]
        if not partition.is_leader or partition.pending_isr is not None:
            continue
        if partition.resting:
            partition.wake()  # the follower times are read now
        lagging = out_of_sync_replicas(
            partition.isr,
            b.config.broker_id,
            partition.followers,
            partition.log.log_end_offset,
            ctx.now_ms,
            b.config.replica_lag_time_max_ms,
        )
        if lagging:
            _propose_isr(b, ctx, out, partition, partition.isr - lagging)


def maybe_expand_isr(b: IsrContext, ctx: Ctx, out: Out, partition: Partition, replica: int) -> None:
    """After a follower's fetch: propose it for the ISR once it has caught up, unless a change
    is pending (`maybeExpandIsr`). From 3.3 (KIP-841) only a follower the metadata cache lists
    as live is eligible (`isReplicaIsrEligible`; a broker in controlled shutdown is still
    listed, and the controller refuses it)."""
    if replica in partition.isr or partition.pending_isr is not None:
        return
    if b.config.profile.ineligible_replicas and b.config.zk_client is not None and replica not in b.state.live_brokers:
        return
    state = partition.followers[replica]
    epoch_start = partition.log.epoch_start_offset()
    if can_join_isr(state, partition.log.high_watermark, epoch_start, b.config.profile):
        _propose_isr(b, ctx, out, partition, partition.isr | {replica})


def _propose_isr(b: IsrContext, ctx: Ctx, out: Out, partition: Partition, new_isr: frozenset[int]) -> None:
    """Propose an ISR change, the way this version does it:
    - 2.7+ (KIP-497): AlterPartition to the controller, pending until it answers;
    - before 2.7: a conditional write of the partition-state znode through this node's
      ZooKeeper client (`Partition.updateIsr`), pending until it answers;
    - in a cluster without ZooKeeper: the leader commits the change itself, as that write would.
    """
    controller_node = ""
    if b.config.profile.alter_partition:
        controller = _controller(b)
        if controller is None:
            if b.config.zk_client is None:
                _commit_isr(b, ctx, out, partition, new_isr, partition.partition_epoch + 1)
            return  # no controller known yet: the next check proposes again
        correlation_id = b.state.new_id()
        item = AlterPartitionItem(
            partition.tp.topic,
            partition.tp.partition,
            partition.leader_epoch,
            tuple(sorted(new_isr)),
            partition.partition_epoch,
        )
        out.send(controller, AlterPartitionRequest(b.config.broker_id, b.state.broker_epoch, (item,)), correlation_id)
        controller_node = controller.node
    elif b.config.zk_client is not None:
        correlation_id = b.state.new_id()
        request = IsrUpdateRequest(
            partition.tp.topic,
            partition.tp.partition,
            b.config.broker_id,
            partition.leader_epoch,
            tuple(sorted(new_isr)),
            partition.controller_epoch,
            partition.partition_epoch,
        )
        out.send(b.config.zk_client, request, correlation_id)
    else:
        _commit_isr(b, ctx, out, partition, new_isr, partition.partition_epoch + 1)
        return
    partition.pending_isr = PendingIsr(new_isr, correlation_id, controller_node)
    out.set_timer(f"alter-partition:{correlation_id}", b.config.replica_socket_timeout_ms)


def _controller(b: IsrContext) -> Address | None:
    """Where AlterPartition goes: the fixed controller of a test, else the one heard from last."""
    if b.config.controller is not None:
        return b.config.controller
    return controller_address(b.state.controller_id) if b.state.controller_id >= 0 else None


def controller_unreachable(b: IsrContext, ctx: Ctx, out: Out, node: str) -> None:
    """The connection to `node` closed, or a connection to it was refused: the AlterPartitions
    in flight to it failed. `BrokerToControllerRequestThread` puts such a request back at the
    head of its queue and sends it to the controller its metadata cache names, without waiting
    for `controller.socket.timeout.ms`."""
    for tp in sorted(b.state.partitions):
        partition = b.state.partitions[tp]
        pending = partition.pending_isr
        if pending is not None and pending.controller == node and pending.waiting_beyond is None:
            _send_elsewhere(b, ctx, out, partition, pending)


def _send_elsewhere(b: IsrContext, ctx: Ctx, out: Out, partition: Partition, pending: PendingIsr) -> None:
    """Send the change again to the controller now known if it is another one; else wait for
    news of a newer one (Kafka tries the same broker every 50 ms, its reconnect back-off, until
    an UpdateMetadata names another: the same but for those refused attempts)."""
    out.cancel_timer(f"alter-partition:{pending.correlation_id}")
    controller = _controller(b)
    if controller is not None and controller.node != pending.controller:
        partition.pending_isr = None
        _propose_isr(b, ctx, out, partition, pending.isr)
    else:
        partition.pending_isr = replace(pending, waiting_beyond=b.state.controller_epoch)


def controller_changed(b: IsrContext, ctx: Ctx, out: Out) -> None:
    """An UpdateMetadata named the controller (`MetadataCacheControllerNodeProvider`): the
    changes waiting for a newer controller than the one that failed them go to it now."""
    for tp in sorted(b.state.partitions):
        partition = b.state.partitions[tp]
        pending = partition.pending_isr
        if pending is None or pending.waiting_beyond is None or b.state.controller_epoch <= pending.waiting_beyond:
            continue
        partition.pending_isr = None
        if partition.is_leader:
            _propose_isr(b, ctx, out, partition, pending.isr)


def alter_partition_timed_out(b: IsrContext, ctx: Ctx, out: Out, correlation_id: int) -> None:
    """No answer came. `AlterPartitionManager` keeps the change until one does, and its channel
    to the controller sends it again: the same ISR and partition epoch, which the controller
    answers with its current state if it had already applied it. Before 2.7 the ZooKeeper
    write is dropped, and the next check or fetch proposes the change again."""
    for tp in sorted(b.state.partitions):
        partition = b.state.partitions[tp]
        pending = partition.pending_isr
        if pending is not None and pending.correlation_id == correlation_id:
            partition.pending_isr = None
            if b.config.profile.alter_partition and partition.is_leader:
                _propose_isr(b, ctx, out, partition, pending.isr)


def on_alter_partition_response(
    b: IsrContext, ctx: Ctx, out: Out, correlation_id: int, resp: AlterPartitionResponse
) -> None:
    """The controller's answer. NOT_CONTROLLER for the whole request sends it to the next
    controller (`BrokerToControllerRequestThread.handleResponse`). A partition's error drops
    the change and keeps the committed ISR, which is what `handleAlterPartitionError` does on
    INELIGIBLE_REPLICA (3.3+): the controller says the partition epoch is right and nothing
    was applied, so the next fetch of a follower that is eligible again proposes anew."""
    if resp.error_code is ErrorCode.NOT_CONTROLLER:
        for tp in sorted(b.state.partitions):
            partition = b.state.partitions[tp]
            pending = partition.pending_isr
            if pending is not None and pending.correlation_id == correlation_id and pending.waiting_beyond is None:
                _send_elsewhere(b, ctx, out, partition, pending)
        return
    for result in resp.partitions:
        partition = b.state.partitions.get(TopicPartition(result.topic, result.partition))
        pending = None if partition is None else partition.pending_isr
        if partition is None or pending is None or pending.correlation_id != correlation_id:
            continue  # an answer to a request this leader no longer waits for
        partition.pending_isr = None
        out.cancel_timer(f"alter-partition:{correlation_id}")
        if result.error_code is ErrorCode.NONE and result.leader_epoch == partition.leader_epoch:
            _commit_isr(b, ctx, out, partition, frozenset(result.isr), result.partition_epoch)
        else:
            out.emit(
                "isr_change_failed",
                topic=partition.tp.topic,
                partition=partition.tp.partition,
                error=result.error_code.name,
            )


def on_isr_update_response(
    b: IsrContext, ctx: Ctx, out: Out, correlation_id: int, resp: IsrUpdateResponse
) -> None:
    """Before 2.7: the ZooKeeper write of an ISR change came back. On a version conflict the
    leader keeps its ISR and waits for the controller ("cached zkVersion not equal")."""
    for tp in sorted(b.state.partitions):
        partition = b.state.partitions[tp]
        pending = partition.pending_isr
        if pending is None or pending.correlation_id != correlation_id:
            continue
        partition.pending_isr = None
        out.cancel_timer(f"alter-partition:{correlation_id}")
        if resp.error_code is ErrorCode.NONE:
            _commit_isr(b, ctx, out, partition, pending.isr, resp.zk_version)
        else:
            out.emit("isr_change_failed", topic=tp.topic, partition=tp.partition, error=resp.error_code.name)


def _commit_isr(
    b: IsrContext, ctx: Ctx, out: Out, partition: Partition, new_isr: frozenset[int], partition_epoch: int
) -> None:
    grew = new_isr > partition.isr
    partition.isr = new_isr
    partition.partition_epoch = partition_epoch
    out.emit(
        "isr_expanded" if grew else "isr_shrunk",
        topic=partition.tp.topic,
        partition=partition.tp.partition,
        isr=sorted(new_isr),
        leader_epoch=partition.leader_epoch,
        partition_epoch=partition_epoch,
    )
    b.after_leader_change(ctx, out, partition, leo_changed=False)
