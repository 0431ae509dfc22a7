"""The controller's replica and partition state machines (`ZkReplicaStateMachine`,
`ZkPartitionStateMachine`): how replicas go online and offline, and how partitions get leaders.

Each moves its replicas or partitions only along the legal edges (`actors.controller.states`),
writes leaders and ISRs through the controller's ZooKeeper client, retrying a partition whose
znode moved under it (BADVERSION) with a fresh read, and queues what the brokers must be told
in the controller's request batch. Left out: topic deletion and partition reassignment.
"""

from __future__ import annotations

from collections.abc import Callable

from actors.controller import zkdata as zk
from actors.controller.channel import RequestBatch
from actors.controller.context import ControllerContext, StepOutput
from actors.controller.election import (
    Elected,
    controlled_shutdown_leader,
    offline_leader,
    preferred_leader,
    without_replica,
)
from actors.controller.kafka_zk_client import KafkaZkClient, Step
from actors.controller.states import PartitionState, ReplicaState
from actors.controller.zkdata import LeaderIsr
from protocols.types import TopicPartition
from protocols.zookeeper import ZkError

__all__ = ["PartitionStateMachine", "ReplicaStateMachine"]


class ReplicaStateMachine:
    """Replicas online and offline. `send_batch` sends what the batch holds."""

    def __init__(
        self,
        ctx: ControllerContext,
        zk_client: KafkaZkClient,
        batch: RequestBatch,
        send_batch: Callable[[], None],
        output: StepOutput,
    ) -> None:
        self.ctx = ctx
        self.zk = zk_client
        self.batch = batch
        self.send_batch = send_batch
        self.output = output

    def change_state(self, tp: TopicPartition, replica: int, to: ReplicaState) -> None:
        self.ctx.replica_states.get((tp, replica), ReplicaState.NON_EXISTENT).check(to)
        self.ctx.replica_states[(tp, replica)] = to

    def online(self, replicas: list[tuple[TopicPartition, int]]) -> None:
        """-> OnlineReplica: each replica is told its partition's current leader."""
        for tp, replica in replicas:
            self.change_state(tp, replica, ReplicaState.ONLINE)
            leadership = self.ctx.leadership.get(tp)
            if leadership is not None:
                self.batch.add_leader_and_isr(
                    [replica], tp, leadership, self.ctx.assignments[tp], self.ctx.live_brokers
                )
        self.send_batch()

    def offline(self, replicas: list[tuple[TopicPartition, int]]) -> Step:
        """-> OfflineReplica: StopReplica (kept on disk), and out of the ISR. A leader that goes
        leaves its partition leaderless; the last replica standing stays in the ISR."""
        for tp, replica in replicas:
            self.change_state(tp, replica, ReplicaState.OFFLINE)
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
                written = yield from self.zk.update_leader_and_isr(proposed)
                self.ctx.leadership.update(written)
                for tp in sorted(written):
                    l = self.ctx.leadership[tp]  # noqa: E741
                    self.output.out.emit(
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
                states = yield from self.zk.get_topic_partition_states(retry)
                self.ctx.leadership.update(states)
                by_replica[replica] = retry
        if any(tp not in self.ctx.leadership for tp, _ in replicas):
            self.batch.add_update_metadata(self.ctx.live_brokers)
        self.send_batch()


class PartitionStateMachine:
    """Partitions to OnlinePartition: the first leader of a new partition, and the offline,
    preferred and controlled-shutdown elections. `unclean` is `unclean.leader.election.enable`."""

    def __init__(  # noqa: PLR0913 - what an election reads and writes
        self,
        ctx: ControllerContext,
        zk_client: KafkaZkClient,
        batch: RequestBatch,
        send_batch: Callable[[], None],
        output: StepOutput,
        *,
        unclean: bool,
    ) -> None:
        self.ctx = ctx
        self.zk = zk_client
        self.batch = batch
        self.send_batch = send_batch
        self.output = output
        self.unclean = unclean

    def change_state(self, tp: TopicPartition, to: PartitionState) -> None:
        self.ctx.partition_states.get(tp, PartitionState.NON_EXISTENT).check(to)
        self.ctx.partition_states[tp] = to

    def trigger_online_partition_state_change(self) -> Step:
        """Elect leaders for every New and Offline partition."""
        new = [tp for tp in sorted(self.ctx.partition_states) if self.ctx.partition_states[tp] is PartitionState.NEW]
        offline = [
            tp for tp in sorted(self.ctx.partition_states) if self.ctx.partition_states[tp] is PartitionState.OFFLINE
        ]
        if new:
            yield from self._initialize_leader_and_isr(new)
        if offline:
            yield from self.elect_leaders(offline, "offline")

    def _initialize_leader_and_isr(self, partitions: list[TopicPartition]) -> Step:
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
        errors = yield from self.zk.create_topic_partition_states(created)
        for tp, error in errors.items():
            if error is not ZkError.OK:
                self._election_failed(tp, "new", f"creating the state znode: {error.name}")
                continue
            self.ctx.leadership[tp] = created[tp]
            self.change_state(tp, PartitionState.ONLINE)
            self._emit_elected(tp, "new", unclean=False)
            self.batch.add_leader_and_isr(
                self.ctx.assignments[tp], tp, created[tp], self.ctx.assignments[tp], self.ctx.live_brokers,
                is_new=True,
            )
        self.send_batch()

    def elect_leaders(self, partitions: list[TopicPartition], election: str) -> Step:
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
                    elected = offline_leader(assignment, current.isr, electable, unclean=self.unclean)
                if elected is None:
                    self._election_failed(tp, election, "no live replica in the ISR")
                    continue
                if elected.unclean:
                    unclean.add(tp)
                proposed[tp] = current.new_leader_and_isr(elected.leader, elected.isr, self.ctx.epoch)
            written = yield from self.zk.update_leader_and_isr(proposed)
            self.ctx.leadership.update(written)
            for tp in sorted(written):
                self.change_state(tp, PartitionState.ONLINE)
                self._emit_elected(tp, election, unclean=tp in unclean)
                self.batch.add_leader_and_isr(
                    self.ctx.assignments[tp], tp, self.ctx.leadership[tp], self.ctx.assignments[tp],
                    self.ctx.live_brokers,
                )
            self.send_batch()
            remaining = sorted(tp for tp in proposed if tp not in written)
            if remaining:
                states = yield from self.zk.get_topic_partition_states(remaining)
                self.ctx.leadership.update(states)

    def _election_failed(self, tp: TopicPartition, election: str, reason: str) -> None:
        self.output.out.emit(
            "leader_election_failed",
            topic=tp.topic,
            partition=tp.partition,
            election=election,
            reason=reason,
            controller_epoch=self.ctx.epoch,
        )

    def _emit_elected(self, tp: TopicPartition, election: str, *, unclean: bool) -> None:
        l = self.ctx.leadership[tp]  # noqa: E741
        self.output.out.emit(
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
