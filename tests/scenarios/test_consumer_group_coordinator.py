"""KIP-848's consumer-group coordinator in a real cluster (3 brokers, Kafka 4.0, whose brokers
serve the consumer protocol by default), driven by scripted clients that send
ConsumerGroupHeartbeat and OffsetCommit at exact times. Latency is exactly 1 ms.

`my-group` hashes to `__consumer_offsets-0` of 3, led by broker 1 (broker 2 once broker 1 is
gone). A heartbeat that changes the group is answered once its records are committed: sent at
t, it arrives at t+1, its append reaches the replica manager at t+2, the followers' fetches
take it to the high watermark at t+4, the coordinator hears of it at t+5 (the events carry that
time) and the member at t+6. A heartbeat that changes nothing is answered at t+2. Members make
their own ids (4.0, KIP-1082): "A", "B", ...
"""

from __future__ import annotations

from typing import Any

import pytest

from actors.addresses import group_coordinator_address
from protocols.errors import ErrorCode
from protocols.group import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitTopic,
    OffsetFetchRequest,
    OffsetFetchResponse,
    TopicPartitions,
)
from sim.cluster.harness import Client, Cluster
from sim.cluster.scenario import parse_scenario
from sim.engine.kernel import HostKind

E = ErrorCode
GROUP = "my-group"
SCENARIO = """
[run]
"duration.ms" = 200000
[kafka]
version = "4.0"
[network]
"latency.min.ms" = 1
"latency.max.ms" = 1
[cluster]
brokers = 3
[broker]
"offsets.topic.num.partitions" = 3
"zookeeper.session.timeout.ms" = 6000
[[topics]]
name = "T"
partitions = 3
"replication.factor" = 3
[[consumers]]
"group.id" = "my-group"
topics = ["T"]
"start.ms" = 100000000
"""
CG_EVENTS = (
    "consumer_group_state_changed",
    "group_epoch_bumped",
    "target_assignment_computed",
    "consumer_member_changed",
    "consumer_member_removed",
)


def scenario_cluster(text: str = SCENARIO) -> Cluster:
    return Cluster(parse_scenario(text, "consumer-group-coordinator", []), host=HostKind.DIRECT)


@pytest.fixture
def cluster() -> Any:
    with scenario_cluster() as built:
        yield built


def owned(*partitions: int) -> tuple[TopicPartitions, ...]:
    return (TopicPartitions("T", partitions),) if partitions else ()


def join(member: str, *, instance: str | None = None, assignor: str | None = None, rebalance_ms: int = 30000) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(
        GROUP, member, 0, instance, rebalance_timeout_ms=rebalance_ms, subscribed_topic_names=("T",),
        server_assignor=assignor, topic_partitions=(),
    )


def beat(member: str, epoch: int, *parts: int, instance: str | None = None) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(GROUP, member, epoch, instance, topic_partitions=owned(*parts))


def start(cluster: Cluster, *names: str) -> tuple[list[dict[str, Any]], list[Client]]:
    events: list[dict[str, Any]] = []
    cluster.kernel.observe(events.append)
    return events, [cluster.client(n) for n in names]


def at(client: Client, t: int) -> ConsumerGroupHeartbeatResponse:
    [found] = [m for when, m in client.answers(ConsumerGroupHeartbeatResponse) if when == t]
    return found


def summary(r: ConsumerGroupHeartbeatResponse) -> tuple[Any, ...]:
    """(error, member id, epoch, assignment as partitions of T or None)."""
    parts = None if r.assignment is None else [p for tp in r.assignment.topic_partitions for p in tp.partitions]
    return r.error_code, r.member_id, r.member_epoch, parts


def where(events: list[dict[str, Any]], name: str, **match: Any) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == name and all(e.get(k) == v for k, v in match.items())]


def member_rows(events: list[dict[str, Any]], member: str) -> list[tuple[Any, ...]]:
    return [
        (e["ts_ms"], e["state"], e["member_epoch"], e["previous_member_epoch"], e["assigned"], e["pending_revocation"])
        for e in where(events, "consumer_member_changed", member_id=member)
    ]


COORD = 1


# ----------------------------------------------------------------------------- joining


def test_two_members_join_uniform_and_the_second_waits_for_the_first_to_release(cluster: Cluster) -> None:
    """A joins alone: group epoch 1, everything. B's join bumps the epoch to 2; the uniform
    assignor keeps A's T-0 and T-1 and moves T-2 to B, which A still holds (partition epoch 1),
    so B is at epoch 2 with nothing (UNRELEASED_PARTITIONS). A's heartbeat without its owned
    partitions keeps it revoking at epoch 1; once it reports T-2 gone it reaches epoch 2, and
    B's next heartbeat gets T-2."""
    events, (a, b) = start(cluster, "a", "b")
    a.send(1000, COORD, join("A"))
    b.send(1100, COORD, join("B"))
    a.send(1200, COORD, beat("A", 1, 0, 1, 2))
    b.send(1250, COORD, beat("B", 2))
    a.send(1300, COORD, beat("A", 1, 0, 1))
    b.send(1400, COORD, beat("B", 2))
    cluster.run(until_ms=1500)
    assert summary(at(a, 1006)) == (E.NONE, "A", 1, [0, 1, 2])
    assert at(a, 1006).heartbeat_interval_ms == 5000
    assert summary(at(b, 1106)) == (E.NONE, "B", 2, [])
    assert summary(at(a, 1206)) == (E.NONE, "A", 1, [0, 1])
    assert summary(at(b, 1252)) == (E.NONE, "B", 2, None)  # nothing changed: answered at once
    assert summary(at(a, 1306)) == (E.NONE, "A", 2, None)
    assert summary(at(b, 1406)) == (E.NONE, "B", 2, [2])
    [first, second] = where(events, "target_assignment_computed")
    assert (first["ts_ms"], first["assignment_epoch"], first["assignor"], first["assignment"]) == (1005, 1, "uniform", {"A": ["T-0", "T-1", "T-2"]})
    assert (second["ts_ms"], second["assignment_epoch"], second["assignment"]) == (1105, 2, {"A": ["T-0", "T-1"], "B": ["T-2"]})
    assert [(e["ts_ms"], e["group_epoch"], e["reason"]) for e in where(events, "group_epoch_bumped")] == [
        (1005, 1, "member_joined"),
        (1105, 2, "member_joined"),
    ]
    assert member_rows(events, "A") == [
        (1005, "stable", 1, 0, ["T-0", "T-1", "T-2"], []),
        (1205, "unrevoked_partitions", 1, 1, ["T-0", "T-1"], ["T-2"]),
        (1305, "stable", 2, 1, ["T-0", "T-1"], []),
    ]
    assert member_rows(events, "B") == [
        (1105, "unreleased_partitions", 2, 0, [], []),
        (1405, "stable", 2, 2, ["T-2"], []),
    ]
    states = [(e["ts_ms"], e["previous_state"], e["state"]) for e in where(events, "consumer_group_state_changed")]
    assert states == [(1005, None, "Empty"), (1005, "Empty", "Stable"), (1105, "Stable", "Reconciling"), (1405, "Reconciling", "Stable")]


def test_range_assignor_by_the_members_request(cluster: Cluster) -> None:
    """`server_assignor = "range"`: ranges by member id, the first member one partition more:
    A [0, 1], B [2] (the same split as uniform here, but computed by range)."""
    events, (a, b) = start(cluster, "a", "b")
    a.send(1000, COORD, join("A", assignor="range"))
    b.send(1100, COORD, join("B", assignor="range"))
    cluster.run(until_ms=1200)
    [_, second] = where(events, "target_assignment_computed")
    assert (second["assignor"], second["assignment"]) == ("range", {"A": ["T-0", "T-1"], "B": ["T-2"]})


def test_join_checks_unsupported_assignor_and_invalid_requests(cluster: Cluster) -> None:
    """UNSUPPORTED_ASSIGNOR for an assignor the broker lacks; INVALID_REQUEST for a join that
    owns partitions or has no subscription, and (4.0, KIP-1082) one with no member id;
    UNKNOWN_MEMBER_ID for an unknown member at epoch > 0 of a known group; GROUP_ID_NOT_FOUND
    for a heartbeat at epoch > 0 to no group."""
    _, (a,) = start(cluster, "a")
    a.send(1000, COORD, beat("A", 3))
    a.send(1100, COORD, join("A", assignor="sticky"))
    a.send(1200, COORD, ConsumerGroupHeartbeatRequest(GROUP, "A", 0, rebalance_timeout_ms=1, subscribed_topic_names=("T",), topic_partitions=owned(1)))
    a.send(1300, COORD, ConsumerGroupHeartbeatRequest(GROUP, "A", 0, rebalance_timeout_ms=1, topic_partitions=()))
    a.send(1400, COORD, join(""))
    a.send(1500, COORD, join("A"))
    a.send(1600, COORD, beat("Z", 1))
    cluster.run(until_ms=1700)
    errors = [m.error_code for _, m in a.answers(ConsumerGroupHeartbeatResponse)]
    assert errors == [E.GROUP_ID_NOT_FOUND, E.UNSUPPORTED_ASSIGNOR, E.INVALID_REQUEST, E.INVALID_REQUEST, E.INVALID_REQUEST, E.NONE, E.UNKNOWN_MEMBER_ID]


def test_3_9_coordinator_makes_the_member_id(cluster: Cluster) -> None:
    """Before 4.0 the first heartbeat sends "" and the coordinator answers a UUID of its own."""
    text = SCENARIO.replace('version = "4.0"', 'version = "3.9"').replace(
        '"zookeeper.session.timeout.ms" = 6000', '"zookeeper.session.timeout.ms" = 6000\n"group.coordinator.rebalance.protocols" = ["classic"]'
    )
    with scenario_cluster(text) as c39:
        _, (a,) = start(c39, "a")
        a.send(1000, COORD, join(""))
        c39.run(until_ms=1100)
        # 3.9's brokers here run in ZooKeeper mode, which refuses the consumer protocol.
        assert summary(at(a, 1002)) == (E.UNSUPPORTED_VERSION, None, -1, None)
    from actors.group.consumer_protocol.validation import heartbeat_request_error

    assert heartbeat_request_error(join(""), ("uniform",), member_id_required=False) is E.NONE
    assert heartbeat_request_error(join(""), ("uniform",), member_id_required=True) is E.INVALID_REQUEST


# ----------------------------------------------------------------------------- epochs


def test_previous_epoch_with_owned_subset_is_accepted_else_fenced(cluster: Cluster) -> None:
    """A moved to epoch 2 (its answer "lost"): a heartbeat at epoch 1 owning a subset of its
    assignment is accepted and answered with epoch 2; one at epoch 1 owning a partition it is
    not assigned is FENCED_MEMBER_EPOCH, and so is one ahead of the coordinator."""
    _, (a, b) = start(cluster, "a", "b")
    a.send(1000, COORD, join("A"))
    b.send(1100, COORD, join("B"))
    a.send(1200, COORD, beat("A", 1, 0, 1))
    a.send(1300, COORD, beat("A", 1, 0))
    a.send(1400, COORD, beat("A", 1, 0, 2))
    a.send(1500, COORD, beat("A", 3, 0, 1))
    cluster.run(until_ms=1600)
    assert summary(at(a, 1206)) == (E.NONE, "A", 2, [0, 1])
    assert summary(at(a, 1302)) == (E.NONE, "A", 2, None)
    assert at(a, 1402).error_code is E.FENCED_MEMBER_EPOCH
    assert at(a, 1502).error_code is E.FENCED_MEMBER_EPOCH


# ----------------------------------------------------------------------------- leaving


def test_leave_removes_the_member_and_bumps_the_group_epoch(cluster: Cluster) -> None:
    """Epoch -1: B is removed and the group epoch goes to 3; A's next heartbeat computes the
    target of epoch 3 and takes all three partitions at once (T-2 is free)."""
    events, (a, b) = start(cluster, "a", "b")
    a.send(1000, COORD, join("A"))
    b.send(1100, COORD, join("B"))
    a.send(1200, COORD, beat("A", 1, 0, 1))
    b.send(1300, COORD, beat("B", 2))
    b.send(1400, COORD, beat("B", -1))
    a.send(1500, COORD, beat("A", 2, 0, 1))
    cluster.run(until_ms=1600)
    assert summary(at(b, 1406)) == (E.NONE, "B", -1, None)
    [removed] = where(events, "consumer_member_removed")
    assert (removed["ts_ms"], removed["member_id"], removed["member_epoch"], removed["reason"]) == (1405, "B", 2, "left")
    assert [(e["group_epoch"], e["reason"]) for e in where(events, "group_epoch_bumped")][-1] == (3, "member_left")
    assert summary(at(a, 1506)) == (E.NONE, "A", 3, [0, 1, 2])


def test_static_leave_keeps_the_assignment_and_a_new_instance_replaces_it(cluster: Cluster) -> None:
    """Static S1 (instance "i") leaves with -2: it stays at epoch -2 with T-2 held. S2 joins
    with "i": it replaces S1 (removed as "replaced"), gets S1's target and T-2 at the current
    assignment epoch, and the group epoch does not move."""
    events, (a, s1, s2) = start(cluster, "a", "s1", "s2")
    a.send(1000, COORD, join("A"))
    s1.send(1100, COORD, join("S1", instance="i"))
    a.send(1200, COORD, beat("A", 1, 0, 1))
    s1.send(1300, COORD, beat("S1", 2, instance="i"))
    s1.send(1400, COORD, beat("S1", -2, 2, instance="i"))
    s2.send(1500, COORD, join("S2", instance="i"))
    cluster.run(until_ms=1600)
    assert summary(at(s1, 1306)) == (E.NONE, "S1", 2, [2])
    assert summary(at(s1, 1406)) == (E.NONE, "S1", -2, None)
    assert member_rows(events, "S1")[-1] == (1405, "stable", -2, 2, ["T-2"], [])
    assert summary(at(s2, 1506)) == (E.NONE, "S2", 2, [2])
    [removed] = where(events, "consumer_member_removed")
    assert (removed["ts_ms"], removed["member_id"], removed["instance_id"], removed["reason"]) == (1505, "S1", "i", "replaced")
    assert [e["group_epoch"] for e in where(events, "group_epoch_bumped")] == [1, 2]


def test_static_rejoin_before_the_old_member_left_is_unreleased_instance_id(cluster: Cluster) -> None:
    """A second join with instance "i" while S1 is live: UNRELEASED_INSTANCE_ID. A heartbeat
    at epoch > 0 from another member id with "i": FENCED_INSTANCE_ID."""
    _, (s1, s2) = start(cluster, "s1", "s2")
    s1.send(1000, COORD, join("S1", instance="i"))
    s2.send(1100, COORD, join("S2", instance="i"))
    s2.send(1200, COORD, beat("S2", 1, instance="i"))
    cluster.run(until_ms=1300)
    assert at(s2, 1102).error_code is E.UNRELEASED_INSTANCE_ID
    assert at(s2, 1202).error_code is E.FENCED_INSTANCE_ID


# ----------------------------------------------------------------------------- timeouts


def test_session_timeout_fences_the_member_and_frees_its_partitions(cluster: Cluster) -> None:
    """B's last heartbeat is at 1301: 45000 ms later (46301) it is fenced, the group epoch
    goes to 3, and A's next heartbeat takes T-2 at once."""
    events, (a, b) = start(cluster, "a", "b")
    a.send(1000, COORD, join("A"))
    b.send(1100, COORD, join("B"))
    a.send(1200, COORD, beat("A", 1, 0, 1))
    b.send(1300, COORD, beat("B", 2))
    for t in range(5000, 50000, 5000):
        a.send(t, COORD, beat("A", 2, 0, 1))
    a.send(47000, COORD, beat("A", 2, 0, 1))
    cluster.run(until_ms=47100)
    [removed] = where(events, "consumer_member_removed")
    assert (removed["ts_ms"], removed["member_id"], removed["reason"]) == (46305, "B", "session_timeout")
    assert [(e["ts_ms"], e["group_epoch"], e["reason"]) for e in where(events, "group_epoch_bumped")][-1] == (46305, 3, "member_fenced")
    assert summary(at(a, 47006)) == (E.NONE, "A", 3, [0, 1, 2])


def test_rebalance_timeout_fences_a_member_that_does_not_revoke(cluster: Cluster) -> None:
    """A (rebalance timeout 10000) is told at 1201 to revoke T-2 and keeps reporting it: at
    11201 it is still at epoch 1, so it is fenced; B then gets everything."""
    events, (a, b) = start(cluster, "a", "b")
    a.send(1000, COORD, join("A", rebalance_ms=10000))
    b.send(1100, COORD, join("B"))
    for t in (1200, 5000, 9000):
        a.send(t, COORD, beat("A", 1, 0, 1, 2))
    b.send(12000, COORD, beat("B", 2))
    cluster.run(until_ms=12100)
    [removed] = where(events, "consumer_member_removed")
    assert (removed["ts_ms"], removed["member_id"], removed["member_epoch"], removed["reason"]) == (11205, "A", 1, "rebalance_timeout")
    assert summary(at(b, 12006)) == (E.NONE, "B", 3, [0, 1, 2])


# ----------------------------------------------------------------------------- commits


def commit(member: str, epoch: int, offset: int) -> OffsetCommitRequest:
    return OffsetCommitRequest(GROUP, epoch, member, topics=(OffsetCommitTopic("T", (OffsetCommitPartition(0, offset),)),))


def test_commit_needs_the_members_current_epoch(cluster: Cluster) -> None:
    """A at epoch 1 while revoking commits at 1 (accepted: a revoking member keeps its epoch),
    then at epoch 2 once moved on; a commit at 1 after that is STALE_MEMBER_EPOCH, an unknown
    member's UNKNOWN_MEMBER_ID, and -1 from outside a group with members UNKNOWN_MEMBER_ID.
    OffsetFetch answers the last stored offset."""
    _, (a, b) = start(cluster, "a", "b")
    a.send(1000, COORD, join("A"))
    b.send(1100, COORD, join("B"))
    a.send(1200, COORD, beat("A", 1, 0, 1, 2))
    a.send(1300, COORD, commit("A", 1, 10))
    a.send(1400, COORD, beat("A", 1, 0, 1))
    a.send(1500, COORD, commit("A", 2, 20))
    a.send(1600, COORD, commit("A", 1, 30))
    a.send(1700, COORD, commit("Z", 2, 40))
    a.send(1800, COORD, commit("", -1, 50))
    a.send(1900, COORD, OffsetFetchRequest(GROUP, (TopicPartitions("T", (0,)),)))
    cluster.run(until_ms=2000)
    errors = [(t, m.partitions[0].error_code) for t, m in a.answers(OffsetCommitResponse)]
    assert errors == [(1306, E.NONE), (1506, E.NONE), (1602, E.STALE_MEMBER_EPOCH), (1702, E.UNKNOWN_MEMBER_ID), (1802, E.UNKNOWN_MEMBER_ID)]
    [(_, fetched)] = a.answers(OffsetFetchResponse)
    assert fetched.topics[0].partitions[0].committed_offset == 20


def test_offset_fetch_names_the_members_current_epoch_or_nobody(cluster: Cluster) -> None:
    """OffsetFetch v9 (`ConsumerGroup.validateOffsetFetch`): A at epoch 2 (B's join moved the
    group on and A gave T-2 up) fetches at 2, is refused at its old epoch 1 (STALE_MEMBER_EPOCH),
    an unknown member is UNKNOWN_MEMBER_ID, and a request naming nobody (an admin tool, a classic
    consumer) is answered. Fetches change nothing: each is answered one round trip later."""
    _, (a, b) = start(cluster, "a", "b")
    a.send(1000, COORD, join("A"))
    a.send(1100, COORD, commit("A", 1, 10))
    b.send(1200, COORD, join("B"))
    a.send(1300, COORD, beat("A", 1, 0, 1))
    partitions = (TopicPartitions("T", (0,)),)
    for at, member, epoch in ((1400, "A", 2), (1500, "A", 1), (1600, "Z", 2), (1700, None, -1)):
        a.send(at, COORD, OffsetFetchRequest(GROUP, partitions, member_id=member, member_epoch=epoch))
    cluster.run(until_ms=1800)
    answers = [(t, m.error_code, [p.committed_offset for t_ in m.topics for p in t_.partitions]) for t, m in a.answers(OffsetFetchResponse)]
    assert answers == [
        (1402, E.NONE, [10]),
        (1502, E.STALE_MEMBER_EPOCH, []),
        (1602, E.UNKNOWN_MEMBER_ID, []),
        (1702, E.NONE, [10]),
    ]


def test_classic_heartbeat_of_a_consumer_protocol_member_is_unknown_member_id(cluster: Cluster) -> None:
    """A classic Heartbeat naming the consumer group reaches it (3.8+), but its member speaks the
    consumer protocol: UNKNOWN_MEMBER_ID (`throwIfMemberDoesNotUseClassicProtocol`; 3.7's
    GROUP_ID_NOT_FOUND is in test_consumer_protocol_migration.py)."""
    _, (a,) = start(cluster, "a")
    a.send(1000, COORD, join("A"))
    a.send(1100, COORD, HeartbeatRequest(GROUP, 1, "A"))
    cluster.run(until_ms=1200)
    assert a.answers(HeartbeatResponse) == [(1102, HeartbeatResponse(E.UNKNOWN_MEMBER_ID))]


# ----------------------------------------------------------------------------- failover


def test_new_coordinator_loads_members_with_their_epochs(cluster: Cluster) -> None:
    """Broker 1 crashes at 2000; broker 2 loads `__consumer_offsets-0` from the records and
    has A at epoch 2 with T-0 and T-1 and B at epoch 2 with T-2: their heartbeats at their
    epochs are answered with nothing changed, and an old epoch is fenced."""
    events, (a, b) = start(cluster, "a", "b")
    a.send(1000, COORD, join("A"))
    b.send(1100, COORD, join("B"))
    a.send(1200, COORD, beat("A", 1, 0, 1))
    b.send(1300, COORD, beat("B", 2))
    cluster.run(until_ms=2000)
    cluster.crash("broker-1", "process")
    cluster.run(until_ms=20000)
    [loaded] = [e for e in where(events, "group_coordinator_loaded", partition=0) if e["node"] == "broker-2"]
    snapshot = cluster.state("broker-2", "group-coordinator")["groups"][GROUP]
    assert (snapshot["group_epoch"], snapshot["assignment_epoch"], snapshot["state"]) == (2, 2, "Stable")
    members = {mid: (m["member_epoch"], m["assigned"]) for mid, m in snapshot["members"].items()}
    assert members == {"A": (2, ["T-0", "T-1"]), "B": (2, ["T-2"])}
    a.send(20000, group_coordinator_address(2), beat("A", 2, 0, 1))
    b.send(20000, group_coordinator_address(2), beat("B", 1, 2))
    cluster.run(until_ms=20100)
    assert summary(at(a, 20002)) == (E.NONE, "A", 2, None)
    assert at(b, 20002).error_code is E.FENCED_MEMBER_EPOCH
    assert loaded["groups"] == [GROUP]


def test_a_write_refused_for_want_of_replicas_changes_nothing() -> None:
    """With `min.insync.replicas` 3 and broker 3 out of the ISR, the coordinator's append is
    refused NOT_ENOUGH_REPLICAS: C's join is answered COORDINATOR_NOT_AVAILABLE
    (`handleOperationException`) and the group is as before: no C, group epoch 1, and no
    event of the refused change."""
    text = SCENARIO.replace('"offsets.topic.num.partitions" = 3', '"offsets.topic.num.partitions" = 3\n"min.insync.replicas" = 3')
    with scenario_cluster(text) as c:
        events, (a, cc) = start(c, "a", "c")
        a.send(1000, COORD, join("A"))
        c.run(until_ms=2000)
        c.crash("broker-3", "process")
        c.run(until_ms=60000)
        cc.send(60000, COORD, join("C"))
        c.run(until_ms=60100)
        assert summary(at(a, 1006)) == (E.NONE, "A", 1, [0, 1, 2])
        assert summary(at(cc, 60004)) == (E.COORDINATOR_NOT_AVAILABLE, None, -1, None)
        snapshot = c.state("broker-1", "group-coordinator")["groups"][GROUP]
        assert (snapshot["group_epoch"], sorted(snapshot["members"])) == (1, ["A"])
        assert [e for e in where(events, "consumer_member_changed") if e["member_id"] == "C"] == []
