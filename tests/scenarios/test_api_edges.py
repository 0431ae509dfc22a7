"""The Python API's edges: a clear error for what cannot be read or done, the run's summary as
summary.json has it, and a whole run directory that `kafkasim report` and `analyze` read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sim.cluster.faults import FaultError
from sim.cluster.harness import Cluster, ClusterError
from sim.cluster.scenario import load_scenario
from sim.engine.kernel import HostKind
from sim.studies.runner import run_scenario

ROOT = Path(__file__).resolve().parents[2]
CRASH_VS_CLOSE = ROOT / "examples" / "05_crash_vs_close.toml"
RETRIES = ROOT / "examples" / "03_idempotent_retries.toml"


def test_state_of_a_stopped_node_says_which_nodes_run_it() -> None:
    with Cluster(load_scenario(RETRIES), host=HostKind.DIRECT) as cluster:
        cluster.run(until_ms=1000)
        cluster.crash("broker-2")
        with pytest.raises(ClusterError) as caught:
            cluster.state("broker-2", "broker")
        assert str(caught.value) == "broker-2 is stopped: state() reads a running node; running: broker-1, broker-3"
        with pytest.raises(ClusterError) as caught:
            cluster.state("broker-9", "broker")
        assert str(caught.value) == "state(): no node 'broker-9'; the nodes are broker-1, broker-2, broker-3, producer-1, zookeeper"
        with pytest.raises(ClusterError) as caught:
            cluster.state("broker-1", "brokr")
        assert str(caught.value) == "state(): broker-1 has no actor 'brokr'; its actors are broker, controller"


def test_a_bad_crash_kind_lists_the_kinds() -> None:
    with Cluster(load_scenario(RETRIES), host=HostKind.DIRECT) as cluster:
        with pytest.raises(FaultError) as caught:
            cluster.crash("broker-2", "powerloss")
        assert str(caught.value) == "crash kind 'powerloss': expected process, power_loss or disk_loss"
        assert cluster.kernel.is_up("broker-2")


def _without_wall(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in summary.items() if k != "wall_s"}


def test_summary_is_summary_json_of_the_same_run(tmp_path: Path) -> None:
    scenario = load_scenario(CRASH_VS_CLOSE)
    expected = run_scenario(scenario, tmp_path / "run", host=HostKind.DIRECT)
    with Cluster(scenario, host=HostKind.DIRECT) as cluster:
        cluster.run(until_ms=12_000)
        so_far = cluster.summary()
        assert (so_far["sim_ms"], so_far["events"], so_far["failure"]) == (12_000, cluster.kernel.event_log.count, None)
        assert so_far["events_digest"] == cluster.kernel.event_log.digest
        assert so_far["duplicates"] == 0
        cluster.run_to_end()
        summary = cluster.summary()
    assert list(summary) == list(expected)
    assert _without_wall(summary) == _without_wall(expected)
    assert (summary["events"], summary["duplicates"], summary["duplicates_by_cause"]) == (3612, 80, {"crash_before_commit": 80})
    with pytest.raises(ClusterError, match=r"summary\(\): the cluster is closed"):
        cluster.summary()


def test_write_run_writes_a_run_directory_that_report_reads(tmp_path: Path) -> None:
    out = tmp_path / "api-run"
    with Cluster(load_scenario(CRASH_VS_CLOSE), run_dir=out, host=HostKind.DIRECT) as cluster:
        cluster.run_to_end()
        assert cluster.write_run() == out
        copy = cluster.write_run(tmp_path / "copy", report=False)
    names = sorted(p.name for p in out.iterdir())
    assert names == ["events.jsonl", "report.html", "scenario.toml", "summary.json"]
    assert sorted(p.name for p in copy.iterdir()) == ["events.jsonl", "scenario.toml", "summary.json"]
    summary = json.loads((out / "summary.json").read_text())
    import hashlib

    assert summary["events_digest"] == hashlib.sha256((out / "events.jsonl").read_bytes()).hexdigest()
    assert (copy / "events.jsonl").read_bytes() == (out / "events.jsonl").read_bytes()
    assert load_scenario(out / "scenario.toml").to_toml().splitlines()[1:] == load_scenario(CRASH_VS_CLOSE).to_toml().splitlines()[1:]
    result = subprocess.run(
        [sys.executable, "-m", "sim.cli", "report", str(copy)], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert (result.returncode, result.stdout) == (0, f"report written to {copy / 'report.html'}\n"), result.stderr


def test_write_run_without_an_event_log_says_how_to_keep_one(tmp_path: Path) -> None:
    with Cluster(load_scenario(CRASH_VS_CLOSE), host=HostKind.DIRECT) as cluster:
        cluster.run(until_ms=1000)
        with pytest.raises(ClusterError) as caught:
            cluster.write_run(tmp_path / "x")
    assert str(caught.value) == (
        f"write_run({str(tmp_path / 'x')!r}): this cluster kept no event log; create it with "
        "run_dir=PATH (or events_path=PATH) to write a run directory"
    )
    assert not (tmp_path / "x").exists()


@pytest.mark.spark
def test_analyze_reads_a_directory_the_api_wrote(tmp_path: Path, spark: Any) -> None:
    from sim.analytics.jobs import analyze_runs  # noqa: PLC0415

    out = tmp_path / "api-run"
    with Cluster(load_scenario(CRASH_VS_CLOSE), run_dir=out, host=HostKind.DIRECT) as cluster:
        cluster.run_to_end()
        summary = json.loads(cluster.write_run(report=False).joinpath("summary.json").read_text())
    [analysis] = analyze_runs(spark, [out])
    keys = ("consumed", "duplicates", "duplicates_by_cause", "lost_acked", "log_duplicates", "skipped")
    assert {k: analysis[k] for k in keys} == {k: summary[k] for k in keys}
    assert (analysis["consumed"], analysis["duplicates"]) == (3080, 80)
