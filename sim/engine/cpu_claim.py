"""One core per simulation run in a sweep's Python worker.

A run on the Pykka host is a chain of thread hand-offs: the kernel wakes an actor's thread and
waits for its answer. Two such runs in two Spark workers of a two-core machine each took twice
their CPU time in wall time, where two runs started side by side from a shell did not: in the
worker, a woken thread waited for the core the other run held. Pinned to a core of its own, each
run's threads hand off on that core, and the runs scale (docs/performance.md, "Sweeps on Spark").

A claim is an exclusive lock on one file per core, so the workers of one machine take different
cores; when every core is taken (more task slots than cores), the run goes unpinned. Pinning
changes when threads run, never what they compute: the event log is the same.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["one_core"]


@contextlib.contextmanager
def one_core(lock_dir: Path | None = None) -> Iterator[int | None]:
    """Pin the calling thread (and every thread it starts) to a core no other claim holds, for
    the `with` block; yields the core, or None when none was free or pinning is not possible."""
    allowed = os.sched_getaffinity(0) if hasattr(os, "sched_setaffinity") else set()
    if len(allowed) < 2:  # noqa: PLR2004 - one core: nothing to choose
        yield None
        return
    folder = lock_dir or Path(tempfile.gettempdir())
    for core in sorted(allowed):
        try:
            handle = (folder / f"kafkasim-core-{core}.lock").open("a")
        except OSError:
            continue
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        try:
            os.sched_setaffinity(0, {core})
            yield core
        finally:
            os.sched_setaffinity(0, allowed)
            handle.close()
        return
    yield None
