"""Spark starts without a word a user of kafkasim cannot act on.

Spark 4's launcher resolves the incubator module `jdk.incubator.vector` in every driver, and the
JVM announces it on stderr ("WARNING: Using incubator modules: ..."); kafkasim starts the JVM
with its stderr passed through a filter that drops that line and hands on everything else.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sim.analytics.session import _pass_stderr
from tests.cli.test_cli import ROOT, kafkasim


def test_the_filter_drops_the_incubator_notice_and_keeps_every_other_line(capfd: pytest.CaptureFixture[str]) -> None:
    read, write = os.pipe()
    os.write(write, b"WARNING: Using incubator modules: jdk.incubator.vector\nERROR SparkContext: it broke\n")
    os.close(write)
    with os.fdopen(read, "rb") as stream:
        _pass_stderr(stream)
    assert capfd.readouterr().err == "ERROR SparkContext: it broke\n"


@pytest.mark.spark
def test_analyze_prints_no_incubator_warning(tmp_path: Path) -> None:
    run = tmp_path / "run"
    made = kafkasim("run", str(ROOT / "examples/00_kernel_faults.toml"), "--out", str(run), "--no-report")
    assert made.returncode == 0, made.stderr
    result = subprocess.run(
        [sys.executable, "-m", "sim.cli", "analyze", str(run), "--master", "local[1]"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stderr
    # only kafkasim's own lines: the run count, then the phases it names while it works
    assert result.stderr.splitlines() == [
        "analysing 1 run(s) on Spark (local[1])", "  checking the event logs", "  starting Spark", "  running the jobs",
        "  writing analysis.json",
    ]
    assert result.stdout.startswith(f"{run}: ")
