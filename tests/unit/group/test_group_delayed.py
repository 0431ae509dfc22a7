"""KIP-134's `InitialDelayedJoin` and `DelayedJoin`: the arithmetic, then the coordinator's use
of it (exact times)."""

from __future__ import annotations

from actors.group.delayed import (
    DelayedJoin,
    delayed_join,
    initial_delayed_join,
    on_initial_delay_expired,
)
from protocols.group import LeaveGroupRequest, MemberIdentity
from tests.unit.group.group_harness import Harness


def test_the_first_wait_is_the_configured_delay() -> None:
    """From Empty: 3000 ms, with the rest of the rebalance timeout left to wait again."""
    assert initial_delayed_join(3000, 60000) == DelayedJoin(True, 3000, 57000)
    assert initial_delayed_join(3000, 2000) == DelayedJoin(True, 3000, 0)


def test_a_member_added_during_the_delay_re_arms_with_min_of_delay_and_remaining() -> None:
    """`delay = min(3000, remaining)`, `remaining' = max(remaining - previous delay, 0)`."""
    first = DelayedJoin(True, 3000, 4000)
    second = on_initial_delay_expired(first, 3000, new_member_added=True)
    assert second == DelayedJoin(True, 3000, 1000)
    third = on_initial_delay_expired(second, 3000, new_member_added=True)
    assert third == DelayedJoin(True, 1000, 0)
    assert on_initial_delay_expired(third, 3000, new_member_added=True) is None


def test_without_a_new_member_the_initial_delay_completes() -> None:
    """No member added during the wait: the join completes when it expires."""
    assert on_initial_delay_expired(DelayedJoin(True, 3000, 57000), 3000, new_member_added=False) is None


def test_a_delayed_join_waits_the_rebalance_timeout() -> None:
    assert delayed_join(300000) == DelayedJoin(False, 300000, 0)


def test_the_initial_delay_never_completes_early() -> None:
    """Every member joined (no one pending) at 0, yet generation 1 starts only at 3000."""
    h = Harness()
    h.elect()
    h.join_as_member(1)
    h.advance(2999)
    assert h.group()["state"] == "PreparingRebalance"
    h.advance(3000)
    [started] = h.named("generation_started")
    assert (started["ts_ms"], started["generation_id"]) == (3000, 1)


def test_a_second_member_in_the_delay_of_generation_0_extends_it_once() -> None:
    """The member whose join left Empty does not set `newMemberAdded`; the second one (joined at
    1000) does, so the wait is re-armed at 3000 for another 3000: generation 1 at 6000."""
    h = Harness()
    h.elect()
    h.join_as_member(1)
    h.advance(1000)
    h.join_as_member(2)
    h.advance(5999)
    assert h.group()["state"] == "PreparingRebalance"
    h.advance(6000)
    [started] = h.named("generation_started")
    assert (started["ts_ms"], len(started["members"])) == (6000, 2)


def test_a_group_back_from_empty_at_generation_above_0_waits_exactly_3000() -> None:
    """`newMemberAdded` is set only at generation 0: later a second member does not extend it."""
    h = Harness()
    [m1] = h.stable_group(1)
    h.send(LeaveGroupRequest("g", (MemberIdentity(m1),)))
    assert h.group()["state"] == "Empty"
    start = h.now_ms
    h.join_as_member(1)
    h.advance(start + 1000)
    h.join_as_member(2)
    h.advance(start + 3000)
    assert h.group()["state"] == "CompletingRebalance"
    assert h.named("generation_started")[-1]["ts_ms"] == start + 3000
