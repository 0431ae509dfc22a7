"""One partition as one broker sees it: its role, epochs, ISR and, when leader, its followers.

Models `kafka.cluster.Partition`: `makeLeader`, `makeFollower`, the follower fetch-state update,
`maybeIncrementLeaderHW`, and the ISR bookkeeping of KIP-497 (an ISR change in flight makes the
leader use the *maximal* ISR, the committed ISR plus pending additions, for the HW and acks).
The arithmetic is in `replica_state`; this module holds the state and applies it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from actors.broker.fetch_session import LeaderFetchSession
from actors.broker.partition_log import PartitionLog
from actors.broker.replica_state import (
    NEVER_MS,
    ReplicaState,
    fetched_at_end,
    high_watermark,
    reset_for_new_leader,
    update_fetch_state,
)
from actors.core import Out
from actors.profiles import Profile
from protocols.types import NO_LEADER, TopicPartition

__all__ = ["Partition", "PendingIsr", "Role"]


class Role(Enum):
    """What this broker does for the partition.

    - OFFLINE: not (yet) told, or told to stop. Transition: LEADER or FOLLOWER on LeaderAndIsr.
    - LEADER: accepts produce, serves fetches, tracks followers. Transition: FOLLOWER on a
      LeaderAndIsr naming another leader with a higher epoch.
    - FOLLOWER: fetches from the leader. Transition: LEADER on a LeaderAndIsr naming this broker.
    """

    OFFLINE = "offline"
    LEADER = "leader"
    FOLLOWER = "follower"


@dataclass(frozen=True, slots=True)
class PendingIsr:
    """An AlterPartition in flight (KIP-497): the ISR the leader asked for."""

    isr: frozenset[int]
    correlation_id: int
    """The AlterPartition in flight: only its answer counts."""
    controller: str = ""
    """The node of the controller it went to (2.7+); "" for a ZooKeeper write."""
    waiting_beyond: int | None = None
    """Set when that controller could not take it (its connection closed, or it answered
    NOT_CONTROLLER) and no other was known: the request waits for a controller epoch newer
    than this one."""


@dataclass(slots=True)
class Partition:
    tp: TopicPartition
    log: PartitionLog
    role: Role = Role.OFFLINE
    replicas: tuple[int, ...] = ()
    leader: int = NO_LEADER
    leader_epoch: int = -1
    epoch_start_offset: int = -1
    """The LEO when this broker became leader in its epoch (`leaderEpochStartOffsetOpt`); -1
    while it is not leader."""
    partition_epoch: int = -1
    controller_epoch: int = -1
    isr: frozenset[int] = frozenset()
    pending_isr: PendingIsr | None = None
    followers: dict[int, ReplicaState] = field(default_factory=dict)
    resting: dict[int, LeaderFetchSession] = field(default_factory=dict)
    """Followers whose fetch sessions skip this partition while it stays as it was
    (`LeaderFetchSession.resting`): their fetch times are their sessions' last fetches."""

    def wake(self) -> None:
        """End every session's rest on this partition, bringing each follower's state to what
        fetching it at every fetch since would have made it (its times are read only once the
        partition has changed, but everything that reads them wakes it first); a fetch of the
        session waiting in the purgatory reads it from now on."""
        self.log.on_change = None
        resting, self.resting = self.resting, {}
        for replica, session in resting.items():
            rest = session.resting.pop(self.tp)
            if self.followers.get(replica) is rest.state:
                self.followers[replica] = fetched_at_end(rest.state, rest.log_end_offset, session.last_fetch_ms)
            if session.parked:
                session.woke(self.tp)

    def emit_offsets(self, out: Out) -> None:
        """Log this replica's LEO and HW (after any change to either that matters)."""
        out.emit(
            "replica_offsets_changed",
            topic=self.tp.topic,
            partition=self.tp.partition,
            role=self.role.value,
            leader_epoch=self.leader_epoch,
            log_end_offset=self.log.log_end_offset,
            high_watermark=self.log.high_watermark,
        )

    @property
    def maximal_isr(self) -> frozenset[int]:
        """Committed ISR plus pending additions (a pending shrink removes nothing yet)."""
        if self.pending_isr is None:
            return self.isr
        return self.isr | self.pending_isr.isr

    @property
    def is_leader(self) -> bool:
        return self.role is Role.LEADER

    def make_leader(  # noqa: PLR0913 - LeaderAndIsr's fields
        self,
        *,
        leader_epoch: int,
        isr: frozenset[int],
        replicas: tuple[int, ...],
        partition_epoch: int,
        controller_epoch: int,
        me: int,
        now_ms: int,
    ) -> bool:
        """Become leader; return True if the epoch is new (the follower state was reset)."""
        if self.resting:
            self.wake()
        was_leader = self.role is Role.LEADER
        new_epoch = leader_epoch != self.leader_epoch or not was_leader
        self._update_assignment(leader_epoch, isr, replicas, partition_epoch, controller_epoch)
        self.role, self.leader, self.pending_isr = Role.LEADER, me, None
        if new_epoch:
            self.epoch_start_offset = self.log.log_end_offset
            # resetReplicaState: a new leader forgets its followers' LEOs; one that stays leader
            # keeps them and only restarts their caught-up clocks.
            self.followers = {
                r: reset_for_new_leader(r in isr, now_ms)
                if not was_leader or r not in self.followers
                else self.followers[r]._replace(
                    last_caught_up_time_ms=now_ms if r in isr else NEVER_MS
                )
                for r in sorted(replicas)
                if r != me
            }
        return new_epoch

    def make_follower(  # noqa: PLR0913
        self,
        *,
        leader: int,
        leader_epoch: int,
        isr: frozenset[int],
        replicas: tuple[int, ...],
        partition_epoch: int,
        controller_epoch: int,
    ) -> bool:
        """Become follower of `leader`; return True if the epoch or the leader is new."""
        if self.resting:
            self.wake()
        changed = leader_epoch != self.leader_epoch or leader != self.leader or self.role is not Role.FOLLOWER
        self._update_assignment(leader_epoch, isr, replicas, partition_epoch, controller_epoch)
        self.role, self.leader, self.pending_isr = Role.FOLLOWER, leader, None
        self.epoch_start_offset = -1
        self.followers = {}
        return changed

    def record_follower_fetch(self, replica: int, fetch_offset: int, now_ms: int) -> bool:
        """Update the follower's fetch state; True if its LEO moved."""
        if self.resting:
            self.wake()
        previous = self.followers.get(replica)
        if previous is None:
            previous = ReplicaState()
        self.followers[replica] = update_fetch_state(
            previous, fetch_offset, now_ms, self.log.log_end_offset
        )
        return previous.log_end_offset != fetch_offset

    def maybe_increment_high_watermark(
        self, *, min_insync_replicas: int, eligible: set[int], now_ms: int, max_lag_ms: int, profile: Profile
    ) -> bool:
        """Apply `maybeIncrementLeaderHW`; True if the HW moved."""
        if self.resting:
            self.wake()
        before = self.log.high_watermark
        new_hw = high_watermark(
            current_hw=before,
            leader_leo=self.log.log_end_offset,
            followers=self.followers,
            maximal_isr=self.maximal_isr,
            isr_size=len(self.isr),
            replication_factor=len(self.replicas),
            min_insync_replicas=min_insync_replicas,
            eligible=eligible.__contains__,
            now_ms=now_ms,
            max_lag_ms=max_lag_ms,
            profile=profile,
        )
        if new_hw > before:
            self.log.update_high_watermark(new_hw)
            return True
        return False

    def _update_assignment(
        self,
        leader_epoch: int,
        isr: frozenset[int],
        replicas: tuple[int, ...],
        partition_epoch: int,
        controller_epoch: int,
    ) -> None:
        self.leader_epoch = leader_epoch
        self.isr = isr
        self.replicas = replicas
        self.partition_epoch = partition_epoch
        self.controller_epoch = controller_epoch
