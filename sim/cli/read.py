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
    try:
        for run_dir in args.run_dirs:
            check_event_log(run_dir / "events.jsonl")
    except BadEventLog as exc:
        return usage_error(str(exc))
    analyses = _spark_analyses(args.run_dirs, args.master)
    for run_dir, analysis in zip(args.run_dirs, analyses, strict=True):
        (run_dir / "analysis.json").write_text(json.dumps(analysis, indent=2) + "\n")
        if not args.json:
            sys.stdout.write(_analysis_line(run_dir, analysis) + "\n")
    if args.json:
        runs = [{"dir": str(d), **a} for d, a in zip(args.run_dirs, analyses, strict=True)]
        sys.stdout.write(json.dumps({"runs": runs}) + "\n")
    return 0


def _spark_analyses(run_dirs: list[Path], master: str) -> list[dict[str, Any]]:
    """analyze_runs on a session of `master`; Spark's failures become one line."""
    from sim.analytics.jobs import analyze_runs  # noqa: PLC0415 - Spark only when asked

    sys.stderr.write(f"analysing {len(run_dirs)} run(s) on Spark ({master})...\n")
    return on_spark(master, lambda spark: analyze_runs(spark, run_dirs))


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
    from sim.report.page import ANALYSIS_TABLES, SUMMARY_KEYS, write_report  # noqa: PLC0415

    summary = _json_object(run_dir / "summary.json", "a run summary")
    missing = [key for key in SUMMARY_KEYS if key not in summary]
    if missing:
        msg = f"{run_dir / 'summary.json'}: not a run summary (no {missing[0]!r})"
        raise RunDirError(msg)
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
    path = write_report(run_dir, summary, analysis)
    sys.stdout.write(f"report written to {path}\n")
    return 0


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
