"""`kafkasim sweep`: one scenario over a grid of settings and seeds, each run a Spark task.

The plan is checked whole before Spark starts: the scenario with the `--set` overrides, every
grid value alone (so a mistake names its grid key), and every combination (settings that
only clash together, such as a heartbeat not below the session timeout). Each (configuration,
seed) is then one task: the Python worker (this interpreter, `PYSPARK_PYTHON`) parses the
scenario text with the same overrides `kafkasim run --set ... --seed N` would apply, in the same
order, and runs it into `DIR/runs/<config>-seed<N>/`; its `[run] name` is its configuration's
(sweep_plan.py), so its run_id names the configuration, and it is byte-identical to
`kafkasim run` of its scenario.toml. The workers write the run directories themselves: DIR must
be a path the driver can read too (one machine, or a shared file system).

A sweep stopped part way (Ctrl-C, a Spark task that died) writes the tables and report of the
runs that are done and raises `SweepStopped`; `resume` runs only the others (sweep_resume.py).
"""

from __future__ import annotations

import json
import re
import shutil
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sim.cluster.scenario import parse_scenario
from sim.studies.rundir import RunDirRefused
from sim.studies.sweep_plan import SweepPlan
from sim.studies.sweep_report import write_sweep_report
from sim.studies.sweep_resume import SweepStopped, clean_partial_tables, run_done, run_result
from sim.studies.sweep_tables import build_tables, rows, write_table
from sim.studies.watched import collect_watched

__all__ = [
    "SweepTaskFailed",
    "prepare_sweep_dir",
    "run_sweep",
    "run_sweep_tasks",
    "run_task",
    "write_plan",
]

SWEEP_FILES = ("sweep.json", "runs", "runs.parquet", "runs.csv", "configs.parquet", "configs.csv", "report.html")
"""What a sweep writes in its directory (a reused directory loses them first)."""


class SweepTaskFailed(RuntimeError):
    """A run's Spark task failed past `run_task` (its Python worker died, or something raised
    that is not an `Exception`): one sentence naming the run, its settings and seed, and what
    the executor reported."""


# ------------------------------------------------------------------ the directory


def prepare_sweep_dir(out: Path) -> None:
    """Create `out`, or empty it of an earlier sweep. A directory with other files and no
    sweep in it is refused, as `run` refuses one with no run."""
    if out.exists() and not out.is_dir():
        msg = f"--out {out}: exists and is not a directory"
        raise RunDirRefused(msg)
    if out.is_dir():
        present = sorted(p.name for p in out.iterdir())
        if present and "sweep.json" not in present:
            msg = f"--out {out}: not empty and holds no sweep (found {', '.join(present[:3])}); choose another directory"
            raise RunDirRefused(msg)
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name in SWEEP_FILES:
            path = out / name
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
        (out / "runs").mkdir()
    except OSError as exc:
        msg = f"--out {out}: cannot write there ({exc.strerror or exc})"
        raise RunDirRefused(msg) from None


# ------------------------------------------------------------------ the tasks


def run_task(task: dict[str, Any]) -> dict[str, Any]:
    """One run, inside a Spark executor's Python worker, on a core of its own (`one_core`).
    Returns what the driver needs to report it; the figures are in its summary.json."""
    from sim.engine.cpu_claim import one_core  # noqa: PLC0415
    from sim.report.page import write_report  # noqa: PLC0415
    from sim.studies.runner import run_scenario  # noqa: PLC0415

    result = {"config_id": task["config_id"], "seed": task["seed"], "run_dir": task["run_dir"]}
    try:
        scenario = parse_scenario(task["text"], task["source"], task["overrides"])
        with one_core():
            summary = run_scenario(scenario, Path(task["run_dir"]))
        write_report(Path(task["run_dir"]), summary)  # the run's own page, linked from the sweep's
    except BaseException as exc:  # noqa: BLE001 - reported per run (a SystemExit too); a retry would fail the same way
        detail = traceback.format_exc()
        Path(task["run_dir"]).mkdir(parents=True, exist_ok=True)
        (Path(task["run_dir"]) / "failure.txt").write_text(detail, encoding="utf-8")
        return {**result, "failure": f"{type(exc).__name__}: {exc}", "consumer_failures": []}
    return {**result, "failure": summary["failure"], "consumer_failures": summary["consumer_failures"]}


def run_sweep_tasks(
    spark: Any,
    plan: SweepPlan,
    out: Path,
    progress: Callable[[int, int], None] | None = None,
    tasks: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Run the plan's tasks (or those given) on Spark, one partition each; `progress(done,
    total)` is called about twice a second while they run (it counts the summaries written)."""
    tasks = plan.tasks(out) if tasks is None else tasks
    try:
        results = collect_watched(spark, tasks, run_task, _summaries_written, progress)
    except Exception as exc:  # a Spark task's failure; Ctrl-C goes through
        failed = _failed_task(exc, plan, tasks)
        if failed is not None:
            raise failed from None
        raise
    return sorted(results, key=lambda r: (r["config_id"], r["seed"]))


_FAILED_TASK = re.compile(r"Task (\d+) in stage \S+ failed")
_LOST_TASK = re.compile(r"most recent failure: Lost task [^\n]*?\): (?:[\w.$]+: )?([^\n]*)")


def _failed_task(exc: BaseException, plan: SweepPlan, tasks: list[dict[str, Any]]) -> SweepTaskFailed | None:
    """The run whose task aborted the job, from Spark's message: task i is partition i, which
    holds the i-th of `tasks`. None when the message names no task."""
    text = str(exc)
    found = _FAILED_TASK.search(text)
    if found is None or int(found.group(1)) >= len(tasks):
        python = "PythonException: " in text or type(exc).__name__ == "PythonException"
        return SweepTaskFailed(f"a Spark task failed: {_executor_error(text)}") if python else None
    task = tasks[int(found.group(1))]
    config = next(c for c in plan.configs if c.config_id == task["config_id"])
    seed = task["seed"]
    msg = f"run {plan.describe_run(config, seed)} failed in its Spark task: {_executor_error(text)}"
    return SweepTaskFailed(msg)


def _executor_error(text: str) -> str:
    """What an executor reported, in one line: a Python exception's last line (its type and
    message), else Spark's first sentence about the lost task (a worker that died)."""
    python = text.partition("PythonException: ")[2] or text.partition("thrown from the Python worker:")[2]
    if python:
        lines = [line for line in python.split("\n\tat ")[0].splitlines() if line.strip()]
        raised = [line for line in lines if not line[0].isspace()]
        return (raised or lines)[-1].strip()
    lost = _LOST_TASK.search(text)
    if lost is None:
        return text.strip().splitlines()[0] if text.strip() else "no message"
    return lost.group(1).split(". ")[0].rstrip(".")


def _summaries_written(tasks: list[dict[str, Any]]) -> int:
    return sum((Path(t["run_dir"]) / "summary.json").is_file() for t in tasks)


def write_plan(plan: SweepPlan, out: Path) -> None:
    (out / "sweep.json").write_text(json.dumps(plan.describe(), indent=2) + "\n", encoding="utf-8")


def run_sweep(
    plan: SweepPlan,
    out: Path,
    *,
    master: str = "local[*]",
    progress: Callable[[int, int], None] | None = None,
    spark: Any = None,
    resume: bool = False,
    phase: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The whole sweep into `out` (already prepared, or to `resume`: checked): sweep.json, the
    runs on Spark (to resume, those not done), the tables and the report; `phase(text)` is told
    of each step. Returns the tasks' results and the tables' rows. A given `spark` session is
    used and left running; otherwise one is started on `master` and stopped. Runs stopped part
    way: the tables and report of the runs done, then `SweepStopped`."""
    say = phase or (lambda _text: None)
    all_tasks = plan.tasks(out)
    if resume:
        for name in ("report.html", *(f"{t}.{kind}" for t in ("runs", "configs") for kind in ("csv", "parquet"))):
            path = out / name  # they describe the sweep as it was: rewritten below
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
        clean_partial_tables(out)
        done = {t["run_dir"] for t in all_tasks if run_done(Path(t["run_dir"]))}
    else:
        write_plan(plan, out)
        done = set()
    todo = [t for t in all_tasks if t["run_dir"] not in done]
    own = spark is None
    if own:
        from sim.analytics.session import spark_session  # noqa: PLC0415

        spark = spark_session(master)
        # The tables are a row per run: a cluster's default of 200 shuffle partitions only costs.
        spark.conf.set("spark.sql.shuffle.partitions", "2")
    stopped: BaseException | None = None
    try:
        say(f"running {len(todo)} runs" + (f" ({len(done)} done before)" if done else ""))
        try:
            results = run_sweep_tasks(spark, plan, out, progress, todo) if todo else []
        except (KeyboardInterrupt, SweepTaskFailed) as exc:
            stopped, results = exc, []
        by_dir = {r["run_dir"]: r for r in results}
        finished = all_tasks
        if stopped is not None:
            finished = [t for t in all_tasks if t["run_dir"] in done or run_done(Path(t["run_dir"]))]
            if not finished:
                raise SweepStopped(stopped, 0, len(all_tasks), tables=False) from None
        results = [by_dir.get(t["run_dir"]) or run_result(t) for t in finished]
        only = None if stopped is None else {Path(t["run_dir"]).name for t in finished}
        say("writing the tables" + ("" if only is None else f" of the runs done ({len(finished)})"))
        try:
            runs, configs = build_tables(spark, plan, out, only)
            runs, configs = runs.cache(), configs.cache()
            write_table(runs, out, "runs")
            write_table(configs, out, "configs")
            run_rows, config_rows = rows(runs), rows(configs)
            runs.unpersist()
            configs.unpersist()
        except BaseException:
            clean_partial_tables(out)
            raise
    finally:
        if own:
            spark.stop()
    say("writing the report")
    write_sweep_report(out, plan, config_rows, run_rows, unfinished=len(all_tasks) - len(finished))
    if stopped is not None:
        raise SweepStopped(stopped, len(finished), len(all_tasks), tables=True) from None
    return {"results": sorted(results, key=lambda r: (r["config_id"], r["seed"])), "runs": run_rows, "configs": config_rows}
