"""A run directory: what a run writes there, its summary, and how a directory is checked
before a run writes into it. The runner (`sim.studies.runner`) and the Python API
(`Cluster.write_run`) both write run directories through this module."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from sim.cluster.anomalies import AnomalyChecks
from sim.cluster.scenario import Scenario
from sim.engine.kernel import Kernel
from sim.engine.trace import LOG_SCHEMA_VERSION

__all__ = [
    "RUN_FILES", "ClusterError", "RunDirRefused", "build_summary", "earlier_run", "prepare_for_api", "prepare_run_dir",
    "write_run_dir", "write_summary",
]

RUN_FILES = ("events.jsonl", "scenario.toml", "summary.json", "failure.txt", "analysis.json", "report.html")
"""What a run and its analysis write in a run directory."""


class RunDirRefused(ValueError):
    """`--out` names a directory a run must not write into."""


class ClusterError(ValueError):
    """A call the Python API cannot answer as asked (the state of a stopped node, a run
    directory without an event log): one sentence that says what is valid."""


_SUMMARY_SCRATCH = ".summary.json.part"


def prepare_run_dir(out_dir: Path) -> str | None:
    """Create `out_dir`, or empty it of an earlier run's files, and return that run's id (None
    when there was none). A directory with other files and no run in it is refused: it is
    likely not meant for this (a typo in `--out`)."""
    if out_dir.exists() and not out_dir.is_dir():
        msg = f"--out {out_dir}: exists and is not a directory"
        raise RunDirRefused(msg)
    if out_dir.is_dir():
        present = sorted(p.name for p in out_dir.iterdir())
        if present and not any(name in RUN_FILES for name in present):
            msg = f"--out {out_dir}: not empty and holds no run (found {', '.join(present[:3])}); choose another directory"
            raise RunDirRefused(msg)
    replaced = earlier_run(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for name in (*RUN_FILES, _SUMMARY_SCRATCH):
            (out_dir / name).unlink(missing_ok=True)
        probe = out_dir / ".kafkasim-write-check"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        msg = f"--out {out_dir}: cannot write there ({exc.strerror or exc})"
        raise RunDirRefused(msg) from None
    return replaced


def earlier_run(out_dir: Path) -> str | None:
    """The run_id of the run `out_dir` holds: its summary's, else its log's first line's (a
    run stopped before its summary), else "" (it left neither). None when it holds no run file."""
    if not out_dir.is_dir() or not any((out_dir / name).exists() for name in RUN_FILES):
        return None
    for path, read in (
        (out_dir / "summary.json", lambda f: json.load(f)),
        (out_dir / "events.jsonl", lambda f: json.loads(f.readline())),
    ):
        try:
            with path.open("rb") as f:
                run_id = read(f).get("run_id")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(run_id, str):
            return run_id
    return ""


def write_summary(out_dir: Path, summary: dict[str, Any]) -> None:
    """summary.json, written whole or not at all (renamed into place): a run directory with a
    summary is a run that ended, which `--resume` and the sweep's tables rely on."""
    scratch = out_dir / _SUMMARY_SCRATCH
    scratch.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    scratch.replace(out_dir / "summary.json")


def build_summary(scenario: Scenario, kernel: Kernel, wall_s: float) -> dict[str, Any]:
    """The public summary: every key of docs/run-directory.md, in that order."""
    return {
        "run_id": kernel.trace.run_id,
        "scenario": scenario.name,
        "kafka_version": scenario.profile.name,
        "log_schema_version": LOG_SCHEMA_VERSION,
        "seed": scenario.seed,
        "sim_ms": kernel.now_ms,
        "wall_s": round(wall_s, 3),
        "events": kernel.event_log.count,
        "events_digest": kernel.event_log.digest,
        "deliveries": kernel.delivered,
        "dropped_messages": kernel.dropped,
        "produced": 0,
        "acked": 0,
        "lost_acked": 0,
        "reused_offsets": 0,
        "log_duplicates": 0,
        "consumed": 0,
        "duplicates": 0,
        "duplicates_by_cause": {},
        "duplicate_spans": [],
        "skipped": 0,
        "skipped_by_cause": {},
        "skip_spans": [],
        "processed_then_lost": 0,
        "anomalies": AnomalyChecks().figures()["anomalies"],
        "anomaly_cases": [],
        "rebalances": 0,
        "consumer_failures": [],
        "invariant_violations": list(kernel.invariant_violations),
        "diverged_replicas": [],
        "lost_records": [],
        "duplicated_records": [],
        "rejected_frames": kernel.rejected_frames,
        "interrupted": False,
        "failure": None,
    }


def prepare_for_api(out_dir: Path) -> None:
    """`prepare_run_dir` for the Python API, whose refusals name the directory, not `--out`."""
    try:
        prepare_run_dir(out_dir)
    except RunDirRefused as exc:
        raise RunDirRefused(str(exc).replace("--out ", "run directory ", 1)) from None


def write_run_dir(
    out: Path,
    scenario: Scenario,
    summary: dict[str, Any],
    events: Path | None,
    *,
    in_place: bool,
    failure: str | None,
    report: bool,
) -> Path:
    """The run directory of `Cluster.write_run`: in place (the cluster's `run_dir`, which
    holds its log and scenario already), or a new one with the log copied from `events`."""
    if not in_place:
        if events is None:
            msg = (
                f"write_run({str(out)!r}): this cluster kept no event log; create it with "
                "run_dir=PATH (or events_path=PATH) to write a run directory"
            )
            raise ClusterError(msg)
        prepare_for_api(out)
        shutil.copyfile(events, out / "events.jsonl")
        (out / "scenario.toml").write_text(scenario.to_toml(), encoding="utf-8")
    for stale in ("failure.txt", "analysis.json", "report.html"):  # of an earlier write_run
        (out / stale).unlink(missing_ok=True)
    if failure is not None:
        (out / "failure.txt").write_text(failure, encoding="utf-8")
    write_summary(out, summary)
    if report:
        from sim.report.page import write_report  # noqa: PLC0415 - matplotlib only when asked

        write_report(out, summary)
    return out
