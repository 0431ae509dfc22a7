"""The simulator's check of its own determinism: one scenario run on each host, logs compared.

The Pykka host runs every actor in its own thread; the direct host runs them all in the
kernel's thread. Under both, the same scenario and seed must write the same log, byte for byte,
so a difference is a determinism bug: an unordered iteration, a thread's timing, a clock, or
state that outlived the run before (a module-level counter or cache), since the second run
starts in the process the first one ran in. The runs go to `OUT/pykka` and `OUT/direct`, two
whole run directories a user can diff or report on; their logs are compared a line at a time
(`sim.engine.divergence`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim.cluster.scenario import Scenario
from sim.engine.divergence import LogComparison, compare_logs
from sim.engine.kernel import HostKind, Kernel
from sim.studies.rundir import RunDirRefused, earlier_run, prepare_run_dir
from sim.studies.runner import run_scenario

__all__ = ["CHECK_HOSTS", "DeterminismCheck", "check_determinism", "check_dirs", "default_check_dir"]

CHECK_HOSTS = (HostKind.PYKKA, HostKind.DIRECT)
"""The hosts compared, in the order they run: the product first."""


@dataclass(frozen=True, slots=True)
class DeterminismCheck:
    """The runs' directories and summaries, in `CHECK_HOSTS` order (only the first when it was
    interrupted), and the comparison of their logs (None when a run was interrupted)."""

    dirs: tuple[Path, ...]
    summaries: tuple[dict[str, Any], ...]
    comparison: LogComparison | None


def default_check_dir(scenario: Scenario) -> Path:
    """Beside the run's own default directory, so a check never replaces a run."""
    return Path("runs") / f"{scenario.name}-seed{scenario.seed}-determinism"


def check_dirs(out_dir: Path) -> tuple[Path, ...]:
    return tuple(out_dir / host.value for host in CHECK_HOSTS)


def check_determinism(
    scenario: Scenario,
    out_dir: Path,
    *,
    progress: Callable[[HostKind], Callable[[Kernel], None] | None] | None = None,
    finished: Callable[[HostKind, dict[str, Any]], None] | None = None,
    replacing: Callable[[Path, str], None] | None = None,
) -> DeterminismCheck:
    """Run `scenario` under each host into `out_dir/HOST`, then compare the two logs.
    `out_dir` may hold nothing but those directories; each may hold an earlier run, which is
    replaced (`replacing(dir, run_id)` is told first). Both are checked before either run
    starts. `progress(host)` gives the hook of that host's run (see `run_scenario`), and
    `finished(host, summary)` is told as it ends."""
    dirs = _prepared(out_dir, replacing)
    summaries: list[dict[str, Any]] = []
    for host, run_dir in zip(CHECK_HOSTS, dirs, strict=True):
        summary = run_scenario(scenario, run_dir, host=host, progress=progress(host) if progress else None)
        summaries.append(summary)
        if finished is not None:
            finished(host, summary)
        if summary["interrupted"]:
            return DeterminismCheck(dirs, tuple(summaries), None)
    comparison = compare_logs(*(run_dir / "events.jsonl" for run_dir in dirs))
    return DeterminismCheck(dirs, tuple(summaries), comparison)


def _prepared(out_dir: Path, replacing: Callable[[Path, str], None] | None) -> tuple[Path, ...]:
    """The run directories, checked and emptied of an earlier check's runs. Anything else in
    `out_dir` is refused: it is likely not meant for this (a typo in `--out`)."""
    if out_dir.exists() and not out_dir.is_dir():
        msg = f"--out {out_dir}: exists and is not a directory"
        raise RunDirRefused(msg)
    dirs = check_dirs(out_dir)
    if out_dir.is_dir():
        other = sorted(p.name for p in out_dir.iterdir() if p not in dirs)
        if other:
            msg = (
                f"--out {out_dir}: --check-determinism writes only {' and '.join(d.name for d in dirs)} there, "
                f"and it holds {', '.join(other[:3])}; choose another directory"
            )
            raise RunDirRefused(msg)
    for run_dir in dirs:  # refused before anything is removed: a directory that holds no run
        if run_dir.exists() and (not run_dir.is_dir() or (any(run_dir.iterdir()) and earlier_run(run_dir) is None)):
            prepare_run_dir(run_dir)  # raises the refusal that names it
    for run_dir in dirs:
        replaced = prepare_run_dir(run_dir)
        if replaced is not None and replacing is not None:
            replacing(run_dir, replaced)
    return dirs
