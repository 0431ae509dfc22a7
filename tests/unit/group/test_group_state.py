"""The classic group's state machine and membership bookkeeping (`GroupMetadata`)."""

from __future__ import annotations

import itertools

import pytest

from actors.core import Address, Emit, Inbound, Out
from actors.group.state import (
    VALID_PREVIOUS_STATES,
    ClassicGroup,
    GroupState,
    IllegalGroupTransition,
    MemberMetadata,
)
from protocols.group import JoinGroupProtocol, Subscription

S = GroupState
ALLOWED = {(before, after) for after, befores in VALID_PREVIOUS_STATES.items() for before in befores}
ALL_PAIRS = list(itertools.product(GroupState, GroupState))


def _member(member_id: str, *, joined: bool = False, instance: str | None = None) -> MemberMetadata:
    parked = Inbound(Address("client", member_id), None, 1, 0) if joined else None
    protocols = (JoinGroupProtocol("range", Subscription(("T",))),)
    return MemberMetadata(member_id, instance, "consumer-g-1", 60000, 10000, "consumer", protocols, awaiting_join=parked)


def test_the_table_is_kafkas() -> None:
    """Empty <- PreparingRebalance; PreparingRebalance <- Stable, CompletingRebalance, Empty;
    CompletingRebalance <- PreparingRebalance; Stable <- CompletingRebalance; Dead <- any."""
    assert VALID_PREVIOUS_STATES == {
        S.EMPTY: {S.PREPARING_REBALANCE},
        S.PREPARING_REBALANCE: {S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY},
        S.COMPLETING_REBALANCE: {S.PREPARING_REBALANCE},
        S.STABLE: {S.COMPLETING_REBALANCE},
        S.DEAD: set(GroupState),
    }


@pytest.mark.parametrize(("before", "after"), [p for p in ALL_PAIRS if p not in ALLOWED], ids=lambda s: s.value)
def test_every_invalid_transition_raises(before: GroupState, after: GroupState) -> None:
    """A transition outside the table is a coordinator bug: it raises and changes nothing."""
    group = ClassicGroup("g", state=before)
    out = Out()
    with pytest.raises(IllegalGroupTransition):
        group.transition_to(after, out, 5)
    assert group.state is before and list(out) == []


@pytest.mark.parametrize(("before", "after"), sorted(ALLOWED, key=lambda p: (p[0].value, p[1].value)), ids=lambda s: s.value)
def test_every_valid_transition_logs_and_stamps_the_time(before: GroupState, after: GroupState) -> None:
    """A valid transition moves, records when (`currentStateTimestamp`) and logs the change."""
    group = ClassicGroup("g", state=before, generation_id=4)
    out = Out()
    group.transition_to(after, out, 5)
    assert (group.state, group.state_timestamp_ms) == (after, 5)
    fields = {"group_id": "g", "previous_state": before.value, "state": after.value, "generation_id": 4}
    assert list(out) == [Emit("group_state_changed", fields)]


def test_all_members_joined_needs_no_pending_member() -> None:
    """`hasAllMembersJoined`: every member's JoinGroup parked and no KIP-394 member pending."""
    group = ClassicGroup("g")
    group.add(_member("a", joined=True))
    group.add(_member("b", joined=True))
    assert group.has_all_members_joined()
    group.pending_members["c"] = None
    assert not group.has_all_members_joined()
    del group.pending_members["c"]
    group.members["b"].awaiting_join = None
    assert not group.has_all_members_joined()


def test_the_first_member_leads_and_a_removed_leader_passes_to_the_lowest_id() -> None:
    """Deterministic for Kafka's `members.keys.headOption`: the lowest remaining member id."""
    group = ClassicGroup("g")
    for member_id in ("m-5", "m-9", "m-2"):
        group.add(_member(member_id))
    assert group.leader_id == "m-5"
    group.remove("m-5")
    assert group.leader_id == "m-2"


def test_a_leader_that_did_not_rejoin_is_replaced_by_the_lowest_joined_id() -> None:
    """Deterministic for `members.find(_.isAwaitingJoin)`: the lowest member id that rejoined;
    no one rejoined means no leader can be elected."""
    group = ClassicGroup("g")
    group.add(_member("m-1"))
    group.add(_member("m-7", joined=True))
    group.add(_member("m-3", joined=True))
    assert group.maybe_elect_new_joined_leader() and group.leader_id == "m-3"
    idle = ClassicGroup("h")
    idle.add(_member("m-1"))
    assert not idle.maybe_elect_new_joined_leader() and idle.leader_id == "m-1"


def test_a_static_member_keeps_its_place_under_a_new_id() -> None:
    """`replaceStaticMember`: the instance maps to the new id, which keeps the leadership and
    stays pending sync if the old one was."""
    group = ClassicGroup("g")
    group.add(_member("old", instance="i-1"))
    group.pending_sync_members["old"] = None
    group.replace_static_member("i-1", "old", "new")
    assert (group.leader_id, group.static_members, list(group.members)) == ("new", {"i-1": "new"}, ["new"])
    assert list(group.pending_sync_members) == ["new"]
