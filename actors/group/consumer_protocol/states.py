"""The consumer protocol's states: the group's (`ConsumerGroup.ConsumerGroupState`) and a
member's on the coordinator (`modern.MemberState`), with the rule that derives the first."""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum

__all__ = ["TRANSITIONS", "ConsumerGroupState", "MemberState", "group_state", "is_reconciled_to"]


class ConsumerGroupState(Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    """The group epoch is ahead of the target assignment's: the assignor must run."""
    RECONCILING = "Reconciling"
    """The target is computed; some member has not reached it."""
    STABLE = "Stable"
    DEAD = "Dead"
    """Deleted (DeleteGroups, or its offsets expired while Empty); it never comes back."""


class MemberState(Enum):
    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    """It must give up partitions first: its epoch stays until it reports them released."""
    UNRELEASED_PARTITIONS = "unreleased_partitions"
    """It is at the target epoch, but part of its target is still held by another member."""
    UNKNOWN = "unknown"


_LIVE = (ConsumerGroupState.EMPTY, ConsumerGroupState.ASSIGNING, ConsumerGroupState.RECONCILING, ConsumerGroupState.STABLE)
TRANSITIONS: dict[ConsumerGroupState, frozenset[ConsumerGroupState]] = {
    # The state is recomputed after every change, so any live state can follow any other;
    # only deletion leaves them, and nothing leaves DEAD.
    **{state: frozenset((*_LIVE, ConsumerGroupState.DEAD)) for state in _LIVE},
    ConsumerGroupState.DEAD: frozenset(),
}


def is_reconciled_to(state: MemberState, member_epoch: int, target_epoch: int) -> bool:
    """`ModernGroupMember.isReconciledTo`: STABLE at the target epoch."""
    return state is MemberState.STABLE and member_epoch == target_epoch


def group_state(group_epoch: int, target_assignment_epoch: int, members: Iterable[tuple[MemberState, int]]) -> ConsumerGroupState:
    """`ConsumerGroup.maybeUpdateGroupState`, from the group epoch, the target assignment's
    epoch and each member's (state, member epoch)."""
    members = list(members)
    if not members:
        return ConsumerGroupState.EMPTY
    if group_epoch > target_assignment_epoch:
        return ConsumerGroupState.ASSIGNING
    if all(is_reconciled_to(state, epoch, target_assignment_epoch) for state, epoch in members):
        return ConsumerGroupState.STABLE
    return ConsumerGroupState.RECONCILING
