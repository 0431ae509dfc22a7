"""The coordinator's handlers, one behaviour per test, driven by hand (`group_harness`): loading
and unloading, JoinGroup, SyncGroup, Heartbeat, OffsetCommit and retention, with exact times."""

from __future__ import annotations

import json

from protocols.errors import ErrorCode
from protocols.group import (
    Assignment,
    CoordinatorResigned,
    HeartbeatRequest,
    JoinGroupRequest,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitTopic,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
    TopicPartitions,
)
from tests.unit.group.group_harness import BROKER, GROUP, RANGE, Harness, client

E = ErrorCode
FETCH = OffsetFetchRequest(GROUP, (TopicPartitions("T", (0, 1)),))


def _commit(member_id: str, generation_id: int, offset: int, partition: int = 0) -> OffsetCommitRequest:
    topic = OffsetCommitTopic("T", (OffsetCommitPartition(partition, offset),))
    return OffsetCommitRequest(GROUP, generation_id, member_id, topics=(topic,))


def _committed(h: Harness, n: int = 1) -> list[int]:
    answer = h.last(client(n), OffsetFetchResponse)
    return [p.committed_offset for t in answer.topics for p in t.partitions]


def _heartbeat(h: Harness, n: int, member_id: str, generation_id: int) -> ErrorCode:
    h.send(HeartbeatRequest(GROUP, generation_id, member_id), client(n))
    return h.last(client(n), HeartbeatResponse).error_code


# ----------------------------------------------------------------------------- loading and unloading


def test_a_group_of_a_partition_not_led_here_gets_not_coordinator() -> None:
    """Before the broker hands the partition over, every group request is NOT_COORDINATOR."""
    h = Harness()
    h.join(1)
    h.send(FETCH, client(2))
    assert h.last(client(1), JoinGroupResponse).error_code is E.NOT_COORDINATOR
    assert h.last(client(2), OffsetFetchResponse).error_code is E.NOT_COORDINATOR


def test_while_loading_requests_get_load_in_progress_and_heartbeats_none() -> None:
    """`validateGroupStatus` while the partition loads: COORDINATOR_LOAD_IN_PROGRESS for
    JoinGroup, OffsetCommit, OffsetFetch and LeaveGroup; SyncGroup REBALANCE_IN_PROGRESS (the
    member rejoins); Heartbeat NONE. The load completes after `load_ms`."""
    h = Harness(settings={"load_ms": 100})
    h.elect()
    h.join(1)
    h.send(_commit("m", 1, 5), client(2))
    h.send(FETCH, client(3))
    h.send(LeaveGroupRequest(GROUP, (MemberIdentity("m"),)), client(4))
    h.send(SyncGroupRequest(GROUP, 1, "m"), client(5))
    h.send(HeartbeatRequest(GROUP, 1, "m"), client(6))
    assert h.last(client(1), JoinGroupResponse).error_code is E.COORDINATOR_LOAD_IN_PROGRESS
    assert h.last(client(2), OffsetCommitResponse).partitions[0].error_code is E.COORDINATOR_LOAD_IN_PROGRESS
    assert h.last(client(3), OffsetFetchResponse).error_code is E.COORDINATOR_LOAD_IN_PROGRESS
    assert h.last(client(4), LeaveGroupResponse).error_code is E.COORDINATOR_LOAD_IN_PROGRESS
    assert h.last(client(5), SyncGroupResponse).error_code is E.REBALANCE_IN_PROGRESS
    assert h.last(client(6), HeartbeatResponse).error_code is E.NONE
    h.advance(100)
    assert h.named("group_coordinator_loaded") == [{"partition": 0, "leader_epoch": 0, "groups": [], "ts_ms": 100}]


def test_unloading_answers_parked_joins_not_coordinator() -> None:
    """Resigned from PreparingRebalance: the group is Dead here, the leader's parked JoinGroup
    gets NOT_COORDINATOR, and so does every later request for the group."""
    h = Harness()
    m1, m2 = h.stable_group(2)
    h.join(1, m1)  # the leader rejoins: a rebalance, its JoinGroup parked
    assert h.group()["state"] == "PreparingRebalance"
    h.send(CoordinatorResigned(0, 1), BROKER)
    assert h.last(client(1), JoinGroupResponse) == JoinGroupResponse(E.NOT_COORDINATOR, member_id=m1)
    dead = h.named("group_state_changed")[-1]
    assert (dead["previous_state"], dead["state"]) == ("PreparingRebalance", "Dead")
    assert h.named("group_coordinator_unloaded")[-1] == {"partition": 0, "leader_epoch": 1, "groups": [GROUP], "ts_ms": h.now_ms}
    assert _heartbeat(h, 2, m2, 1) is E.NOT_COORDINATOR


def test_unloading_answers_parked_syncs_not_coordinator() -> None:
    """Resigned from CompletingRebalance: the follower's parked SyncGroup gets NOT_COORDINATOR."""
    h = Harness()
    h.elect()
    m1, m2 = h.join_as_member(1), h.join_as_member(2)
    h.advance(6000)
    h.sync(2, m2, 1)
    h.send(CoordinatorResigned(0, 1), BROKER)
    assert h.last(client(2), SyncGroupResponse).error_code is E.NOT_COORDINATOR
    assert h.coordinator.snapshot()["groups"] == {}
    assert m1 != m2


def test_an_election_older_than_a_resignation_is_ignored() -> None:
    """Coordinator epochs (`maybeUpdateCoordinatorEpoch`): after a resignation at leader epoch 5,
    an election at 4 arriving late loads nothing; one at 6 does."""
    h = Harness()
    h.elect(3)
    h.send(CoordinatorResigned(0, 5), BROKER)
    h.elect(4)
    assert h.coordinator.snapshot()["loaded_partitions"] == {}
    h.elect(6)
    assert h.coordinator.snapshot()["loaded_partitions"] == {0: 6}


def test_a_loaded_group_resumes_stable_and_every_session_restarts_at_load() -> None:
    """Loaded from another coordinator's log at 1000: generation 1, Stable, with its members;
    members that never heartbeat expire 10000 ms after the load, not after their last heartbeat."""
    old = Harness()
    m1, m2 = old.stable_group(2)
    h = Harness()
    h.advance(1000)
    h.elect(1, tuple(old.log))
    group = h.group()
    assert (group["state"], group["generation_id"], sorted(group["members"])) == ("Stable", 1, sorted([m1, m2]))
    h.advance(10999)
    assert h.named("group_member_removed") == []
    h.advance(11000)
    assert [(e["member_id"], e["reason"], e["ts_ms"]) for e in h.named("group_member_removed")] == [
        (min(m1, m2), "session_timeout", 11000),
        (max(m1, m2), "session_timeout", 11000),
    ]


# ----------------------------------------------------------------------------- JoinGroup


def test_a_session_timeout_outside_the_brokers_bounds_is_invalid() -> None:
    """[group.min.session.timeout.ms, group.max.session.timeout.ms] = [6000, 1800000] in 3.9."""
    h = Harness()
    h.elect()
    for n, session_ms in ((1, 5999), (2, 1800001)):
        h.join(n, session_ms=session_ms)
        assert h.last(client(n), JoinGroupResponse).error_code is E.INVALID_SESSION_TIMEOUT
    h.join(3, session_ms=6000)
    assert h.last(client(3), JoinGroupResponse).error_code is E.MEMBER_ID_REQUIRED


def test_before_2_2_a_first_join_is_added_at_once() -> None:
    """Without KIP-394 the member gets its id with its generation, no MEMBER_ID_REQUIRED."""
    h = Harness("2.1")
    h.elect()
    h.join(1)
    h.advance(3000)
    answer = h.last(client(1), JoinGroupResponse)
    assert (answer.error_code, answer.generation_id, answer.leader) == (E.NONE, 1, answer.member_id)


def test_a_pending_member_holds_back_the_join_until_its_session_expires() -> None:
    """A client that got MEMBER_ID_REQUIRED at 3000 and never came back blocks early completion
    for its session (10000): the leader's rejoin waits, and generation 2 forms at 13000 without it."""
    h = Harness()
    [m1] = h.stable_group(1)
    h.join(2)
    pending = h.last(client(2), JoinGroupResponse).member_id
    h.join(1, m1)
    h.advance(12999)
    assert h.group()["state"] == "PreparingRebalance"
    h.advance(13000)
    [removed] = h.named("group_member_removed")
    assert (removed["member_id"], removed["reason"]) == (pending, "pending_expired")
    started = h.named("generation_started")[-1]
    assert (started["ts_ms"], started["generation_id"], started["members"]) == (13000, 2, [m1])


def test_a_follower_with_unchanged_metadata_gets_the_current_generation() -> None:
    """In Stable a follower's JoinGroup with the same metadata changes nothing: the current
    generation, no member list, no rebalance."""
    h = Harness()
    m1, m2 = h.stable_group(2)
    follower = m2 if h.group()["leader"] == m1 else m1
    n = 2 if follower == m2 else 1
    h.join(n, follower)
    answer = h.last(client(n), JoinGroupResponse)
    assert (answer.error_code, answer.generation_id, answer.members) == (E.NONE, 1, ())
    assert h.group()["state"] == "Stable"


def test_a_new_member_parked_for_300000_ms_is_removed() -> None:
    """`NewMemberJoinTimeoutMs`: C2 joins at 6000 into a rebalance that waits up to 600000 ms for
    C1 (which never rejoins); at 306000 C2 is removed and told UNKNOWN_MEMBER_ID."""
    h = Harness()
    h.elect()
    m1 = h.join_as_member(1, session_ms=1_000_000)
    h.advance(3000)
    h.sync(1, m1, 1, {m1: (0,)})
    h.advance(6000)
    m2 = h.join_as_member(2, rebalance_ms=600000)
    h.advance(305999)
    assert h.named("group_member_removed") == []
    h.advance(306000)
    [removed] = h.named("group_member_removed")
    assert (removed["member_id"], removed["reason"]) == (m2, "join_timeout")
    assert h.last(client(2), JoinGroupResponse) == JoinGroupResponse(E.UNKNOWN_MEMBER_ID)


def test_a_static_member_rejoining_in_stable_replaces_itself_without_a_rebalance() -> None:
    """KIP-345: a known instance id with an unknown member id takes a new id, keeps its
    assignment and leadership, and the group record is stored; the generation stays 1 (3.2+:
    the leader is told it leads, with skip_assignment)."""
    h = Harness()
    h.elect()
    h.join(1, group_instance_id="i-1")
    h.advance(3000)
    old = h.last(client(1), JoinGroupResponse).member_id
    h.sync(1, old, 1, {old: (0, 1)})
    h.join(1, group_instance_id="i-1")
    answer = h.last(client(1), JoinGroupResponse)
    assert (answer.error_code, answer.generation_id, answer.leader, answer.skip_assignment) == (E.NONE, 1, answer.member_id, True)
    assert answer.member_id != old and answer.member_id.startswith("i-1-")
    assert [(e["member_id"], e["reason"]) for e in h.named("group_member_removed")] == [(old, "replaced")]
    group = h.group()
    assert (group["state"], group["generation_id"], list(group["members"])) == ("Stable", 1, [answer.member_id])
    assert group["members"][answer.member_id]["assignment"] == ["T-0", "T-1"]
    assert json.loads(h.log[-1].values[0])["members"][0]["member_id"] == answer.member_id


# ----------------------------------------------------------------------------- SyncGroup


def test_a_failed_group_store_answers_every_sync_with_the_mapped_error_and_rebalances() -> None:
    """NOT_LEADER_OR_FOLLOWER on the group record: both parked SyncGroups get NOT_COORDINATOR
    and the group prepares a new rebalance."""
    h = Harness(answer_appends=False)
    h.elect()
    m1, m2 = h.join_as_member(1), h.join_as_member(2)
    h.advance(6000)
    leader = h.group()["leader"]
    h.sync(2 if leader == m1 else 1, m2 if leader == m1 else m1, 1)
    h.sync(1 if leader == m1 else 2, leader, 1, {m1: (0,), m2: (1,)})
    h.answer_append(E.NOT_LEADER_OR_FOLLOWER)
    assert [h.last(client(n), SyncGroupResponse).error_code for n in (1, 2)] == [E.NOT_COORDINATOR] * 2
    assert h.named("group_assignment_stored")[-1]["error"] == "NOT_COORDINATOR"
    assert h.group()["state"] == "PreparingRebalance"


def test_members_missing_from_the_leaders_assignment_get_empty_ones() -> None:
    """The leader assigns only itself; the other member is stored with nothing."""
    h = Harness()
    h.elect()
    m1, m2 = h.join_as_member(1), h.join_as_member(2)
    h.advance(6000)
    leader = h.group()["leader"]
    other, n_other, n_leader = (m2, 2, 1) if leader == m1 else (m1, 1, 2)
    h.sync(n_other, other, 1)
    h.sync(n_leader, leader, 1, {leader: (0, 1)})
    assert h.last(client(n_other), SyncGroupResponse) == SyncGroupResponse(E.NONE, "range", Assignment())
    assert h.named("group_assignment_stored")[-1]["assignments"] == sorted([[leader, ["T-0", "T-1"]], [other, []]])


def test_a_member_that_never_syncs_is_removed_after_the_rebalance_timeout() -> None:
    """KAFKA-12890 (2.8.1+): the leader syncs, the follower does not; 60000 ms after generation
    1 formed (at 6000) the follower is removed and the group rebalances. 2.8.0 waits forever."""
    for version, removed in (("3.9", True), ("2.8", False)):
        h = Harness(version)
        h.elect()
        m1, m2 = h.join_as_member(1, session_ms=100000), h.join_as_member(2, session_ms=100000)
        h.advance(6000)
        leader = h.group()["leader"]
        h.sync(1 if leader == m1 else 2, leader, 1, {m1: (0,), m2: (1,)})
        h.advance(66000)
        expected = [(m2 if leader == m1 else m1, "sync_timeout", 66000)] if removed else []
        assert [(e["member_id"], e["reason"], e["ts_ms"]) for e in h.named("group_member_removed")] == expected


# ----------------------------------------------------------------------------- Heartbeat and sessions


def test_heartbeat_in_completing_rebalance_is_none_from_2_6() -> None:
    """Between JoinGroup and SyncGroup: REBALANCE_IN_PROGRESS in 2.5, NONE in 2.6."""
    for version, expected in (("2.5", E.REBALANCE_IN_PROGRESS), ("2.6", E.NONE)):
        h = Harness(version)
        h.elect()
        m1 = h.join_as_member(1)
        h.advance(3000)
        assert _heartbeat(h, 1, m1, 1) is expected


def test_a_member_waiting_in_a_rebalance_does_not_expire() -> None:
    """`hasSatisfiedHeartbeat`: the leader's parked JoinGroup covers it past its session; the
    other member, which neither heartbeats nor rejoins, expires, and the join completes."""
    h = Harness()
    m1, m2 = h.stable_group(2)
    start = h.now_ms
    h.join(1, m1)
    h.advance(start + 10000)
    removed = [(e["member_id"], e["reason"]) for e in h.named("group_member_removed")]
    assert removed == [(m2, "session_timeout")]
    assert h.named("generation_started")[-1]["members"] == [m1]


def test_a_commit_in_stable_counts_as_a_heartbeat() -> None:
    """A member that only commits keeps its session: no expiry 10000 ms after its last commit's
    predecessor."""
    h = Harness()
    [m1] = h.stable_group(1)
    start = h.now_ms
    h.advance(start + 9000)
    h.send(_commit(m1, 1, 5))
    h.advance(start + 18999)
    assert h.named("group_member_removed") == []
    h.advance(start + 19000)
    assert [e["reason"] for e in h.named("group_member_removed")] == ["session_timeout"]


# ----------------------------------------------------------------------------- offsets


def test_the_empty_group_id_is_invalid_for_every_membership_api() -> None:
    """`isValidGroupId`: JoinGroup, SyncGroup, Heartbeat and LeaveGroup with group id "" are
    INVALID_GROUP_ID, checked before the coordinator's ownership, and create no group."""
    h = Harness()
    h.elect()
    h.send(JoinGroupRequest("", 10000, 60000, "", protocols=RANGE), client(1))
    h.send(SyncGroupRequest("", 1, "m"), client(2))
    h.send(HeartbeatRequest("", 1, "m"), client(3))
    h.send(LeaveGroupRequest("", (MemberIdentity("m"),)), client(4))
    assert h.last(client(1), JoinGroupResponse).error_code is E.INVALID_GROUP_ID
    assert h.last(client(2), SyncGroupResponse).error_code is E.INVALID_GROUP_ID
    assert h.last(client(3), HeartbeatResponse).error_code is E.INVALID_GROUP_ID
    assert h.last(client(4), LeaveGroupResponse).error_code is E.INVALID_GROUP_ID
    assert h.named("group_state_changed") == []


def test_offsets_of_the_empty_group_id_are_committed_and_fetched() -> None:
    """`isValidGroupId` accepts "" on OffsetCommit and OffsetFetch, for compatibility
    (GroupCoordinatorTest.testCommitAndFetchOffsetsWithEmptyGroup): a commit with generation -1
    creates the Empty group "" and its offset is fetched back."""
    h = Harness()
    h.elect()
    topic = OffsetCommitTopic("T", (OffsetCommitPartition(0, 7),))
    h.send(OffsetCommitRequest("", -1, "", topics=(topic,)))
    h.send(OffsetFetchRequest("", (TopicPartitions("T", (0,)),)), client(2))
    assert h.last(client(1), OffsetCommitResponse).partitions[0].error_code is E.NONE
    assert h.last(client(2), OffsetFetchResponse).error_code is E.NONE
    assert _committed(h, 2) == [7]
    assert [e["group_id"] for e in h.named("group_state_changed")] == [""]


def test_a_commit_that_times_out_is_dropped_and_answered_request_timed_out() -> None:
    """The staged offset never becomes visible, and REQUEST_TIMED_OUT stays as it is."""
    h = Harness(answer_appends=False)
    h.elect()
    h.send(_commit("", -1, 5))
    h.send(FETCH, client(2))
    assert _committed(h, 2) == [-1, -1]
    h.answer_append(E.REQUEST_TIMED_OUT)
    assert h.last(client(1), OffsetCommitResponse).partitions[0].error_code is E.REQUEST_TIMED_OUT
    h.send(FETCH, client(2))
    assert _committed(h, 2) == [-1, -1]
    assert h.named("offset_commit_completed")[-1]["error"] == "REQUEST_TIMED_OUT"


def test_a_generation_minus_1_commit_creates_an_empty_group() -> None:
    """Manual assignment: the unknown group is created Empty and the commit stored."""
    h = Harness()
    h.elect()
    h.send(_commit("", -1, 5))
    h.send(FETCH, client(2))
    assert _committed(h, 2) == [5, -1]
    assert h.named("group_state_changed") == [
        {"group_id": GROUP, "previous_state": None, "state": "Empty", "generation_id": 0, "ts_ms": 0}
    ]


def test_a_standalone_groups_offsets_expire_and_the_group_goes() -> None:
    """Retention 1 minute, swept every 10 s: the offset committed at 0 expires at the sweep of
    60000; the group, Empty with no offsets, is removed (no group tombstone at generation 0)."""
    h = Harness(settings={"offsets_retention_ms": 60000, "offsets_retention_check_interval_ms": 10000})
    h.elect()
    h.send(_commit("", -1, 5))
    h.advance(50000)
    assert h.named("offsets_expired") == []
    h.advance(60000)
    assert h.named("offsets_expired") == [{"group_id": GROUP, "partitions": ["T-0"], "ts_ms": 60000}]
    assert h.named("group_state_changed")[-1]["state"] == "Dead"
    assert [json.loads(v)["type"] for v in h.log[-1].values] == ["offset_tombstone"]
    h.send(FETCH, client(2))
    assert _committed(h, 2) == [-1, -1]


# ----------------------------------------------------------------------------- LeaveGroup


def test_a_member_leaving_during_completing_rebalance_sends_the_others_back_to_join() -> None:
    """LeaveGroup in CompletingRebalance: the leader leaves before assigning, the follower's
    parked SyncGroup gets REBALANCE_IN_PROGRESS, and the group prepares a rebalance."""
    h = Harness()
    h.elect()
    ids = {1: h.join_as_member(1), 2: h.join_as_member(2)}
    h.advance(6000)
    leader = h.group()["leader"]
    n_leader = 1 if ids[1] == leader else 2
    n_follower = 3 - n_leader
    h.sync(n_follower, ids[n_follower], 1)
    h.send(LeaveGroupRequest(GROUP, (MemberIdentity(leader),)), client(n_leader))
    assert h.last(client(n_leader), LeaveGroupResponse).error_code is E.NONE
    assert h.last(client(n_follower), SyncGroupResponse).error_code is E.REBALANCE_IN_PROGRESS
    assert [(e["member_id"], e["reason"]) for e in h.named("group_member_removed")] == [(leader, "leave")]
    assert (h.group()["state"], h.group()["leader"]) == ("PreparingRebalance", ids[n_follower])


def test_a_pending_member_that_leaves_no_longer_holds_back_the_join() -> None:
    """A KIP-394 member id that leaves before joining is dropped at once: the leader's parked
    rejoin completes the join there and then."""
    h = Harness()
    [m1] = h.stable_group(1)
    h.join(2)
    pending = h.last(client(2), JoinGroupResponse).member_id
    h.join(1, m1)
    assert h.group()["state"] == "PreparingRebalance"
    h.send(LeaveGroupRequest(GROUP, (MemberIdentity(pending),)), client(2))
    started = h.named("generation_started")[-1]
    assert (started["ts_ms"], started["generation_id"], started["members"]) == (h.now_ms, 2, [m1])
    assert h.last(client(1), JoinGroupResponse).generation_id == 2
