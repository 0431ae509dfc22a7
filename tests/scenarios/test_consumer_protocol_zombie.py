"""Records in the application's hands when the consumer protocol's background thread gives
their partition up are processed all the same, under the ownership that just ended: read again
later, they are that ending's duplicates, not two owners at once.

The run is the protocol swarm's seed 83 under the consumer protocol on 4.0
(tests/properties/group_swarm.py): consumer-2 stalls from 6823 ms for 4963 ms, past its
`max.poll.interval.ms` of 4000. At 10762 ms, 4000 ms after its last poll, its poll timer
expires: it leaves the group and reports T-1 lost, while its application is still processing
T-1's offsets 140 to 159, which it finishes at 11786 ms. It rejoins at its next poll, gets T-1
back at epoch 5 (11891 ms), and reads it again from the committed offset, 140.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sim.analytics.jobs import analyze_runs
from sim.cluster.harness import Cluster
from sim.cluster.scenario import load_scenario, parse_scenario
from sim.engine.kernel import HostKind
from sim.studies.runner import run_scenario
from tests.properties.group_recount import recount
from tests.properties.group_swarm import protocol_plan

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_records_processed_after_a_poll_timeout_are_the_poll_timeouts_duplicates() -> None:
    scenario = parse_scenario(protocol_plan(83, "consumer"), "swarm.toml", ["run.seed=83"])
    with Cluster(scenario, host=HostKind.DIRECT) as cluster:
        events: list[dict[str, Any]] = []
        cluster.kernel.observe(events.append)
        cluster.run_to_end()
        assert cluster.kernel.invariant_violations == []
        checks = cluster.final_checks()
    t1 = [
        (e["ts_ms"], e["event"], e.get("generation_id"), e.get("first_offset"), e.get("end_offset"))
        for e in events
        if e["node"] == "consumer-2" and 10_700 <= e["ts_ms"] <= 12_200
        and (e["event"] in ("partitions_lost", "partitions_assigned") or (e["event"] == "records_processed" and e["partition"] == 1))
    ]
    assert t1 == [
        (10762, "partitions_lost", -1, None, None),
        (11786, "records_processed", 3, 140, 160),  # fetched at epoch 3, processed after the loss
        (11891, "partitions_assigned", 5, None, None),
        (12105, "records_processed", 5, 140, 160),
    ]
    assert (checks["duplicates"], checks["duplicates_by_cause"]) == (20, {"poll_interval_exceeded": 20})
    assert [(s["partition"], s["first_offset"], s["end_offset"], s["cause"]) for s in checks["duplicate_spans"]] == [
        ("T-1", 140, 160, "poll_interval_exceeded")
    ]
    recounted = recount(events)
    assert (recounted.duplicates, recounted.by_cause) == (20, {"poll_interval_exceeded": 20})


@pytest.mark.spark
def test_spark_counts_the_zombies_processing_as_the_summary_does(spark: Any, tmp_path: Path) -> None:
    """The Spark job's duplicates of the same run, and of example 12's workload under 3.9's
    consumer protocol (its pre-revocation commit goes before the revoked partitions are marked,
    KAFKA-16460), equal summary.json's."""
    runs = [
        (tmp_path / "seed83", parse_scenario(protocol_plan(83, "consumer"), "swarm.toml", ["run.seed=83"])),
        (
            tmp_path / "3.9",
            load_scenario(
                EXAMPLES / "12_rebalance_protocols.toml",
                ["kafka.version=3.9", "broker.group.coordinator.rebalance.protocols=classic,consumer", "consumers.1.group.protocol=consumer"],
            ),
        ),
    ]
    summaries = [run_scenario(scenario, out, host=HostKind.DIRECT) for out, scenario in runs]
    analyses = analyze_runs(spark, [out for out, _ in runs])
    for summary, analysis in zip(summaries, analyses, strict=True):
        want = {k: summary[k] for k in ("consumed", "duplicates", "duplicates_by_cause")}
        assert {k: analysis[k] for k in want} == want
    assert [s["duplicates_by_cause"] for s in summaries] == [
        {"poll_interval_exceeded": 20},
        {"crash_before_commit": 192, "kafka_16460": 4},
    ]
