"""A consumer-protocol member's state on the client (KIP-848): Kafka's
`consumer.internals.MemberState`, with the transitions it allows (`getPreviousValidStates`)."""

from __future__ import annotations

from enum import Enum

__all__ = ["MemberState", "check_transition"]


class MemberState(Enum):
    UNSUBSCRIBED = "UNSUBSCRIBED"
    """Not in the group: before subscribing, after leaving. No heartbeats."""
    JOINING = "JOINING"
    """A heartbeat at epoch 0 goes at once, with every field."""
    RECONCILING = "RECONCILING"
    """A target assignment differs from what the member owns: it revokes and assigns."""
    ACKNOWLEDGING = "ACKNOWLEDGING"
    """A reconciliation is done: a heartbeat goes at once with the new owned partitions."""
    STABLE = "STABLE"
    """It owns its target; heartbeats at the interval."""
    FENCED = "FENCED"
    """FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID: its partitions are lost, then it rejoins."""
    PREPARE_LEAVING = "PREPARE_LEAVING"
    """`close()` or `unsubscribe()`: it releases its partitions before its leave heartbeat."""
    LEAVING = "LEAVING"
    """Its leave heartbeat (epoch -1, or -2 for a static member) goes at once."""
    FATAL = "FATAL"
    """A fatal error: no more heartbeats; the application's `poll()` throws."""
    STALE = "STALE"
    """It left on its poll timer (`max.poll.interval.ms`); the next `poll()` rejoins."""

    @property
    def in_group(self) -> bool:
        """Not `isNotInGroup`: heartbeat answers count."""
        return self not in (MemberState.UNSUBSCRIBED, MemberState.FENCED, MemberState.FATAL, MemberState.STALE)

    @property
    def skips_heartbeat(self) -> bool:
        """`shouldSkipHeartbeat`."""
        return not self.in_group

    @property
    def heartbeats_now(self) -> bool:
        """`shouldHeartbeatNow`: without waiting for the interval."""
        return self in (MemberState.JOINING, MemberState.ACKNOWLEDGING, MemberState.LEAVING)

    @property
    def takes_assignment(self) -> bool:
        """`canHandleNewAssignment`: a leaving member ignores a new target."""
        return self in (MemberState.JOINING, MemberState.RECONCILING, MemberState.ACKNOWLEDGING, MemberState.STABLE)


_S = MemberState
PREVIOUS_VALID: dict[MemberState, frozenset[MemberState]] = {
    _S.STABLE: frozenset({_S.JOINING, _S.ACKNOWLEDGING, _S.RECONCILING}),
    _S.RECONCILING: frozenset({_S.STABLE, _S.JOINING, _S.ACKNOWLEDGING, _S.RECONCILING}),
    _S.ACKNOWLEDGING: frozenset({_S.RECONCILING}),
    _S.FATAL: frozenset({_S.JOINING, _S.STABLE, _S.RECONCILING, _S.ACKNOWLEDGING, _S.PREPARE_LEAVING, _S.LEAVING, _S.UNSUBSCRIBED}),
    _S.FENCED: frozenset({_S.JOINING, _S.STABLE, _S.RECONCILING, _S.ACKNOWLEDGING, _S.PREPARE_LEAVING, _S.LEAVING}),
    _S.JOINING: frozenset({_S.FENCED, _S.UNSUBSCRIBED, _S.STALE}),
    _S.PREPARE_LEAVING: frozenset({_S.JOINING, _S.STABLE, _S.RECONCILING, _S.ACKNOWLEDGING, _S.UNSUBSCRIBED}),
    _S.LEAVING: frozenset({_S.PREPARE_LEAVING}),
    _S.UNSUBSCRIBED: frozenset({_S.PREPARE_LEAVING, _S.LEAVING, _S.FENCED}),
    _S.STALE: frozenset({_S.LEAVING}),
}
"""Kafka's `MemberState` table: the states each state may be entered from."""


def check_transition(before: MemberState, after: MemberState) -> None:
    """`transitionTo`: an invalid transition is a bug (Kafka throws IllegalStateException)."""
    if before not in PREVIOUS_VALID[after]:
        msg = f"invalid consumer member transition {before.value} -> {after.value}"
        raise AssertionError(msg)
