"""The import contracts of pyproject.toml hold, and each would catch a wrong-way import.

The contracts keep the floors (`sim` uses `actors`, which use `protocols`), the simulator's
layers (CLI, studies, cluster, report and analytics, engine), an engine that knows nothing of
Kafka, a simulator that never starts Spark, a report and analytics that read run directories
only, and no import circles anywhere, counting imports made only for type checking.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))"


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([sys.executable, "-c", LINT], cwd=root, env=env, capture_output=True, text=True, check=False)


def test_the_contracts_hold() -> None:
    """Every contract is kept by the code as it stands."""
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BROKEN" not in result.stdout


@pytest.mark.parametrize(
    ("module", "wrong_import", "contract"),
    [
        ("protocols/types.py", "import actors.core", "Three floors"),
        ("actors/core.py", "import sim.engine.trace", "Three floors"),
        ("sim/engine/network.py", "import sim.cluster.scenario", "The simulator's layers"),
        ("sim/cluster/invariants.py", "import sim.studies.stats", "The simulator's layers"),
        ("sim/engine/disk.py", "import actors.broker.config", "The engine knows nothing of Kafka"),
        ("sim/report/run_facts.py", "import sim.cluster.scenario", "The report and the analytics"),
        ("sim/cluster/harness.py", "import sim.analytics.jobs", "The simulator never starts Spark"),
        ("sim/report/page.py", "import sim.cluster.harness", "The simulator's layers"),
        ("protocols/registry.py", "import protocols.codec", "No import circles"),
    ],
)
def test_a_wrong_way_import_breaks_its_contract(tmp_path: Path, module: str, wrong_import: str, contract: str) -> None:
    """A copy of the code with one import against the grain fails the check, naming the contract."""
    for package in ("actors", "protocols", "sim"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{wrong_import}  # against the grain\n", encoding="utf-8")
    result = _lint(tmp_path)
    assert result.returncode != 0
    broken = [line for line in result.stdout.splitlines() if line.endswith("BROKEN")]
    assert [line for line in broken if line.startswith(contract)], result.stdout
