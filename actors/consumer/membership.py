"""The classic member's state: `AbstractCoordinator.MemberState`, the generation, and the
JoinGroup and SyncGroup a member has in flight to its group coordinator.

The transitions follow `AbstractCoordinator`:
- UNJOINED -> PREPARING_REBALANCE when a JoinGroup is sent;
- PREPARING_REBALANCE -> COMPLETING_REBALANCE on a successful JoinGroup answer (the heartbeat
  thread is enabled then);
- COMPLETING_REBALANCE -> STABLE on a successful SyncGroup answer;
- any -> UNJOINED on a reset of the generation (an error that fences the member, a poll
  timeout, a LeaveGroup).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from actors.consumer.group_membership import NO_GENERATION
from protocols.group import JoinGroupResponse
from protocols.types import TopicPartition

__all__ = ["MemberState", "Membership"]


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
    join_answer: JoinGroupResponse | None = None
    """The JoinGroup answer received while no thread polled the network client: the heartbeat
    thread is off in PREPARING_REBALANCE, so it waits for the application's next `poll()`."""
    sync_in_flight: int | None = None
    joined_assignment: list[TopicPartition] | None = None
    """A SyncGroup answer waiting for `onJoinComplete`, which runs in the next `poll()`."""
    join_backoff_until: int = 0

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
