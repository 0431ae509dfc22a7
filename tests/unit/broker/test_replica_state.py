"""The leader's follower state, HW and ISR rules, with the values of Kafka's `Partition` and `Replica`."""

from __future__ import annotations

from actors.broker.replica_state import (
    ReplicaState,
    can_join_isr,
    fetched_at_end,
    high_watermark,
    is_caught_up,
    out_of_sync_replicas,
    reset_for_new_leader,
    update_fetch_state,
)
from actors.profiles import Profile

V39 = Profile.for_version("3.9")
V36 = Profile.for_version("3.6")
V35 = Profile.for_version("3.5")
V20 = Profile.for_version("2.0")
LAG = 30000


def test_fetch_at_the_leaders_end_marks_the_follower_caught_up_now() -> None:
    s = update_fetch_state(ReplicaState(), fetch_offset=5, fetch_time_ms=100, leader_end_offset=5)
    assert s == ReplicaState(5, 100, 5, 100)


def test_the_idle_fetch_shortcut_is_the_general_rule_at_the_leaders_end() -> None:
    """`fetched_at_end` (an idle partition of a follower's fetch) gives what
    `update_fetch_state` gives for a fetch from the leader's LEO, whatever the state before."""
    states = [
        ReplicaState(),
        ReplicaState(5, 100, 5, 100),
        ReplicaState(3, 40, 9, 150),  # behind, and the leader's end was past this one
        ReplicaState(7, 200, 7, 200),
    ]
    for state in states:
        for end in (5, 7, 8):
            assert fetched_at_end(state, end, 250) == update_fetch_state(state, end, 250, end)


def test_fetch_behind_but_past_the_previous_leader_end_counts_the_previous_fetch_time() -> None:
    s = ReplicaState(log_end_offset=3, last_caught_up_time_ms=0, last_fetch_leader_log_end_offset=5, last_fetch_time_ms=100)
    s = update_fetch_state(s, fetch_offset=5, fetch_time_ms=200, leader_end_offset=8)
    assert (s.last_caught_up_time_ms, s.last_fetch_leader_log_end_offset, s.log_end_offset) == (100, 8, 5)


def test_fetch_behind_the_previous_leader_end_leaves_caught_up_time() -> None:
    s = ReplicaState(log_end_offset=3, last_caught_up_time_ms=40, last_fetch_leader_log_end_offset=5, last_fetch_time_ms=100)
    s = update_fetch_state(s, fetch_offset=4, fetch_time_ms=200, leader_end_offset=8)
    assert s.last_caught_up_time_ms == 40


def test_s9_isr_shrink_timing() -> None:
    """Follower B2 last caught up at t=1000, then stops; the leader keeps appending."""
    b2 = ReplicaState(log_end_offset=10, last_caught_up_time_ms=1000)
    checks = {t: out_of_sync_replicas(frozenset({1, 2}), 1, {2: b2}, 20, t, LAG) for t in (15000, 30000, 45000)}
    assert checks == {15000: frozenset(), 30000: frozenset(), 45000: frozenset({2})}


def test_s9_a_follower_at_the_leaders_leo_is_never_out_of_sync() -> None:
    b2 = ReplicaState(log_end_offset=10, last_caught_up_time_ms=1000)
    assert out_of_sync_replicas(frozenset({1, 2}), 1, {2: b2}, 10, 10**9, LAG) == frozenset()


def test_a_new_leader_cannot_advance_the_hw_until_isr_followers_fetch() -> None:
    followers = {2: reset_for_new_leader(in_isr=True, now_ms=0)}
    assert followers[2].log_end_offset == -1
    assert _hw(followers, leader_leo=5, current_hw=3) == 3


def _hw(followers: dict[int, ReplicaState], *, leader_leo: int, current_hw: int = 0,
        isr: frozenset[int] = frozenset({1, 2}), rf: int = 2, min_isr: int = 1,
        profile: Profile = V39, now: int = 0) -> int:
    return high_watermark(
        current_hw=current_hw,
        leader_leo=leader_leo,
        followers=followers,
        maximal_isr=isr,
        isr_size=len(isr),
        replication_factor=rf,
        min_insync_replicas=min_isr,
        eligible=lambda _b: True,
        now_ms=now,
        max_lag_ms=LAG,
        profile=profile,
    )


def test_s1_hw_follows_the_followers_fetch_offset() -> None:
    """S1: after the append, remote LEO 0 keeps HW 0; Fetch(1) makes it 1."""
    assert _hw({2: ReplicaState(log_end_offset=0)}, leader_leo=1) == 0
    assert _hw({2: ReplicaState(log_end_offset=1)}, leader_leo=1) == 1


def test_hw_never_moves_back() -> None:
    assert _hw({2: ReplicaState(log_end_offset=2)}, leader_leo=6, current_hw=4) == 4


def test_s8_under_min_isr_the_hw_stays_in_37_and_moves_in_36() -> None:
    """RF 3, min.isr 2, ISR {1}: an acks=1 write at offset 10."""
    args = {"leader_leo": 11, "current_hw": 10, "isr": frozenset({1}), "rf": 3, "min_isr": 2}
    assert _hw({}, **args) == 10
    assert _hw({}, **args, profile=V36) == 11


def test_kafka_15021_a_caught_up_replica_outside_the_isr_holds_the_hw_from_36() -> None:
    """Follower 3 is not in the ISR but caught up (fetched within the lag) at LEO 7."""
    followers = {2: ReplicaState(log_end_offset=10), 3: ReplicaState(log_end_offset=7, last_caught_up_time_ms=0)}
    assert _hw(followers, leader_leo=10, profile=V36, now=1000) == 7
    assert _hw(followers, leader_leo=10, profile=V35, now=1000) == 10


def test_kafka_7128_joining_the_isr_needs_the_leaders_epoch_start_from_21() -> None:
    follower = ReplicaState(log_end_offset=5)
    assert not can_join_isr(follower, high_watermark=5, epoch_start_offset=6, profile=V39)
    assert can_join_isr(follower, high_watermark=5, epoch_start_offset=6, profile=V20)
    assert not can_join_isr(follower, high_watermark=6, epoch_start_offset=0, profile=V20)


def test_is_caught_up() -> None:
    s = ReplicaState(log_end_offset=3, last_caught_up_time_ms=100)
    assert is_caught_up(s, 3, 10**9, LAG)
    assert is_caught_up(s, 9, 100 + LAG, LAG)
    assert not is_caught_up(s, 9, 101 + LAG, LAG)
