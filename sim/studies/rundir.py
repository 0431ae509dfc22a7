"""A run directory: what a run writes there, how `--out` is checked before it does, and whether
its event log is still the one its summary describes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

__all__ = ["RUN_FILES", "RunDirRefused", "earlier_run", "log_problem", "prepare_run_dir", "read_log_figures", "write_summary"]

RUN_FILES = ("events.jsonl", "scenario.toml", "summary.json", "failure.txt", "analysis.json", "report.html")
"""What a run and its analysis write in a run directory."""


_SUMMARY_SCRATCH = ".summary.json.part"


class RunDirRefused(ValueError):
    """`--out` names a directory a run must not write into."""


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
