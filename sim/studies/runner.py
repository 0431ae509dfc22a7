"""Running one scenario into a run directory.

A run directory holds:
- `events.jsonl`: the event log (docs/log-schema.md);
- `scenario.toml`: the resolved scenario, which reruns the same run;
- `summary.json`: the run's figures (docs/run-directory.md), including the sha256 of the log;
- `failure.txt`: only when the simulator failed, with the traceback.

The scenario is checked completely before the directory is touched, so a bad input loses nothing
already written. An interrupt (Ctrl-C) asks the kernel to stop at the next window boundary: the
log holds every event up to the last one processed, and the summary says `"interrupted": true`.
A second Ctrl-C interrupts at once.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sim.cluster.harness import Cluster
from sim.cluster.rundir import build_summary
from sim.cluster.scenario import Scenario
from sim.engine.kernel import HostKind, Kernel, SimulationFailed
from sim.studies.rundir import prepare_run_dir, write_summary

__all__ = ["default_out_dir", "run_scenario"]


def default_out_dir(scenario: Scenario) -> Path:
    return Path("runs") / f"{scenario.name}-seed{scenario.seed}"


def run_scenario(
    scenario: Scenario,
    out_dir: Path,
    *,
    host: HostKind = HostKind.PYKKA,
    progress: Callable[[Kernel], None] | None = None,
    replacing: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run `scenario` into `out_dir` and return its summary (also written as summary.json).
    What an earlier run left there (its log, summary, analysis, report) is removed first, so a
    reused directory never mixes two runs; `replacing(run_id)` is told of it first ("" for a
    run that left no summary or log to name it). `progress(kernel)` is called between windows:
    it may read the kernel's time, never change what the run does."""
    events_path = out_dir / "events.jsonl"
    replaced = prepare_run_dir(out_dir)
    if replaced is not None and replacing is not None:
        replacing(replaced)
    (out_dir / "scenario.toml").write_text(scenario.to_toml(), encoding="utf-8")
    started = time.perf_counter()
    cluster = Cluster(scenario, events_path=events_path, host=host)
    stop = threading.Event()
    interrupted = False
    failure: SimulationFailed | None = None

    def between_windows(kernel: Kernel) -> bool:
        if progress is not None:
            progress(kernel)
        return stop.is_set()

    try:
        with _interrupt_requests(stop):
            cluster.run_to_end(between_windows)
        interrupted = stop.is_set()
    except KeyboardInterrupt:  # a second Ctrl-C, or one outside the main thread's handler
        interrupted = True
    except SimulationFailed as exc:
        failure = exc
        (out_dir / "failure.txt").write_text(traceback.format_exc(), encoding="utf-8")
    except BaseException:  # a full disk: the actors' threads and the CPU are given back all the same
        with contextlib.suppress(OSError):
            cluster.close()
        raise
    checks: dict[str, Any] = {}
    try:
        if failure is None:
            # An interrupt stops between two windows: the checks count what happened until then.
            checks = cluster.final_checks()
    finally:
        cluster.close()
    summary = build_summary(scenario, cluster.kernel, time.perf_counter() - started)
    summary.update(checks)
    summary["interrupted"] = interrupted
    summary["failure"] = None if failure is None else str(failure)
    write_summary(out_dir, summary)
    return summary


class _interrupt_requests:  # noqa: N801 - used as a context manager
    """While running: the first Ctrl-C asks the kernel to stop at the next window boundary, so
    the log ends on a whole window; a second one interrupts at once."""

    def __init__(self, stop: threading.Event) -> None:
        self._stop = stop
        self._previous: object = None
        self._installed = threading.current_thread() is threading.main_thread()

    def __enter__(self) -> None:
        if self._installed:
            self._previous = signal.signal(signal.SIGINT, self._request)

    def __exit__(self, *_: object) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)  # type: ignore[arg-type]

    def _request(self, _signum: int, _frame: object) -> None:
        self._stop.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)


