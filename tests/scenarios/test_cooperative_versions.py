"""The classic cooperative protocol's version behaviours (KIP-429), end to end.

- KAFKA-14639 (2.6.0 to 3.4.0, fixed in 3.4.1 / 3.5.0): a member that missed a generation's
  assignment (its SyncGroup answered REBALANCE_IN_PROGRESS) rejoins claiming the partitions of
  its last assignment with that older generation; the sticky assignors then counted only the
  highest generation's claims, so a partition it still held could go to another member in the
  same rebalance: two owners until it revokes it. Before 3.4 (KIP-792) the cooperative
  assignor's user data carries the generation of the member's last assignment, so the missed
  SyncGroup alone makes the claim older.
- `onPartitionsLost` under COOPERATIVE: a member out of its generation loses every partition at
  its next `onJoinPrepare`, whatever the protocol (`ConsumerCoordinator.onJoinPrepare`).
- KAFKA-13891 (3.3.0 and 3.3.1 only): a SyncGroup answered REBALANCE_IN_PROGRESS resets the
  generation, so the member reports its partitions lost before it rejoins.
- KAFKA-14024 (3.2.0 only, `STUCK` below): `onJoinPrepare` sends the pre-rebalance auto-commit
  at every call and goes on only when that commit is complete at once, so a cooperative member
  with positions to commit never sends JoinGroup and is removed at the rebalance timeout while
  it goes on processing; an eager one, having revoked everything, joins at the next call.

The group of the KAFKA-14639 and KAFKA-13891 tests: consumer 1 (the leader) and consumer 2 share T's four partitions from 6100 ms;
consumer 3 joins at 12 s. In generation 2 consumer 1 gives T-3 up (withheld from consumer 3)
and rejoins at once. Consumer 2 processes 5 ms a record, and its requests to the coordinator
take 200 ms more from 12168 to 12268 ms: its SyncGroup reaches the coordinator after consumer
1's rejoin opened generation 3, and is answered REBALANCE_IN_PROGRESS.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sim.analytics.jobs import analyze_runs
from sim.cluster.harness import Cluster
from sim.cluster.scenario import parse_scenario
from sim.engine.kernel import HostKind
from sim.studies.runner import run_scenario
from tests.properties.group_recount import recount

MISSED_SYNC = """
[run]
name = "missed-sync"
seed = 1
"duration.ms" = 24000

[kafka]
version = "{version}"

[network]
"latency.min.ms" = 2
"latency.max.ms" = 4

[cluster]
brokers = 1

[broker]
"offsets.topic.num.partitions" = 1
"offsets.topic.replication.factor" = 1

[[topics]]
name = "T"
partitions = 4

[[producers]]
topic = "T"
records = 4000
"interval.ms" = 5
keys = 8

[[consumers]]
"group.id" = "g"
topics = ["T"]
"partition.assignment.strategy" = ["cooperative-sticky"]
"auto.offset.reset" = "earliest"
"max.poll.records" = 20
"auto.commit.interval.ms" = 1000
"process.record.ms" = 1

[[consumers]]
"group.id" = "g"
topics = ["T"]
"partition.assignment.strategy" = ["cooperative-sticky"]
"auto.offset.reset" = "earliest"
"max.poll.records" = 20
"auto.commit.interval.ms" = 1000
"process.record.ms" = 5
"start.ms" = 200

[[consumers]]
"group.id" = "g"
topics = ["T"]
"partition.assignment.strategy" = ["cooperative-sticky"]
"auto.offset.reset" = "earliest"
"max.poll.records" = 20
"auto.commit.interval.ms" = 1000
"process.record.ms" = 1
"start.ms" = 12000

[[faults]]
kind = "delay"
"at.ms" = 12168
"delay.ms" = 200
src = ["consumer-2"]
dst = ["broker-1"]
"duration.ms" = 100
"""

C1 = "consumer-g-1-b2aec8ce-1bad-47a5-a5d9-3150453194a4"
C2 = "consumer-g-1-8128d27e-b183-4c72-8c16-101cd50195c1"
C3 = "consumer-g-1-935b0197-9924-43be-99ac-c400945ce94a"


def run(version: str) -> tuple[list[dict[str, Any]], dict[str, Any], list[Any]]:
    scenario = parse_scenario(MISSED_SYNC.format(version=version), "missed-sync.toml")
    with Cluster(scenario) as cluster:
        events: list[dict[str, Any]] = []
        cluster.kernel.observe(events.append)
        cluster.run_to_end()
        checks = cluster.final_checks()
        violations = list(cluster.kernel.invariant_violations)
    return events, checks, violations


def where(events: list[dict[str, Any]], name: str, **match: Any) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == name and all(e.get(k) == v for k, v in match.items())]


def ownership(events: list[dict[str, Any]], generation: int) -> list[tuple[int, str, str, list[str]]]:
    """Who took or gave up what in one generation, in log order."""
    names = ("partitions_assigned", "partitions_revoked", "partitions_lost")
    return [
        (e["ts_ms"], e["node"], e["event"], e["partitions"])
        for e in events
        if e["event"] in names and e["generation_id"] == generation
    ]


def test_kafka_14639_gives_a_partition_its_owner_still_holds_to_another_member() -> None:
    """3.3.2: consumer 2 missed generation 2 and rejoins generation 3 claiming T-0 and T-2 with
    generation 1 (its last assignment's); the leader's assignor counts only generation 2's
    claims, logs consumer 2's as ignored, and gives T-2 to consumer 3 at once. Consumer 3 takes
    T-2 at 15191 ms while consumer 2 holds it until its revocation at 15196 ms; consumer 3
    starts at the group's committed offset for T-2, so the 80 records consumer 2 had processed
    past it are processed twice, labelled `kafka_14639`, as the invariant's finding is."""
    events, checks, violations = run("3.3.2")
    [ignored] = where(events, "owned_partitions_ignored")
    assert (ignored["ts_ms"], ignored["node"], ignored["generation_id"]) == (15180, "consumer-1", 3)
    assert (ignored["owner"], ignored["owner_generation_id"], ignored["highest_generation_id"]) == (C2, 1, 2)
    assert ignored["partitions"] == ["T-0", "T-2"]
    assert ownership(events, 3) == [
        (15190, "consumer-1", "partitions_assigned", ["T-3"]),
        (15191, "consumer-3", "partitions_assigned", ["T-2"]),
        (15196, "consumer-2", "partitions_revoked", ["T-2"]),
        (15196, "consumer-2", "partitions_assigned", []),
    ]
    assert checks["duplicates_by_cause"] == {"cooperative_revocation_gap": 5, "kafka_14639": 80}
    assert recount(events).by_cause == checks["duplicates_by_cause"]
    assert violations == []
    assert checks["known_bug_findings"] == [
        {
            "invariant": "cooperative_single_owner",
            "label": "kafka_14639",
            "ts_ms": 15191,
            "node": "consumer-3",
            "detail": f"T-2 of g is assigned to {C3} in generation 3 while {C2} holds it",
        }
    ]


def test_kafka_14639_labels_a_revocation_that_gave_the_partition_away_in_the_same_round() -> None:
    """3.3.2 with consumer 2 as quick as the others (1 ms a record) and its requests delayed
    from 12112 ms, and consumer 3's SyncGroup of generation 3 10 ms slower: consumer 2's claims
    (generation 1) are thrown away again in generation 3, and it revokes T-2 at 15136 ms,
    before consumer 3 takes it at 15142 ms. No instant of two owners, but the partition changed
    hands within one rebalance with no commit in between: the 76 records consumer 2 had
    processed past the group's commit are `kafka_14639`, not the revocation gap of a
    cooperative handoff."""
    text = MISSED_SYNC.format(version="3.3.2").replace('"process.record.ms" = 5', '"process.record.ms" = 1')
    text = text.replace('"at.ms" = 12168', '"at.ms" = 12112') + SLOW_SYNC_OF_CONSUMER_3
    with Cluster(parse_scenario(text, "quick.toml")) as cluster:
        events: list[dict[str, Any]] = []
        cluster.kernel.observe(events.append)
        cluster.run_to_end()
        checks = cluster.final_checks()
    assert [(e["ts_ms"], e["partitions"]) for e in where(events, "owned_partitions_ignored")] == [(15125, ["T-0", "T-2"])]
    assert [o for o in ownership(events, 3) if o[2] != "partitions_assigned" or o[3]] == [
        (15136, "consumer-2", "partitions_revoked", ["T-2"]),
        (15137, "consumer-1", "partitions_assigned", ["T-3"]),
        (15142, "consumer-3", "partitions_assigned", ["T-2"]),
    ]
    assert checks["duplicates_by_cause"] == {"cooperative_revocation_gap": 2, "kafka_14639": 76}
    assert recount(events).by_cause == checks["duplicates_by_cause"]
    assert checks["known_bug_findings"] == []


SLOW_SYNC_OF_CONSUMER_3 = """
[[faults]]
kind = "delay"
"at.ms" = 15122
"delay.ms" = 10
src = ["consumer-3"]
dst = ["broker-1"]
"duration.ms" = 20
"""


def test_from_3_4_1_an_older_claim_no_newer_member_makes_stands() -> None:
    """3.4.1: the same missed SyncGroup; consumer 2 rejoins with the JoinGroup's generation (2,
    KIP-792), and even an older claim would stand. Generation 3 leaves it T-0 and T-2 and gives
    consumer 3 T-3, which consumer 1 revoked in generation 2: no partition has two owners, and
    the only duplicates are generation 2's revocation gap."""
    events, checks, violations = run("3.4.1")
    assert where(events, "owned_partitions_ignored") == []
    assert [(t, n, e, p) for t, n, e, p in ownership(events, 3) if p] == [
        (15191, "consumer-3", "partitions_assigned", ["T-3"]),
    ]
    assert checks["duplicates_by_cause"] == {"cooperative_revocation_gap": 5}
    assert (violations, checks["known_bug_findings"]) == ([], [])


def test_in_3_4_0_the_missed_sync_claims_the_joingroup_generation() -> None:
    """3.4.0 still counts only the highest generation's claims, but its subscription carries
    the JoinGroup's generation (KIP-792): consumer 2's claims are of generation 2 like the
    others', so nothing is thrown away and the run is 3.4.1's."""
    events, checks, _ = run("3.4.0")
    assert where(events, "owned_partitions_ignored") == []
    assert checks["duplicates_by_cause"] == {"cooperative_revocation_gap": 5}


def test_kafka_13891_loses_the_partitions_of_a_member_that_missed_its_sync() -> None:
    """3.3.1: the SyncGroup answered REBALANCE_IN_PROGRESS at 12386 ms resets consumer 2's
    generation (its member id kept), and its next `onJoinPrepare` reports T-0 and T-2 lost
    (`onPartitionsLost`, cooperative or not) in the same poll: it rejoins owning nothing, so
    no claim is thrown away and generation 3 hands T-2 to consumer 3 with no two owners."""
    events, checks, violations = run("3.3.1")
    resets = [(e["ts_ms"], e["node"], e["generation_id"], e["reason"]) for e in where(events, "member_reset")]
    assert resets == [(12386, "consumer-2", 2, "sync_rebalance_in_progress")]
    lost = [(e["ts_ms"], e["node"], e["generation_id"], e["partitions"], e["reason"]) for e in where(events, "partitions_lost")]
    assert lost == [(12386, "consumer-2", -1, ["T-0", "T-2"], "generation_reset")]
    assert where(events, "owned_partitions_ignored") == []
    assert [(t, n, p) for t, n, _, p in ownership(events, 3)] == [
        (15189, "consumer-1", ["T-3"]),
        (15189, "consumer-2", ["T-0"]),
        (15189, "consumer-3", ["T-2"]),
    ]
    assert checks["duplicates_by_cause"] == {"commit_failed_or_fenced": 16, "cooperative_revocation_gap": 5}
    assert violations == []


STALL = """
[[faults]]
kind = "stall"
node = "consumer-2"
"at.ms" = 9000
"duration.ms" = 8000
"""


def test_a_cooperative_member_out_of_its_generation_loses_its_partitions() -> None:
    """`onJoinPrepare` reports every owned partition lost when the generation or member id was
    reset, under COOPERATIVE as under EAGER. 3.9, no delay; consumer 2 (`max.poll.interval.ms`
    6000) stalls from 9 s to 17 s: its poll timer expires at 14920 ms (LeaveGroup, generation
    reset), generation 2 gives T-0 and T-2 to consumer 3, and consumer 2's first poll after the
    stall, at 17000 ms, reports them lost before it rejoins owning nothing."""
    text = MISSED_SYNC.format(version="3.9").split("[[faults]]")[0]
    text = text.replace('"process.record.ms" = 5', '"process.record.ms" = 5\n"max.poll.interval.ms" = 6000') + STALL
    with Cluster(parse_scenario(text, "stall.toml")) as cluster:
        events: list[dict[str, Any]] = []
        cluster.kernel.observe(events.append)
        cluster.run_to_end()
        checks = cluster.final_checks()
    assert [(e["ts_ms"], e["reason"]) for e in where(events, "member_reset", node="consumer-2")] == [(14920, "POLL_TIMEOUT")]
    lost = [(e["ts_ms"], e["node"], e["generation_id"], e["partitions"], e["reason"]) for e in where(events, "partitions_lost")]
    assert lost == [(17000, "consumer-2", -1, ["T-0", "T-2"], "generation_reset")]
    assert where(events, "partitions_revoked", node="consumer-2") == []
    assert checks["duplicates_by_cause"] == {"cooperative_revocation_gap": 2, "poll_interval_exceeded": 180}


def _started(node: str, strategy: list[str]) -> dict[str, Any]:
    return {"event": "consumer_started", "ts_ms": 0, "node": node, "group_id": "g", "assignment_strategy": strategy}


def _assigned(ts: int, node: str, member: str, generation: int, partitions: list[str]) -> dict[str, Any]:
    return {
        "event": "partitions_assigned", "ts_ms": ts, "node": node, "group_id": "g", "member_id": member,
        "generation_id": generation, "partitions": partitions, "assignment": partitions,
    }  # fmt: skip


@pytest.mark.parametrize("strategy", [["cooperative-sticky"], ["range", "cooperative-sticky"]])
def test_the_invariant_reports_a_second_cooperative_owner_no_bug_explains(strategy: list[str]) -> None:
    """`cooperative_single_owner`: member b assigned T-0 in generation 2 while a, cooperative
    too, still holds it (no claim thrown away, no crash, poll timeout or removal) violates it;
    EAGER members (range listed first) are not checked, a static member kept without rejoining
    being their way of two owners. Once a revoked T-0, c may take it."""
    from sim.cluster.group_invariants import GroupInvariants  # noqa: PLC0415

    check = GroupInvariants()
    for node in ("consumer-1", "consumer-2", "consumer-3"):
        check(_started(node, strategy))
    assert check(_assigned(100, "consumer-1", "a", 1, ["T-0"])) == []
    second = check(_assigned(200, "consumer-2", "b", 2, ["T-0"]))
    expected = [("cooperative_single_owner", 200, "consumer-2", "T-0 of g is assigned to b in generation 2 while a holds it")]
    assert [(v.invariant, v.ts_ms, v.node, v.detail) for v in second] == (expected if strategy == ["cooperative-sticky"] else [])
    revoked = {"event": "partitions_revoked", "ts_ms": 300, "node": "consumer-1", "group_id": "g", "partitions": ["T-0"]}
    check(revoked)
    check({**revoked, "node": "consumer-2"})
    assert check(_assigned(400, "consumer-3", "c", 3, ["T-0"])) == []
    assert check.findings == []


STUCK = """
[run]
name = "stuck-join-prepare"
seed = 1
"duration.ms" = 30000

[kafka]
version = "{version}"

[network]
"latency.min.ms" = 2
"latency.max.ms" = 4

[cluster]
brokers = 1

[broker]
"offsets.topic.num.partitions" = 1
"offsets.topic.replication.factor" = 1

[[topics]]
name = "T"
partitions = 4

[[producers]]
topic = "T"
records = 5000
"interval.ms" = 5
keys = 8

[[consumers]]
"group.id" = "g"
topics = ["T"]
"partition.assignment.strategy" = ["{strategy}"]
"auto.offset.reset" = "earliest"
"max.poll.records" = 20
"max.poll.interval.ms" = 10000
"auto.commit.interval.ms" = 1000
"process.record.ms" = 12

[[consumers]]
"group.id" = "g"
topics = ["T"]
"partition.assignment.strategy" = ["{strategy}"]
"auto.offset.reset" = "earliest"
"max.poll.records" = 20
"max.poll.interval.ms" = 10000
"enable.auto.commit" = false
commit = "sync"
"process.record.ms" = 1
"start.ms" = 200

[[consumers]]
"group.id" = "g"
topics = ["T"]
"partition.assignment.strategy" = ["{strategy}"]
"auto.offset.reset" = "earliest"
"max.poll.records" = 20
"max.poll.interval.ms" = 10000
"enable.auto.commit" = false
commit = "sync"
"process.record.ms" = 1
"start.ms" = 12000
"""
"""KAFKA-14024's cooperative half: consumer 1 (the leader, auto-commit, 12 ms a record, so it
always has records in hand) and consumer 2 (manual commitSync) share T from 6100 ms; consumer
3 (manual commitSync) joins at 12 s. Every rebalance timeout is 10 s."""


def run_stuck(version: str, strategy: str = "cooperative-sticky") -> tuple[list[dict[str, Any]], dict[str, Any]]:
    scenario = parse_scenario(STUCK.format(version=version, strategy=strategy), "stuck.toml")
    with Cluster(scenario) as cluster:
        events: list[dict[str, Any]] = []
        cluster.kernel.observe(events.append)
        cluster.run_to_end()
        return events, cluster.final_checks()


def test_kafka_14024_a_cooperative_member_commits_at_every_poll_and_never_rejoins() -> None:
    """3.2.0: consumer 3's JoinGroup starts a rebalance at 12017 ms. Consumer 1's
    `onJoinPrepare` sends its positions at every poll (every 240 ms: 20 records of 12 ms) and
    waits for none, so it never sends JoinGroup; each commit is accepted (the group is
    PreparingRebalance, its generation current). At 22017 ms, the rebalance timeout, the
    coordinator removes it and forms generation 2 of consumers 2 and 3; consumer 3 takes T-1
    and T-3 at their commits, 654 and 666 (consumer 1's of 21959 ms). Consumer 1 goes on: that
    poll returned T-1's 654 to 673; the commit of its poll at 22199 ms is answered
    UNKNOWN_MEMBER_ID (reset), and that poll returned T-1's 674 to 693; its next poll, at
    22439 ms, reports T-1 and T-3 lost. So consumer 3 processes [654, 694) of T-1 again: 40
    duplicates, all `kafka_14024`."""
    events, checks = run_stuck("3.2.0")
    states = [(e["ts_ms"], e["state"], e["generation_id"]) for e in where(events, "group_state_changed") if 12000 < e["ts_ms"] < 22100]
    assert states == [(12017, "PreparingRebalance", 1), (22017, "CompletingRebalance", 2), (22030, "Stable", 2)]
    [c1] = {e["member_id"] for e in where(events, "partitions_assigned", node="consumer-1", generation_id=1)}
    prepares = where(events, "offset_commit_sent", node="consumer-1", kind="join_prepare", member_id=c1)
    assert len(prepares) == 43
    assert [e["ts_ms"] for e in prepares[:3]] + [e["ts_ms"] for e in prepares[-3:]] == [12119, 12359, 12599, 21719, 21959, 22199]
    answers = {e["commit_id"]: e["error"] for e in where(events, "offset_commit_answered", node="consumer-1", kind="join_prepare")}
    assert [answers[e["commit_id"]] for e in prepares] == ["NONE"] * 42 + ["UNKNOWN_MEMBER_ID"]
    removed = [(e["ts_ms"], e["member_id"], e["generation_id"], e["reason"]) for e in where(events, "group_member_removed")]
    assert removed == [(22017, c1, 1, "not_rejoined")]
    [generation] = where(events, "generation_started", generation_id=2)
    assert c1 not in generation["members"] and len(generation["members"]) == 2  # noqa: PLR2004
    assert [(t, n, p) for t, n, _, p in ownership(events, 2)] == [(22033, "consumer-2", []), (22034, "consumer-3", ["T-1", "T-3"])]
    starts = [(e["partition"], e["offset"]) for e in where(events, "fetch_position_set", node="consumer-3")]
    assert starts == [(1, 654), (3, 666)]
    resets = [(e["ts_ms"], e["reason"]) for e in where(events, "member_reset", node="consumer-1")]
    assert resets == [(22207, "UNKNOWN_MEMBER_ID")]
    lost = [(e["ts_ms"], e["partitions"], e["reason"]) for e in where(events, "partitions_lost", node="consumer-1")]
    assert lost == [(22439, ["T-1", "T-3"], "generation_reset")]
    after_removal = [
        (e["ts_ms"], e["partition"], e["first_offset"], e["end_offset"])
        for e in where(events, "records_processed", node="consumer-1", member_id=c1)
        if e["ts_ms"] > 22017
    ]
    assert after_removal == [(22199, 1, 654, 674), (22439, 1, 674, 694)]  # logged when processed
    assert checks["duplicates_by_cause"] == {"kafka_14024": 40}
    assert recount(events).by_cause == checks["duplicates_by_cause"]


def test_from_3_2_1_the_cooperative_member_awaits_its_commit_and_rejoins() -> None:
    """3.2.1 (KAFKA-14024's fix): consumer 1 awaits its pre-rebalance commit, sent at 12119 ms,
    and joins at its next poll: generation 2 forms at 12362 ms with all three members, no one
    is removed, and the only duplicates are those of T-3's cooperative revocation: the 60
    records its polls at 12119, 12359 and 12599 ms returned of it, after that commit."""
    events, checks = run_stuck("3.2.1")
    [generation] = where(events, "generation_started", generation_id=2)
    assert (generation["ts_ms"], len(generation["members"])) == (12362, 3)
    assert where(events, "group_member_removed") == []
    assert [e["ts_ms"] for e in where(events, "offset_commit_sent", node="consumer-1", kind="join_prepare")] == [12119, 13079]
    assert checks["duplicates_by_cause"] == {"cooperative_revocation_gap": 60}
    assert recount(events).by_cause == checks["duplicates_by_cause"]


def test_in_3_2_0_an_eager_member_joins_at_the_call_after_its_revocation() -> None:
    """3.2.0, range: `onJoinPrepare` sends the commit at 12119 ms, revokes T-2 and T-3 and
    returns false (the commit is not complete); the next pass of `poll()`'s loop, woken by the
    commit's answer at 12132 ms, has nothing to commit, so it sends JoinGroup, and generation
    2 forms at 12136 ms."""
    events, checks = run_stuck("3.2.0", "range")
    [prepare] = where(events, "offset_commit_sent", node="consumer-1", kind="join_prepare")
    [revoked] = where(events, "partitions_revoked", node="consumer-1")
    [answer] = where(events, "offset_commit_answered", node="consumer-1", commit_id=prepare["commit_id"])
    [generation] = where(events, "generation_started", generation_id=2)
    assert (prepare["ts_ms"], revoked["ts_ms"], revoked["partitions"]) == (12119, 12119, ["T-2", "T-3"])
    assert (answer["ts_ms"], answer["error"], generation["ts_ms"]) == (12132, "NONE", 12136)
    assert checks["duplicates_by_cause"] == {}


@pytest.mark.spark
def test_spark_labels_kafka_14024_as_the_summary_does(spark: Any, tmp_path: Path) -> None:
    """The Spark job's duplicates of the 3.2.0 and 3.2.1 runs equal summary.json's."""
    runs: list[tuple[Path, dict[str, Any]]] = []
    for version in ("3.2.0", "3.2.1"):
        out = tmp_path / version
        scenario = parse_scenario(STUCK.format(version=version, strategy="cooperative-sticky"), "stuck.toml")
        summary = run_scenario(scenario, out, host=HostKind.DIRECT)
        runs.append((out, summary))
    analyses = analyze_runs(spark, [out for out, _ in runs])
    for (_, summary), analysis in zip(runs, analyses, strict=True):
        want = {k: summary[k] for k in ("consumed", "duplicates", "duplicates_by_cause")}
        assert {k: analysis[k] for k in want} == want
    assert [summary["duplicates_by_cause"] for _, summary in runs] == [{"kafka_14024": 40}, {"cooperative_revocation_gap": 60}]
