"""A run directory: what a run writes there, and how `--out` is checked before it does. The
rules live beside the Python API, which writes run directories too (`sim.cluster.rundir`)."""

from __future__ import annotations

from sim.cluster.rundir import RUN_FILES, RunDirRefused, prepare_run_dir

__all__ = ["RUN_FILES", "RunDirRefused", "prepare_run_dir"]
