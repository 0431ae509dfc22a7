"""Every example runs and prints exactly its golden .out (SimPy's habit)."""

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
