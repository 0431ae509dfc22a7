"""Client faults end to end: a slow processing spell, a rolling restart of a group, and a
zombie consumer cut off from its coordinator only. Each is injected from a scenario's
`[[faults]]` table or the Python API and checked through the event log and the summary."""

from __future__ import annotations

from typing import Any

import pytest

from sim.cluster.harness import Cluster
from tests.scenarios.test_consumer_groups import TWO, run, scenario, where


def _polls(events: list[dict[str, Any]], node: str) -> list[tuple[int, int]]:
    """(time, records) of each batch a consumer processed: the records one poll returned."""
    batches: dict[int, int] = {}
    for e in where(events, "records_processed", node=node):
        batches[e["ts_ms"]] = batches.get(e["ts_ms"], 0) + e["records"]
    return sorted(batches.items())


def _slow(at_ms: int, duration_ms: int, record_ms: int) -> str:
    return (
        f'\n[[faults]]\nkind = "slow"\nnode = "consumer-1"\n"at.ms" = {at_ms}\n'
        f'"duration.ms" = {duration_ms}\n"process.record.ms" = {record_ms}\n'
    )


def test_a_slow_spell_under_the_poll_interval_only_adds_lag() -> None:
    """From 12 s, each record consumer 1 processes takes 50 ms instead of 1 for 6 s: a poll's
    20 records take 1000 ms, far below `max.poll.interval.ms` (300000). The member stays in
    its generation (no rebalance, nothing processed twice); it lags, and catches up once the
    spell is over: the batch under way at 18 s takes 50 ms for each record begun before then
    and 1 ms for the others."""
    events, checks = run(scenario(TWO, _slow(12_000, 6_000, 50), records=3000, duration=45_000))
    assert where(events, "application_called", action="slow")[0]["ts_ms"] == 12_000
    polls = _polls(events, "consumer-1")
    gaps = [(ts, count, ts - before) for (before, _), (ts, count) in zip(polls, polls[1:], strict=False)]
    # Within the spell each batch takes at least 50 ms a record (more when the poll waited).
    spell = [(ts, count, gap) for ts, count, gap in gaps if ts - gap >= 12_000 and ts <= 18_000]
    assert spell and all(gap >= 50 * count for _, count, gap in spell)
    assert [(ts, count) for ts, count, gap in gaps if 14_000 <= ts <= 18_010] == [
        (14_553, 20), (15_053, 10), (16_053, 20), (17_053, 20), (18_004, 20)
    ]
    assert 18_004 - 17_053 == 19 * 50 + 1 * 1  # records begun from 17053 to 17953; then one of 1 ms
    # After it, the backlog goes at 1 ms a record: 1 ms a record when the poll had them buffered.
    after = [(count, gap) for ts, count, gap in gaps if ts - gap >= 18_000]
    assert all(gap >= count for count, gap in after)
    assert sum(count for count, gap in after[:10] if gap == count) >= 100
    assert where(events, "poll_timeout_expired") == []
    assert [e["generation_id"] for e in where(events, "generation_started")] == [1]
    assert where(events, "partitions_revoked") == where(events, "partitions_lost") == []
    assert (checks["consumed"], checks["acked"], checks["duplicates"], checks["rebalances"]) == (3000, 3000, 0, 1)


def test_a_slow_spell_past_the_poll_interval_makes_the_member_leave() -> None:
    """`max.poll.interval.ms` = 8000 and a spell of 500 ms a record from 12 s: the poll made
    at 13503 ms returns the 20 records its fetches had buffered, which take 10 s. At 21503 ms,
    8000 ms after that poll, the heartbeat thread sends LeaveGroup (as Kafka's does); the zombie
    finishes its batch at 23503 ms, loses its partitions at its next poll and joins again as a new member, in time
    for the rebalance its leaving started: generation 2 has both members, and consumer 2 takes
    T-0 and T-1 from the last commits. What consumer 1 had processed since its last commit is
    processed twice, as poll_interval_exceeded."""
    slow_members = TWO.replace('"session.timeout.ms" = 10000', '"session.timeout.ms" = 10000\n"max.poll.interval.ms" = 8000')
    events, checks = run(scenario(slow_members, _slow(12_000, 12_000, 500), records=3000, duration=45_000))
    [expired] = where(events, "poll_timeout_expired", node="consumer-1")
    assert (expired["ts_ms"], expired["static"], expired["generation_id"]) == (21_503, False, 1)
    [removed] = where(events, "group_member_removed", member_id=expired["member_id"])
    assert (removed["ts_ms"], removed["reason"]) == (21_506, "leave")
    batch = [(ts, count) for ts, count in _polls(events, "consumer-1") if 13_503 < ts < 24_000]
    assert batch == [(23_503, 20)]  # 20 records at 500 ms from 13503 ms, when the poll returned them
    [lost] = where(events, "partitions_lost", node="consumer-1")
    assert (lost["ts_ms"], lost["reason"], lost["partitions"]) == (23_503, "generation_reset", ["T-0", "T-1"])
    generations = [(e["generation_id"], len(e["members"])) for e in where(events, "generation_started")]
    assert generations == [(1, 2), (2, 2)]
    # The duplicates: consumer 1's reads beyond where consumer 2 started in generation 2.
    read = {}
    for e in where(events, "records_processed", node="consumer-1", generation_id=1):
        read[f"{e['topic']}-{e['partition']}"] = e["end_offset"]
    taken = {f"{e['topic']}-{e['partition']}": e["offset"] for e in where(events, "fetch_position_set", node="consumer-2", generation_id=2)}
    expected = sum(end - taken[tp] for tp, end in read.items())
    assert expected == checks["duplicates"] == 20
    assert checks["duplicates_by_cause"] == {"poll_interval_exceeded": 20}
    assert checks["consumed"] == checks["acked"] + 20 == 3020


def test_a_static_member_past_its_poll_interval_replaces_itself_without_a_rebalance() -> None:
    """A static member (`group.instance.id`) whose application stalls from 12 s to 22 s
    with `max.poll.interval.ms` = 8000. At 19994 ms, 8000 ms after its last poll, its
    heartbeat thread resets it locally and sends no LeaveGroup (KIP-345). Its next poll, at
    22000 ms, fails the pre-rebalance auto-commit locally (COMMIT_FAILED: it is out of its
    generation), reports its partitions lost and joins again with its instance id: the
    coordinator replaces the old member id with a new one in generation 1, with the same
    partitions and no rebalance (`GroupMetadata.replaceStaticMember`). So the new id owns the
    old one's partitions in the same generation, which is no double ownership; and the member
    processes again, itself, what it had processed since its last commit."""
    static = TWO.replace('"session.timeout.ms" = 10000', '"session.timeout.ms" = 10000\n"max.poll.interval.ms" = 8000\n"group.instance.id" = "app"')
    stall = '\n[[faults]]\nkind = "stall"\nnode = "consumer-1"\n"at.ms" = 12000\n"duration.ms" = 10000\n'
    events, checks = run(scenario(static, stall, records=3000, duration=40_000))
    [expired] = where(events, "poll_timeout_expired", node="consumer-1")
    old = expired["member_id"]
    assert (expired["ts_ms"], expired["static"], expired["generation_id"]) == (19_994, True, 1)
    assert [(e["ts_ms"], e["error"]) for e in where(events, "offset_commit_answered", kind="join_prepare")] == [(22_000, "COMMIT_FAILED")]
    assert [(e["ts_ms"], e["partitions"]) for e in where(events, "partitions_lost")] == [(22_000, ["T-0", "T-1"])]
    [removed] = where(events, "group_member_removed")
    [added] = where(events, "group_member_added", group_instance_id="app-1", generation_id=1)[-1:]
    assert (removed["ts_ms"], removed["member_id"], removed["reason"], removed["generation_id"]) == (22_004, old, "replaced", 1)
    assert added["ts_ms"] == 22_004 and added["member_id"] != old
    [again] = [e for e in where(events, "partitions_assigned", node="consumer-1") if e["ts_ms"] > 19_994]
    assert (again["member_id"], again["generation_id"], again["assignment"]) == (added["member_id"], 1, ["T-0", "T-1"])
    assert [e["generation_id"] for e in where(events, "generation_started")] == [1]
    # Its own reads under the old id beyond the commits it starts from again.
    read: dict[str, int] = {}
    for e in where(events, "records_processed", member_id=old):
        read[f"{e['topic']}-{e['partition']}"] = e["end_offset"]
    start = {f"{e['topic']}-{e['partition']}": e["offset"] for e in where(events, "fetch_position_set", member_id=added["member_id"])}
    assert sum(end - start[tp] for tp, end in read.items()) == checks["duplicates"] == 89
    assert {s["consumer"] for s in checks["duplicate_spans"]} == {"consumer-1"}
    assert checks["duplicates_by_cause"] == {"static_poll_timeout_self_replay": 89}
    assert (checks["consumed"], checks["rebalances"]) == (3089, 1)


THREE = TWO.replace("count = 2", "count = 3")


@pytest.mark.parametrize(("down_ms", "generations"), [(0, 4), (5_000, 7)])
def test_a_rolling_restart_of_a_group_with_auto_commit_duplicates_nothing(down_ms: int, generations: int) -> None:
    """Three members with auto-commit, restarted one after the other from 12 s: each
    application calls close() (a synchronous commit of its positions, the revocation,
    LeaveGroup, and it waits for the LeaveGroup's answer), the process exits, and a new one
    starts `down.ms` later with a new member id; 10 s after a restart the next consumer is
    closed. The commit comes before the partitions move, so nothing is processed twice. With
    `down.ms` = 0 the new member joins the rebalance its predecessor's LeaveGroup started
    (one generation per restart: 1 + 3); with 5000 it misses it (two per restart: 1 + 6)."""
    fault = f'\n[[faults]]\nkind = "rolling_restart"\ngroup = "my-group"\n"at.ms" = 12000\n"down.ms" = {down_ms}\n'
    events, checks = run(scenario(THREE, fault, records=5000, duration=60_000))
    closed = where(events, "consumer_closed")
    stopped = where(events, "node_stopped")
    started = [e for e in where(events, "node_started") if e["incarnation"] == 1]
    assert [e["node"] for e in closed] == [e["target"] for e in stopped] == [e["target"] for e in started] == [
        "consumer-1",
        "consumer-2",
        "consumer-3",
    ]
    calls = where(events, "application_called", action="close")
    assert calls[0]["ts_ms"] == 12_000
    for call, close, stop, start in zip(calls, closed, stopped, started, strict=True):
        node = close["node"]
        # close(): its commit is answered, then LeaveGroup is answered, then it returns.
        [commit] = [e for e in where(events, "offset_commit_sent", node=node, kind="close") if e["ts_ms"] >= call["ts_ms"]]
        [answer] = where(events, "offset_commit_answered", node=node, commit_id=commit["commit_id"], kind="close")
        [left] = where(events, "group_member_removed", member_id=close["member_id"])
        assert answer["error"] == "NONE" and left["reason"] == "leave"
        assert call["ts_ms"] <= commit["ts_ms"] < answer["ts_ms"] < left["ts_ms"] < close["ts_ms"]
        assert stop["ts_ms"] == close["ts_ms"] + 2  # the process exits a lookahead (latency.min.ms) later
        assert start["ts_ms"] == stop["ts_ms"] + down_ms
        rejoined = [e for e in where(events, "partitions_assigned", node=node) if e["ts_ms"] > start["ts_ms"]]
        assert rejoined and rejoined[0]["member_id"] != close["member_id"]  # a new JVM, a new member id
    assert [c["ts_ms"] for c in calls[1:]] == [s["ts_ms"] + 10_000 for s in started[:-1]]
    assert [e["generation_id"] for e in where(events, "generation_started")] == list(range(1, generations + 1))
    last = where(events, "generation_started")[-1]
    final = {e["node"]: e["member_id"] for e in where(events, "partitions_assigned", generation_id=generations)}
    assert sorted(last["members"]) == sorted(final.values()) and len(final) == 3
    assert where(events, "group_state_changed")[-1]["state"] == "Stable"
    assert (checks["consumed"], checks["acked"], checks["duplicates"], checks["rebalances"]) == (5000, 5000, 0, generations)


def test_the_python_api_rolls_the_nodes_given_in_their_order() -> None:
    """`Cluster.rolling_restart(nodes=...)` closes and restarts the consumers named, in the
    order given, and no others."""
    with Cluster(scenario(THREE, records=2000, duration=40_000)) as cluster:
        events: list[dict[str, Any]] = []
        cluster.kernel.observe(events.append)
        cluster.run(until_ms=12_000)
        cluster.rolling_restart(["consumer-3", "consumer-1"], interval_ms=5_000)
        cluster.run_to_end()
        checks = cluster.final_checks()
    assert [e["target"] for e in where(events, "node_stopped")] == ["consumer-3", "consumer-1"]
    assert [e["node"] for e in where(events, "consumer_closed")] == ["consumer-3", "consumer-1"]
    assert (checks["consumed"], checks["duplicates"]) == (2000, 0)


def test_an_expelled_member_keeps_processing_and_its_late_commit_is_fenced() -> None:
    """A zombie: from 10 s consumer 1 is cut off from its coordinator only (broker 3, the
    leader of `my-group`'s `__consumer_offsets` partition then), both ways, for 15 s. Its
    heartbeats stop reaching the coordinator, which removes it after its session; its
    partitions move; but it still fetches from the leaders and processes on until the cut is
    lifted. Its commit is then refused with UNKNOWN_MEMBER_ID and the committed offset does
    not move back. Everything both processed is counted, as expelled_session_timeout. Lifting
    the cut lifts no other partition."""
    with Cluster(scenario(TWO, records=3000, duration=45_000)) as cluster:
        events: list[dict[str, Any]] = []
        cluster.kernel.observe(events.append)
        cluster.run(until_ms=10_000)
        assert cluster.coordinator_of("my-group") == "broker-3"
        assert cluster.state("consumer-1", "consumer")["coordinator"] == 3
        cluster.partition(["consumer-2"], ["zookeeper"])  # another cut, which must outlast the zombie's
        cluster.zombie("consumer-1", duration_ms=15_000)
        cluster.run(until_ms=25_001)
        assert not cluster.kernel.network.is_blocked("consumer-1", "broker-3")
        assert cluster.kernel.network.is_blocked("consumer-2", "zookeeper")
        cluster.run_to_end()
        checks = cluster.final_checks()
        assert cluster.kernel.invariant_violations == []
    [cut, _] = [(e["side_a"], e["side_b"], e["ts_ms"]) for e in where(events, "network_partitioned")][::-1]
    assert cut == (["consumer-1"], ["broker-3"], 10_000)
    [lifted] = where(events, "network_partition_lifted")
    assert (lifted["ts_ms"], lifted["side_a"], lifted["side_b"], lifted["one_way"]) == (25_000, ["consumer-1"], ["broker-3"], False)
    assert where(events, "network_healed") == []
    member = where(events, "partitions_assigned", node="consumer-1")[0]["member_id"]
    [removed] = where(events, "group_member_removed", member_id=member)
    assert removed["reason"] == "session_timeout" and 10_000 < removed["ts_ms"] < 25_000
    zombie_reads = [e for e in where(events, "records_processed", node="consumer-1", member_id=member) if e["ts_ms"] > removed["ts_ms"]]
    assert zombie_reads, "the expelled member processes on"
    fenced = [e for e in where(events, "offset_commit_completed", member_id=member) if e["error"] in ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION")]
    assert fenced and fenced[0]["ts_ms"] > 25_000
    assert checks["duplicates"] > 0
    assert checks["duplicates_by_cause"] == {"expelled_session_timeout": checks["duplicates"]}
    assert checks["consumed"] == checks["acked"] + checks["duplicates"]


def test_a_zombie_fault_in_a_scenario_file_cuts_the_coordinator_of_that_moment() -> None:
    """The same fault from a `[[faults]]` table: the coordinator is looked up when the fault
    starts, and the cut is lifted after `duration.ms`."""
    zombie = '\n[[faults]]\nkind = "zombie"\nnode = "consumer-2"\n"at.ms" = 10000\n"duration.ms" = 15000\n'
    events, checks = run(scenario(TWO, zombie, records=3000, duration=45_000))
    [cut] = where(events, "network_partitioned")
    [lifted] = where(events, "network_partition_lifted")
    assert (cut["ts_ms"], cut["side_a"], cut["side_b"]) == (10_000, ["consumer-2"], ["broker-3"])
    assert (lifted["ts_ms"], lifted["side_a"], lifted["side_b"]) == (25_000, ["consumer-2"], ["broker-3"])
    [removed] = where(events, "group_member_removed", reason="session_timeout")
    assert removed["member_id"] == where(events, "partitions_assigned", node="consumer-2")[0]["member_id"]
    assert set(checks["duplicates_by_cause"]) <= {"expelled_session_timeout"}
    assert checks["consumed"] == checks["acked"] + checks["duplicates"]
