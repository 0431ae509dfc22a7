"""The project installs as `make` installs it, without a word from setuptools.

setuptools warns about a license written as a TOML table (PEP 639 wants an SPDX string) and
about an editable install that needs its import finder for a flat layout; either warning would
be the first thing a new user reads after `make`.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = "import sys, setuptools.build_meta as b; print(b.build_editable(sys.argv[1]))"


def test_the_license_is_an_spdx_expression() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["license"] == "Apache-2.0"
    assert "setuptools>=77" in project["build-system"]["requires"]


def test_an_editable_build_gives_no_warning(tmp_path: Path) -> None:
    """The editable wheel `pip install -e .` builds, with every warning an error."""
    copy = tmp_path / "project"
    copy.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, copy / name)
    for package in ("actors", "protocols", "sim"):
        shutil.copytree(ROOT / package, copy / package, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "wheel"
    out.mkdir()
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", BUILD, str(out)],
        cwd=copy, capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Warning" not in result.stderr
    assert [p.name for p in out.iterdir()] == ["kafkasim-0.1.0-0.editable-py3-none-any.whl"]
