"""A run directory: what a run writes there, how `--out` is checked before it does (the rules
live beside the Python API, which writes run directories too: `sim.cluster.rundir`), and
whether its event log is still the one its summary describes."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from sim.cluster.rundir import RUN_FILES, RunDirRefused, earlier_run, prepare_run_dir, write_summary

__all__ = ["RUN_FILES", "RunDirRefused", "earlier_run", "log_problem", "prepare_run_dir", "read_log_figures", "write_summary"]


def read_log_figures(path: Path) -> tuple[int, str]:
    """The lines of an event log and its sha256, as the run counted them (`EventLog`): a last
    line without its end of line does not count."""
    digest, lines = hashlib.sha256(), 0
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
            lines += chunk.count(b"\n")
    return lines, digest.hexdigest()


def log_problem(events_path: Path, summary: dict[str, Any]) -> str | None:
    """What tells that `events_path` is no longer the log its run wrote, or None: fewer lines
    than the summary's `events` (cut, at a line's end or within one), more, or the same count
    with another sha256 than its `events_digest`."""
    lines, digest = read_log_figures(events_path)
    expected = summary["events"]
    if lines != expected:
        how = "cut" if lines < expected else "altered"
        return f"{events_path}: {lines:,} events, summary.json says {expected:,}: the log was {how}"
    if digest != summary["events_digest"]:
        return f"{events_path}: digest differs from summary.json: the log was altered"
    return None
