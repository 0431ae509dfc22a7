"""`kafkasim check`: a fault campaign, one Spark task per seed; mistakes are one line, a failing
seed is reported with its replay command and does not stop the others."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sim.cluster.scenario import ScenarioError, parse_scenario
from sim.studies.campaign import campaign_text, check_tasks, run_check, run_check_task, totals
from sim.studies.campaign_plan import KINDS, drawn_kinds, enabled_kinds, plan
from tests.cli.test_analyze import _one_line
from tests.cli.test_cli import ROOT, kafkasim

STANDARD = ROOT / "examples" / "02_standard_workload.toml"
NO_GROUP = ROOT / "examples" / "01_controller_failover.toml"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--faults", "crash,meteor"], "kafkasim: --faults: unknown fault kind 'meteor' (known: crash, power_loss,"),
        (["--profile", "9.9"], "kafkasim: --profile: unknown profile '9.9': '9.9' is not supported"),
        (["--seeds", "0"], "kafkasim: --seeds 0: expected at least 1"),
        (["--duration-ms", "10"], "kafkasim: --duration-ms 10: expected at least 1000"),
        (["--shrink", "-1"], "kafkasim: --shrink -1: expected 0 (no shrinking) or more"),
        (["missing.toml"], "kafkasim: missing.toml: no such scenario file"),
        (["examples/00_kernel_faults.toml"], "kafkasim: examples/00_kernel_faults.toml: a campaign's base scenario needs brokers"),
        ([str(NO_GROUP), "--faults", "slow"], f"kafkasim: {NO_GROUP}: the scenario cannot take fault kind(s) slow"),
    ],
)
def test_a_mistake_is_one_line_and_exit_2_before_anything_is_written(tmp_path: Path, args: list[str], expected: str) -> None:
    seeds = [] if "--seeds" in args else ["--seeds", "2"]
    line = _one_line(kafkasim("check", *args, *seeds, "--out", str(tmp_path / "c")), 2)
    assert line.startswith(expected), line
    assert not (tmp_path / "c").exists()


def test_over_a_base_scenario_its_cluster_and_faults_stay_and_the_seeds_faults_are_added() -> None:
    base = (STANDARD.read_text(encoding="utf-8"), str(STANDARD))
    text = campaign_text(4, None, None, base=base, duration_ms=20_000)
    assert text == campaign_text(4, None, None, base=base, duration_ms=20_000)
    scenario = parse_scenario(text, "check")
    assert scenario.seed == 4
    assert scenario.get("run", "invariants") == "report"
    assert scenario.get("run", "duration.ms") == 20_000  # noqa: PLR2004
    assert scenario.get("cluster", "brokers") == 3  # noqa: PLR2004
    assert scenario.faults[0]["node"] == "consumer-1"  # the base's own crash, kept
    assert scenario.faults[0]["at.ms"] == 60_000  # noqa: PLR2004
    assert len(scenario.faults) == 1 + len(drawn_kinds(text))
    assert {f["node"] for f in scenario.faults if f["kind"] == "slow"} <= {f"consumer-{n}" for n in range(1, 5)}


def test_a_base_without_a_group_draws_only_the_kinds_it_can_take() -> None:
    base = (NO_GROUP.read_text(encoding="utf-8"), str(NO_GROUP))
    group_kinds = {"consumer_crash", "slow", "stall", "zombie", "reset_offsets", "coordinator_failover"}
    for seed in range(1, 20):
        text = campaign_text(seed, None, None, base=base)
        assert set(enabled_kinds(text)) <= set(KINDS) - group_kinds
        parse_scenario(text, "check")
    with pytest.raises(ScenarioError, match="cannot take fault kind"):
        campaign_text(1, None, ["zombie"], base=base)


def test_a_task_returns_its_figures_and_its_scenario_replays_it(tmp_path: Path) -> None:
    [task] = check_tasks(1, tmp_path, profile="3.9", kinds=["consumer_crash"], duration_ms=6000)
    result = run_check_task(task)
    assert result["failure"] is None
    assert result["version"] == "3.9"
    assert result["violations"] == []
    assert Path(result["scenario"]) == tmp_path / "scenarios" / "seed-1.toml"
    summary = json.loads((tmp_path / "runs" / "seed-1" / "summary.json").read_text(encoding="utf-8"))
    assert result["duplicates"] == summary["duplicates"]
    assert set(result["anomalies"]) == {"poll-skip", "nonmonotonic-poll", "nonmonotonic-send"}


def test_a_broken_task_is_a_failure_with_its_replay_command(tmp_path: Path) -> None:
    [task] = check_tasks(1, tmp_path, profile="3.9", duration_ms=6000)
    broken = {**task, "base": ["[run]\nseed = 'x'\n", "broken.toml"]}
    result = run_check_task(broken)
    assert result["failure"].startswith("ScenarioError: broken.toml: the scenario has no nodes")
    assert (Path(broken["run_dir"]) / "failure.txt").is_file()
    figures = totals([result])
    assert figures["runs"] == 1
    scenario = str(tmp_path / "scenarios" / "seed-1.toml")
    assert figures["failures"] == [
        {
            "seed": 1,
            "check": f"failure: {result['failure']}",
            "scenario": scenario,
            "shrunk": None,
            "replay": f"kafkasim run {scenario}",
        }
    ]


@pytest.mark.spark
def test_on_spark_a_failing_seed_does_not_stop_the_others(tmp_path: Path, spark: Any) -> None:
    tasks = check_tasks(3, tmp_path, profile="3.9", kinds=["crash", "slow"], duration_ms=5000)
    tasks[1] = {**tasks[1], "base": ["[run]\nseed = 'x'\n", "broken.toml"]}
    shown: list[tuple[int, int]] = []
    results = run_check(spark, tasks, lambda done, total: shown.append((done, total)))
    assert [r["seed"] for r in results] == [1, 2, 3]
    assert all(total == 3 for _, total in shown)  # noqa: PLR2004
    assert [done for done, _ in shown] == sorted(done for done, _ in shown)
    assert results[0]["failure"] is None
    assert results[2]["failure"] is None
    assert results[1]["failure"].startswith("ScenarioError")
    figures = totals(results)
    assert [f["seed"] for f in figures["failures"] if f["check"].startswith("failure")] == [2]
    for seed in (1, 3):
        assert (tmp_path / "runs" / f"seed-{seed}" / "events.jsonl").is_file()


@pytest.mark.spark
def test_the_command_prints_one_json_object_of_the_campaigns_figures(tmp_path: Path) -> None:
    out = tmp_path / "c"
    result = kafkasim(
        "check", "--seeds", "2", "--profile", "3.9", "--faults", "consumer_crash,shutdown",
        "--duration-ms", "5000", "--master", "local[1]", "--out", str(out), "--json",
    )  # fmt: skip
    figures = json.loads(result.stdout)
    assert result.returncode == (1 if figures["failures"] else 0), result.stderr
    assert figures["runs"] == 2  # noqa: PLR2004
    assert set(figures) >= {"runs", "violations", "lost_acked", "skipped", "duplicates_by_cause", "anomalies", "failures"}
    saved = json.loads((out / "check.json").read_text(encoding="utf-8"))
    assert [r["seed"] for r in saved["results"]] == [1, 2]
    assert (out / "scenarios" / "seed-2.toml").is_file()


@pytest.mark.spark
def test_the_failing_seeds_are_shrunk_and_each_replays_its_check(tmp_path: Path) -> None:
    """Over a base of replication factor 1 and a power loss every seed loses acknowledged
    records; `--shrink 1` shrinks the first failing seed only, and its file replays the check."""
    base = tmp_path / "base.toml"
    base.write_text(plan(6, kinds=("power_loss",), duration_ms=4000), encoding="utf-8")
    out = tmp_path / "c"
    result = kafkasim(
        "check", str(base), "--seeds", "2", "--faults", "delay", "--shrink", "1",
        "--master", "local[1]", "--out", str(out), "--json",
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    figures = json.loads(result.stdout)
    shrunk = out / "shrunk" / "seed-1.toml"
    assert [(f["seed"], f["check"], f["shrunk"], f["replay"]) for f in figures["failures"]] == [
        (1, "lost_acked", str(shrunk), f"kafkasim run {shrunk}"),
        (2, "lost_acked", None, f"kafkasim run {out / 'scenarios' / 'seed-2.toml'}"),
    ]
    saved = json.loads((out / "check.json").read_text(encoding="utf-8"))
    assert saved["failures"] == figures["failures"]
    [shrink] = saved["shrinks"]
    assert (shrink["seed"], shrink["faults_after"]) == (1, 1)
    assert shrink["faults_before"] > shrink["faults_after"]
    replay = kafkasim("run", str(shrunk), "--out", str(tmp_path / "replay"), "--no-report")
    assert replay.returncode == 0, replay.stderr
    summary = json.loads((tmp_path / "replay" / "summary.json").read_text(encoding="utf-8"))
    assert summary["lost_acked"] > 0
    again = kafkasim("check", str(base), "--seeds", "1", "--faults", "delay", "--shrink", "0", "--out", str(out), "--json")
    assert [f["shrunk"] for f in json.loads(again.stdout)["failures"]] == [None]
    assert not (out / "shrunk").exists()


def test_the_table_lists_each_seeds_checks_and_replays_a_shrunk_failure_from_its_file(capsys: pytest.CaptureFixture[str]) -> None:
    from sim.cli.check import _table  # noqa: PLC0415
    from sim.studies.campaign import with_shrunk  # noqa: PLC0415

    result = {
        "seed": 1, "scenario": "c/scenarios/seed-1.toml", "version": "3.9", "failure": None,
        "violations": ["weak_isr"], "violation_count": 2, "lost_acked": 3, "skipped": 0, "skipped_by_cause": {},
        "duplicates": 0, "duplicates_by_cause": {}, "anomalies": {"poll-skip": 0},
    }  # fmt: skip
    figures = with_shrunk(totals([result]), [{"seed": 1, "check": "invariant weak_isr", "shrunk": "c/shrunk/seed-1.toml"}])
    _table([result], figures, Path("c"))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("anomalies  checks failed")
    assert lines[1].endswith("0  invariant weak_isr, lost_acked")
    assert lines[-2:] == [
        "  seed 1: invariant weak_isr; replay (shrunk): kafkasim run c/shrunk/seed-1.toml",
        "  seed 1: lost_acked; replay: kafkasim run c/scenarios/seed-1.toml",
    ]


def test_the_progress_counts_the_seeds_whose_run_ended(tmp_path: Path) -> None:
    """A run ends with its summary, or with failure.txt when the simulator failed."""
    from sim.studies.campaign import _runs_ended  # noqa: PLC0415

    tasks = check_tasks(4, tmp_path, profile="3.9", kinds=["crash"], duration_ms=5000)
    assert _runs_ended(tasks) == 0
    for task, name in zip(tasks[:3], ("summary.json", "failure.txt", "events.jsonl"), strict=True):
        Path(task["run_dir"]).mkdir(parents=True)
        (Path(task["run_dir"]) / name).write_text("")
    assert _runs_ended(tasks) == 2  # noqa: PLR2004 - a log alone is a run still going
