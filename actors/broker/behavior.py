"""The broker's replica manager as a behaviour: LeaderAndIsr, produce, fetch, and its tasks.

Models `ReplicaManager`: `becomeLeaderOrFollower` with controller-epoch fencing (a request from
an older controller gets STALE_CONTROLLER_EPOCH; a partition whose leader epoch is not newer is
left alone), the `isr-expiration` task every `replica.lag.time.max.ms / 2` from start-up, and
the HW checkpoint every `replica.high.watermark.checkpoint.interval.ms`, and the log manager's
retention check (`LogManager.cleanupLogs`) every `log.retention.check.interval.ms` from
`log.initial.task.delay.ms`. A restarted broker recovers every partition it finds on its disk
and waits for the controller.

`Broker` dispatches to the rules, each written against the narrow view of the broker it
needs (`context.py`): serving fetches and the purgatory in `leader.py` (reads in `read.py`),
OffsetsForLeaderEpoch and ListOffsets in `offsets.py`, ISR changes in `isr.py`, the produce
path in `produce.py`, the follower's fetcher in `follower.py`, and FindCoordinator with the
group coordinator's hand-overs in `groups.py`.
"""

from __future__ import annotations

from typing import Any

from actors.addresses import GROUP_COORDINATOR_ACTOR
from actors.broker import follower, groups, isr, leader, offsets, produce
from actors.broker.config import BrokerConfig
from actors.broker.partition import Partition
from actors.broker.partition_log import PartitionLog, log_file, partitions_on_disk
from actors.broker.state import BrokerState
from actors.core import Address, Ctx, Inbound, Out
from protocols.connection import Disconnected
from protocols.errors import ErrorCode
from protocols.group import FindCoordinatorRequest
from protocols.metadata import (
    BrokerRegistered,
    IsrUpdateResponse,
    MetadataPartition,
    MetadataRequest,
    MetadataResponse,
    ShutdownSignal,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataPartition,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from protocols.producer import InitProducerIdRequest
from protocols.replication import (
    AlterPartitionResponse,
    FetchRequest,
    FetchResponse,
    LeaderAndIsrPartition,
    LeaderAndIsrPartitionError,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    ProduceRequest,
)
from protocols.types import TopicPartition

__all__ = ["Broker", "broker_id_of"]

CONTROLLER_REQUESTS = (LeaderAndIsrRequest, UpdateMetadataRequest, StopReplicaRequest)


def broker_id_of(address: Address) -> int:
    """`broker-2/broker` -> 2."""
    return int(address.node.rsplit("-", 1)[1])


class Broker:
    """One broker's replica manager."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.state = BrokerState()

    # ------------------------------------------------------------------ handlers

    def on_start(self, ctx: Ctx) -> Out:
        out = Out()
        self.state.producer_id_blocks = ctx.disk.get(produce.PRODUCER_ID_BLOCK_FILE, -1)
        for tp in partitions_on_disk(ctx.disk):
            log = PartitionLog.recover(tp, ctx.disk, self.config.log_config_for(tp.topic), ctx.now_ms)
            self.state.partitions[tp] = Partition(tp, log)
        out.emit(
            "broker_started",
            broker_id=self.config.broker_id,
            partitions=[str(tp) for tp in sorted(self.state.partitions)],
        )
        for tp in sorted(self.state.partitions):
            self.state.partitions[tp].emit_offsets(out)  # what the disk kept
        out.set_timer("isr-expiration", 0)
        out.set_timer("hw-checkpoint", self.config.replica_high_watermark_checkpoint_interval_ms)
        out.set_timer("log-retention", self.config.log_initial_task_delay_ms)
        for p in self.config.bootstrap:
            self._become_leader_or_follower(ctx, out, p)
        return out

    def on_message(self, ctx: Ctx, inbound: Inbound) -> Out:
        out = Out()
        if self._unregistered() and isinstance(inbound.message, CONTROLLER_REQUESTS):
            # KafkaServer starts processing requests only once `registerBroker` succeeded; a
            # restarted broker whose old registration still stands waits for that to expire.
            # Only the controller's requests wait here: they are what the new process must not
            # act on (clients' requests are served, a simplification that moves no timing).
            self.state.unprocessed.append(inbound)
        else:
            self._receive(ctx, out, inbound)
        return out

    def _unregistered(self) -> bool:
        return self.config.zk_client is not None and self.state.broker_epoch < 0

    def _receive(self, ctx: Ctx, out: Out, inbound: Inbound) -> None:
        waiting = self.state.muted.get(inbound.src)
        if (
            waiting is not None
            and isinstance(inbound.message, produce.CLIENT_REQUESTS)
            and inbound.src.actor != GROUP_COORDINATOR_ACTOR  # appends in-process in Kafka: never muted
        ):
            waiting.append(inbound)  # its connection is muted until the answer before it is sent
        else:
            self.handle(ctx, out, inbound)

    def _unmute(self, ctx: Ctx, out: Out, src: Address) -> None:
        """Handle, in order, the requests that waited on a connection, until one waits again
        (`SocketServer` reads a muted channel again once its answer is sent)."""
        waiting = self.state.muted.pop(src, None)
        while waiting:
            self.handle(ctx, out, waiting.popleft())
            if src in self.state.muted:  # that one waits in the purgatory: the rest wait behind it
                self.state.muted[src].extend(waiting)
                return

    def handle(self, ctx: Ctx, out: Out, inbound: Inbound) -> None:
        match inbound.message:
            case LeaderAndIsrRequest() as req:
                self._on_leader_and_isr(ctx, out, inbound, req)
            case ProduceRequest() as req:
                produce.on_produce(self, ctx, out, inbound, req)
            case InitProducerIdRequest() as req:
                produce.on_init_producer_id(self, out, inbound, req)
            case FetchRequest() as req:
                leader.on_fetch(self, ctx, out, inbound, req)
            case OffsetForLeaderEpochRequest() as req:
                offsets.on_offset_for_leader_epoch(self, out, inbound, req)
            case ListOffsetsRequest() as req:
                offsets.on_list_offsets(self, out, inbound, req)
            case FetchResponse() as resp:
                src = broker_id_of(inbound.src)
                follower.on_fetch_response(self, ctx, out, src, inbound.correlation_id, resp)
            case OffsetForLeaderEpochResponse() as resp:
                src = broker_id_of(inbound.src)
                follower.on_offset_for_leader_epoch_response(
                    self, ctx, out, src, inbound.correlation_id, resp
                )
            case ListOffsetsResponse() as resp:
                src = broker_id_of(inbound.src)
                follower.on_list_offsets_response(self, ctx, out, src, inbound.correlation_id, resp)
            case AlterPartitionResponse() as resp:
                isr.on_alter_partition_response(self, ctx, out, inbound.correlation_id, resp)
            case IsrUpdateResponse() as resp:
                isr.on_isr_update_response(self, ctx, out, inbound.correlation_id, resp)
            case UpdateMetadataRequest() as req:
                self._on_update_metadata(ctx, out, inbound, req)
            case StopReplicaRequest() as req:
                self._on_stop_replica(out, inbound, req)
            case MetadataRequest() as req:
                self._on_metadata(out, inbound, req)
            case FindCoordinatorRequest() as req:
                groups.on_find_coordinator(self, out, inbound, req)
            case BrokerRegistered(broker_epoch):
                self.state.broker_epoch = broker_epoch
                unprocessed, self.state.unprocessed = self.state.unprocessed, []
                for waiting in unprocessed:
                    self._receive(ctx, out, waiting)
            case ShutdownSignal():
                self._shut_down(out)
            case Disconnected(peer):
                if peer.startswith("broker-"):
                    follower.disconnected(self, ctx, out, broker_id_of(inbound.src))
                    isr.controller_unreachable(self, ctx, out, peer)
                for src in [a for a in self.state.muted if a.node == peer]:
                    del self.state.muted[src]  # its connections closed: what waited is gone
            case _:
                out.emit("request_ignored", src=str(inbound.src), message=type(inbound.message).__name__)

    def on_timer(self, ctx: Ctx, key: str) -> Out:
        out = Out()
        kind, _, arg = key.partition(":")
        if kind == "isr-expiration":
            isr.maybe_shrink_isr(self, ctx, out)
            out.set_timer("isr-expiration", self.config.replica_lag_time_max_ms // 2)
        elif kind == "hw-checkpoint":
            for tp in sorted(self.state.partitions):
                self.state.partitions[tp].log.checkpoint_high_watermark(out)
            out.set_timer("hw-checkpoint", self.config.replica_high_watermark_checkpoint_interval_ms)
        elif kind == "log-retention":
            for tp in sorted(self.state.partitions):
                self.state.partitions[tp].log.delete_old_segments(out, ctx.now_ms)
            out.set_timer("log-retention", self.config.log_retention_check_interval_ms)
        elif kind == "fetch":
            leader.complete_fetch(self, out, int(arg))
        elif kind == "produce":
            produce.expire_produce(self, out, int(arg))
        elif kind == "unmute":
            node, _, actor = arg.partition("/")
            self._unmute(ctx, out, Address(node, actor))
        elif kind == "alter-partition":
            isr.alter_partition_timed_out(self, ctx, out, int(arg))
        elif kind == "fetcher-timeout":
            follower.request_timed_out(self, ctx, out, int(arg))
        elif kind == "fetcher-backoff":
            session = self.state.sessions.get(int(arg))
            if session is not None:
                follower.maybe_send(self, ctx, out, session)
        return out

    def snapshot(self) -> dict[str, Any]:
        return {
            "broker_id": self.config.broker_id,
            "controller_epoch": self.state.controller_epoch,
            "partitions": {
                str(tp): {
                    "role": p.role.value,
                    "leader": p.leader,
                    "leader_epoch": p.leader_epoch,
                    "partition_epoch": p.partition_epoch,
                    "isr": sorted(p.isr),
                    "maximal_isr": sorted(p.maximal_isr),
                    "log_start_offset": p.log.log_start_offset,
                    "segments": [(s.base_offset, s.size_bytes) for s in p.log.segments()],
                    "log_end_offset": p.log.log_end_offset,
                    "high_watermark": p.log.high_watermark,
                    "epochs": [tuple(e) for e in p.log.epochs.entries],
                    "log": p.log.entries(),
                    "remote_log_end_offsets": {b: s.log_end_offset for b, s in sorted(p.followers.items())},
                }
                for tp, p in sorted(self.state.partitions.items())
            },
        }

    # ------------------------------------------------------------------ DelayedOperations

    def after_leader_change(
        self, ctx: Ctx, out: Out, partition: Partition, *, leo_changed: bool,
        deferred: list[tuple[TopicPartition, bool]] | None = None,
    ) -> None:
        """After an append, a follower fetch or an ISR change: maybe move the HW, then complete
        what can complete (an LEO change wakes follower fetches; an HW change, produces and
        consumer fetches), or, given `deferred`, note the partition there for
        `complete_deferred`. The callback the rules make (`context.DelayedOperations`)."""
        eligible = set(partition.replicas)
        if self.config.profile.ineligible_replicas and self.config.zk_client is not None:
            eligible.intersection_update(self.state.live_brokers)  # `isReplicaIsrEligible`
        moved = partition.maybe_increment_high_watermark(
            min_insync_replicas=self.config.min_insync_replicas_for(partition.tp.topic),
            eligible=eligible,
            now_ms=ctx.now_ms,
            max_lag_ms=self.config.replica_lag_time_max_ms,
            profile=self.config.profile,
        )
        if moved or leo_changed:
            partition.emit_offsets(out)
            if deferred is not None:
                deferred.append((partition.tp, moved))
            else:
                leader.check_purgatory(self, out, (partition.tp,), hw_or_role=moved)

    def complete_deferred(self, out: Out, deferred: list[tuple[TopicPartition, bool]]) -> None:
        """`ReplicaManager.tryCompleteActions` (2.7+): after a whole Produce, each appended
        partition's purgatory checks, in the request's order."""
        for tp, moved in deferred:
            leader.check_purgatory(self, out, (tp,), hw_or_role=moved)

    # ------------------------------------------------------------------ LeaderAndIsr

    def _control_request_error(self, out: Out, request: str, req: Any) -> ErrorCode:
        """The checks every controller request passes first (`KafkaApis`, `ReplicaManager`):
        aimed at an earlier incarnation of this broker (KIP-380), or from a controller older than
        one already heard from. A request that passes makes its controller the known one."""
        error = ErrorCode.NONE
        if 0 <= req.broker_epoch < self.state.broker_epoch:
            error = ErrorCode.STALE_BROKER_EPOCH
        elif req.controller_epoch < self.state.controller_epoch:
            error = ErrorCode.STALE_CONTROLLER_EPOCH
        if error is not ErrorCode.NONE:
            out.emit(
                "controller_request_rejected",
                request=request,
                controller_id=req.controller_id,
                controller_epoch=req.controller_epoch,
                broker_epoch=req.broker_epoch,
                error=error.name,
            )
            return error
        self.state.controller_epoch = req.controller_epoch
        self.state.controller_id = req.controller_id
        return error

    def _on_update_metadata(self, ctx: Ctx, out: Out, inbound: Inbound, req: UpdateMetadataRequest) -> None:
        error = self._control_request_error(out, "UpdateMetadata", req)
        if error is ErrorCode.NONE:
            self.state.live_brokers = tuple(req.live_brokers)
            for p in req.partitions:
                self.state.metadata[TopicPartition(p.topic, p.partition)] = p
        out.reply(inbound, UpdateMetadataResponse(error))
        if error is ErrorCode.NONE:
            isr.controller_changed(self, ctx, out)  # the cache names the controller

    def _on_stop_replica(self, out: Out, inbound: Inbound, req: StopReplicaRequest) -> None:
        """`stopReplicas` with deletePartition=false: stop fetching; the log stays."""
        error = self._control_request_error(out, "StopReplica", req)
        if error is ErrorCode.NONE:
            for p in req.partitions:
                tp = TopicPartition(p.topic, p.partition)
                follower.stop_following(self, tp)
                out.emit("replica_stopped", topic=p.topic, partition=p.partition, leader_epoch=p.leader_epoch)
                groups.replica_stopped(self, out, tp, p.leader_epoch)
        out.reply(inbound, StopReplicaResponse(error))

    def _shut_down(self, out: Out) -> None:
        """The end of `KafkaServer.shutdown`, after the controlled shutdown: the replica manager
        checkpoints every HW, the log manager flushes every log, and the process exits."""
        for tp in sorted(self.state.partitions):
            self.state.partitions[tp].log.checkpoint_high_watermark(out)
            out.flush(log_file(tp))
        out.emit("broker_stopped", broker_id=self.config.broker_id)
        out.exit()

    def _on_metadata(self, out: Out, inbound: Inbound, req: MetadataRequest) -> None:
        """Answer from the metadata cache: each partition's leader, epoch, replicas and ISR."""
        found: list[MetadataPartition] = []
        for topic in req.topics:
            cached = sorted(tp for tp in self.state.metadata if tp.topic == topic)
            if not cached:
                found.append(MetadataPartition(topic, -1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1, (), ()))
            for tp in cached:
                p: UpdateMetadataPartition = self.state.metadata[tp]
                error = ErrorCode.NONE if p.leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE
                found.append(
                    MetadataPartition(topic, tp.partition, error, p.leader, p.leader_epoch, p.replicas, p.isr)
                )
        out.reply(inbound, MetadataResponse(self.state.live_brokers, self.state.controller_id, tuple(found)))

    def _on_leader_and_isr(self, ctx: Ctx, out: Out, inbound: Inbound, req: LeaderAndIsrRequest) -> None:
        error = self._control_request_error(out, "LeaderAndIsr", req)
        if error is not ErrorCode.NONE:
            out.reply(inbound, LeaderAndIsrResponse(error))
            return
        errors = []
        for p in req.partitions:
            error = self._become_leader_or_follower(ctx, out, p)
            errors.append(LeaderAndIsrPartitionError(p.topic, p.partition, error))
        changed = (TopicPartition(p.topic, p.partition) for p in req.partitions)
        leader.check_purgatory(self, out, changed)
        out.reply(inbound, LeaderAndIsrResponse(ErrorCode.NONE, tuple(errors)))

    def _become_leader_or_follower(self, ctx: Ctx, out: Out, p: LeaderAndIsrPartition) -> ErrorCode:
        tp = TopicPartition(p.topic, p.partition)
        me = self.config.broker_id
        if me not in p.replicas:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        partition = self.state.partitions.get(tp)
        if partition is None:
            partition = self.state.partitions[tp] = Partition(tp, PartitionLog(tp, config=self.config.log_config_for(tp.topic)))
        if p.leader_epoch <= partition.leader_epoch:
            # Only a newer leader epoch changes anything: this one was already applied.
            return ErrorCode.STALE_CONTROLLER_EPOCH
        assignment = {
            "leader_epoch": p.leader_epoch,
            "isr": frozenset(p.isr),
            "replicas": tuple(p.replicas),
            "partition_epoch": p.partition_epoch,
            "controller_epoch": p.controller_epoch,
        }
        previous_leader, was_leader = partition.leader, partition.is_leader
        if p.leader == me:
            partition.make_leader(**assignment, me=me, now_ms=ctx.now_ms)
            follower.stop_following(self, tp)
            if self.config.profile.epoch_start_on_become_leader:
                partition.log.assign_epoch_start(out, p.leader_epoch)
            out.emit(
                "became_leader",
                topic=tp.topic,
                partition=tp.partition,
                leader_epoch=p.leader_epoch,
                isr=sorted(p.isr),
                log_end_offset=partition.log.log_end_offset,
                high_watermark=partition.log.high_watermark,
            )
            self.after_leader_change(ctx, out, partition, leo_changed=False)
            groups.leadership_changed(self, out, partition, was_leader=was_leader)
            return ErrorCode.NONE
        changed = partition.make_follower(leader=p.leader, **assignment)
        out.emit(
            "became_follower",
            topic=tp.topic,
            partition=tp.partition,
            leader=p.leader,
            leader_epoch=p.leader_epoch,
            log_end_offset=partition.log.log_end_offset,
            high_watermark=partition.log.high_watermark,
        )
        if p.leader < 0:
            follower.stop_following(self, tp)
        elif changed and (self.config.profile.leader_epochs or p.leader != previous_leader):
            # Before 0.11, makeFollower did nothing for an unchanged leader (no truncation to HW).
            follower.start_following(self, ctx, out, partition)
        groups.leadership_changed(self, out, partition, was_leader=was_leader)
        return ErrorCode.NONE

