"""A sweep that stopped part way (Ctrl-C, a Spark task that died, a machine that went down) and
its `--resume`.

A run is done when its directory holds a summary.json of a run that was not interrupted and
its events.jsonl is still the log that summary describes (its line count and sha256); a run
the simulator failed is done too (running it again would fail the same way). Every other run
is pending: `--resume` runs those alone, with the same plan (sweep.json must match it), then
writes the tables and report of all. A Spark write stopped half way leaves a `_temporary`
directory and no `_SUCCESS` marker in its table: such a table is removed whole, as a table
that holds part of its rows would mislead.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from sim.studies.rundir import log_problem
from sim.studies.sweep_plan import SweepError, SweepPlan

__all__ = ["TABLES", "SweepStopped", "check_resumable", "clean_partial_tables", "run_done", "run_result"]

TABLES = ("runs", "configs")


class SweepStopped(Exception):  # noqa: N818 - what happened to the sweep, not an error of it
    """The runs stopped before all were done: `cause` is the KeyboardInterrupt or the
    SweepTaskFailed, `done` of `total` runs are done, and `tables` says whether the tables and
    report of those were written."""

    def __init__(self, cause: BaseException, done: int, total: int, *, tables: bool) -> None:
        super().__init__(str(cause))
        self.cause, self.done, self.total, self.tables = cause, done, total, tables


def _summary(run_dir: Path) -> dict[str, Any] | None:
    try:
        summary = json.loads((run_dir / "summary.json").read_bytes())
    except (OSError, ValueError):
        return None
    return summary if isinstance(summary, dict) else None


def run_done(run_dir: Path) -> bool:
    """Whether the run in `run_dir` ended (not interrupted) and its log is intact."""
    summary = _summary(run_dir)
    if summary is None or summary.get("interrupted") is not False:
        return False
    if not isinstance(summary.get("events"), int) or not isinstance(summary.get("events_digest"), str):
        return False
    try:
        return log_problem(run_dir / "events.jsonl", summary) is None
    except OSError:
        return False


def run_result(task: dict[str, Any]) -> dict[str, Any]:
    """What `run_task` returned for a run done earlier, read back from its summary."""
    summary = _summary(Path(task["run_dir"])) or {}
    return {
        "config_id": task["config_id"],
        "seed": task["seed"],
        "run_dir": task["run_dir"],
        "failure": summary.get("failure"),
        "consumer_failures": summary.get("consumer_failures", []),
    }


def check_resumable(plan: SweepPlan, out: Path) -> None:
    """`--resume` continues the sweep in `out` only with the plan that began it."""
    try:
        saved = json.loads((out / "sweep.json").read_bytes())
    except FileNotFoundError:
        msg = f"--resume: {out} holds no sweep to resume (no sweep.json); run without --resume to start one"
        raise SweepError(msg) from None
    except (OSError, ValueError) as exc:
        msg = f"--resume: {out / 'sweep.json'}: unreadable ({exc})"
        raise SweepError(msg) from None
    planned = plan.describe()
    differs = [key for key in planned if not isinstance(saved, dict) or saved.get(key) != planned[key]]
    if differs:
        what = {"scenario_sha256": "the scenario file's text"}.get(differs[0], differs[0])
        msg = (
            f"--resume: {out / 'sweep.json'} is a sweep of other settings ({what} differs); "
            "resume it with the arguments that began it, or run without --resume to start over"
        )
        raise SweepError(msg)


def clean_partial_tables(out: Path) -> None:
    """Remove what a table write stopped half way left: Spark's `_temporary`, a Parquet table
    without its `_SUCCESS`, the CSV's scratch directory."""
    for name in TABLES:
        parquet = out / f"{name}.parquet"
        if parquet.is_dir() and not (parquet / "_SUCCESS").exists():
            shutil.rmtree(parquet, ignore_errors=True)
        shutil.rmtree(parquet / "_temporary", ignore_errors=True)
        shutil.rmtree(out / f".{name}.csv.parts", ignore_errors=True)
