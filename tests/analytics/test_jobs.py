"""The Spark analytics, checked against the event logs they read."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from sim.analytics.jobs import ISR_EVENTS, analyze_runs
from sim.runner import run_scenario
from sim.scenario import parse_scenario

pytestmark = pytest.mark.spark

SCENARIO = """
[run]
"duration.ms" = 4000
[workload]
nodes = 3
"ping.interval.ms" = 100
[[faults]]
kind = "corrupt"
"at.ms" = 1000
probability = 0.2
"duration.ms" = 1000
[[faults]]
kind = "crash"
"at.ms" = 2500
node = "node-2"
"restart.after.ms" = 500
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    dirs = []
    for seed in (1, 2, 1):  # the same run twice: two directories, one run id
        out = tmp_path_factory.mktemp(f"run{seed}")
        run_scenario(parse_scenario(SCENARIO, "test", [f"run.seed={seed}"]), out)
        dirs.append(out)
    return dirs


def _events(run_dir: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (run_dir / "events.jsonl").read_bytes().splitlines()]


def test_counts_match_the_logs_run_by_run(spark: Any, runs: list[Path]) -> None:
    analyses = analyze_runs(spark, runs)
    assert len(analyses) == 3
    for run_dir, analysis in zip(runs, analyses, strict=True):
        events = _events(run_dir)
        assert analysis["events_by_type"] == dict(sorted(Counter(e["event"] for e in events).items()))
        summary = json.loads((run_dir / "summary.json").read_text())
        assert analysis["rejected_frames"] == summary["rejected_frames"] > 0
        drops = Counter(e["reason"] for e in events if e["event"] == "message_dropped")
        assert analysis["dropped_by_reason"] == dict(sorted(drops.items()))
        rtts = sorted(e["rtt_ms"] for e in events if e["event"] == "ping_answered")
        assert analysis["ping_rtt_ms"]["count"] == len(rtts)
        assert analysis["ping_rtt_ms"]["max"] == rtts[-1]
        crashes = [f for f in analysis["faults"] if f["event"] == "node_crashed"]
        assert crashes == [{"ts_ms": 2500, "event": "node_crashed", "target": "node-2", "kind": "process"}]
    assert analyses[0] == analyses[2]
    assert analyses[0] != analyses[1]


def test_a_malformed_line_fails_the_job_instead_of_becoming_nulls(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "events.jsonl").write_text('{"ts_ms": 1, "run_id": "r", "event": "x"}\n{"ts_ms": "late"\n')
    with pytest.raises(Exception, match="(?i)malformed|FAILFAST"):
        analyze_runs(spark, [tmp_path])


def test_kafka_figures_match_the_log(spark: Any, tmp_path: Path) -> None:
    """Produce outcomes, ISR changes and each replica's LEO/HW per second, on a short default study."""
    from sim.scenario import load_scenario

    run_scenario(load_scenario(None, ["run.duration.ms=50000"]), tmp_path)
    [analysis] = analyze_runs(spark, [tmp_path])
    events = _events(tmp_path)
    outcomes = Counter(e["error"] for e in events if e["event"] == "produce_completed")
    assert analysis["produce_outcomes"] == dict(sorted(outcomes.items()))
    changes = [(e["ts_ms"], e["event"], e["isr"]) for e in events if e["event"] in ISR_EVENTS]
    assert {c[1] for c in changes} >= {"leader_elected", "replica_removed_from_isr"}  # a crash and a return
    assert [(c["ts_ms"], c["event"], c["isr"]) for c in analysis["isr_changes"]] == changes
    replicas = {
        f"{e['topic']}-{e['partition']}@{e['node']}" for e in events if e["event"] == "replica_offsets_changed"
    }
    series = analysis["replica_offsets"]
    assert set(series) == replicas
    for replica, points in series.items():
        seconds = [p["second"] for p in points]
        assert seconds == sorted(set(seconds))
        assert max(p["log_end_offset"] for p in points) == max(
            e["log_end_offset"] for e in events
            if e["event"] == "replica_offsets_changed" and f"{e['topic']}-{e['partition']}@{e['node']}" == replica
        )
