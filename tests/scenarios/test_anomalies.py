"""Jepsen's poll and send anomalies (`sim.cluster.anomalies`) in summary.json, end to end: a
clean run has none, and a real cause (retention ahead of a consumer, an unclean election that
cuts a range it had read) gives one anomaly, explained, with its partition, offsets and cause."""

from __future__ import annotations

from typing import Any

import pytest

from sim.cluster.anomalies import KINDS
from sim.cluster.harness import Cluster
from sim.cluster.scenario import parse_scenario
from sim.engine.kernel import HostKind
from tests.scenarios.test_consumer_groups import TRUNCATED, scenario, where
from tests.scenarios.test_retention import CONSUMER, SCENARIO

NONE = {kind: {"explained": 0, "unexplained": 0, "by_cause": {}} for kind in KINDS}


def _run(scn: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The run's events and its summary.json."""
    with Cluster(scn, host=HostKind.DIRECT) as cluster:
        events: list[dict[str, Any]] = []
        cluster.kernel.observe(events.append)
        cluster.run_to_end()
        summary = cluster.summary()
    assert summary["invariant_violations"] == [], summary["invariant_violations"][:3]
    return events, summary


def _one(kind: str, cause: str) -> dict[str, Any]:
    """One anomaly of `kind`, explained by `cause`, and none else."""
    return {**NONE, kind: {"explained": 1, "unexplained": 0, "by_cause": {cause: 1}}}


TWO_THEN_ONE = """
[[consumers]]
"group.id" = "g"
topics = ["T"]
"auto.commit.interval.ms" = 1000
"max.poll.records" = 20
"process.record.ms" = 1
"auto.offset.reset" = "earliest"

[[consumers]]
"group.id" = "g"
topics = ["T"]
"auto.commit.interval.ms" = 1000
"max.poll.records" = 20
"process.record.ms" = 1
"auto.offset.reset" = "earliest"
"start.ms" = 8000

[[faults]]
kind = "close"
node = "consumer-2"
"at.ms" = 16000
"""


def test_a_clean_run_has_no_anomaly_though_a_partition_comes_back_further_on() -> None:
    """An idempotent producer (3.9's default) and a group whose second member joins at 8 s and
    closes at 16 s: consumer-1 gives T-0 up at the first rebalance (its last record there, offset
    303) and gets it back at 18,170 ms from consumer-2's commit (535). That jump lies between two
    holds, where a new owner starts from the commit, so nothing is an anomaly."""
    events, summary = _run(scenario(TWO_THEN_ONE, duration=25_000, records=2000))
    assert (summary["anomalies"], summary["anomaly_cases"]) == (NONE, [])
    t0 = where(events, "records_processed", node="consumer-1", partition=0)
    [back] = [e for e in where(events, "partitions_assigned", node="consumer-1") if "T-0" in e["partitions"]][1:]
    before = [e for e in t0 if e["ts_ms"] < back["ts_ms"]]
    after = [e for e in t0 if e["ts_ms"] > back["ts_ms"]]
    assert (back["ts_ms"], before[-1]["end_offset"] - 1, after[0]["first_offset"]) == (18_170, 303, 535)
    assert summary["acked"] == 2000 and summary["duplicates"] == summary["skipped"] == 0


@pytest.mark.parametrize(
    ("policy", "cases"),
    [
        # earliest: each time retention moves the log start past the consumer, it seeks there
        ("earliest", [(30, 135, 2115, 2017), (154, 185, 3117, 3019)]),
        # latest: one seek to the end, where the producer goes on; the second one (to 200) is
        # followed by nothing
        ("latest", [(31, 152, 2116, 2018)]),
    ],
)
def test_a_reset_past_records_retention_deleted_is_an_explained_poll_skip(policy: str, cases: list[tuple[int, ...]]) -> None:
    """A consumer reading a record every 50 ms falls behind the log start retention moves
    (tests/scenarios/test_retention.py): its fetch is answered OFFSET_OUT_OF_RANGE and
    `auto.offset.reset` seeks ahead. The next record it receives is past the one after its
    last: a poll-skip, explained by the position set (`out_of_range_reset`)."""
    overrides = [
        "topics.1.retention.bytes=2000",
        "broker.group.initial.rebalance.delay.ms=0",
        "broker.offsets.topic.num.partitions=1",
        f"consumers.1.auto.offset.reset={policy}",
        "cluster.metadata.mode=zookeeper",
        "producers.1.start.ms=500",
        "producers.1.records=200",
    ]
    _, summary = _run(parse_scenario(SCENARIO + CONSUMER, "test", overrides))
    skips = {"explained": len(cases), "unexplained": 0, "by_cause": {"out_of_range_reset": len(cases)}}
    assert summary["anomalies"] == {**NONE, "poll-skip": skips}
    assert [
        (c["kind"], c["node"], c["partition"], c["last_offset"], c["offset"], c["ts_ms"], c["cause"], c["explained_by"])
        for c in summary["anomaly_cases"]
    ] == [
        (
            "poll-skip", "consumer-1", "T-0", last, offset, at, "out_of_range_reset",
            {"event": "fetch_position_set", "node": "consumer-1", "ts_ms": reset_at, "source": policy, "reason": "out_of_range"},
        )
        for last, offset, at, reset_at in cases
    ]


@pytest.mark.parametrize(
    ("version", "offset", "at", "reset_at", "source", "reason"),
    [
        # before 2.3 the fetch past the new log's end is OFFSET_OUT_OF_RANGE: earliest, from 0
        ("2.2", 0, 17_235, 17_227, "earliest", "out_of_range"),
        # from 2.3 validation finds where the position's epoch ends on the new leader (KIP-320)
        ("3.9", 50, 17_094, 16_150, "truncation", "truncation"),
    ],
)
def test_an_unclean_election_that_cuts_a_range_read_is_an_explained_nonmonotonic_poll(
    version: str, offset: int, at: int, reset_at: int, source: str, reason: str
) -> None:
    """acks=1 and an unclean election (tests/scenarios/test_consumer_groups.py, TRUNCATED):
    broker-2's log ends at 50, below consumer-2's last record, 119. Its next records start
    below: a nonmonotonic poll, explained by the position set (`log_truncation_or_reset`)."""
    events, summary = _run(parse_scenario(TRUNCATED.format(version=version, reset="earliest"), "truncated.toml"))
    [elected] = [e for e in where(events, "became_leader", topic="T") if e["node"] == "broker-2"]
    assert elected["log_end_offset"] == 50
    assert summary["anomalies"] == _one("nonmonotonic-poll", "log_truncation_or_reset")
    assert summary["anomaly_cases"] == [
        {
            "kind": "nonmonotonic-poll",
            "node": "consumer-2",
            "group_id": "g",
            "partition": "T-0",
            "last_offset": 119,
            "offset": offset,
            "delta": offset - 119,
            "ts_ms": at,
            "cause": "log_truncation_or_reset",
            "explained_by": {"event": "fetch_position_set", "node": "consumer-2", "ts_ms": reset_at, "source": source, "reason": reason},
        }
    ]
