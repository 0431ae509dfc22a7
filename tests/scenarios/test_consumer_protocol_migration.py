"""KIP-848's online migration end to end (3.8+): a classic group rolled to the consumer protocol
one consumer at a time, classic members served inside the consumer group, a downgrade when the
last consumer-protocol member leaves, and `group.consumer.migration.policy` keeping a group with
members in its protocol.

A rolling upgrade is written as the scenario language allows: a restarted process keeps its
`[[consumers]]` entry and so its `group.protocol`, so the classic consumers are closed
(`close` faults) and consumer-protocol entries of the same `group.id` start (`start.ms`) in
their place. Kafka 3.9 with `consumer` among the brokers' rebalance protocols; `my-group` is
coordinated by broker 3; latency 2 to 4 ms. The classic consumers set `client.id` "classic",
so their member ids start with it; consumer-protocol member ids are the coordinator's UUIDs.
"""

from __future__ import annotations

from typing import Any

from protocols.errors import ErrorCode
from protocols.group import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, HeartbeatRequest, HeartbeatResponse
from sim.cluster.harness import Cluster
from sim.cluster.scenario import parse_scenario
from sim.engine.kernel import HostKind

BASE = """
[run]
name = "migration"
seed = 1
"duration.ms" = {duration}
[kafka]
version = "{version}"
[network]
"latency.min.ms" = 2
"latency.max.ms" = 4
[cluster]
brokers = 3
[broker]
"min.insync.replicas" = 2
"offsets.topic.num.partitions" = 5
"group.coordinator.rebalance.protocols" = ["classic", "consumer"]
{policy}
[[topics]]
name = "T"
partitions = 4
"replication.factor" = 3
[[producers]]
topic = "T"
acks = "all"
records = {records}
"interval.ms" = 10
"""
CLASSIC = """
[[consumers]]
"group.id" = "my-group"
topics = ["T"]
count = {count}
"client.id" = "classic"
"auto.offset.reset" = "earliest"
"process.record.ms" = 1
"max.poll.records" = 20
"session.timeout.ms" = 10000
"""
CONSUMER = """
[[consumers]]
"group.id" = "my-group"
topics = ["T"]
"group.protocol" = "consumer"
"start.ms" = {start}
"auto.offset.reset" = "earliest"
"process.record.ms" = 1
"max.poll.records" = 20
"""
CLOSE = """
[[faults]]
kind = "close"
node = "{node}"
"at.ms" = {at}
"""


def scenario(*parts: str, policy: str = "bidirectional", version: str = "3.9", duration: int = 80_000, records: int = 6000) -> Any:
    policy_line = f'"group.consumer.migration.policy" = "{policy}"' if policy else ""
    text = BASE.format(duration=duration, version=version, policy=policy_line, records=records) + "".join(parts)
    return parse_scenario(text, "migration.toml")


def run(scn: Any) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    with Cluster(scn, host=HostKind.DIRECT) as cluster:
        events: list[dict[str, Any]] = []
        cluster.kernel.observe(events.append)
        cluster.run_to_end()
        checks = cluster.final_checks()
        assert cluster.kernel.invariant_violations == [], cluster.kernel.invariant_violations[:3]
        summary = cluster.summary()
    return events, checks, summary


def where(events: list[dict[str, Any]], name: str, **match: Any) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == name and all(e.get(k) == v for k, v in match.items())]


def short(member_id: str) -> str:
    """A member id's first part: "classic" for a classic consumer, else the UUID's first 8."""
    return member_id.split("-")[0]


def members(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The coordinator's view of each member change: (time, member, state, epoch, assigned)."""
    return [
        (e["ts_ms"], short(e["member_id"]), e["state"], e["member_epoch"], e["assigned"])
        for e in where(events, "consumer_member_changed")
    ]


def rolling_upgrade() -> Any:
    """Two classic members (generation 1: T-0, T-1 and T-2, T-3); a consumer-protocol member joins
    at 20 s, classic consumer-1 closes at 35 s, a second consumer-protocol member joins at 50 s
    and classic consumer-2 closes at 60 s."""
    return scenario(
        CLASSIC.format(count=2),
        CONSUMER.format(start=20000),
        CLOSE.format(node="consumer-1", at=35000),
        CONSUMER.format(start=50000),
        CLOSE.format(node="consumer-2", at=60000),
    )


def test_a_classic_group_is_upgraded_at_the_first_consumer_protocol_join_and_rolled_over() -> None:
    """The join at 20 s converts the Stable classic group of generation 1: group and target epoch
    1, both members STABLE at epoch 1 holding their classic assignment; the join bumps the epoch
    to 2 and the uniform assignor moves T-3 to the new member, which waits for it
    (UNRELEASED_PARTITIONS). The classic members learn of epoch 2 from a Heartbeat answered
    REBALANCE_IN_PROGRESS and rejoin: consumer-1 keeps T-0, T-1; consumer-2 (range, eager) has
    revoked everything before its JoinGroup, so its subscription owns nothing and it is
    reconciled at once to T-2, freeing T-3 for the new member's next heartbeat (25.05 s, its
    5 s interval). Each classic leave bumps the epoch (3 at 35 s, 5 at 60 s); after the second
    the group is all consumer protocol. No partition is held twice, and the committed offsets
    carry over: every record is consumed once."""
    events, _, summary = run(rolling_upgrade())
    [upgraded] = where(events, "consumer_group_upgraded")
    assert (upgraded["ts_ms"], upgraded["generation_id"], upgraded["previous_state"]) == (20029, 1, "Stable")
    assert [short(m) for m in upgraded["members"]] == ["classic", "classic"]
    assert [(e["ts_ms"], e["group_epoch"], e["reason"]) for e in where(events, "group_epoch_bumped")] == [
        (20029, 2, "member_joined"),
        (35033, 3, "member_left"),
        (50023, 4, "member_joined"),
        (60035, 5, "member_left"),
    ]
    rows = members(events)
    new_1, new_2 = "d576c842", "db51e239"
    assert rows[:8] == [
        (20029, "classic", "stable", 1, ["T-0", "T-1"]),
        (20029, "classic", "stable", 1, ["T-2", "T-3"]),
        (20029, new_1, "unreleased_partitions", 2, []),
        (21132, "classic", "stable", 2, ["T-0", "T-1"]),
        (21147, "classic", "stable", 2, ["T-2"]),
        (25053, new_1, "stable", 2, ["T-3"]),
        (35082, new_1, "stable", 3, ["T-1", "T-3"]),
        (36199, "classic", "stable", 3, ["T-0", "T-2"]),
    ]
    assert rows[-2:] == [(60061, new_2, "stable", 5, ["T-2", "T-3"]), (60172, new_1, "stable", 5, ["T-0", "T-1"])]
    # The classic consumers see the member epoch as their generation.
    classic_gens = [(e["node"], e["generation_id"], e["partitions"]) for e in where(events, "partitions_assigned") if e["node"] in ("consumer-1", "consumer-2")]
    assert classic_gens == [
        ("consumer-1", 1, ["T-0", "T-1"]),
        ("consumer-2", 1, ["T-2", "T-3"]),
        ("consumer-1", 2, ["T-0", "T-1"]),
        ("consumer-2", 2, ["T-2"]),
        ("consumer-2", 3, ["T-0", "T-2"]),
        ("consumer-2", 4, ["T-0", "T-2"]),
    ]
    removed = [(e["ts_ms"], short(e["member_id"]), e["reason"]) for e in where(events, "consumer_member_removed")]
    assert removed == [(35033, "classic", "left"), (60035, "classic", "left")]
    assert where(events, "classic_group_downgraded") == []
    assert (summary["consumed"], summary["duplicates"]) == (6000, 0)


def downgrade() -> Any:
    """Two classic members; a consumer-protocol member joins at 20 s (upgrade) and closes at 35 s."""
    return scenario(
        CLASSIC.format(count=2),
        CONSUMER.format(start=20000),
        CLOSE.format(node="consumer-3", at=35000),
        duration=60_000,
        records=4000,
    )


def disabled() -> Any:
    """As the rolling upgrade's start, with the policy disabled (3.8's and 3.9's default)."""
    return scenario(CLASSIC.format(count=2), CONSUMER.format(start=20000), policy="", duration=40_000, records=2000)


def crash() -> Any:
    """Upgraded at 20 s; classic consumer-1's process crashes at 30 s."""
    return scenario(
        CLASSIC.format(count=2),
        CONSUMER.format(start=20000),
        '[[faults]]\nkind = "crash"\nnode = "consumer-1"\n"at.ms" = 30000\n',
        duration=50_000,
        records=3000,
    )


def test_the_last_consumer_protocol_member_leaving_downgrades_the_group_to_classic() -> None:
    """At 35 s the only consumer-protocol member leaves (epoch -1) and both others are classic:
    with the policy allowing it, the consumer group goes (Dead) and a classic group replaces it,
    Stable at generation 2 (the group epoch) with the target as each member's assignment, then
    prepares a rebalance at once. The classic members rejoin from their Heartbeats and
    generation 3 is assigned by their own range assignor: T-0, T-1 and T-2, T-3."""
    events, _, summary = run(downgrade())
    [down] = where(events, "classic_group_downgraded")
    assert (down["ts_ms"], down["generation_id"], short(down["left_member_id"])) == (35035, 2, "d576c842")
    assert [short(m) for m in down["members"]] == ["classic", "classic"]
    assert [(e["ts_ms"], e["previous_state"], e["state"]) for e in where(events, "consumer_group_state_changed")][-1] == (35035, "Stable", "Dead")
    classic_states = [(e["ts_ms"], e["previous_state"], e["state"], e["generation_id"]) for e in where(events, "group_state_changed")]
    assert classic_states[-4:] == [
        (35035, None, "Stable", 2),
        (35035, "Stable", "PreparingRebalance", 2),
        (36177, "PreparingRebalance", "CompletingRebalance", 3),
        (36196, "CompletingRebalance", "Stable", 3),
    ]
    last = [(e["ts_ms"], e["node"], e["generation_id"], e["partitions"]) for e in where(events, "partitions_assigned")][-2:]
    assert last == [(36199, "consumer-1", 3, ["T-0", "T-1"]), (36200, "consumer-2", 3, ["T-2", "T-3"])]
    assert (summary["consumed"], summary["duplicates"]) == (4000, 0)


def test_without_the_policy_a_consumer_protocol_join_to_a_classic_group_is_group_id_not_found() -> None:
    """3.9's default policy (disabled): the Stable classic group is not upgraded, the
    consumer-protocol member's join gets GROUP_ID_NOT_FOUND, fatal to it, and the classic group
    goes on at generation 1."""
    events, _, _ = run(disabled())
    assert where(events, "consumer_group_upgraded") == []
    failed = [(e["ts_ms"], e["node"], e["error"]) for e in where(events, "consumer_failed")]
    assert failed == [(20011, "consumer-3", "ConsumerGroupHeartbeat: GROUP_ID_NOT_FOUND")]
    assert [e["generation_id"] for e in where(events, "generation_started")] == [1]


def test_a_classic_member_inside_a_consumer_group_is_fenced_after_its_own_session_timeout() -> None:
    """A classic member keeps its JoinGroup's `session.timeout.ms` (10 s) inside the consumer
    group, not `group.consumer.session.timeout.ms` (45 s): consumer-1 crashes at 30 s, its last
    Heartbeat was answered at 27.149 s, and it is fenced at 37.149 s; the group epoch goes to 3
    and its partitions are reassigned."""
    events, _, _ = run(crash())
    removed = [(e["ts_ms"], short(e["member_id"]), e["member_epoch"], e["reason"]) for e in where(events, "consumer_member_removed")]
    assert removed == [(37149, "classic", 2, "session_timeout")]
    assert [(e["ts_ms"], e["group_epoch"], e["reason"]) for e in where(events, "group_epoch_bumped")][-1] == (37149, 3, "member_fenced")
    assert members(events)[-2:] == [(39194, "classic", "stable", 3, ["T-0", "T-2"]), (40080, "d576c842", "stable", 3, ["T-1", "T-3"])]


def test_in_3_7_a_classic_request_to_a_consumer_group_is_group_id_not_found() -> None:
    """3.7 has no classic members inside a consumer group: a classic Heartbeat naming the
    consumer group gets GROUP_ID_NOT_FOUND; from 3.8 it reaches the group (UNKNOWN_MEMBER_ID for
    a member of the consumer protocol)."""
    answers = {}
    for version in ("3.7", "3.8"):
        idle = CONSUMER.format(start=100_000_000)  # the coordinators run for a group's consumer
        with Cluster(scenario(idle, policy="", version=version, duration=3000, records=1), host=HostKind.DIRECT) as cluster:
            a = cluster.client("a")
            a.send(1000, 3, ConsumerGroupHeartbeatRequest("my-group", "", 0, rebalance_timeout_ms=30000, subscribed_topic_names=("T",), topic_partitions=()))
            cluster.run(until_ms=1100)
            [(_, joined)] = a.answers(ConsumerGroupHeartbeatResponse)
            a.send(1100, 3, HeartbeatRequest("my-group", joined.member_epoch, joined.member_id))
            cluster.run(until_ms=1200)
            answers[version] = [r.error_code for _, r in a.answers(HeartbeatResponse)]
    assert answers == {"3.7": [ErrorCode.GROUP_ID_NOT_FOUND], "3.8": [ErrorCode.UNKNOWN_MEMBER_ID]}


def test_a_cooperative_classic_member_revokes_before_its_partition_moves() -> None:
    """With `cooperative-sticky` the classic members keep their partitions across a rejoin and
    claim them in the JoinGroup subscription's `ownedPartitions`. After the upgrade at 20 s the
    target moves T-3 from the second classic member to the new one: that member's JoinGroup
    still owns T-3, so it stays UNREVOKED_PARTITIONS at epoch 1 (answered generation 1 with T-1
    only); its client revokes T-3 and rejoins, and the JoinGroup without T-3 takes it to epoch 2 at
    21.237 s. Only then is T-3 free, and the new member gets it at its next heartbeat (25.043 s):
    never two owners."""
    events, _, summary = run(
        scenario(
            CLASSIC.format(count=2).replace('"client.id" = "classic"', '"client.id" = "classic"\n"partition.assignment.strategy" = ["cooperative-sticky"]'),
            CONSUMER.format(start=20000),
            duration=30_000,
            records=2000,
        )
    )
    assert members(events) == [
        (20025, "classic", "stable", 1, ["T-0", "T-2"]),
        (20025, "classic", "stable", 1, ["T-1", "T-3"]),
        (20025, "d576c842", "unreleased_partitions", 2, []),
        (21128, "classic", "unrevoked_partitions", 1, ["T-1"]),
        (21140, "classic", "stable", 2, ["T-0", "T-2"]),
        (21237, "classic", "stable", 2, ["T-1"]),
        (25043, "d576c842", "stable", 2, ["T-3"]),
    ]
    [revoking] = where(events, "consumer_member_changed", state="unrevoked_partitions")
    assert revoking["pending_revocation"] == ["T-3"]
    assert (summary["consumed"], summary["duplicates"]) == (2000, 0)
