"""Every example script runs and prints exactly its golden .out (SimPy's habit); the studies
that are a scenario alone give the figures the guide shows."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("script", sorted(EXAMPLES.glob("*.py")), ids=lambda p: p.name)
def test_example_output_matches_its_golden_file(script: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(EXAMPLES.parent)},
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == script.with_suffix(".out").read_text()


def test_a_study_refuses_a_bad_out_with_one_line(tmp_path: Path) -> None:
    """A study's `--out` that is a file: one line naming it, exit status 2, nothing run."""
    not_a_dir = tmp_path / "runs"
    not_a_dir.write_text("")
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "10_unclean_election.py"), "--out", str(not_a_dir)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(EXAMPLES.parent)},
        timeout=60,
        check=False,
    )
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == f"10_unclean_election.py: --out {not_a_dir}: exists and is not a directory\n"


def _figures(name: str, overrides: list[str]) -> dict:
    from sim.cluster.harness import Cluster
    from sim.cluster.scenario import load_scenario
    from sim.engine.kernel import HostKind

    with Cluster(load_scenario(str(EXAMPLES / name), overrides), host=HostKind.DIRECT) as cluster:
        cluster.run_to_end()
        return cluster.final_checks()


@pytest.mark.parametrize(
    ("name", "overrides", "expected"),
    [
        # The figures the guide's table of studies gives for the two studies with no script (03
        # without idempotence is a regression test's: tests/scenarios/test_regressions.py).
        ("02_standard_workload.toml", [], (300_000, 299_953, 0, 0, 723, {"crash_before_commit": 723})),
        ("03_idempotent_retries.toml", [], (800, 800, 0, 0, 0, {})),
    ],
    ids=["02", "03"],
)
def test_scenario_study_gives_the_figures_the_guide_shows(name: str, overrides: list[str], expected: tuple) -> None:
    checks = _figures(name, overrides)
    keys = ("produced", "acked", "lost_acked", "log_duplicates", "duplicates", "duplicates_by_cause")
    assert tuple(checks[k] for k in keys) == expected
