"""A commit of no offsets. The classic consumer never sends one: `commitOffsetsSync` and
`sendOffsetCommitRequest` complete it locally, the synchronous one from 3.6 (KAFKA-10337)
only once the asynchronous commits in flight are answered. And a broker answers an
OffsetCommit that names no partition at once, empty, without the group coordinator
(`KafkaApis.handleOffsetCommitRequest`): no validation, no heartbeat, no append."""

from __future__ import annotations

from typing import Any

import pytest

from protocols.group import OffsetCommitRequest, OffsetCommitResponse
from sim.cluster.harness import Client, Cluster
from sim.cluster.scenario import parse_scenario
from sim.engine.kernel import HostKind
from tests.scenarios.test_consumer_groups import BASE, where
from tests.scenarios.test_group_coordinator import C1_PLAN, COORDINATOR_1, GROUP, SCENARIO, _start, generation_id, member_id, sync

# consumer-1 alone owns T-0..T-2 (only T-1 gets records: one key); consumer-2 joins at 5000 and
# the cooperative-sticky assignor moves the empty T-2 to it. consumer-1, processing slowly,
# commits what it processed asynchronously before each poll, and its `onPartitionsRevoked`
# commits T-2's processed offsets: none.
PROCESSED = """
[[consumers]]
"group.id" = "my-group"
topics = ["T"]
"enable.auto.commit" = false
commit = "processed"
"session.timeout.ms" = 6000
"heartbeat.interval.ms" = 1000
"max.poll.records" = 5
"process.record.ms" = 20
"auto.offset.reset" = "earliest"
"partition.assignment.strategy" = ["cooperative-sticky"]

[[consumers]]
"group.id" = "my-group"
topics = ["T"]
"start.ms" = 5000
"enable.auto.commit" = false
commit = "processed"
"session.timeout.ms" = 6000
"heartbeat.interval.ms" = 1000
"auto.offset.reset" = "earliest"
"partition.assignment.strategy" = ["cooperative-sticky"]
"""


def _revocation(version: str) -> list[dict[str, Any]]:
    base = BASE.replace("partitions = 4", "partitions = 3").replace('acks = "all"', 'acks = "all"\nkeys = 1')
    text = base.format(seed=1, duration=6000, records=1500, version=version) + PROCESSED
    with Cluster(parse_scenario(text, "empty-commit.toml")) as cluster:
        events: list[dict[str, Any]] = []
        cluster.kernel.observe(events.append)
        cluster.run_to_end()
        assert cluster.kernel.invariant_violations == [], cluster.kernel.invariant_violations[:3]
    return events


def _commits(events: list[dict[str, Any]]) -> list[tuple[int, str, int, str, Any]]:
    return [
        (e["ts_ms"], e["event"], e["commit_id"], e["kind"], e.get("offsets", e.get("error")))
        for e in events
        if e["node"] == "consumer-1" and e["event"].startswith("offset_commit_") and 5300 <= e["ts_ms"] <= 5360
    ]


def test_from_3_6_a_revocation_that_commits_nothing_sends_nothing_and_waits_for_the_async_commit() -> None:
    """At 5333 consumer-1 commits T-1 = 110 asynchronously (generation 2, Stable), then its
    `onPartitionsRevoked` commits T-2's nothing: no request, but `invokePendingAsyncCommits`
    waits for that asynchronous commit, answered at 5352; the revocation completes then."""
    events = _revocation("3.9")
    assert _commits(events) == [
        (5333, "offset_commit_sent", 78, "async", [["T", 1, 110]]),
        (5333, "offset_commit_sent", 80, "revoke", []),
        (5352, "offset_commit_answered", 78, "async", "NONE"),
        (5352, "offset_commit_answered", 80, "revoke", "NONE"),
    ]
    [revoked] = where(events, "partitions_revoked", node="consumer-1")
    assert (revoked["ts_ms"], revoked["partitions"]) == (5352, ["T-2"])
    assert all(e["offsets"] for e in where(events, "offset_commit_completed"))


def test_before_3_6_a_revocation_that_commits_nothing_returns_at_once() -> None:
    """3.5: `commitOffsetsSync` of nothing returns true at once; the revocation completes at
    5333 while the asynchronous commit is still in flight."""
    events = _revocation("3.5")
    assert _commits(events) == [
        (5333, "offset_commit_sent", 78, "async", [["T", 1, 110]]),
        (5333, "offset_commit_sent", 80, "revoke", []),
        (5333, "offset_commit_answered", 80, "revoke", "NONE"),
        (5352, "offset_commit_answered", 78, "async", "NONE"),
    ]
    [revoked] = where(events, "partitions_revoked", node="consumer-1")
    assert (revoked["ts_ms"], revoked["partitions"]) == (5333, ["T-2"])
    assert all(e["offsets"] for e in where(events, "offset_commit_completed"))


def _empty_commit(c: Client) -> OffsetCommitRequest:
    return OffsetCommitRequest(GROUP, generation_id(c), member_id(c), topics=())


def test_an_offset_commit_naming_no_partition_is_answered_empty_and_is_no_heartbeat() -> None:
    """C1's SyncGroup makes generation 1 Stable once stored (4305); it then sends only empty
    OffsetCommits. Each is answered at once with no partition, the coordinator logs nothing of
    them and, not having seen them, expires the member 10000 ms after it last heard of it."""
    plan = [
        *C1_PLAN,
        (4300, COORDINATOR_1, sync(lambda c: {member_id(c): (0, 1, 2)})),
        (6000, COORDINATOR_1, _empty_commit),
        (9000, COORDINATOR_1, _empty_commit),
        (12000, COORDINATOR_1, _empty_commit),
    ]
    with Cluster(parse_scenario(SCENARIO, "group-coordinator", []), host=HostKind.DIRECT) as cluster:
        events, clients = _start(cluster, c1=plan)
        cluster.run(until_ms=16000)
    assert clients["c1"].answers(OffsetCommitResponse) == [(t, OffsetCommitResponse(())) for t in (6002, 9002, 12002)]
    assert where(events, "offset_commit_completed") == []
    [removed] = where(events, "group_member_removed", member_id=member_id(clients["c1"]))
    assert (removed["ts_ms"], removed["reason"]) == (14305, "session_timeout")


IDLE = """
[[topics]]
name = "E"
partitions = 2
"replication.factor" = 3

[[consumers]]
"group.id" = "idle"
topics = ["E"]
"enable.auto.commit" = false
commit = "processed"
"auto.offset.reset" = "earliest"

[[faults]]
kind = "{kind}"
node = "consumer-1"
"at.ms" = 6000
"""


@pytest.mark.parametrize("kind", ["close", "unsubscribe"])
def test_leaving_with_nothing_processed_commits_nothing_and_leaves_at_once(kind: str) -> None:
    """consumer-1 owns E-0 and E-1, which get no records. Its `close()` or `unsubscribe()` at
    6000 runs `onPartitionsRevoked`, whose commitSync of nothing completes in the client, and
    it sends its LeaveGroup in the same millisecond (it was a recursion without end: the
    commit's completion ran the leaving step again before it was marked under way)."""
    text = BASE.format(seed=1, duration=8000, records=10, version="3.9") + IDLE.format(kind=kind)
    with Cluster(parse_scenario(text, "idle.toml")) as cluster:
        events: list[dict[str, Any]] = []
        cluster.kernel.observe(events.append)
        cluster.run_to_end()
    commits = [(e["ts_ms"], e["event"], e["kind"]) for e in events if e["event"].startswith("offset_commit_")]
    assert commits == [(6000, "offset_commit_sent", "revoke"), (6000, "offset_commit_answered", "revoke")]
    [revoked] = where(events, "partitions_revoked", node="consumer-1")
    assert (revoked["ts_ms"], revoked["partitions"]) == (6000, ["E-0", "E-1"])
    [left] = where(events, "group_member_removed", group_id="idle")
    assert (left["ts_ms"], left["reason"]) == (6004, "leave")
    # close() returns once its LeaveGroup is answered; unsubscribe() does not wait for it
    done = ("consumer_closed", 6006) if kind == "close" else ("consumer_unsubscribed", 6000)
    assert [e["ts_ms"] for e in where(events, done[0])] == [done[1]]
