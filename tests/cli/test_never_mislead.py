"""Runs that never mislead: a replaced run is named, a log that is no longer the one its summary
describes is refused, a report is rewritten with the analysis, an interrupted study still gets
its report, and a sweep's runs are told apart and resumed."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sim.cluster.scenario import parse_scenario
from sim.studies.rundir import log_problem
from sim.studies.sweep import write_plan
from sim.studies.sweep_plan import plan_sweep
from sim.studies.sweep_resume import clean_partial_tables, run_done
from tests.cli.test_analyze import _one_line
from tests.cli.test_cli import QUICK, ROOT, kafkasim

SCENARIO = ROOT / "tests" / "sweep" / "crash_group.toml"
COMMIT = "consumers.1.auto.commit.interval.ms"


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three simulated seconds of the default study: 2,805 events."""
    out = tmp_path_factory.mktemp("quick") / "run"
    result = kafkasim("run", *QUICK, "--out", str(out), "--no-report")
    assert result.returncode == 0, result.stderr
    assert json.loads((out / "summary.json").read_text())["events"] == 2805
    return out


def _copy(run: Path, into: Path, events: bytes | None = None) -> Path:
    into.mkdir()
    for name in ("summary.json", "scenario.toml"):
        (into / name).write_bytes((run / name).read_bytes())
    (into / "events.jsonl").write_bytes((run / "events.jsonl").read_bytes() if events is None else events)
    return into


# ------------------------------------------------------------------ run


def test_a_run_into_an_earlier_runs_directory_names_that_run(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = kafkasim("run", *QUICK, "--out", str(out), "--no-report")
    assert (first.returncode, first.stderr) == (0, "")  # a short run off a terminal: nothing extra
    second = kafkasim("run", *QUICK, "--seed", "2", "--out", str(out), "--no-report")
    assert (second.returncode, second.stderr) == (0, f"kafkasim: replacing the earlier run default-seed1 in {out}\n")
    (out / "summary.json").unlink()  # a run stopped before its summary: its log names it
    third = kafkasim("run", *QUICK, "--out", str(out), "--no-report")
    assert third.stderr == f"kafkasim: replacing the earlier run default-seed2 in {out}\n"


# ------------------------------------------------------------------ a log against its summary


def test_report_names_a_log_cut_at_a_line_boundary(tmp_path: Path, quick_run: Path) -> None:
    lines = (quick_run / "events.jsonl").read_bytes().splitlines(keepends=True)
    cut = _copy(quick_run, tmp_path / "cut", b"".join(lines[:2140]))
    line = _one_line(kafkasim("report", str(cut)), 2)
    assert line == f"kafkasim: {cut}/events.jsonl: 2,140 events, summary.json says 2,805: the log was cut"
    assert not (cut / "report.html").exists()


def test_report_names_a_log_altered_in_place(tmp_path: Path, quick_run: Path) -> None:
    data = (quick_run / "events.jsonl").read_bytes()
    altered = _copy(quick_run, tmp_path / "altered", data.replace(b'"seed":1,', b'"seed":2,', 1))
    line = _one_line(kafkasim("report", str(altered)), 2)
    assert line == f"kafkasim: {altered}/events.jsonl: digest differs from summary.json: the log was altered"
    longer = _copy(quick_run, tmp_path / "longer", data + data.splitlines(keepends=True)[-1])
    line = _one_line(kafkasim("report", str(longer)), 2)
    assert line == f"kafkasim: {longer}/events.jsonl: 2,806 events, summary.json says 2,805: the log was altered"


def test_analyze_names_a_cut_log_before_spark_starts(tmp_path: Path, quick_run: Path) -> None:
    lines = (quick_run / "events.jsonl").read_bytes().splitlines(keepends=True)
    cut = _copy(quick_run, tmp_path / "cut", b"".join(lines[:2804]))  # the last line gone, whole
    result = kafkasim("analyze", str(quick_run), str(cut))
    line = _one_line(result, 2)
    assert line == f"kafkasim: {cut}/events.jsonl: 2,804 events, summary.json says 2,805: the log was cut"
    assert "starting Spark" not in result.stderr
    assert not (quick_run / "analysis.json").exists()


def test_an_intact_log_has_no_problem(quick_run: Path) -> None:
    summary = json.loads((quick_run / "summary.json").read_text())
    assert log_problem(quick_run / "events.jsonl", summary) is None


@pytest.mark.spark
def test_analyze_rewrites_an_existing_report_with_the_analysis(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert kafkasim("run", *QUICK, "--out", str(out)).returncode == 0
    before = (out / "report.html").read_text()
    result = kafkasim("analyze", str(out), "--master", "local[1]")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == f"  report {out}/report.html updated"
    ours = [line for line in result.stderr.splitlines() if not line.startswith("WARNING")]  # the JVM's
    assert ours == [
        "analysing 1 run(s) on Spark (local[1])",
        "  checking the event logs",
        "  starting Spark",
        "  running the jobs",
        "  writing analysis.json",
        "  updating report.html",
    ]
    after = (out / "report.html").read_text()
    assert after != before
    assert kafkasim("report", str(out)).returncode == 0  # what `report` writes with the analysis
    assert (out / "report.html").read_text() == after


# ------------------------------------------------------------------ study


def test_an_interrupted_study_writes_its_report(tmp_path: Path) -> None:
    out = tmp_path / "study"
    proc = subprocess.Popen(
        [sys.executable, "-m", "sim.cli", "study", "--out", str(out)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while b'"produce_completed"' not in _read(out / "events.jsonl") and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True
    page = (out / "report.html").read_text()
    assert f"kafkasim run {summary['run_id']}" in page


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


# ------------------------------------------------------------------ sweep


def test_each_configuration_of_a_sweep_has_its_own_run_id() -> None:
    """The run_id every event carries names the configuration: unique per (configuration,
    seed), the same in every plan of the same sweep, safe in a file name."""
    plan = plan_sweep(str(SCENARIO), ["run.duration.ms=5000"], [f"{COMMIT}=1000,5000"], 2)
    tasks = plan.tasks(Path("out"))
    ids = [
        (lambda s: f"{s.name}-seed{s.seed}")(parse_scenario(t["text"], t["source"], t["overrides"])) for t in tasks
    ]
    assert ids == [
        "sweep-test-c1-9c260356-seed1",
        "sweep-test-c1-9c260356-seed2",
        "sweep-test-c2-1d89592d-seed1",
        "sweep-test-c2-1d89592d-seed2",
    ]
    lists = plan_sweep(str(SCENARIO), [], ['consumers.1.partition.assignment.strategy=["range"],["sticky","range"]'], 1)
    assert all(re.fullmatch(r"sweep-test-c\d-[0-9a-f]{8}", c.name) for c in lists.configs)  # whatever the values
    again = plan_sweep(str(SCENARIO), ["run.duration.ms=5000"], [f"{COMMIT}=1000,5000"], 2)
    assert [c.name for c in again.configs] == [c.name for c in plan.configs]
    # Another --set is another configuration, though it is c1 again.
    other = plan_sweep(str(SCENARIO), ["run.duration.ms=6000"], [f"{COMMIT}=1000,5000"], 2)
    assert other.configs[0].name.startswith("sweep-test-c1-") and other.configs[0].name != plan.configs[0].name
    assert json.loads(json.dumps(plan.describe()))["configs"][1]["name"] == "sweep-test-c2-1d89592d"


def test_a_run_is_done_only_when_it_ended_and_its_log_is_intact(tmp_path: Path, quick_run: Path) -> None:
    assert run_done(quick_run)
    assert not run_done(tmp_path / "missing")
    data = (quick_run / "events.jsonl").read_bytes()
    assert not run_done(_copy(quick_run, tmp_path / "cut", data[: len(data) // 2]))
    stopped = _copy(quick_run, tmp_path / "stopped")
    summary = json.loads((stopped / "summary.json").read_text())
    (stopped / "summary.json").write_text(json.dumps({**summary, "interrupted": True}))
    assert not run_done(stopped)
    (stopped / "summary.json").write_text('{"run_id": ')  # a summary cut short
    assert not run_done(stopped)


def test_what_an_interrupted_table_write_left_is_removed(tmp_path: Path) -> None:
    half = tmp_path / "runs.parquet"
    (half / "_temporary" / "0").mkdir(parents=True)
    (half / "part-00000.parquet").write_bytes(b"")
    whole = tmp_path / "configs.parquet"
    (whole / "_temporary").mkdir(parents=True)
    (whole / "_SUCCESS").write_bytes(b"")
    (tmp_path / ".runs.csv.parts").mkdir()
    clean_partial_tables(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["configs.parquet"]
    assert [p.name for p in whole.iterdir()] == ["_SUCCESS"]


def test_resume_refuses_a_sweep_of_other_settings_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "s"
    (out / "runs").mkdir(parents=True)
    write_plan(plan_sweep(str(SCENARIO), [], [f"{COMMIT}=1000,5000"], 2), out)
    args = ["sweep", str(SCENARIO), "--seeds", "3", "--grid", f"{COMMIT}=1000,5000", "--out", str(out), "--resume"]
    assert _one_line(kafkasim(*args), 2) == (
        f"kafkasim: --resume: {out}/sweep.json is a sweep of other settings (seeds differs); "
        "resume it with the arguments that began it, or run without --resume to start over"
    )
    empty = tmp_path / "empty"
    args = ["sweep", str(SCENARIO), "--seeds", "2", "--out", str(empty), "--resume"]
    assert _one_line(kafkasim(*args), 2) == (
        f"kafkasim: --resume: {empty} holds no sweep to resume (no sweep.json); run without --resume to start one"
    )
