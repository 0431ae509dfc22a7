"""An application that polls at fixed instants (`poll.every.ms`), the setting that lets a
scenario state exactly which poll returned which records, as a study of KIP-429's revocation
gap under auto-commit needs: which polls of the old owner returned records after its last
commit before `onPartitionsRevoked`."""

from __future__ import annotations

from typing import Any

import pytest

from actors.consumer.config import ConsumerConfig
from sim.cluster.harness import Cluster
from sim.cluster.scenario import ScenarioError, parse_scenario

CADENCE = """
[run]
name = "cadence"
"duration.ms" = 2000

[network]
"latency.min.ms" = 10
"latency.max.ms" = 10

[cluster]
brokers = 1

[broker]
"offsets.topic.num.partitions" = 1
"group.initial.rebalance.delay.ms" = 0

[[topics]]
name = "T"

[[producers]]
topic = "T"
records = 25
"interval.ms" = 100
"start.ms" = 10

[[consumers]]
"group.id" = "g"
topics = ["T"]
"auto.offset.reset" = "earliest"
"poll.timeout.ms" = 30
"poll.every.ms" = 100
"process.record.ms" = 40
"start.ms" = 50
"""


def _run(text: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    with Cluster(parse_scenario(text, "cadence.toml")) as cluster:
        cluster.kernel.observe(events.append)
        cluster.run_to_end()
        assert cluster.kernel.invariant_violations == []
    return events


def test_an_application_with_a_cadence_polls_only_at_its_instants() -> None:
    """Every message takes 10 ms; record k is appended at 100k + 20. The application polls at
    50 + 100k, waits up to 30 ms in `poll()` (a fetch's round trip is 20 ms) and takes 40 ms a
    record. Its first records come at 570 (the six written so far), and the poll sends the next
    fetch as it returns them, which brings record 6 at 630. 240 ms of work: the instants 650
    and 750 are skipped, and the poll at 850 returns record 6 at once (done 890) while its fetch
    brings 7 and 8 at 870; the poll at 950 returns those (done 1030). From then on each poll
    returns, at its instant, the record its predecessor's fetch brought, done 40 ms later."""
    events = _run(CADENCE)
    processed = [
        (e["ts_ms"], e["first_offset"], e["end_offset"])
        for e in events
        if e["event"] == "records_processed" and e["node"] == "consumer-1"
    ]
    assert processed[:7] == [
        (810, 0, 6),
        (890, 6, 7),
        (1030, 7, 9),
        (1090, 9, 10),
        (1190, 10, 11),
        (1290, 11, 12),
        (1390, 12, 13),
    ]
    [assigned] = [e for e in events if e["event"] == "partitions_assigned"]
    assert assigned["ts_ms"] == 450  # the SyncGroup answer, taken at the poll of 450


@pytest.mark.parametrize(
    ("last_poll", "now", "expected"),
    [
        (50, 50, 150),  # a poll returned at once with nothing to do: the next instant
        (550, 570, 650),
        (550, 810, 850),  # an overrun skips the instants it passed
        (1050, 1150, 1150),  # done exactly at an instant: polls at it
        (0, 0, 50),  # a process restarted before start.ms keeps the cadence's phase
    ],
)
def test_the_next_poll_is_the_first_instant_after_the_last_one_not_before_now(last_poll: int, now: int, expected: int) -> None:
    config = ConsumerConfig("consumer-1", "g", ("T",), (("T", 1),), (1,), start_ms=50, poll_every_ms=100)
    assert config.next_poll_ms(last_poll, now) == expected


def test_without_a_cadence_the_application_polls_again_at_once() -> None:
    config = ConsumerConfig("consumer-1", "g", ("T",), (("T", 1),), (1,), start_ms=50)
    assert config.next_poll_ms(550, 810) == 810


def test_a_negative_cadence_is_one_line_naming_the_key() -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(CADENCE.replace('"poll.every.ms" = 100', '"poll.every.ms" = -5'), "cadence.toml")
    assert str(caught.value) == "cadence.toml: [[consumers]] #1: poll.every.ms: must be at least 0, got -5"


# KIP-429's revocation gap. C1 owns T's six partitions alone; C2 joins at 9950. Both poll at
# fixed instants (C1 at 100n, C2 at 100n + 50), a poll returns the next record of each partition
# (the producer writes one to each every 100 ms, and the fetch for it went out with the poll
# before), and the network takes 10 ms each way. Member ids sort c1-... before c2-....
GAP = """
[run]
name = "revocation-gap"
"duration.ms" = 20000
"log.requests" = true

[kafka]
version = "3.9"

[network]
"latency.min.ms" = 10
"latency.max.ms" = 10

[cluster]
brokers = 1

[broker]
"offsets.topic.num.partitions" = 1
"group.initial.rebalance.delay.ms" = 0

[[topics]]
name = "T"
partitions = 6

[[producers]]
topic = "T"
partitioner = "round_robin"
records = 1200
"records.per.interval" = 6
"interval.ms" = 100

[[consumers]]
"group.id" = "g"
"client.id" = "c1"
topics = ["T"]
"partition.assignment.strategy" = ["{strategy}"]
"auto.offset.reset" = "earliest"
"retry.backoff.max.ms" = 100
"poll.timeout.ms" = 30
"poll.every.ms" = 100
commit = "{commit}"

[[consumers]]
"group.id" = "g"
"client.id" = "c2"
topics = ["T"]
"partition.assignment.strategy" = ["{strategy}"]
"auto.offset.reset" = "earliest"
"retry.backoff.max.ms" = 100
"poll.timeout.ms" = 30
"poll.every.ms" = 100
"start.ms" = 9950
commit = "{commit}"
"""

MOVED = ["T-3", "T-4", "T-5"]


def _gap_run(strategy: str, commit: str = "none") -> tuple[list[dict[str, Any]], dict[str, Any]]:
    events: list[dict[str, Any]] = []
    with Cluster(parse_scenario(GAP.format(strategy=strategy, commit=commit), "gap.toml")) as cluster:
        cluster.kernel.observe(events.append)
        cluster.run_to_end()
        assert cluster.kernel.invariant_violations == []
        checks = cluster.final_checks()
    return events, checks


def _of(events: list[dict[str, Any]], event: str, node: str | None = None, **fields: Any) -> list[dict[str, Any]]:
    return [
        e for e in events
        if e["event"] == event and (node is None or e["node"] == node) and all(e.get(k) == v for k, v in fields.items())
    ]


def _rejoin_poll(events: list[dict[str, Any]]) -> int:
    """C1's first poll after its heartbeat was answered REBALANCE_IN_PROGRESS (C2 had joined)."""
    [answer] = _of(events, "response_received", "consumer-1", api="Heartbeat", error="REBALANCE_IN_PROGRESS")[:1]
    return (answer["ts_ms"] // 100 + 1) * 100


def _processed(events: list[dict[str, Any]], node: str, partition: str) -> list[tuple[int, int, int]]:
    return [
        (e["ts_ms"], e["first_offset"], e["end_offset"])
        for e in _of(events, "records_processed", node)
        if f"{e['topic']}-{e['partition']}" == partition
    ]


def test_cooperative_sticky_with_auto_commit_hands_over_at_the_pre_rebalance_commit() -> None:
    """C1's poll P after the heartbeat's REBALANCE_IN_PROGRESS runs onJoinPrepare: its auto-commit
    of positions X, sent and not waited for, and the poll returns offset X of every partition. At
    P+100 the commit is done: JoinGroup (owning p0-p5), and with C2's parked one generation 2
    forms 10 ms later; the poll returns X+1. Its answer waits for the next poll (the heartbeat
    thread is off in PREPARING_REBALANCE): at P+200 C1 runs cooperative-sticky (C1 keeps p0-p2;
    p3-p5 go to C2, withheld while C1 owns them) and sends SyncGroup; the poll returns X+2. At
    P+300 onJoinComplete revokes p3-p5 with no commit. Generation 3 gives them to C2, which
    starts at X: the three polls' records of the three partitions, 9, are processed twice."""
    events, checks = _gap_run("cooperative-sticky")
    p = _rejoin_poll(events)
    [prepare] = _of(events, "offset_commit_sent", "consumer-1", kind="join_prepare", ts_ms=p)
    x = prepare["offsets"][0][2]
    assert prepare["offsets"] == [["T", n, x] for n in range(6)]
    assert _processed(events, "consumer-1", "T-3")[-3:] == [(p, x, x + 1), (p + 100, x + 1, x + 2), (p + 200, x + 2, x + 3)]
    joins = [e["ts_ms"] for e in _of(events, "request_sent", "consumer-1", api="JoinGroup")]
    syncs = [e["ts_ms"] for e in _of(events, "request_sent", "consumer-1", api="SyncGroup")]
    assert (p + 100 in joins, p + 200 in syncs) == (True, True)
    gen2, gen3 = _of(events, "generation_started", generation_id=2), _of(events, "generation_started", generation_id=3)
    assert [g["ts_ms"] for g in gen2] == [p + 110]
    assert gen2[0]["leader_member_id"].startswith("c1-") and [m[:3] for m in gen2[0]["members"]] == ["c1-", "c2-"]
    [stored] = _of(events, "group_assignment_stored", generation_id=2)
    assert [(m[:2], parts) for m, parts in stored["assignments"]] == [("c1", ["T-0", "T-1", "T-2"]), ("c2", [])]
    [revoked] = _of(events, "partitions_revoked", "consumer-1", reason="cooperative")
    assert (revoked["ts_ms"], revoked["partitions"]) == (p + 300, MOVED)
    assert not _of(events, "offset_commit_sent", "consumer-1", kind="revoke")
    [taken] = _of(events, "partitions_assigned", "consumer-2", generation_id=3)
    assert taken["partitions"] == MOVED and gen3[0]["ts_ms"] < taken["ts_ms"]
    starts = [(f"T-{e['partition']}", e["offset"], e["source"]) for e in _of(events, "fetch_position_set", "consumer-2")]
    assert starts == [(tp, x, "committed") for tp in MOVED]
    # Nobody fetches the moved partitions between the revocation and their new owner.
    assert [r for tp in MOVED for r in _processed(events, "consumer-2", tp) if r[0] < taken["ts_ms"]] == []
    assert _processed(events, "consumer-2", "T-3")[0][1] == x
    assert (checks["duplicates"], checks["duplicates_by_cause"]) == (9, {"cooperative_revocation_gap": 9})
    assert checks["rebalances"] == 3  # generation 1 (C1 alone), then the two of the handover


def test_eager_range_on_the_same_timeline_revokes_before_it_commits() -> None:
    """3.9's eager onJoinPrepare marks p0-p5 pending revocation before its commit of X, so the
    polls at P and P+100 return nothing; at P+100 all six are revoked and JoinGroup is sent, and
    generation 2 gives C1 p0-p2 and C2 p3-p5 (c1 < c2), both from X: no duplicates, one rebalance."""
    events, checks = _gap_run("range")
    p = _rejoin_poll(events)
    [prepare] = _of(events, "offset_commit_sent", "consumer-1", kind="join_prepare", ts_ms=p)
    x = prepare["offsets"][0][2]
    assert prepare["offsets"] == [["T", n, x] for n in range(6)]
    assert [e for e in _of(events, "records_processed", "consumer-1") if p <= e["ts_ms"] <= p + 100] == []
    [revoked] = _of(events, "partitions_revoked", "consumer-1")
    assert (revoked["ts_ms"], revoked["partitions"], revoked["reason"]) == (p + 100, [f"T-{n}" for n in range(6)], "rebalance")
    assert [g["ts_ms"] for g in _of(events, "generation_started", generation_id=2)] == [p + 110]
    assert _of(events, "generation_started", generation_id=3) == []
    [stored] = _of(events, "group_assignment_stored", generation_id=2)
    assert [(m[:2], parts) for m, parts in stored["assignments"]] == [("c1", ["T-0", "T-1", "T-2"]), ("c2", MOVED)]
    starts = {(e["node"], e["partition"], e["offset"]) for e in _of(events, "fetch_position_set", generation_id=2)}
    assert starts == {(f"consumer-{1 + n // 3}", n, x) for n in range(6)}
    assert (checks["duplicates"], checks["rebalances"]) == (0, 2)


def test_a_listener_that_commits_the_revoked_partitions_closes_the_gap() -> None:
    """The same cooperative run with `onPartitionsRevoked` calling commitSync for p3-p5: at P+300,
    accepted in generation 2, it commits X+3, past the three polls' records, and C2 starts there."""
    events, checks = _gap_run("cooperative-sticky", "on_revoke")
    p = _rejoin_poll(events)
    x = _of(events, "offset_commit_sent", "consumer-1", kind="join_prepare", ts_ms=p)[0]["offsets"][0][2]
    [revoke] = _of(events, "offset_commit_sent", "consumer-1", kind="revoke")
    assert (revoke["ts_ms"], revoke["generation_id"], revoke["offsets"]) == (p + 300, 2, [["T", n, x + 3] for n in (3, 4, 5)])
    starts = [(f"T-{e['partition']}", e["offset"]) for e in _of(events, "fetch_position_set", "consumer-2")]
    assert starts == [(tp, x + 3) for tp in MOVED]
    assert checks["duplicates"] == 0
