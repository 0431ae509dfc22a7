"""What the elected controller does (`KafkaController`, ZooKeeper mode).

Kafka's controller is one thread that handles one event at a time and calls ZooKeeper
synchronously. Here each event is a generator that reads like that code: it `yield`s a tuple of
ZooKeeper requests and is resumed with their responses, in the same order. The actor
(`actors.controller.behavior`) runs one event at a time and queues the rest.

Every write is wrapped in a multi with `CheckOp(/controller_epoch, epochZkVersion)` (KAFKA-6082):
a BADVERSION on that check means another controller was elected since, and raises
`ControllerMoved`, on which the controller resigns.

Events: failover (on election), broker change (the `/brokers/ids` child watch), ISR change
notification (before 2.7, the `/isr_change_notification` child watch), AlterPartition (2.7+),
ControlledShutdown from a stopping broker, and the periodic auto leader rebalance.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace
from typing import Any

from actors.controller import zkdata as zk
from actors.controller.channel import Channel, RequestBatch
from actors.controller.election import (
    Elected,
    controlled_shutdown_leader,
    imbalanced_partitions,
    offline_leader,
    preferred_leader,
    without_replica,
)
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
from protocols.zookeeper import (
    GetChildrenRequest,
    GetDataRequest,
    MultiRequest,
    MultiResponse,
    Op,
    OpCode,
    ZkError,
)

__all__ = ["ControllerMoved", "ControllerSettings", "KafkaController", "Step"]

Step = Generator[tuple[Any, ...], tuple[Any, ...], Any]
"""A controller step: yields ZooKeeper requests, is resumed with their responses."""


class ControllerMoved(Exception):  # noqa: N818 - Kafka's name
    """A write's controller-epoch check failed: another broker is controller now."""


@dataclass(frozen=True, slots=True)
class ControllerSettings:
    unclean_leader_election_enable: bool = False
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_ms: int = 300_000
    leader_imbalance_per_broker_percentage: int = 10
    alter_partition: bool = True
    """2.7+: ISR changes arrive as AlterPartition; before, as ZooKeeper notifications."""
    epoch_checked_writes: bool = True
    """2.1+ (KAFKA-6082): each write is a multi after a check of the controller epoch znode."""
    broker_epochs: bool = True
    """2.2+ (KIP-380): requests to brokers carry their broker epochs, and ControlledShutdown's
    broker epoch is checked."""


@dataclass(slots=True)
class ControllerContext:
    """The controller's cache of the cluster (`ControllerContext`)."""

    epoch: int
    epoch_zk_version: int
    live_brokers: dict[int, int] = field(default_factory=dict)
    """Broker id -> broker epoch (the czxid of its registration)."""
    assignments: dict[TopicPartition, tuple[int, ...]] = field(default_factory=dict)
    leadership: dict[TopicPartition, LeaderIsr] = field(default_factory=dict)
    partition_states: dict[TopicPartition, PartitionState] = field(default_factory=dict)
    replica_states: dict[tuple[TopicPartition, int], ReplicaState] = field(default_factory=dict)
    shutting_down: set[int] = field(default_factory=set)
    """Brokers in a controlled shutdown (`shuttingDownBrokerIds`): still registered, but no
    candidate in any election, until they are gone or register again."""

    def electable(self) -> dict[int, int]:
        """`liveBrokerIds`: the live brokers that are not shutting down."""
        return {b: e for b, e in self.live_brokers.items() if b not in self.shutting_down}


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
        self.session = session
        self.out = Out()

    # ------------------------------------------------------------------ events

    def on_failover(self) -> Step:
        """`onControllerFailover`: read everything, UpdateMetadata to all, then the replica and
        partition state machines, then schedule the auto rebalance."""
        yield from self._read_brokers()
        for broker in sorted(self.ctx.live_brokers):
            self.channel.add_broker(broker)
        yield from self._read_topics()
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
        self._replicas_online(online)
        yield from self._replicas_offline(offline)
        yield from self._trigger_online_partition_state_change()
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
        yield from self._read_brokers()
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
        (children,) = yield (GetChildrenRequest(self.session(), zk.ISR_CHANGE_NOTIFICATION, watch=True),)
        names = sorted(children.children) if children.error is ZkError.OK else []
        if not names:
            return
        paths = [f"{zk.ISR_CHANGE_NOTIFICATION}/{name}" for name in names]
        notes = yield tuple(GetDataRequest(self.session(), p) for p in paths)
        changed = sorted({tp for n in notes if n.error is ZkError.OK for tp in zk.decode_isr_change(n.data)})
        yield from self._write([Op(OpCode.DELETE, p) for p in paths])
        changed = [tp for tp in changed if tp in self.ctx.assignments]
        yield from self._read_states(changed)
        changed = [tp for tp in changed if tp in self.ctx.leadership]
        self.batch.add_update_metadata(self.ctx.live_brokers, changed)
        self._send_batch()

    def on_alter_partition(self, inbound: Inbound, request: AlterPartitionRequest) -> Step:
        """2.7+ (`processAlterPartition`): check the leader's broker epoch, leader epoch and
        partition epoch, write the accepted ISRs, answer, and tell every broker."""
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
        written = yield from self._update_leader_and_isr(accepted)
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
        yield from self._elect(led, "controlled_shutdown")
        yield from self._replicas_offline([(tp, broker) for tp in followed])
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
            yield from self._elect(chosen, "preferred")
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
        self._replicas_online(replicas)
        yield from self._trigger_online_partition_state_change()

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
            self._partition_state(tp, PartitionState.OFFLINE)
        yield from self._trigger_online_partition_state_change()
        yield from self._replicas_offline(replicas)
        if not leaderless:
            self.batch.add_update_metadata(self.ctx.live_brokers)
            self._send_batch()

    # ------------------------------------------------------------------ state machines

    def _partition_state(self, tp: TopicPartition, to: PartitionState) -> None:
        self.ctx.partition_states.get(tp, PartitionState.NON_EXISTENT).check(to)
        self.ctx.partition_states[tp] = to

    def _replica_state(self, tp: TopicPartition, replica: int, to: ReplicaState) -> None:
        self.ctx.replica_states.get((tp, replica), ReplicaState.NON_EXISTENT).check(to)
        self.ctx.replica_states[(tp, replica)] = to

    def _replicas_online(self, replicas: list[tuple[TopicPartition, int]]) -> None:
        """-> OnlineReplica: each replica is told its partition's current leader."""
        for tp, replica in replicas:
            self._replica_state(tp, replica, ReplicaState.ONLINE)
            leadership = self.ctx.leadership.get(tp)
            if leadership is not None:
                self.batch.add_leader_and_isr(
                    [replica], tp, leadership, self.ctx.assignments[tp], self.ctx.live_brokers
                )
        self._send_batch()

    def _replicas_offline(self, replicas: list[tuple[TopicPartition, int]]) -> Step:
        """-> OfflineReplica: StopReplica (kept on disk), and out of the ISR. A leader that goes
        leaves its partition leaderless; the last replica standing stays in the ISR."""
        for tp, replica in replicas:
            self._replica_state(tp, replica, ReplicaState.OFFLINE)
            leadership = self.ctx.leadership.get(tp)
            self.batch.add_stop_replica(replica, tp, -1 if leadership is None else leadership.leader_epoch)
        by_replica: dict[int, list[TopicPartition]] = {}
        for tp, replica in replicas:
            by_replica.setdefault(replica, []).append(tp)
        for replica in sorted(by_replica):
            while True:  # retry the partitions whose znode moved under us (BADVERSION)
                proposed: dict[TopicPartition, LeaderIsr] = {}
                for tp in by_replica[replica]:
                    current = self.ctx.leadership.get(tp)
                    updated = None if current is None else without_replica(current, replica, self.ctx.epoch)
                    if updated is not None:
                        proposed[tp] = updated
                written = yield from self._update_leader_and_isr(proposed)
                for tp in sorted(written):
                    l = self.ctx.leadership[tp]  # noqa: E741
                    self.out.emit(
                        "replica_removed_from_isr",
                        topic=tp.topic,
                        partition=tp.partition,
                        replica=replica,
                        leader=l.leader,
                        leader_epoch=l.leader_epoch,
                        isr=list(l.isr),
                        partition_epoch=l.zk_version,
                    )
                    recipients = [r for r in self.ctx.assignments[tp] if r != replica]
                    self.batch.add_leader_and_isr(
                        recipients, tp, l, self.ctx.assignments[tp], self.ctx.live_brokers
                    )
                retry = sorted(tp for tp in proposed if tp not in written)
                if not retry:
                    break
                yield from self._read_states(retry)
                by_replica[replica] = retry
        if any(tp not in self.ctx.leadership for tp, _ in replicas):
            self.batch.add_update_metadata(self.ctx.live_brokers)
        self._send_batch()

    def _trigger_online_partition_state_change(self) -> Step:
        """Elect leaders for every New and Offline partition."""
        new = [tp for tp in sorted(self.ctx.partition_states) if self.ctx.partition_states[tp] is PartitionState.NEW]
        offline = [
            tp for tp in sorted(self.ctx.partition_states) if self.ctx.partition_states[tp] is PartitionState.OFFLINE
        ]
        if new:
            yield from self._initialize_partitions(new)
        if offline:
            yield from self._elect(offline, "offline")

    def _initialize_partitions(self, partitions: list[TopicPartition]) -> Step:
        """NewPartition -> OnlinePartition: leader = the first live replica, ISR = the live
        replicas, leader epoch 0; the state znode is created (`initializeLeaderAndIsrForPartitions`)."""
        created: dict[TopicPartition, LeaderIsr] = {}
        electable = self.ctx.electable()
        for tp in partitions:
            live = tuple(r for r in self.ctx.assignments[tp] if r in electable)
            if not live:
                self._election_failed(tp, "new", "no assigned replica is live")
                continue
            created[tp] = LeaderIsr(live[0], zk.INITIAL_LEADER_EPOCH, live, self.ctx.epoch, 0)
        order = sorted(created)
        responses = yield from self._writes(
            [
                [
                    Op(OpCode.CREATE, zk.partition_path(tp)),
                    Op(OpCode.CREATE, zk.state_path(tp), zk.encode_state(created[tp])),
                ]
                for tp in order
            ]
        )
        for tp, response in zip(order, responses, strict=True):
            if response.error is not ZkError.OK:
                self._election_failed(tp, "new", f"creating the state znode: {response.error.name}")
                continue
            self.ctx.leadership[tp] = created[tp]
            self._partition_state(tp, PartitionState.ONLINE)
            self._emit_elected(tp, "new", unclean=False)
            self.batch.add_leader_and_isr(
                self.ctx.assignments[tp], tp, created[tp], self.ctx.assignments[tp], self.ctx.live_brokers,
                is_new=True,
            )
        self._send_batch()

    def _elect(self, partitions: list[TopicPartition], election: str) -> Step:
        """-> OnlinePartition with the offline, preferred or controlled-shutdown election; the
        new leader and ISR are written with a compare-and-set, retried on BADVERSION with a
        fresh read. A broker shutting down is a candidate in none of them."""
        remaining = list(partitions)
        electable = self.ctx.electable()
        while remaining:
            proposed: dict[TopicPartition, LeaderIsr] = {}
            unclean: set[TopicPartition] = set()
            for tp in remaining:
                current = self.ctx.leadership[tp]
                assignment = self.ctx.assignments[tp]
                elected: Elected | None
                if election == "preferred":
                    elected = preferred_leader(assignment, current.isr, electable)
                elif election == "controlled_shutdown":
                    elected = controlled_shutdown_leader(
                        assignment, current.isr, self.ctx.live_brokers, self.ctx.shutting_down
                    )
                else:
                    elected = offline_leader(
                        assignment,
                        current.isr,
                        electable,
                        unclean=self.settings.unclean_leader_election_enable,
                    )
                if elected is None:
                    self._election_failed(tp, election, "no live replica in the ISR")
                    continue
                if elected.unclean:
                    unclean.add(tp)
                proposed[tp] = current.new_leader_and_isr(elected.leader, elected.isr, self.ctx.epoch)
            written = yield from self._update_leader_and_isr(proposed)
            for tp in sorted(written):
                self._partition_state(tp, PartitionState.ONLINE)
                self._emit_elected(tp, election, unclean=tp in unclean)
                self.batch.add_leader_and_isr(
                    self.ctx.assignments[tp], tp, self.ctx.leadership[tp], self.ctx.assignments[tp],
                    self.ctx.live_brokers,
                )
            self._send_batch()
            remaining = sorted(tp for tp in proposed if tp not in written)
            if remaining:
                yield from self._read_states(remaining)

    def _election_failed(self, tp: TopicPartition, election: str, reason: str) -> None:
        self.out.emit(
            "leader_election_failed",
            topic=tp.topic,
            partition=tp.partition,
            election=election,
            reason=reason,
            controller_epoch=self.ctx.epoch,
        )

    def _emit_elected(self, tp: TopicPartition, election: str, *, unclean: bool) -> None:
        l = self.ctx.leadership[tp]  # noqa: E741
        self.out.emit(
            "leader_elected",
            topic=tp.topic,
            partition=tp.partition,
            election=election,
            unclean=unclean,
            leader=l.leader,
            leader_epoch=l.leader_epoch,
            isr=list(l.isr),
            partition_epoch=l.zk_version,
            controller_epoch=self.ctx.epoch,
        )

    # ------------------------------------------------------------------ ZooKeeper

    def _read_brokers(self) -> Step:
        """`getAllBrokerAndEpochsInCluster`, with the child watch set again."""
        (children,) = yield (GetChildrenRequest(self.session(), zk.BROKER_IDS, watch=True),)
        ids = sorted(int(c) for c in children.children) if children.error is ZkError.OK else []
        datas = yield tuple(GetDataRequest(self.session(), zk.broker_path(b)) for b in ids)
        self.ctx.live_brokers = {
            b: d.stat.czxid for b, d in zip(ids, datas, strict=True) if d.error is ZkError.OK and d.stat
        }

    def _read_topics(self) -> Step:
        (children,) = yield (GetChildrenRequest(self.session(), zk.TOPICS, watch=True),)
        topics = sorted(children.children) if children.error is ZkError.OK else []
        datas = yield tuple(GetDataRequest(self.session(), zk.topic_path(t)) for t in topics)
        for topic, data in zip(topics, datas, strict=True):
            if data.error is ZkError.OK:
                self.ctx.assignments.update(zk.decode_assignment(topic, data.data))
        yield from self._read_states(sorted(self.ctx.assignments))

    def _read_states(self, partitions: list[TopicPartition]) -> Step:
        datas = yield tuple(GetDataRequest(self.session(), zk.state_path(tp)) for tp in partitions)
        for tp, data in zip(partitions, datas, strict=True):
            if data.error is ZkError.OK and data.stat is not None:
                self.ctx.leadership[tp] = zk.decode_state(data.data, data.stat.version)

    def _update_leader_and_isr(self, proposed: dict[TopicPartition, LeaderIsr]) -> Step:
        """`updateLeaderAndIsr`: one conditional setData per partition, each fenced by the
        controller epoch. Returns the partitions written; the cache holds their new zkVersion."""
        order = sorted(proposed)
        responses = yield from self._writes(
            [
                [Op(OpCode.SET_DATA, zk.state_path(tp), zk.encode_state(proposed[tp]), proposed[tp].zk_version)]
                for tp in order
            ]
        )
        written = []
        for tp, response in zip(order, responses, strict=True):
            if response.error is ZkError.OK:
                stat = response.results[-1].stat
                self.ctx.leadership[tp] = replace(proposed[tp], zk_version=stat.version if stat else -1)
                written.append(tp)
        return written

    def _write(self, ops: list[Op]) -> Step:
        (response,) = yield from self._writes([ops])
        return response

    def _writes(self, writes: list[list[Op]]) -> Step:
        """Multis, each starting with the controller-epoch check; BADVERSION on that check in
        any of them: ControllerMoved."""
        if not writes:
            return []
        if not self.settings.epoch_checked_writes:
            # Before 2.1 a controller that lost its place still writes (KAFKA-6082): it learns
            # of it only from the watch on /controller.
            return list((yield tuple(MultiRequest(self.session(), tuple(ops)) for ops in writes)))
        check = Op(OpCode.CHECK, zk.CONTROLLER_EPOCH, version=self.ctx.epoch_zk_version)
        responses: tuple[MultiResponse, ...] = yield tuple(
            MultiRequest(self.session(), (check, *ops)) for ops in writes
        )
        for response in responses:
            if response.error is ZkError.BADVERSION and response.results[0].error is ZkError.BADVERSION:
                raise ControllerMoved
        return list(responses)

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
