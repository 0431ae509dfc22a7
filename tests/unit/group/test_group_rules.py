"""The coordinator's decisions, one table row per test: protocol selection, commit validation
(`validateOffsetCommit`, in Kafka's order), Heartbeat answers by state and version, and how a
failed append is reported."""

from __future__ import annotations

import pytest

from actors.group.rules import (
    expired_offsets,
    heartbeat_answer,
    offset_commit_error,
    select_protocol,
    store_group_error,
    store_offsets_error,
)
from actors.group.state import ClassicGroup, CommittedOffset, GroupState, MemberMetadata
from actors.profiles import Profile
from protocols.errors import ErrorCode
from protocols.group import JoinGroupProtocol, Subscription
from protocols.types import TopicPartition

E, S = ErrorCode, GroupState


def _group(state: GroupState, generation_id: int = 3, members: dict[str, str | None] | None = None) -> ClassicGroup:
    group = ClassicGroup("g", state=state, generation_id=generation_id)
    for member_id, instance in (members or {}).items():
        protocols = (JoinGroupProtocol("range", Subscription(("T",))),)
        group.add(MemberMetadata(member_id, instance, "c", 60000, 10000, "consumer", protocols))
    return group


# ----------------------------------------------------------------------------- selectProtocol


def test_the_protocol_with_most_first_choice_votes_wins() -> None:
    """Each member votes for its most preferred protocol among those all members support."""
    assert select_protocol([("range", "sticky"), ("sticky", "range"), ("sticky",)]) == "sticky"


def test_a_protocol_not_supported_by_everyone_gets_no_vote() -> None:
    """A member's first choice that another member lacks is skipped for its next choice."""
    assert select_protocol([("roundrobin", "range"), ("range",)]) == "range"


def test_a_joining_member_must_share_a_protocol_with_every_member() -> None:
    """`supportsProtocols` counts each protocol's supporters against the member count: an Empty
    group takes any protocol, a rebalancing one a protocol every member has, and one whose
    last member left during the rebalance (no member to disagree) any of the same type."""
    assert _group(S.EMPTY).supports_protocols("consumer", ("roundrobin",))
    rebalancing = _group(S.PREPARING_REBALANCE, members={"m1": None})
    rebalancing.protocol_type = "consumer"
    assert rebalancing.supports_protocols("consumer", ("roundrobin", "range"))
    assert not rebalancing.supports_protocols("consumer", ("roundrobin",))
    rebalancing.remove("m1")
    assert rebalancing.supports_protocols("consumer", ("roundrobin",))
    assert not rebalancing.supports_protocols("connect", ("roundrobin",))
    assert not rebalancing.supports_protocols("consumer", ())


def test_a_tie_goes_to_the_smallest_name() -> None:
    """Kafka breaks ties by hash-map order; the simulator takes the smallest name."""
    assert select_protocol([("sticky", "range"), ("range", "sticky")]) == "range"
    assert select_protocol([("roundrobin", "cooperative-sticky"), ("cooperative-sticky", "roundrobin")]) == "cooperative-sticky"


# ----------------------------------------------------------------------------- validateOffsetCommit

MEMBERS = {"m-1": None, "m-2": "i-2"}


@pytest.mark.parametrize(
    ("group", "generation", "member", "instance", "expected"),
    [
        pytest.param(None, -1, "", None, E.NONE, id="unknown group, generation -1: created and stored"),
        pytest.param(None, 0, "m-1", None, E.ILLEGAL_GENERATION, id="unknown group, generation >= 0"),
        pytest.param(_group(S.DEAD), -1, "", None, E.COORDINATOR_NOT_AVAILABLE, id="1 Dead"),
        pytest.param(_group(S.EMPTY), -1, "", None, E.NONE, id="2 generation -1 to Empty"),
        pytest.param(_group(S.STABLE, members=MEMBERS), 3, "m-9", "i-2", E.FENCED_INSTANCE_ID, id="3 instance of another member"),
        pytest.param(_group(S.STABLE, members=MEMBERS), 3, "m-2", "i-9", E.UNKNOWN_MEMBER_ID, id="3 unknown instance"),
        pytest.param(_group(S.STABLE, members=MEMBERS), 3, "m-9", None, E.UNKNOWN_MEMBER_ID, id="3 unknown member"),
        pytest.param(_group(S.STABLE, members=MEMBERS), 2, "m-1", None, E.ILLEGAL_GENERATION, id="3 other generation"),
        pytest.param(_group(S.STABLE, members=MEMBERS), -1, "m-1", None, E.ILLEGAL_GENERATION, id="3 member with generation -1"),
        pytest.param(_group(S.EMPTY), 0, "m-1", None, E.UNKNOWN_MEMBER_ID, id="3 member of an Empty group"),
        pytest.param(_group(S.STABLE, members=MEMBERS), -1, "", None, E.UNKNOWN_MEMBER_ID, id="4 nobody, group not Empty"),
        pytest.param(_group(S.STABLE, members=MEMBERS), 3, "m-2", "i-2", E.NONE, id="5 Stable"),
        pytest.param(_group(S.PREPARING_REBALANCE, members=MEMBERS), 3, "m-1", None, E.NONE, id="5 PreparingRebalance"),
        pytest.param(_group(S.COMPLETING_REBALANCE, members=MEMBERS), 3, "m-1", None, E.REBALANCE_IN_PROGRESS, id="5 CompletingRebalance"),
    ],
)
@pytest.mark.parametrize("version", ["3.2", "3.3"])
def test_commit_validation_order(
    group: ClassicGroup | None, generation: int, member: str, instance: str | None, expected: ErrorCode, version: str
) -> None:
    """Each row of `validateOffsetCommit` then `doCommitOffsets`, checked in Kafka's order;
    none of these rows changed with KAFKA-14201."""
    flag = Profile.for_version(version).unmanaged_commit_to_empty_group
    assert offset_commit_error(group, generation, member, instance, unmanaged_to_empty=flag) is expected


@pytest.mark.parametrize(
    ("version", "member", "instance", "expected"),
    [
        ("3.2.3", "m-1", None, E.UNKNOWN_MEMBER_ID),
        ("3.2.3", "", "i-1", E.UNKNOWN_MEMBER_ID),
        ("3.2.3", "m-1", "i-1", E.UNKNOWN_MEMBER_ID),
        ("3.3", "m-1", None, E.NONE),
        ("3.3", "", "i-1", E.NONE),
        ("3.3", "m-1", "i-1", E.NONE),
    ],
)
def test_generation_minus_one_to_an_empty_group_ignores_the_member_from_3_3(
    version: str, member: str, instance: str | None, expected: ErrorCode
) -> None:
    """KAFKA-14201 (3.3.0): a commit with generation -1 to an Empty group is stored whatever
    member id and group instance id it names; before, either one made the coordinator look for
    that member in a group that has none (UNKNOWN_MEMBER_ID). A non-Empty group is unchanged:
    a member's generation -1 is ILLEGAL_GENERATION in both."""
    flag = Profile.for_version(version).unmanaged_commit_to_empty_group
    assert offset_commit_error(_group(S.EMPTY), -1, member, instance, unmanaged_to_empty=flag) is expected
    stable = _group(S.STABLE, members=MEMBERS)
    assert offset_commit_error(stable, -1, "m-1", None, unmanaged_to_empty=flag) is E.ILLEGAL_GENERATION


# ----------------------------------------------------------------------------- Heartbeat


@pytest.mark.parametrize(
    ("version", "state", "expected"),
    [
        ("2.5", S.EMPTY, (E.UNKNOWN_MEMBER_ID, False)),
        ("2.5", S.PREPARING_REBALANCE, (E.REBALANCE_IN_PROGRESS, True)),
        ("2.5", S.COMPLETING_REBALANCE, (E.REBALANCE_IN_PROGRESS, False)),
        ("2.5", S.STABLE, (E.NONE, True)),
        ("2.6", S.EMPTY, (E.UNKNOWN_MEMBER_ID, False)),
        ("2.6", S.PREPARING_REBALANCE, (E.REBALANCE_IN_PROGRESS, True)),
        ("2.6", S.COMPLETING_REBALANCE, (E.NONE, True)),
        ("2.6", S.STABLE, (E.NONE, True)),
    ],
)
def test_heartbeat_answer_by_state_and_version(version: str, state: GroupState, expected: tuple[ErrorCode, bool]) -> None:
    """A valid member's Heartbeat, and whether it restarts its session: only CompletingRebalance
    changed, in 2.6 (NONE and a restart; before, REBALANCE_IN_PROGRESS and no restart)."""
    flag = Profile.for_version(version).heartbeat_none_while_completing
    assert heartbeat_answer(state, none_while_completing=flag) == expected


# ----------------------------------------------------------------------------- append errors


@pytest.mark.parametrize(
    ("append", "sync", "commit"),
    [
        (E.NONE, E.NONE, E.NONE),
        (E.NOT_LEADER_OR_FOLLOWER, E.NOT_COORDINATOR, E.NOT_COORDINATOR),
        (E.UNKNOWN_TOPIC_OR_PARTITION, E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_NOT_AVAILABLE),
        (E.NOT_ENOUGH_REPLICAS, E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_NOT_AVAILABLE),
        (E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_NOT_AVAILABLE),
        (E.REQUEST_TIMED_OUT, E.REBALANCE_IN_PROGRESS, E.REQUEST_TIMED_OUT),
    ],
)
def test_a_failed_append_maps_to_the_group_error(append: ErrorCode, sync: ErrorCode, commit: ErrorCode) -> None:
    """`storeGroup` (SyncGroup) and `storeOffsets` (OffsetCommit) translate the append's error;
    they differ only on a timeout."""
    assert (store_group_error(append), store_offsets_error(append)) == (sync, commit)


# ----------------------------------------------------------------------------- retention

T0, U0 = TopicPartition("T", 0), TopicPartition("U", 0)
DAY = 86_400_000


def _with_offsets(state: GroupState, protocol_type: str | None, state_ms: int) -> ClassicGroup:
    group = _group(state)
    group.protocol_type, group.state_timestamp_ms = protocol_type, state_ms
    group.subscribed_topics = frozenset({"T"})
    group.offsets = {T0: CommittedOffset(5, -1, 0, 0), U0: CommittedOffset(7, -1, 0, 1)}
    return group


def test_an_empty_groups_offsets_expire_from_when_it_became_empty() -> None:
    """KIP-211: commits a week old do not expire while the group has been Empty for less than
    the retention; all of them do once it has been Empty that long."""
    group = _with_offsets(S.EMPTY, "consumer", state_ms=7 * DAY)
    assert expired_offsets(group, 8 * DAY, 7 * DAY, expire_when_empty=True) == []
    assert expired_offsets(group, 14 * DAY, 7 * DAY, expire_when_empty=True) == [T0, U0]


def test_a_stable_group_keeps_the_offsets_of_topics_it_subscribes_to() -> None:
    """In Stable only offsets of topics no member subscribes to expire, from their commit."""
    group = _with_offsets(S.STABLE, "consumer", state_ms=0)
    assert expired_offsets(group, 7 * DAY, 7 * DAY, expire_when_empty=True) == [U0]


def test_before_2_1_every_offset_expires_from_its_commit() -> None:
    """Before KIP-211 the group's state does not matter; a pending commit still protects one."""
    group = _with_offsets(S.STABLE, "consumer", state_ms=0)
    group.pending_offset_commits[U0] = (8, -1, DAY)
    assert expired_offsets(group, DAY, DAY, expire_when_empty=False) == [T0]
