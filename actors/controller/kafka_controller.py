"""What the elected controller does (`KafkaController`, ZooKeeper mode): its events.

Kafka's controller is one thread that handles one event at a time and calls ZooKeeper
synchronously. Here each event is a generator that reads like that code: it `yield`s a tuple of
ZooKeeper requests and is resumed with their responses, in the same order. The actor
(`actors.controller.behavior`) runs one event at a time and queues the rest
(`actors.controller.event_manager`).

The parts it drives are Kafka's: the replica and partition state machines
(`actors.controller.state_machines`), its ZooKeeper client (`actors.controller.kafka_zk_client`:
from 2.1 every write is fenced by the controller epoch, and `ControllerMoved` raised) and its
channel to the brokers (`actors.controller.channel`); they share its cache of the cluster
(`actors.controller.context`).

Events: failover (on election), broker change (the `/brokers/ids` child watch), ISR change
notification (before 2.7, the `/isr_change_notification` child watch), AlterPartition (2.7+),
ControlledShutdown from a stopping broker, and the periodic auto leader rebalance. Left out:
topic creation and deletion, partition reassignment, and the KRaft controller.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from actors.controller.channel import Channel, RequestBatch
from actors.controller.config import ControllerSettings
from actors.controller.context import ControllerContext, StepOutput
from actors.controller.election import imbalanced_partitions
from actors.controller.kafka_zk_client import KafkaZkClient, Step
from actors.controller.state_machines import PartitionStateMachine, ReplicaStateMachine
from actors.controller.states import PartitionState, ReplicaState
from actors.controller.zkdata import LeaderIsr
from actors.core import Inbound, Out
from protocols.errors import ErrorCode
from protocols.metadata import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    RemainingPartition,
    UpdateMetadataPartition,
)
from protocols.replication import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterPartitionResult,
)
from protocols.types import TopicPartition

__all__ = ["KafkaController"]


class KafkaController:
    """The active controller's state and steps. `out` is the command list of the handler call
    that is running the current step; the actor sets it before each resume."""

    def __init__(
        self,
        broker_id: int,
        epoch: int,
        epoch_zk_version: int,
        settings: ControllerSettings,
        session: Callable[[], int],
    ) -> None:
        self.broker_id = broker_id
        self.settings = settings
        self.ctx = ControllerContext(epoch, epoch_zk_version)
        self.channel = Channel()
        self.batch = RequestBatch()
        self.output = StepOutput()
        self.zk = KafkaZkClient(session, epoch_zk_version, checked_writes=settings.epoch_checked_writes)
        self.replicas = ReplicaStateMachine(self.ctx, self.zk, self.batch, self._send_batch, self.output)
        self.partitions = PartitionStateMachine(
            self.ctx,
            self.zk,
            self.batch,
            self._send_batch,
            self.output,
            unclean=settings.unclean_leader_election_enable,
        )

    @property
    def out(self) -> Out:
        return self.output.out

    @out.setter
    def out(self, out: Out) -> None:
        self.output.out = out

    # ------------------------------------------------------------------ events

    def on_failover(self) -> Step:
        """`onControllerFailover`: read everything, UpdateMetadata to all, then the replica and
        partition state machines, then schedule the auto rebalance."""
        self.ctx.live_brokers = yield from self.zk.get_all_broker_and_epochs()
        for broker in sorted(self.ctx.live_brokers):
            self.channel.add_broker(broker)
        assignments = yield from self.zk.get_full_replica_assignment()
        self.ctx.assignments.update(assignments)
        yield from self._read_states(sorted(self.ctx.assignments))
        if not self.settings.alter_partition:
            yield from self.on_isr_change_notification()
        self.batch.add_update_metadata(self.ctx.live_brokers, self.ctx.leadership)
        self._send_batch()
        online, offline = [], []
        for tp in sorted(self.ctx.assignments):
            for replica in self.ctx.assignments[tp]:
                live = replica in self.ctx.live_brokers
                self.ctx.replica_states[(tp, replica)] = (
                    ReplicaState.ONLINE if live else ReplicaState.DELETION_INELIGIBLE
                )
                (online if live else offline).append((tp, replica))
        for tp in sorted(self.ctx.assignments):
            leadership = self.ctx.leadership.get(tp)
            if leadership is None:
                self.ctx.partition_states[tp] = PartitionState.NEW
            elif leadership.leader in self.ctx.live_brokers:
                self.ctx.partition_states[tp] = PartitionState.ONLINE
            else:
                self.ctx.partition_states[tp] = PartitionState.OFFLINE
        self.replicas.online(online)
        yield from self.replicas.offline(offline)
        yield from self.partitions.trigger_online_partition_state_change()
        self.out.emit(
            "controller_failover_completed",
            broker_id=self.broker_id,
            controller_epoch=self.ctx.epoch,
            live_brokers=sorted(self.ctx.live_brokers),
            partitions=len(self.ctx.assignments),
        )
        if self.settings.auto_leader_rebalance_enable:
            self.out.set_timer("auto-rebalance", 5000)

    def on_broker_change(self) -> Step:
        """`processBrokerChange`: new, dead and bounced (same id, higher epoch) brokers."""
        previous = dict(self.ctx.live_brokers)
        self.ctx.live_brokers = yield from self.zk.get_all_broker_and_epochs()
        current = self.ctx.live_brokers
        new = sorted(b for b in current if b not in previous)
        dead = sorted(b for b in previous if b not in current)
        bounced = sorted(b for b in current if b in previous and current[b] > previous[b])
        if not (new or dead or bounced):
            return
        self.out.emit(
            "broker_change", controller_epoch=self.ctx.epoch, new=new, dead=dead, bounced=bounced
        )
        for broker in dead + bounced:
            self.channel.remove_broker(self.out, broker)
            self.ctx.shutting_down.discard(broker)
        for broker in new + bounced:
            self.channel.add_broker(broker)
        if new:
            yield from self._on_broker_startup(new)
        if bounced:
            epochs = {b: current.pop(b) for b in bounced}
            yield from self._on_broker_failure(bounced)
            current.update(epochs)
            yield from self._on_broker_startup(bounced)
        if dead:
            yield from self._on_broker_failure(dead)

    def on_isr_change_notification(self) -> Step:
        """Before 2.7 (`processIsrChangeNotification`): leaders wrote ISR changes to ZooKeeper
        themselves; refresh those partitions and tell every broker."""
        paths = yield from self.zk.get_all_isr_change_notifications()
        if not paths:
            return
        changed = yield from self.zk.get_partitions_from_isr_change_notifications(paths)
        yield from self.zk.delete_isr_change_notifications(paths)
        changed = [tp for tp in changed if tp in self.ctx.assignments]
        yield from self._read_states(changed)
        changed = [tp for tp in changed if tp in self.ctx.leadership]
        self.batch.add_update_metadata(self.ctx.live_brokers, changed)
        self._send_batch()

    def on_alter_partition(self, inbound: Inbound, request: AlterPartitionRequest) -> Step:
        """2.7+ (`processAlterPartition`): check the leader's broker epoch, leader epoch and
        partition epoch, and from 3.3 that every broker of the new ISR is live and not shutting
        down (KIP-841); write the accepted ISRs, answer, and tell every broker."""
        if self.ctx.live_brokers.get(request.broker_id) != request.broker_epoch:
            self.out.reply(inbound, AlterPartitionResponse(ErrorCode.STALE_BROKER_EPOCH))
            return
        results: dict[TopicPartition, AlterPartitionResult] = {}
        accepted: dict[TopicPartition, LeaderIsr] = {}
        for item in request.partitions:
            tp = TopicPartition(item.topic, item.partition)
            current = self.ctx.leadership.get(tp)
            error = ErrorCode.NONE
            if current is None:
                error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif current.leader != request.broker_id:
                error = ErrorCode.NOT_LEADER_OR_FOLLOWER
            elif item.leader_epoch != current.leader_epoch:
                error = ErrorCode.FENCED_LEADER_EPOCH
            elif tuple(item.new_isr) == current.isr:
                # Already so, whatever partition epoch it names: answered with the current
                # state (`equalsIgnoreZk`, later `equalsAllowStalePartitionEpoch`), so a leader
                # whose earlier answer was lost and that asks again converges.
                pass
            elif item.partition_epoch != current.zk_version:
                error = ErrorCode.INVALID_UPDATE_VERSION
            elif self.settings.ineligible_replicas and not set(item.new_isr) <= self.ctx.electable().keys():
                # KIP-841: `liveBrokerIds` leaves out brokers in controlled shutdown, so a
                # stopping follower that fetched once does not hold the HW until it lags out.
                error = ErrorCode.INELIGIBLE_REPLICA
            else:
                accepted[tp] = replace(current, isr=tuple(item.new_isr), controller_epoch=self.ctx.epoch)
            if error is not ErrorCode.NONE:
                results[tp] = AlterPartitionResult(item.topic, item.partition, error)
                self.out.emit(
                    "alter_partition_rejected",
                    topic=item.topic,
                    partition=item.partition,
                    broker_id=request.broker_id,
                    error=error.name,
                )
        written = yield from self.zk.update_leader_and_isr(accepted)
        self.ctx.leadership.update(written)
        for tp in sorted(accepted):
            if tp not in written:
                results[tp] = AlterPartitionResult(tp.topic, tp.partition, ErrorCode.INVALID_UPDATE_VERSION)
        for item in request.partitions:
            tp = TopicPartition(item.topic, item.partition)
            if tp not in results:
                l = self.ctx.leadership[tp]  # noqa: E741
                results[tp] = AlterPartitionResult(
                    tp.topic, tp.partition, ErrorCode.NONE, l.leader, l.leader_epoch, l.isr, l.zk_version
                )
        ordered = tuple(results[TopicPartition(i.topic, i.partition)] for i in request.partitions)
        self.out.reply(inbound, AlterPartitionResponse(ErrorCode.NONE, ordered))
        if written:
            self.batch.add_update_metadata(self.ctx.live_brokers, written)
            self._send_batch()

    def on_controlled_shutdown(self, inbound: Inbound, request: ControlledShutdownRequest) -> Step:
        """`doControlledShutdown`: the broker is marked shutting down; the partitions it leads
        get a new leader by the controlled-shutdown election (it is still told, and follows),
        its other replicas go offline (StopReplica, out of the ISR); the answer lists what it
        still leads. Partitions with one replica are left alone, and stay in that list."""
        broker = request.broker_id
        if broker not in self.ctx.live_brokers:
            self.out.reply(inbound, ControlledShutdownResponse(ErrorCode.BROKER_NOT_AVAILABLE))
            return
        if self.settings.broker_epochs and request.broker_epoch < self.ctx.live_brokers[broker]:
            self.out.reply(inbound, ControlledShutdownResponse(ErrorCode.STALE_BROKER_EPOCH))
            return
        self.ctx.shutting_down.add(broker)
        on_broker = [
            tp
            for tp in sorted(self.ctx.assignments)
            if broker in self.ctx.assignments[tp] and len(self.ctx.assignments[tp]) > 1 and tp in self.ctx.leadership
        ]
        led = [tp for tp in on_broker if self.ctx.leadership[tp].leader == broker]
        followed = [tp for tp in on_broker if self.ctx.leadership[tp].leader != broker]
        yield from self.partitions.elect_leaders(led, "controlled_shutdown")
        yield from self.replicas.offline([(tp, broker) for tp in followed])
        remaining = [tp for tp in sorted(self.ctx.leadership) if self.ctx.leadership[tp].leader == broker]
        self.out.emit(
            "controlled_shutdown_handled",
            broker_id=broker,
            controller_epoch=self.ctx.epoch,
            moved=len(led) - len([tp for tp in led if tp in remaining]),
            remaining=[str(tp) for tp in remaining],
        )
        response = tuple(RemainingPartition(tp.topic, tp.partition) for tp in remaining)
        self.out.reply(inbound, ControlledShutdownResponse(ErrorCode.NONE, response))

    def on_auto_rebalance(self) -> Step:
        """`checkAndTriggerAutoLeaderRebalance`, every `leader.imbalance.check.interval.seconds`."""
        chosen = imbalanced_partitions(
            self.ctx.assignments,
            self.ctx.leadership,
            self.ctx.electable(),
            self.settings.leader_imbalance_per_broker_percentage,
        )
        chosen = [tp for tp in chosen if self.ctx.partition_states.get(tp) is PartitionState.ONLINE]
        if chosen:
            yield from self.partitions.elect_leaders(chosen, "preferred")
        self.out.set_timer("auto-rebalance", self.settings.leader_imbalance_check_interval_ms)

    # ------------------------------------------------------------------ broker lifecycle

    def _on_broker_startup(self, new: list[int]) -> Step:
        """`onBrokerStartup`: metadata to everyone, the new brokers' replicas online, then
        elect leaders for partitions that have none."""
        existing = [b for b in self.ctx.live_brokers if b not in new]
        self.batch.add_update_metadata(existing)
        self._send_batch()
        self.batch.add_update_metadata(new, self.ctx.leadership)
        self._send_batch()
        replicas = [(tp, b) for tp in sorted(self.ctx.assignments) for b in new if b in self.ctx.assignments[tp]]
        self.replicas.online(replicas)
        yield from self.partitions.trigger_online_partition_state_change()

    def _on_broker_failure(self, dead: list[int]) -> Step:
        """`onBrokerFailure` -> `onReplicasBecomeOffline`: elect new leaders where the leader
        died, then take the dead replicas offline (out of the ISRs)."""
        replicas = [(tp, b) for tp in sorted(self.ctx.assignments) for b in dead if b in self.ctx.assignments[tp]]
        leaderless = [
            tp
            for tp in sorted(self.ctx.leadership)
            if self.ctx.leadership[tp].leader in dead
        ]
        for tp in leaderless:
            self.partitions.change_state(tp, PartitionState.OFFLINE)
        yield from self.partitions.trigger_online_partition_state_change()
        yield from self.replicas.offline(replicas)
        if not leaderless:
            self.batch.add_update_metadata(self.ctx.live_brokers)
            self._send_batch()

    # ------------------------------------------------------------------ cache

    def _read_states(self, partitions: list[TopicPartition]) -> Step:
        states = yield from self.zk.get_topic_partition_states(partitions)
        self.ctx.leadership.update(states)

    # ------------------------------------------------------------------ requests to brokers

    def _send_batch(self) -> None:
        self.batch.send(
            self.out,
            self.channel,
            controller_id=self.broker_id,
            controller_epoch=self.ctx.epoch,
            broker_epochs=self.ctx.live_brokers if self.settings.broker_epochs else {},
            metadata=self._metadata,
        )

    def _metadata(self, tp: TopicPartition) -> UpdateMetadataPartition:
        l = self.ctx.leadership[tp]  # noqa: E741
        replicas = self.ctx.assignments[tp]
        return UpdateMetadataPartition(
            tp.topic,
            tp.partition,
            l.controller_epoch,
            l.leader,
            l.leader_epoch,
            l.isr,
            l.zk_version,
            replicas,
            tuple(r for r in replicas if r not in self.ctx.live_brokers),
        )
