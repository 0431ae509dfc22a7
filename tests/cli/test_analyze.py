"""`kafkasim analyze` as a user meets it: bad input is one line and a non-zero exit, never a
traceback; `--json` is one object with Spark's figures for every run."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.cli.test_cli import ROOT, kafkasim
from tests.properties import group_swarm


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A group swarm run (seed 1: duplicates from an expelled consumer)."""
    return group_swarm.run(1, tmp_path_factory.mktemp("analyze") / "run").run_dir


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _one_line(result: subprocess.CompletedProcess[str], status: int) -> str:
    assert result.returncode == status, result.stderr
    assert "Traceback" not in result.stderr and "\tat " not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("kafkasim:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_a_directory_that_is_not_a_run_is_named(tmp_path: Path) -> None:
    line = _one_line(kafkasim("analyze", str(tmp_path)), 2)
    assert line == f"kafkasim: {tmp_path}: not a run directory (no events.jsonl)"


def test_a_truncated_log_names_its_file_and_line(tmp_path: Path, run_dir: Path) -> None:
    data = (run_dir / "events.jsonl").read_bytes()
    lines = data.splitlines(keepends=True)
    (tmp_path / "events.jsonl").write_bytes(b"".join(lines[:500]) + lines[500][:20])
    line = _one_line(kafkasim("analyze", str(run_dir), str(tmp_path)), 2)
    assert line.startswith(f"kafkasim: {tmp_path / 'events.jsonl'}:501: malformed event, truncated"), line


def test_a_field_of_the_wrong_type_names_its_file_and_line(tmp_path: Path, run_dir: Path) -> None:
    lines = (run_dir / "events.jsonl").read_text().splitlines(keepends=True)
    lines[41] = lines[41].replace('"ts_ms":', '"ts_ms":"late","was":', 1)
    (tmp_path / "events.jsonl").write_text("".join(lines))
    line = _one_line(kafkasim("analyze", str(tmp_path)), 2)
    assert line == f'kafkasim: {tmp_path / "events.jsonl"}:42: malformed event, ts_ms is "late", not a 64-bit int'


@pytest.mark.parametrize(
    ("before", "after", "problem"),
    [
        ('"event":"', '"event":null,"was":"', "no event field"),
        ('"ts_ms":', '"isr":[1,"x"],"ts_ms":', 'an item of isr is "x", not a 64-bit int'),
        ('"ts_ms":', '"leader_epoch":9223372036854775808,"ts_ms":', "leader_epoch is 9223372036854775808, not a 64-bit int"),
    ],
    ids=["null-event", "list-item", "beyond-64-bits"],
)
def test_what_spark_could_not_read_names_its_file_and_line(
    tmp_path: Path, run_dir: Path, before: str, after: str, problem: str
) -> None:
    lines = (run_dir / "events.jsonl").read_text().splitlines(keepends=True)
    lines[9] = lines[9].replace(before, after, 1)
    (tmp_path / "events.jsonl").write_text("".join(lines))
    line = _one_line(kafkasim("analyze", str(tmp_path)), 2)
    assert line == f"kafkasim: {tmp_path / 'events.jsonl'}:10: malformed event, {problem}"


def test_an_empty_log_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "events.jsonl").write_text("")
    line = _one_line(kafkasim("analyze", str(tmp_path)), 2)
    assert line == f"kafkasim: {tmp_path / 'events.jsonl'}: empty event log"


def test_an_unreachable_master_is_one_line(run_dir: Path) -> None:
    master = f"spark://127.0.0.1:{_closed_port()}"
    line = _one_line(kafkasim("analyze", str(run_dir), "--master", master), 1)
    assert line == f"kafkasim: cannot reach the Spark master {master}: Connection refused"
    for bad in ("sparkk://host:7077", "local[abc]", "local[0]"):
        line = _one_line(kafkasim("analyze", str(run_dir), "--master", bad), 2)
        assert line.startswith(f"kafkasim: --master {bad}: not a Spark master URL")


@pytest.mark.spark
def test_json_is_one_object_with_sparks_figures_for_every_run(tmp_path: Path, run_dir: Path) -> None:
    again = tmp_path / "again"
    again.mkdir()
    (again / "events.jsonl").write_bytes((run_dir / "events.jsonl").read_bytes())
    result = kafkasim("analyze", str(run_dir), str(again), "--master", "local[2]", "--json")
    assert result.returncode == 0, result.stderr
    [runs] = json.loads(result.stdout).values()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert [r["dir"] for r in runs] == [str(run_dir), str(again)]
    keys = ("consumed", "duplicates", "duplicates_by_cause", "lost_acked", "log_duplicates")
    for run in runs:
        assert {k: run[k] for k in keys} == {k: summary[k] for k in keys}
        assert run["log_unresolved"] == 0
    assert summary["duplicates"] > 0
    written = json.loads((run_dir / "analysis.json").read_text())
    assert written == {k: v for k, v in runs[0].items() if k != "dir"}


@pytest.mark.spark
def test_ctrl_c_during_spark_is_one_line_and_exit_130(run_dir: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "sim.cli", "analyze", *[str(run_dir)] * 4, "--master", "local[1]"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    assert proc.stderr.readline().startswith("analysing")
    try:
        proc.wait(timeout=12)  # Spark starts and runs its first jobs
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    result = subprocess.CompletedProcess(proc.args, proc.returncode, "", stderr)
    assert _one_line(result, 130) == "kafkasim: interrupted"


def _processes_with(token: str) -> list[int]:
    """The processes whose environment holds `token`: a command's and every one it started."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if token.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:  # gone, or not ours to read
                continue
    return found


@pytest.mark.spark
def test_ctrl_c_while_the_jvm_starts_leaves_no_jvm_behind(run_dir: Path) -> None:
    """PySpark starts the JVM ignoring Ctrl-C; an interrupt while PySpark waits for it used to
    leave it running, holding the terminal's output open."""
    token = uuid.uuid4().hex
    proc = subprocess.Popen(
        [sys.executable, "-m", "sim.cli", "analyze", str(run_dir), "--master", "local[1]"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "KAFKASIM_TEST_TOKEN": token},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    assert proc.stderr.readline().startswith("analysing")
    time.sleep(0.5)  # the JVM is starting: it takes seconds
    proc.send_signal(signal.SIGINT)
    try:
        _, stderr = proc.communicate(timeout=60)
        time.sleep(1)
        left = _processes_with(token)
    finally:
        for pid in _processes_with(token):
            os.kill(pid, signal.SIGKILL)
    assert left == []
    result = subprocess.CompletedProcess(proc.args, proc.returncode, "", stderr)
    assert _one_line(result, 130) == "kafkasim: interrupted"
