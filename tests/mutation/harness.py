"""Apply one mutant to a temporary copy of the project and run the tests that claim its rule.

A mutant is killed when those tests *fail* (pytest exits 1). A mutant whose tests pass has
survived: the suite does not guard that rule. Anything else (the patch no longer applies, the
copy does not import, pytest cannot collect) is an error of the harness, never a kill, so a
broken copy cannot pass for a strong suite. The unmutated copy is run once as the baseline: a
claimed test that fails without any mutation would make every kill meaningless.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.mutation.mutants import MUTANTS, Mutant

__all__ = ["RESULTS_KEY", "ROOT", "Result", "format_table", "run_all", "run_baseline", "run_mutant"]

ROOT = Path(__file__).resolve().parents[2]
COPIED = ("actors", "protocols", "sim", "tests", "examples", "pyproject.toml")
TIMEOUT_S = 600
_FAILED = re.compile(r"^FAILED (\S+)", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Result:
    name: str
    outcome: str
    """`killed`, `survived`, `passed` (the baseline) or `error`."""
    detail: str
    """The first failing test (killed), or what went wrong (error)."""
    seconds: float


RESULTS_KEY = pytest.StashKey[dict[str, Result]]()
"""Where the suite's run of the check leaves its results for the summary table."""


def _copy_project(into: Path) -> Path:
    copy = into / "kafkasim"
    copy.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", ".hypothesis", "*.pyc")
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=ignore)
        else:
            shutil.copy2(source, copy / name)
    return copy


def _apply(copy: Path, mutant: Mutant) -> str | None:
    """Patch the copy; the error, if the mutant no longer matches the code exactly once."""
    target = copy / mutant.path
    text = target.read_text()
    found = text.count(mutant.old)
    if found != 1:
        return f"{mutant.path}: the text to mutate occurs {found} times, not once"
    target.write_text(text.replace(mutant.old, mutant.new))
    return None


def _pytest(copy: Path, tests: Sequence[str]) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable, "-m", "pytest", "-x", "-q", "-rf", "-p", "no:cacheprovider",
        "-m", "not mutation", *tests,
    ]
    # The copy comes first on the path, ahead of the editable install of the original.
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        command, cwd=copy, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def run_mutant(mutant: Mutant) -> Result:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kafkasim-mutant-") as tmp:
        copy = _copy_project(Path(tmp))
        error = _apply(copy, mutant)
        if error is not None:
            return Result(mutant.name, "error", error, time.monotonic() - started)
        proc = _pytest(copy, mutant.tests)
    elapsed = time.monotonic() - started
    if proc.returncode == 1:
        failed = _FAILED.findall(proc.stdout)
        return Result(mutant.name, "killed", failed[0] if failed else _last_line(proc.stdout), elapsed)
    if proc.returncode == 0:
        return Result(mutant.name, "survived", _last_line(proc.stdout), elapsed)
    return Result(mutant.name, "error", f"pytest exit {proc.returncode}: {_last_line(proc.stdout + proc.stderr)}", elapsed)


def run_baseline(mutants: Iterable[Mutant] = MUTANTS) -> Result:
    """Every claimed test, on an unmutated copy: they must all pass."""
    tests = sorted({t for m in mutants for t in m.tests})
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kafkasim-baseline-") as tmp:
        proc = _pytest(_copy_project(Path(tmp)), tests)
    outcome = "passed" if proc.returncode == 0 else "error"
    return Result("baseline", outcome, _last_line(proc.stdout + proc.stderr), time.monotonic() - started)


def run_all(mutants: Sequence[Mutant] = MUTANTS, jobs: int = 2) -> tuple[Result, list[Result]]:
    """The baseline and every mutant, `jobs` at a time; results in the catalogue's order."""
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        baseline = pool.submit(run_baseline, mutants)
        results = list(pool.map(run_mutant, mutants))
        return baseline.result(), results


def format_table(baseline: Result, results: Sequence[Result]) -> str:
    by_name = {m.name: m for m in MUTANTS}
    rows = [("mutant", "outcome", "killed by / detail", "rule broken")]
    rows += [(r.name, r.outcome, r.detail, by_name[r.name].rule if r.name in by_name else "") for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c:<{widths[2]}}  {d}" for a, b, c, d in rows]
    lines.insert(1, "-" * (sum(widths) + 6 + len(rows[0][3])))
    killed = sum(r.outcome == "killed" for r in results)
    lines.append(
        f"baseline (unmutated copy, every claimed test): {baseline.outcome}, {baseline.detail}"
    )
    lines.append(f"{killed} of {len(results)} mutants killed")
    return "\n".join(lines)
