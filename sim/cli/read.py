"""`kafkasim analyze` and `kafkasim report`: reading run directories, on Spark or not."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from sim.cli.errors import RunDirError, usage_error
from sim.cli.figures import group_figures
from sim.cli.progress import phase
from sim.cli.spark import check_master, on_spark

__all__ = ["analyze", "report"]


def analyze(args: argparse.Namespace) -> int:
    from sim.analytics.prescan import BadEventLog, check_event_log  # noqa: PLC0415

    for run_dir in args.run_dirs:
        if not run_dir.exists():
            return usage_error(f"analyze: {run_dir}: no such run directory")
        if not (run_dir / "events.jsonl").is_file():
            return usage_error(f"{run_dir}: not a run directory (no events.jsonl)")
        # Said before Spark's start and jobs, not after them.
        written = run_dir / "analysis.json"
        if not os.access(written if written.exists() else run_dir, os.W_OK):
            return usage_error(f"{written}: cannot write it (read-only)")
    check_master(args.master)
    phase(f"analysing {len(args.run_dirs)} run(s) on Spark ({args.master})", step=False)
    phase("checking the event logs")
    summaries = {}
    try:
        for run_dir in args.run_dirs:
            check_event_log(run_dir / "events.jsonl")
            has_summary = (run_dir / "summary.json").is_file()
            summaries[run_dir] = _checked_summary(run_dir) if has_summary else None
    except BadEventLog as exc:
        return usage_error(str(exc))
    analyses = _spark_analyses(args.run_dirs, args.master)
    phase("writing analysis.json")
    for run_dir, analysis in zip(args.run_dirs, analyses, strict=True):
        (run_dir / "analysis.json").write_text(json.dumps(analysis, indent=2) + "\n")
        if not args.json:
            sys.stdout.write(_analysis_line(run_dir, analysis) + "\n")
    _update_reports(args.run_dirs, summaries, analyses, quiet=args.json)
    if args.json:
        runs = [{"dir": str(d), **a} for d, a in zip(args.run_dirs, analyses, strict=True)]
        sys.stdout.write(json.dumps({"runs": runs}) + "\n")
    return 0


def _spark_analyses(run_dirs: list[Path], master: str) -> list[dict[str, Any]]:
    """analyze_runs on a session of `master`; Spark's failures become one line."""
    from sim.analytics.jobs import analyze_runs  # noqa: PLC0415 - Spark only when asked

    phase("starting Spark")

    def jobs(spark: Any) -> list[dict[str, Any]]:
        phase("running the jobs")
        return analyze_runs(spark, run_dirs)

    return on_spark(master, jobs)


def _update_reports(
    run_dirs: list[Path], summaries: dict[Path, dict[str, Any] | None], analyses: list[dict[str, Any]], *, quiet: bool
) -> None:
    """A run's report.html, when it has one, is written again with the analysis: left alone it
    would go on saying that the run has none."""
    from sim.report.page import write_report  # noqa: PLC0415

    stale = [(d, a) for d, a in zip(run_dirs, analyses, strict=True) if (d / "report.html").is_file()]
    if stale:
        phase("updating report.html")
    for run_dir, analysis in stale:
        summary = summaries[run_dir]
        if summary is None:  # a report needs the summary: say why this one stays as it was
            sys.stderr.write(f"kafkasim: {run_dir / 'report.html'}: not updated (no summary.json)\n")
            continue
        path = write_report(run_dir, summary, analysis)
        if not quiet:
            sys.stdout.write(f"  report {path} updated\n")


def _analysis_line(run_dir: Path, analysis: dict[str, Any]) -> str:
    parts = [
        f"{sum(analysis['events_by_type'].values())} events",
        f"{sum(analysis['dropped_by_reason'].values())} dropped messages",
        f"{analysis['rejected_frames']} rejected frames",
    ]
    outcomes = analysis["produce_outcomes"]
    if outcomes:
        parts.append("produce outcomes " + ", ".join(f"{k} {v}" for k, v in outcomes.items()))
        parts.append(f"{len(analysis['isr_changes'])} ISR changes")
        parts.append(f"lost {analysis['lost_acked']}, written twice {analysis['log_duplicates']}")
    if analysis["consumed"] or analysis["skipped"]:
        parts.append(f"consumed {analysis['consumed']}, {group_figures(analysis)}")
    rtt = analysis["ping_rtt_ms"]
    if rtt:
        parts.append(f"ping rtt p50 {rtt['p50']} ms, p99 {rtt['p99']} ms")
    return f"{run_dir}: " + ", ".join(parts)


def _check_run_dir(run_dir: Path, *files: str) -> None:
    if not run_dir.is_dir():
        msg = f"{run_dir}: no such run directory"
        raise RunDirError(msg)
    for name in files:
        if not (run_dir / name).is_file():
            hint = " (run kafkasim analyze on it first)" if name == "analysis.json" else ""
            msg = f"{run_dir}: no {name} in this run directory{hint}"
            raise RunDirError(msg)


def report(run_dir: Path) -> int:
    """The report needs the summary and the event log; Spark's analysis.json adds its tables."""
    _check_run_dir(run_dir, "summary.json", "events.jsonl")
    from sim.analytics.prescan import BadEventLog, check_event_log  # noqa: PLC0415
    from sim.report.page import ANALYSIS_TABLES, write_report  # noqa: PLC0415

    spark = run_dir / "analysis.json"
    analysis = _json_object(spark, "an analysis") if spark.is_file() else None
    for key in ANALYSIS_TABLES if analysis else ():
        if not isinstance(analysis.get(key, {}), dict):
            msg = f"{spark}: not an analysis ({key} is not an object)"
            raise RunDirError(msg)
    try:
        check_event_log(run_dir / "events.jsonl")
    except BadEventLog as exc:
        raise RunDirError(str(exc)) from None
    summary = _checked_summary(run_dir)
    path = write_report(run_dir, summary, analysis)
    sys.stdout.write(f"report written to {path}\n")
    return 0


def _checked_summary(run_dir: Path) -> dict[str, Any]:
    """The run's summary.json, once its event log (each line an event: checked before) is the
    one it describes, by its line count and sha256: a log cut at a line's end, or edited since,
    is named in one line."""
    from sim.report.page import SUMMARY_KEYS  # noqa: PLC0415
    from sim.studies.rundir import log_problem  # noqa: PLC0415

    path = run_dir / "summary.json"
    summary = _json_object(path, "a run summary")
    missing = [key for key in (*SUMMARY_KEYS, "events_digest") if key not in summary]
    if missing:
        msg = f"{path}: not a run summary (no {missing[0]!r})"
        raise RunDirError(msg)
    if not isinstance(summary["events"], int) or not isinstance(summary["events_digest"], str):
        msg = f"{path}: not a run summary (events or events_digest of the wrong type)"
        raise RunDirError(msg)
    problem = log_problem(run_dir / "events.jsonl", summary)
    if problem is not None:
        raise RunDirError(problem)
    return summary


def _json_object(path: Path, what: str) -> dict[str, Any]:
    """A JSON object read from `path`, or RunDirError naming the file."""
    try:
        value = json.loads(path.read_bytes())
    except ValueError as exc:  # bad JSON or bad UTF-8
        msg = f"{path}: not {what} ({exc})"
        raise RunDirError(msg) from None
    if not isinstance(value, dict):
        msg = f"{path}: not {what} (not a JSON object)"
        raise RunDirError(msg)
    return value
