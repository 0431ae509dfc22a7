"""`group.max.size` (KIP-389, 2.2+) on one coordinator driven by hand (`group_harness`): who a
full group refuses in each state, static members among them, and a group loaded over the
limit; with KAFKA-9885's rule (2.6+) and the one before it."""

from __future__ import annotations

import pytest

from actors.group.rules import accept_joining_member
from actors.group.state import ClassicGroup, GroupState, MemberMetadata
from protocols.errors import ErrorCode
from protocols.group import JoinGroupResponse
from tests.unit.group.group_harness import RANGE, Harness, client

E, S = ErrorCode, GroupState


def _group(state: GroupState, members: int, awaiting: int) -> ClassicGroup:
    """`members` members m1, m2, ...; the first `awaiting` have a JoinGroup parked; one pending."""
    group = ClassicGroup("g", state=state, generation_id=1)
    for n in range(1, members + 1):
        member = MemberMetadata(f"m{n}", None, "c", 60000, 10000, "consumer", RANGE)
        member.awaiting_join = object() if n <= awaiting else None  # type: ignore[assignment]
        group.add(member)
    group.pending_members["p1"] = None
    return group


@pytest.mark.parametrize(
    ("state", "members", "awaiting", "member_id", "accepted"),
    [
        pytest.param(S.EMPTY, 0, 0, "", True, id="Empty takes anyone"),
        pytest.param(S.PREPARING_REBALANCE, 2, 2, "m1", True, id="Preparing: a member already waiting"),
        pytest.param(S.PREPARING_REBALANCE, 3, 2, "m3", False, id="Preparing: the limit waits already, the last rejoiner goes"),
        pytest.param(S.PREPARING_REBALANCE, 3, 1, "m3", True, id="Preparing: over the limit, fewer waiting"),
        pytest.param(S.PREPARING_REBALANCE, 1, 1, "p1", True, id="Preparing: a pending member under the limit"),
        pytest.param(S.PREPARING_REBALANCE, 2, 2, "p1", False, id="Preparing: a pending member at the limit"),
        pytest.param(S.PREPARING_REBALANCE, 2, 2, "", False, id="Preparing: a new member at the limit"),
        pytest.param(S.COMPLETING_REBALANCE, 3, 0, "m3", True, id="Completing: a member, even over the limit"),
        pytest.param(S.STABLE, 2, 0, "m1", True, id="Stable: a member"),
        pytest.param(S.STABLE, 2, 0, "", False, id="Stable: a new member at the limit"),
        pytest.param(S.STABLE, 2, 0, "p1", False, id="Stable: a pending member at the limit"),
        pytest.param(S.STABLE, 1, 0, "", True, id="Stable: a new member below the limit"),
    ],
)
def test_accept_joining_member_from_2_6(state: GroupState, members: int, awaiting: int, member_id: str, accepted: bool) -> None:
    """`acceptJoiningMember` (KAFKA-9885) with a limit of 2: members count, pending ones do not;
    in PreparingRebalance the members waiting in the join are what counts."""
    group = _group(state, members, awaiting)
    assert accept_joining_member(group, member_id, 2, evict_last_joiners=True) is accepted


@pytest.mark.parametrize(
    ("state", "members", "awaiting", "member_id", "accepted"),
    [
        pytest.param(S.PREPARING_REBALANCE, 3, 0, "m1", False, id="over the limit: the first rejoiner goes"),
        pytest.param(S.PREPARING_REBALANCE, 3, 1, "m1", True, id="over the limit: a member already waiting"),
        pytest.param(S.STABLE, 3, 0, "m2", False, id="over the limit in Stable too"),
        pytest.param(S.STABLE, 2, 0, "m2", True, id="at the limit: a member"),
        pytest.param(S.STABLE, 2, 0, "", False, id="at the limit: a new member"),
        pytest.param(S.PREPARING_REBALANCE, 2, 2, "p1", True, id="a pending member is not checked"),
    ],
)
def test_accept_joining_member_before_2_6(state: GroupState, members: int, awaiting: int, member_id: str, accepted: bool) -> None:
    """KIP-389's first rule (2.2 to 2.5) with a limit of 2: a member rejoining while the group is
    over the limit, or a JoinGroup with no member id at the limit, is refused."""
    group = _group(state, members, awaiting)
    assert accept_joining_member(group, member_id, 2, evict_last_joiners=False) is accepted


def test_a_full_stable_group_refuses_new_members_static_ones_and_a_static_restart() -> None:
    """3.9, `group.max.size` = 2, a Stable group of two. A new dynamic member gets
    GROUP_MAX_SIZE_REACHED before any member id is handed out; so does a new static member, and
    so does a static member restarting with no member id (it would replace itself, but the
    check counts it as one more). The group and its generation stay as they were."""
    h = Harness(settings={"group_max_size": 2})
    h.elect()
    h.join(1, group_instance_id="i-1")
    h.join(2, group_instance_id="i-2")
    h.advance(6000)
    ids = [h.last(client(n), JoinGroupResponse).member_id for n in (1, 2)]
    leader = h.group()["leader"]
    for n, member_id in enumerate(ids, 1):
        h.sync(n, member_id, 1, {m: (i,) for i, m in enumerate(sorted(ids))} if member_id == leader else None)
    assert h.group()["state"] == "Stable"
    h.join(3)
    h.join(4, group_instance_id="i-4")
    h.join(1, group_instance_id="i-1")
    for n in (3, 4, 1):
        assert h.last(client(n), JoinGroupResponse) == JoinGroupResponse(E.GROUP_MAX_SIZE_REACHED, member_id="")
    group = h.group()
    assert (group["state"], group["generation_id"], sorted(group["members"]), group["pending_members"]) == ("Stable", 1, sorted(ids), [])
    assert h.named("group_member_removed") == []


def test_a_group_loaded_over_the_limit_rebalances_and_refuses_the_last_rejoiner() -> None:
    """A group of three stored under `group.max.size` = 3 is loaded by a coordinator whose limit
    is 2 (`onGroupLoaded`, 3.9): it goes to PreparingRebalance at once (t 0). m1 and m2 rejoin
    (t 100, 200); the third rejoiner (t 300) is refused and leaves, which completes the join:
    generation 2 with the first two."""
    before = Harness(settings={"group_max_size": 3})
    ids = before.stable_group(3)
    h = Harness(settings={"group_max_size": 2})
    h.elect(leader_epoch=1, batches=tuple(before.log))
    states = [(e["previous_state"], e["state"]) for e in h.named("group_state_changed")]
    assert states == [(None, "Stable"), ("Stable", "PreparingRebalance")]
    for n, at_ms in ((1, 100), (2, 200), (3, 300)):
        h.advance(at_ms)
        h.join(n, ids[n - 1])
    assert h.last(client(3), JoinGroupResponse) == JoinGroupResponse(E.GROUP_MAX_SIZE_REACHED, member_id="")
    assert [(e["ts_ms"], e["member_id"], e["reason"]) for e in h.named("group_member_removed")] == [(300, ids[2], "group_max_size")]
    [started] = h.named("generation_started")
    assert (started["ts_ms"], started["generation_id"], started["members"]) == (300, 2, sorted(ids[:2]))
    assert [h.last(client(n), JoinGroupResponse).generation_id for n in (1, 2)] == [2, 2]


def test_a_group_loaded_at_the_limit_does_not_rebalance() -> None:
    """Only a group over the limit rebalances on load: two members under a limit of 2 stay Stable."""
    before = Harness()
    before.stable_group(2)
    h = Harness(settings={"group_max_size": 2})
    h.elect(leader_epoch=1, batches=tuple(before.log))
    assert [(e["previous_state"], e["state"]) for e in h.named("group_state_changed")] == [(None, "Stable")]


def test_before_2_2_there_is_no_limit() -> None:
    """KIP-389 came with 2.2: a 2.1 coordinator with the key set lets a second member join."""
    h = Harness(version="2.1", settings={"group_max_size": 1})
    h.elect()
    h.join(1)
    h.join(2)
    h.advance(6000)
    [started] = h.named("generation_started")
    assert len(started["members"]) == 2
    assert [h.last(client(n), JoinGroupResponse).error_code for n in (1, 2)] == [E.NONE, E.NONE]
