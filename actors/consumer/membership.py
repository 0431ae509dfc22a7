"""The consumer coordinator's state: `AbstractCoordinator.MemberState`, the generation, and
the requests a member has in flight to its group coordinator.

The transitions follow `AbstractCoordinator`:
- UNJOINED -> PREPARING_REBALANCE when a JoinGroup is sent;
- PREPARING_REBALANCE -> COMPLETING_REBALANCE on a successful JoinGroup answer (the heartbeat
  thread is enabled then);
- COMPLETING_REBALANCE -> STABLE on a successful SyncGroup answer;
- any -> UNJOINED on a reset of the generation (an error that fences the member, a poll
  timeout, a LeaveGroup).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from protocols.types import TopicPartition

__all__ = ["Commit", "CommitKind", "MemberState", "Membership"]

NO_GENERATION = -1


class MemberState(Enum):
    """`AbstractCoordinator.MemberState`."""

    UNJOINED = "UNJOINED"
    """action: the member is not in a generation; heartbeats are off.
    transition: -> PREPARING_REBALANCE when its JoinGroup is sent."""
    PREPARING_REBALANCE = "PREPARING_REBALANCE"
    """action: a JoinGroup is in flight; heartbeats are off (a parked JoinGroup keeps the
    member's session on the broker).
    transition: -> COMPLETING_REBALANCE on success; -> UNJOINED on a fencing error."""
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"
    """action: the SyncGroup is in flight; heartbeats are on.
    transition: -> STABLE on success; -> UNJOINED or PREPARING_REBALANCE on an error."""
    STABLE = "STABLE"
    """action: the member has its assignment; heartbeats, commits with its generation.
    transition: -> PREPARING_REBALANCE at its next JoinGroup; -> UNJOINED on a reset."""

    @property
    def has_not_joined(self) -> bool:
        """`MemberState.hasNotJoinedGroup`: the heartbeat thread disables itself."""
        return self in (MemberState.UNJOINED, MemberState.PREPARING_REBALANCE)


class CommitKind(Enum):
    """Why a commit was sent: the analytics tell auto-commits from the application's."""

    AUTO = "auto"
    JOIN_PREPARE = "join_prepare"
    SYNC = "sync"
    ASYNC = "async"
    REVOKE = "revoke"
    CLOSE = "close"


@dataclass(slots=True)
class Commit:
    """An OffsetCommit in flight, and its outcome once answered."""

    commit_id: int
    kind: CommitKind
    offsets: dict[TopicPartition, tuple[int, int]]
    generation_id: int
    error: str | None = None
    """None while in flight; "NONE" on success; else the error (a broker error code's name, or
    the client's: DISCONNECTED, TIMEOUT)."""
    started_ms: int = 0


@dataclass(slots=True)
class Membership:
    """The member's side of the group: who it is, in which generation, what is in flight."""

    state: MemberState = MemberState.UNJOINED
    member_id: str = ""
    generation_id: int = NO_GENERATION
    protocol_name: str | None = None
    leader_id: str = ""
    coordinator: int | None = None
    rejoin_needed: bool = True
    needs_join_prepare: bool = True
    join_in_flight: int | None = None
    sync_in_flight: int | None = None
    joined_assignment: list[TopicPartition] | None = None
    """A SyncGroup answer waiting for `onJoinComplete`, which runs in the next `poll()`."""
    join_backoff_until: int = 0
    heartbeat_in_flight: int | None = None
    last_heartbeat_sent_ms: int = 0
    last_heartbeat_ok_ms: int = 0
    next_heartbeat_ms: int = 0
    commits: dict[int, Commit] = field(default_factory=dict)
    """Commit id -> every commit sent this incarnation, answered or not (kept small: pruned)."""
    join_prepare_commit: int | None = None
    revoke_commit: int | None = None
    join_prepare_revoked: bool = False
    join_prepare_started_ms: int = 0
    """When this rebalance's pre-rebalance commit was first sent: `joinPrepareTimer`, one per
    rebalance, bounds the wait for it by the rebalance timeout, retries included."""
    async_commit_fenced: bool = False
    """An asynchronous commit was answered FENCED_INSTANCE_ID in its own generation
    (`asyncCommitFenced`): the next drain of commit callbacks, in `poll()`, throws."""

    @property
    def generation_valid(self) -> bool:
        return self.generation_id != NO_GENERATION

    def reset_generation(self, *, keep_member_id: bool = False) -> None:
        """`resetStateAndGeneration`."""
        self.generation_id = NO_GENERATION
        self.protocol_name = None
        if not keep_member_id:
            self.member_id = ""
        self.state = MemberState.UNJOINED
        self.rejoin_needed = True
