"""Running the variants of an example study, each into its own run directory.

A study (`examples/NN_*.py`) runs one base scenario under a few sets of overrides and prints a
small table from each run's summary and event log. The runs use the direct host: the same
behaviours and the same event log as the Pykka host, at less cost, which keeps the examples
quick enough for CI. With `--out DIR` the run directories are kept (`DIR/LABEL`, one per
variant, each readable by `kafkasim analyze` and `kafkasim report`); without it they go to a
temporary directory removed when the study ends.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson

from sim.cluster.scenario import Scenario, ScenarioError, load_scenario
from sim.engine.kernel import HostKind
from sim.studies.rundir import RunDirRefused
from sim.studies.runner import run_scenario

__all__ = ["StudyRun", "StudyRuns", "read_events", "run_once", "run_study"]


def run_study(main: Callable[[], None]) -> None:
    """Call a study's `main`; a bad override or `--out` ends it with one line on stderr and
    exit status 2, as `kafkasim run` does."""
    try:
        main()
    except (ScenarioError, RunDirRefused) as exc:
        sys.stderr.write(f"{Path(sys.argv[0]).name}: {exc}\n")
        raise SystemExit(2) from None


def read_events(run_dir: Path) -> list[dict[str, Any]]:
    """The events of a run directory's `events.jsonl`, in log order."""
    with (run_dir / "events.jsonl").open("rb") as lines:
        return [orjson.loads(line) for line in lines]


def run_once(scenario: Scenario, out_dir: Path | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run `scenario` on the direct host into `out_dir`, or into a temporary directory removed
    afterwards: its summary and its events."""
    if out_dir is not None:
        return run_scenario(scenario, out_dir, host=HostKind.DIRECT), read_events(out_dir)
    with tempfile.TemporaryDirectory(prefix="kafkasim-study-") as tmp:
        return run_scenario(scenario, Path(tmp), host=HostKind.DIRECT), read_events(Path(tmp))


@dataclass(frozen=True, slots=True)
class StudyRun:
    """One variant's run: its summary.json and its events."""

    label: str
    summary: dict[str, Any]
    events: list[dict[str, Any]]

    def named(self, *names: str) -> list[dict[str, Any]]:
        """The events of these kinds, in log order."""
        return [e for e in self.events if e["event"] in names]


class StudyRuns:
    """The runs of one study: `with StudyRuns(path, out) as runs: runs.run(label, overrides)`."""

    def __init__(self, scenario_path: Path, out: Path | None = None) -> None:
        self._path = scenario_path
        self._out = out
        self._temporary: tempfile.TemporaryDirectory[str] | None = None

    def __enter__(self) -> StudyRuns:
        if self._out is None:
            self._temporary = tempfile.TemporaryDirectory(prefix="kafkasim-study-")
            self._out = Path(self._temporary.name)
        elif self._out.exists() and not self._out.is_dir():
            msg = f"--out {self._out}: exists and is not a directory"
            raise RunDirRefused(msg)
        return self

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _exc: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        if self._temporary is not None:
            self._temporary.cleanup()

    def run(self, label: str, overrides: list[str]) -> StudyRun:
        """Run the base scenario with `overrides` (as `--set` takes them) into `OUT/label`."""
        assert self._out is not None, "use StudyRuns as a context manager"
        summary, events = run_once(load_scenario(self._path, overrides), self._out / label)
        return StudyRun(label, summary, events)
