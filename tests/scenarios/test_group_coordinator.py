"""The group coordinator in a real cluster (3 brokers, ZooKeeper mode, the real controller), driven
by scripted clients (`Cluster.client`) that send FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
OffsetCommit and OffsetFetch at exact times. Latency is exactly 1 ms, so every time below is exact.

`my-group` hashes to `__consumer_offsets-0` of 3 (`Utils.abs("my-group".hashCode) % 3`), whose
replicas are [1, 2, 3]: broker 1 coordinates it, and broker 2 after broker 1 crashes. A
`[[consumers]]` entry that never starts makes the scenario create `__consumer_offsets` and the
coordinators; the clients below play the consumers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from actors.group.placement import partition_for
from protocols.errors import ErrorCode
from protocols.group import (
    Assignment,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupProtocol,
    JoinGroupRequest,
    JoinGroupResponse,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitTopic,
    OffsetFetchRequest,
    OffsetFetchResponse,
    Subscription,
    SyncGroupAssignment,
    SyncGroupRequest,
    SyncGroupResponse,
    TopicPartitions,
)
from sim.cluster.harness import Client, Cluster
from sim.cluster.scenario import parse_scenario
from sim.engine.kernel import HostKind

E = ErrorCode
GROUP = "my-group"
SCENARIO = """
[run]
"duration.ms" = 60000
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
PROTOCOLS = (JoinGroupProtocol("range", Subscription(("T",))),)

def coordinator(c: Client) -> int:
    """The broker its latest FindCoordinator answer named."""
    [*_, (_, found)] = c.answers(FindCoordinatorResponse)
    return found.node_id


def member_id(c: Client) -> str:
    """The member id of its latest JoinGroup answer that named one."""
    return [m.member_id for _, m in c.answers(JoinGroupResponse) if m.member_id][-1]


def generation_id(c: Client) -> int:
    return [m.generation_id for _, m in c.answers(JoinGroupResponse) if m.error_code is E.NONE][-1]


def join(member: str | Callable[[Client], str] = "") -> Callable[[Client], JoinGroupRequest]:
    def build(c: Client) -> JoinGroupRequest:
        mid = member(c) if callable(member) else member
        return JoinGroupRequest(GROUP, 10000, 60000, mid, protocols=PROTOCOLS)

    return build


def rejoin(c: Client) -> JoinGroupRequest:
    return join(member_id)(c)


def commit(generation: int | None, offsets: dict[int, int]) -> Callable[[Client], OffsetCommitRequest]:
    def build(c: Client) -> OffsetCommitRequest:
        parts = tuple(OffsetCommitPartition(p, o) for p, o in sorted(offsets.items()))
        gen = generation_id(c) if generation is None else generation
        return OffsetCommitRequest(GROUP, gen, member_id(c), topics=(OffsetCommitTopic("T", parts),))

    return build


def heartbeat(c: Client) -> HeartbeatRequest:
    return HeartbeatRequest(GROUP, generation_id(c), member_id(c))


def sync(assign: Callable[[Client], dict[str, tuple[int, ...]]] | None = None) -> Callable[[Client], SyncGroupRequest]:
    def build(c: Client) -> SyncGroupRequest:
        assignments = ()
        if assign is not None:
            assignments = tuple(
                SyncGroupAssignment(mid, Assignment((TopicPartitions("T", ps),))) for mid, ps in sorted(assign(c).items())
            )
        return SyncGroupRequest(GROUP, generation_id(c), member_id(c), assignments=assignments)

    return build


FETCH = OffsetFetchRequest(GROUP, (TopicPartitions("T", (0, 1, 2)),))
FIND = FindCoordinatorRequest(GROUP)


def fetched(response: OffsetFetchResponse) -> dict[str, int]:
    return {f"{t.name}-{p.partition}": p.committed_offset for t in response.topics for p in t.partitions}


def at(client: Client, kind: type, t: int) -> Any:
    """The answer of `kind` the client received at exactly `t`."""
    [found] = [m for when, m in client.answers(kind) if when == t]
    return found


def where(events: list[dict[str, Any]], name: str, **match: Any) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == name and all(e.get(k) == v for k, v in match.items())]


@pytest.fixture
def cluster() -> Any:
    scenario = parse_scenario(SCENARIO, "group-coordinator", [])
    with Cluster(scenario, host=HostKind.DIRECT) as built:
        yield built


Plan = list[tuple[int, int | Callable[[Client], int], Any]]


def _start(cluster: Cluster, **plans: Plan) -> tuple[list[dict[str, Any]], dict[str, Client]]:
    """Every event from now on, and one scripted client per plan of `(at_ms, broker, request)`
    steps (a broker or request may be a function of the client)."""
    events: list[dict[str, Any]] = []
    cluster.kernel.observe(events.append)
    clients = {}
    for name, plan in plans.items():
        clients[name] = client = cluster.client(name)
        for at_ms, broker, request in plan:
            client.send(at_ms, broker, request)
    return events, clients


C1_PLAN: Plan = [
    (1000, 1, FIND),
    (1100, coordinator, join()),
    (1200, coordinator, rejoin),
]
COORDINATOR_1, COORDINATOR_2 = 1, 2


def test_find_coordinator_answers_the_leader_of_the_groups_partition(cluster: Cluster) -> None:
    """FindCoordinator hashes the group id to its `__consumer_offsets` partition and answers that
    partition's leader from the broker's metadata cache, whichever broker is asked."""
    assert partition_for(GROUP, 3) == 0
    _, clients = _start(cluster, c1=[(1000, 3, FIND)])
    c1 = clients["c1"]
    cluster.run(until_ms=1010)
    assert c1.answers(FindCoordinatorResponse) == [(1002, FindCoordinatorResponse(E.NONE, 1))]


def test_member_id_required_then_generation_1_after_the_initial_delay(cluster: Cluster) -> None:
    """KIP-394: the first JoinGroup gets MEMBER_ID_REQUIRED; the join with that id moves the
    Empty group to PreparingRebalance, and the InitialDelayedJoin completes it 3000 ms later
    (at 1201 + 3000) as generation 1, with the member as leader."""
    events, clients = _start(cluster, c1=C1_PLAN)
    c1 = clients["c1"]
    cluster.run(until_ms=4300)
    first = at(c1, JoinGroupResponse, 1102)
    assert first.error_code is E.MEMBER_ID_REQUIRED and first.member_id.startswith("consumer-my-group-1-")
    [started] = where(events, "generation_started")
    assert (started["ts_ms"], started["node"], started["generation_id"]) == (4201, "broker-1", 1)
    assert started["members"] == [first.member_id] and started["leader_member_id"] == first.member_id
    answer = at(c1, JoinGroupResponse, 4202)
    assert (answer.error_code, answer.generation_id, answer.leader, answer.protocol_name) == (E.NONE, 1, first.member_id, "range")
    assert [m.member_id for m in answer.members] == [first.member_id]
    states = [(e["ts_ms"], e["previous_state"], e["state"]) for e in where(events, "group_state_changed")]
    assert states == [(1101, None, "Empty"), (1201, "Empty", "PreparingRebalance"), (4201, "PreparingRebalance", "CompletingRebalance")]


def leader_assignment(c: Client) -> dict[str, tuple[int, ...]]:
    """What the leader assigns in generation 2: T-0 and T-1 to the lower member id, T-2 to the other."""
    [*_, (_, answer)] = [(t, m) for t, m in c.answers(JoinGroupResponse) if m.error_code is E.NONE]
    low, high = (m.member_id for m in answer.members)
    return {low: (0, 1), high: (2,)}


@dataclass
class Story:
    """One run: C1 forms generation 1 alone, C2 joins (generation 2), both commit, C3 joins
    (a rebalance that is never stored), broker 1 crashes at 8000, and broker 2 takes over."""

    c1: Client
    c2: Client
    c3: Client
    events: list[dict[str, Any]]
    log: list[str]
    """`__consumer_offsets-0` on broker 2 at the end."""


@pytest.fixture(scope="module")
def story() -> Story:
    c1: Plan = [
        *C1_PLAN,
        (4300, COORDINATOR_1, sync(lambda c: {member_id(c): (0, 1, 2)})),
        (5000, COORDINATOR_1, commit(None, {0: 5})),
        (6200, COORDINATOR_1, heartbeat),
        (6300, COORDINATOR_1, rejoin),
        (6500, COORDINATOR_1, sync(leader_assignment)),
        (7000, COORDINATOR_1, commit(1, {0: 7})),
        (7100, COORDINATOR_1, commit(None, {0: 10, 1: 20})),
        (12050, 2, FIND),
        (12100, coordinator, heartbeat),
    ]
    c2: Plan = [
        (5001, COORDINATOR_1, FETCH),
        (5010, COORDINATOR_1, FETCH),
        (6000, COORDINATOR_1, join()),
        (6100, COORDINATOR_1, rejoin),
        (6400, COORDINATOR_1, sync()),
        (7200, COORDINATOR_1, commit(None, {2: 30})),
        (12100, COORDINATOR_2, FETCH),
    ]
    c3: Plan = [
        (7500, COORDINATOR_1, join()),
        (7600, COORDINATOR_1, rejoin),
        (12050, 3, FIND),
        (12100, coordinator, rejoin),
    ]
    scenario = parse_scenario(SCENARIO, "group-coordinator", [])
    with Cluster(scenario, host=HostKind.DIRECT) as cluster:
        events, clients = _start(cluster, c1=c1, c2=c2, c3=c3)
        cluster.run(until_ms=8000)
        cluster.crash("broker-1")
        cluster.run(until_ms=12200)
        partition = cluster.state("broker-2", "broker")["partitions"]["__consumer_offsets-0"]
        log = [value for _, _, value in partition["log"]]
    return Story(clients["c1"], clients["c2"], clients["c3"], events, log)


def test_a_second_member_starts_generation_2_and_the_leader_stays(story: Story) -> None:
    """C2's join (6101) moves the Stable group to PreparingRebalance in generation 1; C1's
    heartbeat is told REBALANCE_IN_PROGRESS; C1's rejoin (6301) completes the join at once (all
    members joined, none pending): generation 2, C1 still leader, and only C1's answer lists the
    members."""
    c1, c2 = story.c1, story.c2
    m1, m2 = member_id(c1), member_id(c2)
    [(t, changed)] = [(e["ts_ms"], e["previous_state"]) for e in where(story.events, "group_state_changed", generation_id=1, state="PreparingRebalance")]
    assert (t, changed) == (6101, "Stable")
    assert at(c1, HeartbeatResponse, 6202).error_code is E.REBALANCE_IN_PROGRESS
    [started] = where(story.events, "generation_started", generation_id=2)
    assert (started["ts_ms"], started["leader_member_id"], started["members"]) == (6301, m1, sorted([m1, m2]))
    leader, follower = at(c1, JoinGroupResponse, 6302), at(c2, JoinGroupResponse, 6302)
    assert (leader.generation_id, leader.leader, sorted(m.member_id for m in leader.members)) == (2, m1, sorted([m1, m2]))
    assert (follower.generation_id, follower.leader, follower.members) == (2, m1, ())


def test_sync_group_answers_once_the_leaders_assignment_is_stored(story: Story) -> None:
    """The leader's SyncGroup (6501) is answered only after the group record is replicated
    (acks=-1: stored at 6505); the follower's SyncGroup, parked since 6401, gets its share at
    the same moment, and the group is Stable."""
    c1, c2 = story.c1, story.c2
    [stored] = where(story.events, "group_assignment_stored", generation_id=2)
    low, high = sorted([member_id(c1), member_id(c2)])
    assert (stored["ts_ms"], stored["error"]) == (6505, "NONE")
    assert stored["assignments"] == [[low, ["T-0", "T-1"]], [high, ["T-2"]]]
    mine = {member_id(c1): at(c1, SyncGroupResponse, 6506), member_id(c2): at(c2, SyncGroupResponse, 6506)}
    assert mine[low].assignment == Assignment((TopicPartitions("T", (0, 1)),))
    assert mine[high].assignment == Assignment((TopicPartitions("T", (2,)),))
    [stable] = where(story.events, "group_state_changed", node="broker-1", generation_id=2, state="Stable")
    assert stable["ts_ms"] == 6505
    [record] = [r for r in map(json.loads, story.log) if r["type"] == "group" and r["generation"] == 2]
    assert [(m["member_id"], m["assignment"]) for m in record["members"]] == [(low, [["T", 0], ["T", 1]]), (high, [["T", 2]])]


def test_a_commit_is_visible_to_offset_fetch_only_after_its_append(story: Story) -> None:
    """C1's commit of T-0 = 5 reaches the coordinator at 5001 and is answered at 5005, once
    replicated; C2's OffsetFetch handled at 5002 does not see it, the one at 5011 does."""
    c1, c2 = story.c1, story.c2
    assert [p.error_code for p in at(c1, OffsetCommitResponse, 5006).partitions] == [E.NONE]
    assert fetched(at(c2, OffsetFetchResponse, 5003)) == {"T-0": -1, "T-1": -1, "T-2": -1}
    assert fetched(at(c2, OffsetFetchResponse, 5012)) == {"T-0": 5, "T-1": -1, "T-2": -1}


def test_a_commit_from_an_older_generation_is_illegal(story: Story) -> None:
    """In generation 2, a commit that carries generation 1 gets ILLEGAL_GENERATION at once and
    writes nothing."""
    answer = at(story.c1, OffsetCommitResponse, 7002)
    assert [p.error_code for p in answer.partitions] == [E.ILLEGAL_GENERATION]
    [completed] = where(story.events, "offset_commit_completed", generation_id=1, error="ILLEGAL_GENERATION")
    assert (completed["ts_ms"], completed["offsets"]) == (7001, [["T", 0, 7]])
    assert not any('"offset":7' in value for value in story.log)


def test_the_new_coordinator_resumes_the_last_stored_generation(story: Story) -> None:
    """Broker 1 crashes at 8000 with C3's join of generation 3 under way. Once the controller
    moves `__consumer_offsets-0` to broker 2 (leader epoch 2), broker 2 loads generation 2,
    Stable, with C1 and C2: C1's heartbeat is answered NONE, and C3, never stored, gets
    UNKNOWN_MEMBER_ID."""
    c1, c2, c3 = story.c1, story.c2, story.c3
    [loaded] = where(story.events, "group_coordinator_loaded", node="broker-2", partition=0)
    assert (loaded["ts_ms"], loaded["leader_epoch"], loaded["groups"]) == (12030, 2, [GROUP])
    [resumed] = where(story.events, "group_state_changed", node="broker-2", group_id=GROUP)
    assert (resumed["previous_state"], resumed["state"], resumed["generation_id"]) == (None, "Stable", 2)
    added = sorted(e["member_id"] for e in where(story.events, "group_member_added", node="broker-2"))
    assert added == sorted([member_id(c1), member_id(c2)])
    assert at(c1, FindCoordinatorResponse, 12052).node_id == 2
    assert at(c1, HeartbeatResponse, 12102).error_code is E.NONE
    assert at(c3, JoinGroupResponse, 12102).error_code is E.UNKNOWN_MEMBER_ID
    assert not where(story.events, "generation_started", generation_id=3)


def test_every_acknowledged_commit_survives_the_failover(story: Story) -> None:
    """Each commit acknowledged by broker 1 was replicated with acks=-1, so broker 2 serves the
    last acknowledged offset of every partition."""
    answers = [a for c in (story.c1, story.c2) for _, a in c.answers(OffsetCommitResponse)]
    accepted = where(story.events, "offset_commit_completed", node="broker-1", error="NONE")
    assert len(accepted) == sum(all(p.error_code is E.NONE for p in a.partitions) for a in answers) == 3
    acknowledged = {f"{topic}-{partition}": offset for e in accepted for topic, partition, offset in e["offsets"]}
    assert acknowledged == {"T-0": 10, "T-1": 20, "T-2": 30}
    assert fetched(at(story.c2, OffsetFetchResponse, 12102)) == acknowledged


# ----------------------------------------------------------------------------- KAFKA-14201


def _versioned(version: str, *overrides: str) -> Cluster:
    scenario = parse_scenario(SCENARIO, "group-coordinator", [f"kafka.version={version}", *overrides])
    return Cluster(scenario, host=HostKind.DIRECT)


def unmanaged_commit(member_id: str, instance: str | None, offsets: dict[int, int]) -> OffsetCommitRequest:
    """A commit from outside group management (`assign()`): generation -1."""
    parts = tuple(OffsetCommitPartition(p, o) for p, o in sorted(offsets.items()))
    return OffsetCommitRequest(GROUP, -1, member_id, instance, topics=(OffsetCommitTopic("T", parts),))


@pytest.mark.parametrize(
    ("version", "error", "answered", "committed"),
    [
        ("3.2.3", E.UNKNOWN_MEMBER_ID, (1102, 1302), {"T-0": 5, "T-1": -1, "T-2": -1}),
        ("3.3", E.NONE, (1106, 1306), {"T-0": 5, "T-1": 6, "T-2": 7}),
    ],
)
def test_generation_minus_one_to_an_empty_group_is_stored_whoever_sends_it_from_3_3(
    version: str, error: ErrorCode, answered: tuple[int, int], committed: dict[str, int]
) -> None:
    """KAFKA-14201 (3.3.0). A client outside group management commits T-0 = 5 with generation -1
    and no member (1001: the group is created Empty and the commit stored at 1005); then a
    client using `assign()` with a `group.instance.id` (1101) and one naming a member id
    (1301) commit to the Empty group. 3.2.3 looks for that member in a group with none and
    answers each UNKNOWN_MEMBER_ID at once (1101, 1301: nothing written); 3.3 stores them once
    replicated (1105, 1305), and the commit invariant agrees with the coordinator in both."""
    plan: Plan = [
        (1000, COORDINATOR_1, unmanaged_commit("", None, {0: 5})),
        (1100, COORDINATOR_1, unmanaged_commit("", "i-1", {1: 6})),
        (1300, COORDINATOR_1, unmanaged_commit("consumer-my-group-1-x", None, {2: 7})),
        (1500, COORDINATOR_1, FETCH),
    ]
    with _versioned(version) as cluster:
        events, clients = _start(cluster, c1=plan)
        cluster.run(until_ms=1600)
    c1 = clients["c1"]
    assert [p.error_code for p in at(c1, OffsetCommitResponse, 1006).partitions] == [E.NONE]
    for t in answered:
        assert [p.error_code for p in at(c1, OffsetCommitResponse, t).partitions] == [error]
    completed = [(e["ts_ms"], e["member_id"], e["error"], e["group_state"]) for e in where(events, "offset_commit_completed")]
    state = "Empty" if error is E.NONE else None
    assert completed == [
        (1005, "", "NONE", "Empty"),
        (answered[0] - 1, "", error.name, state),
        (answered[1] - 1, "consumer-my-group-1-x", error.name, state),
    ]
    assert fetched(at(c1, OffsetFetchResponse, 1502)) == committed
    assert not where(events, "invariant_violated")


# ----------------------------------------------------------------------------- group.max.size


def max_size_story(version: str) -> tuple[Client, Client, list[dict[str, Any]]]:
    """`group.max.size` = 1. C1 and C2 both get a member id while the group is Empty; C1 joins
    with it at 1201 (PreparingRebalance), C2 at 1301. C1 assigns at 8000; broker 1 crashes at
    9000, broker 2 loads the group at 14032, C2 rejoins at 16101 and C1 at 16201."""
    c1: Plan = [
        (1000, 1, FIND),
        (1100, coordinator, join()),
        (1200, coordinator, rejoin),
        (8000, COORDINATOR_1, sync(lambda c: {member_id(c): (0, 1, 2)})),
        (16050, 2, FIND),
        (16200, coordinator, rejoin),
    ]
    c2: Plan = [
        (1000, 1, FIND),
        (1110, coordinator, join()),
        (1300, coordinator, rejoin),
        (16050, 3, FIND),
        (16100, coordinator, rejoin),
    ]
    with _versioned(version, "broker.group.max.size=1") as cluster:
        events, clients = _start(cluster, c1=c1, c2=c2)
        cluster.run(until_ms=9000)
        cluster.crash("broker-1")
        cluster.run(until_ms=16300)
    return clients["c1"], clients["c2"], events


def _pending_id(c: Client) -> str:
    """The member id the coordinator handed out with MEMBER_ID_REQUIRED (KIP-394)."""
    return next(m.member_id for _, m in c.answers(JoinGroupResponse) if m.error_code is E.MEMBER_ID_REQUIRED)


def test_from_2_6_the_join_refuses_a_member_id_beyond_group_max_size_and_the_loaded_group_stays() -> None:
    """KIP-389 as KAFKA-9885 made it (2.6+). While C1 waits in the join (PreparingRebalance, one
    member waiting), C2's JoinGroup with its KIP-394 id is one too many: GROUP_MAX_SIZE_REACHED
    with no member id (1302), its pending id leaves the group (`group_max_size`), and
    generation 1 forms with C1 alone after the initial delay (4201). Broker 2 loads that group
    (one member: no rebalance), refuses C2 again in Stable (16102: the limit is checked before
    the member id), and C1's leader rejoin forms generation 2 (16201)."""
    c1, c2, events = max_size_story("2.6")
    refused = at(c2, JoinGroupResponse, 1302)
    assert (refused.error_code, refused.member_id) == (E.GROUP_MAX_SIZE_REACHED, "")
    assert [(e["ts_ms"], e["node"], e["member_id"]) for e in where(events, "group_member_removed", reason="group_max_size")] == [
        (1301, "broker-1", _pending_id(c2))
    ]
    generations = [(e["ts_ms"], e["node"], e["generation_id"], e["members"]) for e in where(events, "generation_started")]
    assert generations == [(4201, "broker-1", 1, [member_id(c1)]), (16201, "broker-2", 2, [member_id(c1)])]
    [loaded] = where(events, "group_state_changed", node="broker-2", previous_state=None)
    assert (loaded["ts_ms"], loaded["state"]) == (14032, "Stable")
    assert at(c2, JoinGroupResponse, 16102).error_code is E.GROUP_MAX_SIZE_REACHED
    assert at(c1, JoinGroupResponse, 16202).generation_id == 2


def test_before_2_6_a_pending_member_gets_past_group_max_size_and_a_loaded_group_over_it_sheds_the_first_rejoiner() -> None:
    """KIP-389 before KAFKA-9885 (2.2 to 2.5). A member id handed out with MEMBER_ID_REQUIRED is
    not checked on its second JoinGroup, so C2 joins (1301) and generation 1 forms with both
    members (7201, the initial delay waited again for C2): one over the limit. Broker 2 loads it
    over the limit and starts a rebalance at once (`onGroupLoaded`, 14032); the join refuses
    the first member to rejoin while the group is over (C2, 16101), and generation 2 forms with
    C1 (16201)."""
    c1, c2, events = max_size_story("2.5")
    assert at(c2, JoinGroupResponse, 7202).error_code is E.NONE
    generations = [(e["ts_ms"], e["node"], e["generation_id"], e["members"]) for e in where(events, "generation_started")]
    assert generations == [
        (7201, "broker-1", 1, sorted([member_id(c1), member_id(c2)])),
        (16201, "broker-2", 2, [member_id(c1)]),
    ]
    states = [(e["ts_ms"], e["previous_state"], e["state"]) for e in where(events, "group_state_changed", node="broker-2", group_id=GROUP)]
    assert states[:2] == [(14032, None, "Stable"), (14032, "Stable", "PreparingRebalance")]
    refused = at(c2, JoinGroupResponse, 16102)
    assert (refused.error_code, refused.member_id) == (E.GROUP_MAX_SIZE_REACHED, "")
    assert [(e["ts_ms"], e["node"], e["member_id"]) for e in where(events, "group_member_removed")] == [
        (16101, "broker-2", member_id(c2))
    ]



FULL_GROUP = """
[run]
"duration.ms" = 15000
[network]
"latency.min.ms" = 1
"latency.max.ms" = 1
[cluster]
brokers = 3
[broker]
"offsets.topic.num.partitions" = 3
"group.max.size" = 1
[[topics]]
name = "T"
partitions = 3
"replication.factor" = 3
[[producers]]
topic = "T"
records = 100
[[consumers]]
"group.id" = "my-group"
topics = ["T"]
"auto.offset.reset" = "earliest"
[[consumers]]
"group.id" = "my-group"
topics = ["T"]
"start.ms" = 8000
"""


def test_a_consumer_refused_by_a_full_group_stops_and_the_group_goes_on() -> None:
    """A real consumer's first JoinGroup to a full group (`group.max.size` = 1, consumer-1 in
    Stable since generation 1 at 3027) is answered GROUP_MAX_SIZE_REACHED (8004): Kafka's
    `AbstractCoordinator` raises `GroupMaxSizeReachedException`, which `poll()` throws, not
    retriable, so the application stops (`consumer_failed`) and sends nothing more. consumer-1
    sees no rebalance and reads all 100 records."""
    with Cluster(parse_scenario(FULL_GROUP, "full-group.toml")) as cluster:
        events: list[dict[str, Any]] = []
        cluster.kernel.observe(events.append)
        cluster.run_to_end()
        summary = cluster.groups.summary()
        assert cluster.kernel.invariant_violations == []
    [refused] = where(events, "join_group_failed", node="consumer-2")
    assert (refused["ts_ms"], refused["member_id"], refused["error"], refused["assigned_member_id"]) == (8004, "", "GROUP_MAX_SIZE_REACHED", "")
    assert summary["consumer_failures"] == [{"node": "consumer-2", "ts_ms": 8004, "error": "JoinGroup: GROUP_MAX_SIZE_REACHED"}]
    assert [(e["ts_ms"], e["generation_id"]) for e in where(events, "generation_started")] == [(3027, 1)]
    assert (summary["consumed"], summary["rebalances"]) == (100, 1)
    sent_after = [e for e in events if e["node"] == "consumer-2" and e["ts_ms"] > 8004]
    assert sent_after == []
