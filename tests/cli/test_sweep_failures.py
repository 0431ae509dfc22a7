"""`kafkasim sweep` when Spark fails under it: an unreachable master, Ctrl-C during the runs,
a run whose Spark task dies. Each is one line and a non-zero exit, never a traceback; the runs
done get their tables and report, and `--resume` finishes the sweep."""

from __future__ import annotations

import csv
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.test_analyze import _closed_port, _one_line
from tests.cli.test_cli import ROOT, kafkasim

SCENARIO = ROOT / "tests" / "sweep" / "crash_group.toml"
COMMIT = "consumers.1.auto.commit.interval.ms"

# Loaded by every interpreter started with this directory on PYTHONPATH, Spark's Python workers
# among them: the run of seed 2 kills its worker, as a crash of the interpreter would.
CRASH_HOOK = """\
import os
import sim.studies.runner

_run = sim.studies.runner.run_scenario

def run_scenario(scenario, out_dir, **kwargs):
    if scenario.seed == 2:
        os._exit(3)
    return _run(scenario, out_dir, **kwargs)

sim.studies.runner.run_scenario = run_scenario
"""


def test_an_unreachable_master_is_one_line_before_anything_is_written(tmp_path: Path) -> None:
    master = f"spark://127.0.0.1:{_closed_port()}"
    result = kafkasim("sweep", str(SCENARIO), "--seeds", "1", "--master", master, "--out", str(tmp_path / "s"))
    assert _one_line(result, 1) == f"kafkasim: cannot reach the Spark master {master}: Connection refused"
    assert not (tmp_path / "s").exists()


@pytest.mark.spark
def test_a_run_whose_spark_task_dies_is_named_with_its_settings_and_seed(tmp_path: Path) -> None:
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(CRASH_HOOK)
    args = ["sweep", str(SCENARIO), "--seeds", "2", "--set", "run.duration.ms=2000", "--grid", f"{COMMIT}=1000"]
    result = subprocess.run(
        [sys.executable, "-m", "sim.cli", *args, "--master", "local[1]", "--out", str(tmp_path / "s")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": f"{hook}{os.pathsep}{ROOT}"},
        timeout=300,
        check=False,
    )
    assert _one_line(result, 1) == (
        f"kafkasim: run c1-seed2 ({COMMIT}=1000, seed 2) failed in its Spark task: "
        "Python worker exited unexpectedly (crashed)"
    )
    out = tmp_path / "s"
    assert result.stderr.splitlines()[-1] == (
        f"  1 of 2 runs done: their tables and report are in {out}; finish the sweep with: kafkasim sweep "
        f"{SCENARIO} --seeds 2 --grid {COMMIT}=1000 --set run.duration.ms=2000 --master 'local[1]' --out {out} --resume"
    )
    with (out / "runs.csv").open() as f:
        assert [(r["config_id"], r["seed"]) for r in csv.DictReader(f)] == [("c1", "1")]
    assert "1 of its runs are not done" in (out / "report.html").read_text()


@pytest.mark.spark
def test_ctrl_c_during_the_runs_is_one_line_and_exit_130(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "sim.cli", "sweep", str(SCENARIO), "--seeds", "2", "--set", "run.duration.ms=600000",
         "--master", "local[2]", "--out", str(tmp_path / "s")],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    runs = tmp_path / "s" / "runs"
    try:
        # Interrupt once both runs have started (each writes its scenario.toml first).
        for _ in range(1200):
            if proc.poll() is not None or len(list(runs.glob("*/scenario.toml"))) == 2:  # noqa: PLR2004 - two seeds
                break
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert _one_line(subprocess.CompletedProcess(proc.args, proc.returncode, "", stderr), 130) == "kafkasim: interrupted"
    assert stderr.splitlines()[-1].startswith("  no run of 2 done; finish the sweep with: kafkasim sweep ")
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == ["runs", "sweep.json"]


@pytest.mark.spark
def test_ctrl_c_writes_the_tables_of_the_runs_done_and_resume_runs_only_the_others(tmp_path: Path) -> None:
    """Ctrl-C (to the whole process group, as a terminal sends it) once a run is done: the
    tables and report of the runs done, no Spark scratch left behind, and the command that
    finishes the sweep; that command runs only the runs not done."""
    out = tmp_path / "s"
    args = [str(SCENARIO), "--seeds", "3", "--grid", f"{COMMIT}=1000,5000", "--set", "run.duration.ms=40000",
            "--master", "local[1]", "--out", str(out)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "sim.cli", "sweep", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        for _ in range(1200):
            if proc.poll() is not None or list((out / "runs").glob("*/summary.json")):
                break
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert _one_line(subprocess.CompletedProcess(proc.args, proc.returncode, "", stderr), 130) == "kafkasim: interrupted"
    hint = stderr.splitlines()[-1]
    done, _, rest = hint.strip().partition(" of 6 runs done: their tables and report are in ")
    assert rest == f"{out}; finish the sweep with: kafkasim sweep {shlex.join(args)} --resume", hint
    with (out / "runs.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == int(done) >= 1
    assert f"{6 - int(done)} of its runs are not done" in (out / "report.html").read_text()
    scratch = [p for p in out.rglob("*") if p.name == "_temporary" or p.name.endswith((".parts", ".part"))]
    assert scratch == []

    finished = {  # what resume must leave alone: the runs that ended (some may have after the tables)
        run.name: (run / "summary.json").stat().st_mtime_ns
        for run in (out / "runs").iterdir()
        if (run / "summary.json").is_file() and not json.loads((run / "summary.json").read_text())["interrupted"]
    }
    resumed = subprocess.run(
        [sys.executable, "-m", "sim.cli", "sweep", *args, "--resume"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=300, check=False,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"  running {6 - len(finished)} runs ({len(finished)} done before)" in resumed.stderr.splitlines()
    assert {name: (out / "runs" / name / "summary.json").stat().st_mtime_ns for name in finished} == finished
    with (out / "runs.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["config_id"], r["seed"], r["failure"], r["interrupted"]) for r in rows] == [
        (c, str(seed), "", "false") for c in ("c1", "c2") for seed in (1, 2, 3)
    ]
    assert "not done" not in (out / "report.html").read_text()
