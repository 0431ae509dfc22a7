"""Rules of the classic rebalance on one coordinator driven by hand (`group_harness`), each
with exact times: the generation a Heartbeat must carry, removing members that did not rejoin
within the rebalance timeout, the leader's repeated JoinGroup during CompletingRebalance, and a
static member replacing itself during CompletingRebalance."""

from __future__ import annotations

from protocols.errors import ErrorCode
from protocols.group import HeartbeatRequest, HeartbeatResponse, JoinGroupResponse
from tests.unit.group.group_harness import GROUP, Harness, client

E = ErrorCode


def _two_members(h: Harness, *, sync: bool = True) -> tuple[str, str]:
    """m1 (client 1, the leader) and m2 (client 2) join with a 100 s session and a 20 s
    rebalance timeout; generation 1 forms at 6000 (the initial delay, waited twice); with
    `sync`, both SyncGroups make it Stable."""
    h.elect()
    m1 = h.join_as_member(1, session_ms=100000, rebalance_ms=20000)
    m2 = h.join_as_member(2, session_ms=100000, rebalance_ms=20000)
    h.advance(6000)
    assert h.group()["leader"] == m1 and h.group()["state"] == "CompletingRebalance"
    if sync:
        h.sync(1, m1, 1, {m1: (0,), m2: (1,)})
        h.sync(2, m2, 1)
        assert h.group()["state"] == "Stable"
    return m1, m2


def test_a_heartbeat_from_another_generation_is_illegal() -> None:
    """`handleHeartbeat`: a known member's Heartbeat must carry the group's generation; generation
    0 in generation 1 is ILLEGAL_GENERATION, generation 1 is NONE (an unknown member is
    UNKNOWN_MEMBER_ID first, whatever generation it names)."""
    h = Harness()
    m1, _ = _two_members(h)
    answers = []
    for member_id, generation in ((m1, 0), (m1, 2), (m1, 1), ("nobody", 0)):
        h.send(HeartbeatRequest(GROUP, generation, member_id), client(1))
        answers.append(h.last(client(1), HeartbeatResponse).error_code)
    assert answers == [E.ILLEGAL_GENERATION, E.ILLEGAL_GENERATION, E.NONE, E.UNKNOWN_MEMBER_ID]


def test_a_member_that_does_not_rejoin_within_the_rebalance_timeout_is_removed() -> None:
    """`onCompleteJoin`: the leader rejoins at 10000 (a rebalance); m2 does not, and its session
    (100 s) has not expired when the rebalance timeout (20 s) ends the join at 30000: m2 is
    removed (`not_rejoined`) and generation 2 forms with m1 alone."""
    h = Harness()
    m1, m2 = _two_members(h)
    h.advance(10000)
    h.join(1, m1, session_ms=100000, rebalance_ms=20000)
    h.advance(29999)
    assert h.group()["state"] == "PreparingRebalance" and h.named("group_member_removed") == []
    h.advance(30000)
    assert [(e["ts_ms"], e["member_id"], e["reason"]) for e in h.named("group_member_removed")] == [(30000, m2, "not_rejoined")]
    started = h.named("generation_started")[-1]
    assert (started["ts_ms"], started["generation_id"], started["members"]) == (30000, 2, [m1])
    assert list(h.group()["members"]) == [m1]


def test_the_leader_rejoining_during_completing_rebalance_gets_the_members_again() -> None:
    """`doCurrentMemberJoinGroup` in CompletingRebalance with unchanged metadata (its JoinGroup
    answer was lost): the current generation again, and the leader's answer lists the members
    and their subscriptions so it can assign; a follower's lists none. No rebalance."""
    h = Harness()
    m1, m2 = _two_members(h, sync=False)
    h.advance(7000)
    h.join(1, m1, session_ms=100000, rebalance_ms=20000)
    h.join(2, m2, session_ms=100000, rebalance_ms=20000)
    leader, follower = h.last(client(1), JoinGroupResponse), h.last(client(2), JoinGroupResponse)
    assert (leader.error_code, leader.generation_id, leader.leader) == (E.NONE, 1, m1)
    assert [m.member_id for m in leader.members] == sorted([m1, m2])
    assert (follower.error_code, follower.generation_id, follower.members) == (E.NONE, 1, ())
    assert (h.group()["state"], h.group()["generation_id"]) == ("CompletingRebalance", 1)


def test_a_static_member_replaced_during_completing_rebalance_starts_a_new_rebalance() -> None:
    """`updateStaticMemberThenRebalanceOrCompleteJoin` in CompletingRebalance: the leader may be
    assigning to the old member id, so the replacement (a restart of `i-2`, at 7000) moves the
    group to PreparingRebalance at once; the new id's JoinGroup waits in the join."""
    h = Harness()
    h.elect()
    h.join(1, group_instance_id="i-1")
    h.join(2, group_instance_id="i-2")
    h.advance(6000)
    old = h.last(client(2), JoinGroupResponse).member_id
    assert h.group()["state"] == "CompletingRebalance"
    h.advance(7000)
    h.join(3, group_instance_id="i-2")
    assert [(e["ts_ms"], e["member_id"], e["reason"]) for e in h.named("group_member_removed")] == [(7000, old, "replaced")]
    states = [(e["ts_ms"], e["previous_state"], e["state"]) for e in h.named("group_state_changed")]
    assert states[-1] == (7000, "CompletingRebalance", "PreparingRebalance")
    [new] = [m for m, member in h.group()["members"].items() if member["group_instance_id"] == "i-2"]
    assert new != old and h.group()["members"][new]["awaiting_join"] is True
