"""The user's guide shows what the repository does: its scenario loads with the overrides it
shows, its runs and its Python example print what the guide says they print (but the wall
time), and the docs' links resolve."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from sim.cluster.harness import check_scenario
from sim.cluster.scenario import parse_scenario

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guide.md"


def _code_blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```\n", GUIDE.read_text(), re.MULTILINE | re.DOTALL)


def _shown_after(block: str) -> str:
    """The indented output the guide prints after a code block, up to the next paragraph."""
    after = GUIDE.read_text().split(block, 1)[1].split("```\n", 1)[1].lstrip("\n")
    lines = []
    for line in after.splitlines():
        if not line.startswith("    "):
            break
        lines.append(line.removeprefix("    "))
    return "\n".join(lines) + "\n"


def test_guide_scenario_loads_with_every_override_the_guide_shows() -> None:
    """The first scenario, and each `kafkasim run first.toml --set ...` the guide shows."""
    (text,) = _code_blocks("toml")
    commands = [
        shlex.split(line.strip().removeprefix("$ "))
        for line in GUIDE.read_text().splitlines()
        if line.strip().startswith("$ .venv/bin/kafkasim run first.toml")
    ]
    assert len(commands) == 2
    for command in commands:
        overrides = [value for flag, value in zip(command, command[1:], strict=False) if flag == "--set"]
        scenario = parse_scenario(text, "first.toml", overrides)
        check_scenario(scenario)
    assert overrides == ["faults.1.node=consumer-1", "run.duration.ms=90000"]
    assert scenario.get("run", "duration.ms") == 90000


def _kafkasim(*args: str, cwd: Path) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "sim.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def _shown_lines(command: str) -> list[str]:
    """The lines the guide shows a command printing: those indented after `    $ COMMAND` (or
    after `COMMAND ends with these lines:`), up to the first that is not."""
    lines = GUIDE.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line == f"    $ {command}" or line.startswith(f"`{command}` ends with"))
    shown = []
    for line in lines[start + 1 :]:
        if not line.startswith("    ") and line:
            break
        if line:
            shown.append(line.removeprefix("    "))
    return shown


def _without_wall_time(lines: list[str]) -> list[str]:
    return [re.sub(r"simulated in [\d.]+ s", "simulated in _ s", line) for line in lines]


def test_guide_first_run_prints_what_the_guide_shows(tmp_path: Path) -> None:
    (text,) = _code_blocks("toml")
    (tmp_path / "first.toml").write_text(text)
    printed = _kafkasim("run", "first.toml", cwd=tmp_path).splitlines()
    assert _without_wall_time(printed) == _without_wall_time(_shown_lines(".venv/bin/kafkasim run first.toml"))
    command = ".venv/bin/kafkasim run first.toml --set faults.1.node=consumer-1 --set run.duration.ms=90000"
    shown = [line for line in _shown_lines(command) if line.strip() != "..."]
    printed = _kafkasim(*shlex.split(command)[1:], "--no-report", cwd=tmp_path).splitlines()
    assert shown and all(line in printed for line in shown)


def test_guide_default_study_prints_what_the_guide_shows(tmp_path: Path) -> None:
    """The simulation's lines of `make study`, and of the rerun of its resolved scenario."""
    printed = _without_wall_time(_kafkasim("run", "--no-report", "--out", "default-study", cwd=tmp_path).splitlines())
    study = _without_wall_time(_shown_lines("make study"))
    assert printed[:4] == study[:4]
    rerun = _without_wall_time(_shown_lines(".venv/bin/kafkasim run runs/default-study/scenario.toml --out /tmp/rerun"))
    assert rerun == printed[:2]


def test_guide_mistakes_print_what_the_guide_shows() -> None:
    """Each `$ .venv/bin/kafkasim ...` line the guide follows with a `kafkasim:` error line."""
    lines = GUIDE.read_text().splitlines()
    shown = [
        (line.strip().removeprefix("$ .venv/bin/kafkasim "), after.strip())
        for line, after in zip(lines, lines[1:], strict=False)
        if line.strip().startswith("$ .venv/bin/kafkasim ") and after.strip().startswith("kafkasim: ")
    ]
    assert len(shown) >= 2
    for command, error in shown:
        result = subprocess.run(
            [sys.executable, "-m", "sim.cli", *shlex.split(command)],
            cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
        )
        assert (result.returncode, result.stderr) == (2, error + "\n")


@pytest.mark.parametrize(
    "example", [b for b in _code_blocks("python") if "from sim.cluster.harness import Cluster" in b], ids=["state", "client", "api"]
)
def test_guide_python_example_prints_what_the_guide_shows(example: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", example], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == _shown_after(example)


@pytest.mark.parametrize(
    "page", [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))], ids=lambda p: p.name
)
def test_every_relative_link_names_a_file_of_the_repository(page: Path) -> None:
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", page.read_text())
    missing = [t for t in targets if "://" not in t and not (page.parent / t).exists()]
    assert missing == []
