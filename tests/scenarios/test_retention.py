"""Segments and retention end to end (`UnifiedLog.deleteOldSegments`, KIP-107's log start
offset): a log rolls segments by size and by age, the retention check deletes the oldest, the
log start offset follows on every replica, and readers below it are answered
OFFSET_OUT_OF_RANGE. One partition on three brokers, no controller, latency exactly 1 ms.

The producer writes a record every 10 ms from 0 to 990 ms, each its own batch of
61 + 100 + 8 = 169 bytes; with `segment.bytes` = 1000 a segment takes five (845 bytes; a sixth
would pass 1000), so the segments start at 0, 5, 10, ... 95."""

from __future__ import annotations

from typing import Any

import pytest

from actors.broker.partition_log import log_file
from protocols.types import TopicPartition
from sim.cluster.harness import Cluster
from sim.cluster.scenario import parse_scenario
from sim.engine.kernel import HostKind

BATCH = 169
SCENARIO = """
[run]
"duration.ms" = 8000
[network]
"latency.min.ms" = 1
"latency.max.ms" = 1
[cluster]
brokers = 3
"metadata.mode" = "static"
[broker]
"replica.lag.time.max.ms" = 1000
"log.initial.task.delay.ms" = 2000
"log.retention.check.interval.ms" = 1000
[[topics]]
name = "T"
"replication.factor" = 3
"segment.bytes" = 1000
[[producers]]
topic = "T"
records = 100
"interval.ms" = 10
"""


def _run(*overrides: str, until_ms: int = 8000, text: str = SCENARIO) -> tuple[Cluster, list[dict[str, Any]]]:
    cluster = Cluster(parse_scenario(text, "test", overrides), host=HostKind.DIRECT)
    events: list[dict[str, Any]] = []
    cluster.kernel.observe(events.append)
    cluster.run(until_ms=until_ms)
    return cluster, events


def _where(events: list[dict[str, Any]], name: str, **fields: Any) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == name and all(e[k] == v for k, v in fields.items())]


def _replica(cluster: Cluster, broker: int) -> dict[str, Any]:
    return cluster.state(f"broker-{broker}", "broker")["partitions"]["T-0"]


def test_retention_bytes_deletes_the_oldest_segments_on_every_replica() -> None:
    """At the first check (2000 ms) the log is 20 segments of 845 bytes, 16,900 bytes, and
    `retention.bytes` = 2000: the oldest go while what is left is still at least 2000, so 17
    go and three stay (2535 bytes: under retention.bytes plus one segment). The log start
    moves to 85 (`log_start_offset_changed`, then `log_segments_deleted`); each follower does
    the same by its own check, learns 85 from its next fetch answer, and holds offsets 85-99."""
    cluster, events = _run("topics.1.retention.bytes=2000")
    with cluster:
        rolled = _where(events, "log_segment_rolled", node="broker-1")
        assert [e["base_offset"] for e in rolled] == list(range(5, 100, 5))
        assert {(e["bytes"], e["reason"]) for e in rolled} == {(5 * BATCH, "segment.bytes")}
        [deleted] = _where(events, "log_segments_deleted", node="broker-1")
        assert (deleted["ts_ms"], deleted["count"], deleted["from_offset"], deleted["to_offset"]) == (2000, 17, 0, 85)
        assert (deleted["bytes"], deleted["reason"]) == (17 * 5 * BATCH, "retention.bytes")
        [moved] = _where(events, "log_start_offset_changed", node="broker-1")
        assert (moved["log_start_offset"], moved["reason"]) == (85, "segment_deletion")
        for broker in (1, 2, 3):
            replica = _replica(cluster, broker)
            assert (replica["log_start_offset"], replica["log_end_offset"]) == (85, 100)
            assert [offset for offset, _, _ in replica["log"]] == list(range(85, 100))
            assert sum(size for _, size in replica["segments"]) == 15 * BATCH
            # The memory is freed: the disk's file holds the 15 batches left, as the log does.
            assert len(cluster.kernel.disk(f"broker-{broker}").view()[log_file(TopicPartition("T", 0))]) == 15
        assert not cluster.invariants.violations
        final = cluster.final_checks()
        assert (final["acked"], final["lost_acked"], final["diverged_replicas"]) == (100, 0, [])


def test_retention_ms_deletes_every_segment_and_the_log_starts_empty_at_its_end() -> None:
    """With `segment.ms` = 200 a segment rolls at the first append more than 200 ms after its
    first batch's: at offsets 21 and 42 (records 10 ms apart). At 2000 ms every segment's newest
    record is older than `retention.ms` = 1000, the active one too: a new segment is rolled at
    the LEO (50) so that the log keeps one, and the three go. The log is empty, from 50 to 50,
    and ListOffsets earliest answers 50."""
    cluster, events = _run(
        "topics.1.segment.ms=200", "topics.1.retention.ms=1000", "topics.1.segment.bytes=1000000",
        "producers.1.records=50",
    )
    with cluster:
        rolled = _where(events, "log_segment_rolled", node="broker-1")
        assert [(e["base_offset"], e["reason"]) for e in rolled] == [(21, "segment.ms"), (42, "segment.ms"), (50, "retention")]
        [deleted] = _where(events, "log_segments_deleted", node="broker-1")
        assert (deleted["count"], deleted["from_offset"], deleted["to_offset"], deleted["reason"]) == (3, 0, 50, "retention.ms")
        leader = _replica(cluster, 1)
        assert (leader["log_start_offset"], leader["log_end_offset"], list(leader["log"])) == (50, 50, [])
        assert leader["segments"] == [(50, 0)]
        assert not cluster.invariants.violations


def test_defaults_delete_nothing_and_log_nothing() -> None:
    """With Kafka's defaults (1 GiB segments, seven days) a short run neither rolls nor deletes."""
    cluster, events = _run("topics.1.segment.bytes=1073741824")
    with cluster:
        assert not [e for e in events if e["event"].startswith(("log_segment", "log_start"))]
        assert _replica(cluster, 1)["segments"] == [(0, 100 * BATCH)]


def test_memory_stays_bounded_by_retention_bytes_plus_one_segment() -> None:
    """Twenty seconds at a record every 10 ms (338,000 bytes written): just after each check,
    every replica holds at least `retention.bytes` = 2000 and less than 2000 plus one segment,
    and its disk file no more batches than its log."""
    cluster = Cluster(
        parse_scenario(SCENARIO, "test", ["topics.1.retention.bytes=2000", "producers.1.records=2000", "run.duration.ms=21000"]),
        host=HostKind.DIRECT,
    )
    with cluster:
        for check_ms in (2000, 5000, 10000, 15000, 19000):
            cluster.run(until_ms=check_ms + 1)
            for broker in (1, 2, 3):
                replica = _replica(cluster, broker)
                size = sum(size for _, size in replica["segments"])
                assert 2000 <= size < 2000 + 1000, (check_ms, broker, size)
                held = len(cluster.kernel.disk(f"broker-{broker}").view()[log_file(TopicPartition("T", 0))])
                assert held * BATCH == size, (check_ms, broker)
        assert not cluster.invariants.violations


CONSUMER = """
[[consumers]]
"group.id" = "g"
topics = ["T"]
"max.poll.records" = 1
"process.record.ms" = 50
"max.partition.fetch.bytes" = 200
"""


@pytest.mark.parametrize(("policy", "reset_to"), [("earliest", 85), ("latest", 100)])
def test_a_consumer_below_the_log_start_is_reset_by_its_policy(policy: str, reset_to: int) -> None:
    """The producer starts at 500 ms, once the controller has elected broker-1. A consumer that
    reads a record every 50 ms (one batch per fetch) is near offset 30 when retention moves the
    log start to 85 at 2000 ms. Its next fetch is answered
    OFFSET_OUT_OF_RANGE and `auto.offset.reset` applies (`Fetcher`, KIP-392's
    `handleOffsetOutOfRange`): earliest seeks to the log start (ListOffsets earliest: 85), latest
    to the HW (100). Past the record in hand when the answer came, it processes nothing below 85
    after the reset, and no record twice."""
    cluster, events = _run(
        "topics.1.retention.bytes=2000",
        "broker.group.initial.rebalance.delay.ms=0",
        "broker.offsets.topic.num.partitions=1",
        f"consumers.1.auto.offset.reset={policy}",
        "cluster.metadata.mode=zookeeper",  # clients learn the leaders from the metadata cache
        "producers.1.start.ms=500",  # once the controller has elected the leader
        text=SCENARIO + CONSUMER,
    )
    with cluster:
        positions = [(e["source"], e["offset"]) for e in _where(events, "fetch_position_set", node="consumer-1")]
        assert len(positions) == 2 and positions[0][1] < 85
        assert positions == [(policy, positions[0][1]), (policy, reset_to)]
        [reset] = _where(events, "fetch_position_set", node="consumer-1", offset=reset_to)
        processed = _where(events, "records_processed", node="consumer-1")
        before = [e for e in processed if e["ts_ms"] < reset["ts_ms"]]
        in_hand, *after = [e for e in processed if e["ts_ms"] > reset["ts_ms"]]
        assert before[-1]["end_offset"] < 85 < before[-1]["end_offset"] + 60
        # The record the poll before the answer returned is finished after the reset.
        assert (in_hand["first_offset"], in_hand["end_offset"]) == (before[-1]["end_offset"], before[-1]["end_offset"] + 1)
        assert [(e["first_offset"], e["end_offset"]) for e in after] == [(o, o + 1) for o in range(reset_to, 100)]
        checks = cluster.final_checks()
        assert checks["duplicates"] == 0
        assert not cluster.invariants.violations
        # The group skipped what it had not read when retention deleted it, and, with latest,
        # what lay between the log start and the HW: the reset moved it past them. With latest
        # it had also skipped, at its first position, the records written before it (none
        # committed: `reset_latest_no_commit`).
        unread, first = in_hand["end_offset"], positions[0][1]
        assert checks["skipped"] == first + reset_to - unread
        assert checks["skipped_by_cause"] == {"out_of_range_reset": reset_to - unread} | (
            {"reset_latest_no_commit": first} if first else {}
        )
        spans = [(s["partition"], s["first_offset"], s["end_offset"], s["from_ms"], s["cause"]) for s in checks["skip_spans"]]
        assert spans[-1] == ("T-0", unread, reset_to, reset["ts_ms"], "out_of_range_reset")
        assert checks["processed_then_lost"] == 0


def test_a_follower_behind_the_leaders_log_start_truncates_fully_and_starts_there() -> None:
    """broker-3's process dies at 300 ms with offsets 0-29 and comes back at 5000 ms, when the
    leader's log starts at 85 (retention, at 2000). Its fetch from 30 is OFFSET_OUT_OF_RANGE:
    the leader's end offset (100) is not behind it, so it asks the leader's log start (85),
    which is past its own end: it deletes its whole log and starts, empty, at 85
    (`truncateFullyAndStartAt`), then fetches 85-99 and rejoins the ISR."""
    cluster, events = _run(
        "topics.1.retention.bytes=2000",
        "producers.1.acks=1",  # its batches do not wait for broker-3 to leave the ISR
        text=SCENARIO + '[[faults]]\nkind = "crash"\n"at.ms" = 300\nnode = "broker-3"\n"restart.after.ms" = 4700\n',
    )
    with cluster:
        [started] = _where(events, "broker_started", node="broker-3", ts_ms=5000)
        recovered = [e for e in events if e["event"] == "replica_offsets_changed" and e["node"] == "broker-3" and e["ts_ms"] == 5000]
        assert recovered[0]["log_end_offset"] == 30
        [moved] = _where(events, "log_start_offset_changed", node="broker-3")
        assert (moved["log_start_offset"], moved["reason"]) == (85, "truncated_fully")
        assert moved["ts_ms"] > started["ts_ms"]
        assert _where(events, "isr_expanded", node="broker-1")[-1]["isr"] == [1, 2, 3]
        follower, leader = _replica(cluster, 3), _replica(cluster, 1)
        assert (follower["log_start_offset"], follower["log_end_offset"]) == (85, 100)
        assert list(follower["log"]) == list(leader["log"])
        assert not _where(events, "log_segments_deleted", node="broker-3")  # nothing left below 85
        final = cluster.final_checks()
        assert (final["lost_acked"], final["diverged_replicas"]) == (0, [])
        assert not cluster.invariants.violations
