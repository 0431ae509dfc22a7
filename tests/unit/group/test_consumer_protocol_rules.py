"""KIP-848's coordinator rules, as pure functions: the group's states, the member-epoch checks
of heartbeats and commits, a member's reconciliation with partition epochs, and the
server-side assignors. The values are worked out by hand from Kafka's `ConsumerGroup`,
`GroupMetadataManager`, `CurrentAssignmentBuilder`, `UniformHomogeneousAssignmentBuilder` and
`RangeAssignor`."""

from __future__ import annotations

import pytest

from actors.group.consumer_protocol.assignors import AssignorError, MemberSpec, assign, range_assign, uniform_assign
from actors.group.consumer_protocol.epochs import CommitMember, heartbeat_epoch_error, offset_commit_error
from actors.group.consumer_protocol.reconciliation import FREE, Member, ReconciliationError, reconcile
from actors.group.consumer_protocol.states import TRANSITIONS, ConsumerGroupState, MemberState, group_state
from protocols.errors import ErrorCode

S = MemberState
G = ConsumerGroupState


def parts(*numbers: int) -> frozenset[int]:
    return frozenset(numbers)


# --- the group's state (ConsumerGroup.maybeUpdateGroupState) ---


@pytest.mark.parametrize(
    ("group_epoch", "target_epoch", "members", "expected"),
    [
        (3, 3, [], G.EMPTY),
        (4, 3, [(S.STABLE, 3)], G.ASSIGNING),
        (4, 4, [(S.STABLE, 4), (S.UNRELEASED_PARTITIONS, 4)], G.RECONCILING),
        (4, 4, [(S.STABLE, 4), (S.STABLE, 3)], G.RECONCILING),
        (4, 4, [(S.STABLE, 4), (S.STABLE, 4)], G.STABLE),
    ],
)
def test_the_group_state_follows_its_epochs_and_members(
    group_epoch: int, target_epoch: int, members: list[tuple[MemberState, int]], expected: ConsumerGroupState
) -> None:
    assert group_state(group_epoch, target_epoch, members) is expected


def test_dead_is_the_end() -> None:
    assert TRANSITIONS[G.DEAD] == frozenset()
    assert all(G.DEAD in TRANSITIONS[state] for state in (G.EMPTY, G.ASSIGNING, G.RECONCILING, G.STABLE))


# --- the heartbeat's member epoch (throwIfConsumerGroupMemberEpochIsInvalid) ---

ASSIGNED = {"T": parts(0, 1)}


@pytest.mark.parametrize(
    ("received", "owned", "expected"),
    [
        (5, {"T": [0]}, ErrorCode.NONE),
        (6, {"T": [0]}, ErrorCode.FENCED_MEMBER_EPOCH),
        (4, {"T": [0, 1]}, ErrorCode.NONE),  # the answer that bumped it to 5 was lost
        (4, {"T": [0, 2]}, ErrorCode.FENCED_MEMBER_EPOCH),  # owns what it no longer has
        (4, None, ErrorCode.FENCED_MEMBER_EPOCH),  # does not say what it owns
        (3, {"T": [0]}, ErrorCode.FENCED_MEMBER_EPOCH),  # two epochs behind
    ],
)
def test_a_heartbeat_behind_by_one_epoch_passes_only_with_its_partitions_still_assigned(
    received: int, owned: dict[str, list[int]] | None, expected: ErrorCode
) -> None:
    """The coordinator knows the member at epoch 5, previously 4, with T-0 and T-1."""
    assert heartbeat_epoch_error(received, 5, 4, owned, ASSIGNED) is expected


# --- the offset commit's member epoch (ConsumerGroup.validateOffsetCommit) ---

MEMBERS = {"m1": CommitMember(7), "c1": CommitMember(7, uses_classic_protocol=True)}


@pytest.mark.parametrize(
    ("members", "member_id", "epoch", "version", "expected"),
    [
        ({}, "", -1, 9, ErrorCode.NONE),  # an admin tool's commit to an empty group
        (MEMBERS, "", -1, 9, ErrorCode.UNKNOWN_MEMBER_ID),
        (MEMBERS, "m9", 7, 9, ErrorCode.UNKNOWN_MEMBER_ID),
        (MEMBERS, "m1", 7, 9, ErrorCode.NONE),
        (MEMBERS, "m1", 6, 9, ErrorCode.STALE_MEMBER_EPOCH),
        (MEMBERS, "m1", 8, 9, ErrorCode.STALE_MEMBER_EPOCH),
        (MEMBERS, "m1", 7, 8, ErrorCode.UNSUPPORTED_VERSION),
        (MEMBERS, "c1", 6, 8, ErrorCode.ILLEGAL_GENERATION),  # a classic member: its generation
        (MEMBERS, "c1", 7, 8, ErrorCode.NONE),
    ],
)
def test_a_commit_must_name_the_members_current_epoch(
    members: dict[str, CommitMember], member_id: str, epoch: int, version: int, expected: ErrorCode
) -> None:
    assert offset_commit_error(members, member_id, epoch, api_version=version) is expected


# --- reconciliation (CurrentAssignmentBuilder) ---


def test_a_partition_moves_only_once_its_owner_released_it() -> None:
    """A holds T-0..3 at epoch 1; B joins and the target at epoch 2 gives T-2 and T-3 to B.
    B reaches epoch 2 at once but gets nothing while A holds them; A keeps epoch 1 while it
    revokes; once A reports them gone it moves to epoch 2 and B gets them at its next heartbeat."""
    target = {"a": {"T": parts(0, 1)}, "b": {"T": parts(2, 3)}}
    a = Member(S.STABLE, 1, {"T": parts(0, 1, 2, 3)})
    b = Member(S.STABLE, 0)

    def epoch_of(*members: Member) -> object:
        def partition_epoch(topic: str, p: int) -> int:
            for m in members:
                if p in m.assigned.get(topic, ()) or p in m.pending_revocation.get(topic, ()):
                    return m.member_epoch
            return FREE

        return partition_epoch

    b = reconcile(b, 2, target["b"], epoch_of(a), {})
    assert b == Member(S.UNRELEASED_PARTITIONS, 2, {}, {})
    a = reconcile(a, 2, target["a"], epoch_of(b), {"T": parts(0, 1, 2, 3)})
    assert a == Member(S.UNREVOKED_PARTITIONS, 1, {"T": parts(0, 1)}, {"T": parts(2, 3)})
    assert reconcile(b, 2, target["b"], epoch_of(a), {}) == b
    assert reconcile(a, 2, target["a"], epoch_of(b), {"T": parts(0, 1, 3)}) == a  # still owns T-3
    a = reconcile(a, 2, target["a"], epoch_of(b), {"T": parts(0, 1)})
    assert a == Member(S.STABLE, 2, {"T": parts(0, 1)}, {})
    b = reconcile(b, 2, target["b"], epoch_of(a), {})
    assert b == Member(S.STABLE, 2, {"T": parts(2, 3)}, {})


def test_a_member_that_owns_none_of_the_revoked_partitions_moves_at_once() -> None:
    """Revoking T-1, which the member already reports not owning: no UNREVOKED step."""
    member = Member(S.STABLE, 3, {"T": parts(0, 1)})
    after = reconcile(member, 4, {"T": parts(0, 2)}, lambda _t, _p: FREE, {"T": parts(0)})
    assert after == Member(S.STABLE, 4, {"T": parts(0, 2)}, {})


def test_a_stable_member_at_the_target_epoch_is_left_alone() -> None:
    member = Member(S.STABLE, 4, {"T": parts(0)})
    assert reconcile(member, 4, {"T": parts(0, 1)}, lambda _t, _p: FREE, None) is member


def test_a_member_in_an_unknown_state_that_owns_partitions_is_fenced() -> None:
    member = Member(S.UNKNOWN, 4, {"T": parts(0)})
    with pytest.raises(ReconciliationError) as caught:
        reconcile(member, 5, {"T": parts(0)}, lambda _t, _p: FREE, {"T": parts(0)})
    assert caught.value.code is ErrorCode.FENCED_MEMBER_EPOCH
    assert reconcile(member, 5, {"T": parts(0)}, lambda _t, _p: FREE, {}) == Member(S.STABLE, 5, {"T": parts(0)}, {})


# --- the server-side assignors ---


def _members(*names: str, targets: dict[str, dict[str, frozenset[int]]] | None = None) -> dict[str, MemberSpec]:
    targets = targets or {}
    return {n: MemberSpec(frozenset({"T"}), targets.get(n, {})) for n in names}


def test_uniform_spreads_the_partitions_with_the_first_members_taking_the_remainder() -> None:
    assert uniform_assign(_members("c", "a", "b"), {"T": 7}) == {
        "a": {"T": parts(0, 1, 2)},
        "b": {"T": parts(3, 4)},
        "c": {"T": parts(5, 6)},
    }


def test_uniform_is_sticky_each_member_keeps_what_fits_its_quota() -> None:
    """7 partitions, 3 members: quotas 3, 2, 2. a keeps T-0..2 of its four, b keeps T-4 and
    T-5 of its three; c, new, takes the two they gave up (T-3, T-6)."""
    members = _members("a", "b", "c", targets={"a": {"T": parts(0, 1, 2, 3)}, "b": {"T": parts(4, 5, 6)}})
    assert uniform_assign(members, {"T": 7}) == {
        "a": {"T": parts(0, 1, 2)},
        "b": {"T": parts(4, 5)},
        "c": {"T": parts(3, 6)},
    }


def test_uniform_refuses_what_it_cannot_assign_yet() -> None:
    mixed = {"a": MemberSpec(frozenset({"T"})), "b": MemberSpec(frozenset({"U"}))}
    with pytest.raises(AssignorError, match="heterogeneous subscriptions .* are not modelled yet"):
        uniform_assign(mixed, {"T": 1, "U": 1})
    with pytest.raises(AssignorError, match="'T', which the topic metadata lacks"):
        uniform_assign(_members("a"), {})


def test_range_puts_static_members_first_and_is_not_sticky() -> None:
    """T (7 partitions) has three subscribers: z (static, first), then a and b by member id;
    U (2 partitions) only b. b's previous target is ignored."""
    members = {
        "b": MemberSpec(frozenset({"T", "U"}), {"T": parts(0, 1, 2)}),
        "a": MemberSpec(frozenset({"T"})),
        "z": MemberSpec(frozenset({"T"}), instance_id="i1"),
    }
    assert range_assign(members, {"T": 7, "U": 2}) == {
        "z": {"T": parts(0, 1, 2)},
        "a": {"T": parts(3, 4)},
        "b": {"T": parts(5, 6), "U": parts(0, 1)},
    }


def test_assign_by_name() -> None:
    assert assign("range", _members("a", "b"), {"T": 3}) == {"a": {"T": parts(0, 1)}, "b": {"T": parts(2)}}
    with pytest.raises(AssignorError, match="'sticky' is not a server-side assignor"):
        assign("sticky", _members("a"), {"T": 1})
