"""The join barrier's timing: `DelayedJoin` and KIP-134's `InitialDelayedJoin`, as pure arithmetic.

`prepareRebalance` arms one of them. From Empty it is `InitialDelayedJoin`
(`group.initial.rebalance.delay.ms`, 3000 by default, 0.11+): it never completes early, and when
it expires after a member joined during the delay of generation 0 (`newMemberAdded`) it waits
again, for `min(configured delay, remaining)`, with `remaining' = max(remaining - previous delay,
0)`, until the group's rebalance timeout is spent. From any other state it is `DelayedJoin` for
the rebalance timeout, which completes as soon as every member has joined. The coordinator keeps
the armed one as a `DelayedJoin` value and a timer; these functions compute the next value.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DelayedJoin", "delayed_join", "initial_delayed_join", "on_initial_delay_expired"]


@dataclass(frozen=True, slots=True)
class DelayedJoin:
    """The armed join completion (`DelayedJoin`, or from Empty `InitialDelayedJoin`)."""

    initial: bool
    delay_ms: int
    """How long this one waits."""
    remaining_ms: int = 0
    """`InitialDelayedJoin` only: what is left of the rebalance timeout to wait again with."""


def delayed_join(rebalance_timeout_ms: int) -> DelayedJoin:
    """`DelayedJoin(group.rebalanceTimeoutMs)`: completes early once everyone joined."""
    return DelayedJoin(initial=False, delay_ms=rebalance_timeout_ms)


def initial_delayed_join(configured_delay_ms: int, rebalance_timeout_ms: int) -> DelayedJoin:
    """The first wait from Empty: the configured delay, with the rest of the rebalance timeout
    left (`max(rebalanceTimeoutMs - delay, 0)`)."""
    return DelayedJoin(
        initial=True,
        delay_ms=configured_delay_ms,
        remaining_ms=max(rebalance_timeout_ms - configured_delay_ms, 0),
    )


def on_initial_delay_expired(
    join: DelayedJoin, configured_delay_ms: int, *, new_member_added: bool
) -> DelayedJoin | None:
    """`InitialDelayedJoin.onComplete`: the next wait, or None to complete the join now."""
    assert join.initial, "only the initial delay waits again"
    if not new_member_added or join.remaining_ms == 0:
        return None
    return DelayedJoin(
        initial=True,
        delay_ms=min(configured_delay_ms, join.remaining_ms),
        remaining_ms=max(join.remaining_ms - join.delay_ms, 0),
    )
