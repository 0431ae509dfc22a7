"""A run directory: what a run writes there, and how `--out` is checked before it does."""

from __future__ import annotations

from pathlib import Path

__all__ = ["RUN_FILES", "RunDirRefused", "prepare_run_dir"]

RUN_FILES = ("events.jsonl", "scenario.toml", "summary.json", "failure.txt", "analysis.json", "report.html")
"""What a run and its analysis write in a run directory."""


class RunDirRefused(ValueError):
    """`--out` names a directory a run must not write into."""


def prepare_run_dir(out_dir: Path) -> None:
    """Create `out_dir`, or empty it of an earlier run's files. A directory with other files
    and no run in it is refused: it is likely not meant for this (a typo in `--out`)."""
    if out_dir.exists() and not out_dir.is_dir():
        msg = f"--out {out_dir}: exists and is not a directory"
        raise RunDirRefused(msg)
    if out_dir.is_dir():
        present = sorted(p.name for p in out_dir.iterdir())
        if present and not any(name in RUN_FILES for name in present):
            msg = f"--out {out_dir}: not empty and holds no run (found {', '.join(present[:3])}); choose another directory"
            raise RunDirRefused(msg)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for name in RUN_FILES:
            (out_dir / name).unlink(missing_ok=True)
        probe = out_dir / ".kafkasim-write-check"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        msg = f"--out {out_dir}: cannot write there ({exc.strerror or exc})"
        raise RunDirRefused(msg) from None
