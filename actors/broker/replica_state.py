"""The leader's view of its followers, and the HW and ISR rules, as pure functions.

Models `kafka.cluster.Replica` (`ReplicaState`, `updateFetchStateOrThrow`, `isCaughtUp`,
`resetReplicaState`) and the decisions of `Partition.maybeIncrementLeaderHW`,
`maybeShrinkIsr` and `maybeExpandIsr` (`kafka.cluster.Partition`). The behaviours that
differ by version take the `Profile`; everything else is Kafka 3.9.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

from actors.profiles import Profile

__all__ = [
    "NEVER_MS",
    "ReplicaState",
    "can_join_isr",
    "fetched_at_end",
    "high_watermark",
    "is_caught_up",
    "out_of_sync_replicas",
    "reset_for_new_leader",
    "update_fetch_state",
]

UNKNOWN_OFFSET = -1
NEVER_MS = -(2**62)
"""`lastCaughtUpTimeMs` of a replica that never caught up. Kafka uses 0, which is decades ago on
a wall clock; simulated time starts at 0, so 0 would read as "just now"."""


class ReplicaState(NamedTuple):
    """What a leader knows of one follower (a tuple: one is built for every partition of every
    follower fetch)."""

    log_end_offset: int = UNKNOWN_OFFSET
    """The `fetch_offset` of the follower's last Fetch: not what the leader sent back."""
    last_caught_up_time_ms: int = NEVER_MS
    last_fetch_leader_log_end_offset: int = 0
    last_fetch_time_ms: int = NEVER_MS


def update_fetch_state(
    state: ReplicaState, fetch_offset: int, fetch_time_ms: int, leader_end_offset: int
) -> ReplicaState:
    """`updateFetchStateOrThrow`: a follower fetched from `fetch_offset` when the leader's LEO
    was `leader_end_offset`."""
    caught_up = state.last_caught_up_time_ms
    if fetch_offset >= leader_end_offset:
        caught_up = max(caught_up, fetch_time_ms)
    elif fetch_offset >= state.last_fetch_leader_log_end_offset:
        caught_up = max(caught_up, state.last_fetch_time_ms)
    # Positional: one is built for every partition of every follower fetch.
    return ReplicaState(
        fetch_offset,  # log_end_offset
        caught_up,  # last_caught_up_time_ms
        max(leader_end_offset, state.last_fetch_leader_log_end_offset),
        fetch_time_ms,  # last_fetch_time_ms
    )


def fetched_at_end(state: ReplicaState, leader_end_offset: int, fetch_time_ms: int) -> ReplicaState:
    """`update_fetch_state` for a fetch from the leader's LEO, the common case of an idle
    partition, reduced: caught up at the fetch (simulated time never goes back)."""
    return ReplicaState(
        leader_end_offset,
        fetch_time_ms,
        max(leader_end_offset, state.last_fetch_leader_log_end_offset),
        fetch_time_ms,
    )


def is_caught_up(state: ReplicaState, leader_leo: int, now_ms: int, max_lag_ms: int) -> bool:
    return state.log_end_offset == leader_leo or now_ms - state.last_caught_up_time_ms <= max_lag_ms


def reset_for_new_leader(in_isr: bool, now_ms: int) -> ReplicaState:
    """`resetReplicaState` on becoming leader: the follower's LEO is unknown until it fetches;
    an ISR member counts as caught up now, any other as never."""
    return ReplicaState(last_caught_up_time_ms=now_ms if in_isr else NEVER_MS)


def high_watermark(  # noqa: PLR0913 - the inputs of Kafka's rule, named
    *,
    current_hw: int,
    leader_leo: int,
    followers: Mapping[int, ReplicaState],
    maximal_isr: frozenset[int],
    isr_size: int,
    replication_factor: int,
    min_insync_replicas: int,
    eligible: Callable[[int], bool],
    now_ms: int,
    max_lag_ms: int,
    profile: Profile,
) -> int:
    """`maybeIncrementLeaderHW`: the HW after this event (it only moves forward).

    The candidate is the leader's LEO, lowered to the LEO of every follower that is in the
    maximal ISR (committed ISR plus pending additions, KIP-497) or, since 3.6 (KAFKA-15021),
    caught up and eligible to join. Since 3.7 (KAFKA-15583) it does not move while the ISR is
    under min ISR.
    """
    if profile.hw_needs_min_isr and isr_size < min(min_insync_replicas, replication_factor):
        return current_hw
    candidate = leader_leo
    for broker in sorted(followers):
        state = followers[broker]
        counts = broker in maximal_isr or (
            profile.caught_up_counts_for_hw
            and eligible(broker)
            and is_caught_up(state, leader_leo, now_ms, max_lag_ms)
        )
        if counts:
            candidate = min(candidate, state.log_end_offset)
    return max(current_hw, candidate)


def out_of_sync_replicas(
    isr: frozenset[int],
    leader: int,
    followers: Mapping[int, ReplicaState],
    leader_leo: int,
    now_ms: int,
    max_lag_ms: int,
) -> frozenset[int]:
    """`getOutOfSyncReplicas`: ISR followers neither at the leader's LEO nor caught up within
    `replica.lag.time.max.ms`."""
    return frozenset(
        broker
        for broker in isr
        if broker != leader
        and broker in followers
        and not is_caught_up(followers[broker], leader_leo, now_ms, max_lag_ms)
    )


def can_join_isr(
    state: ReplicaState, high_watermark: int, epoch_start_offset: int, profile: Profile
) -> bool:
    """`maybeExpandIsr`'s offset condition: the follower reached the HW and, since 2.1
    (KAFKA-7128), the start of the leader's epoch. Eligibility (a live broker) and "no ISR change
    in flight" are the caller's to check."""
    if state.log_end_offset < high_watermark:
        return False
    return not profile.isr_join_needs_epoch_start or state.log_end_offset >= epoch_start_offset
