"""A sweep's run claims a core of its own: two workers' claims never share one, and the
affinity comes back when the run ends."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from sim.engine.cpu_claim import one_core

pytestmark = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="needs CPU affinity and at least two cores",
)
ALLOWED = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()


def _claim_in_another_worker(lock_dir: Path) -> str:
    """What a claim in another process finds: its core and its affinity inside the claim. The
    child starts on every core, as a Spark worker does (it is not a child of a pinned thread)."""
    code = (
        "import os, sys; from pathlib import Path; from sim.engine.cpu_claim import one_core\n"
        "os.sched_setaffinity(0, {int(c) for c in sys.argv[2].split(',')})\n"
        "with one_core(Path(sys.argv[1])) as core: print(core, sorted(os.sched_getaffinity(0)))"
    )
    cores = ",".join(str(c) for c in sorted(ALLOWED))
    done = subprocess.run([sys.executable, "-c", code, str(lock_dir), cores], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_two_workers_take_two_cores_and_give_them_back(tmp_path: Path) -> None:
    allowed = os.sched_getaffinity(0)
    first_core, second_core = sorted(allowed)[:2]
    with one_core(tmp_path) as core:
        assert core == first_core
        assert os.sched_getaffinity(0) == {first_core}
        assert _claim_in_another_worker(tmp_path) == f"{second_core} [{second_core}]"
    assert os.sched_getaffinity(0) == allowed  # a claim restores what it found
    assert _claim_in_another_worker(tmp_path) == f"{first_core} [{first_core}]"  # released


def test_threads_started_inside_a_claim_run_on_its_core(tmp_path: Path) -> None:
    seen: list[set[int]] = []
    with one_core(tmp_path) as core:
        thread = threading.Thread(target=lambda: seen.append(os.sched_getaffinity(0)))
        thread.start()
        thread.join()
    assert core is not None
    assert seen == [{core}]


def test_with_every_core_taken_a_run_goes_unpinned(tmp_path: Path) -> None:
    allowed = os.sched_getaffinity(0)
    handles = []
    for core in allowed:  # other workers hold every core
        handle = (tmp_path / f"kafkasim-core-{core}.lock").open("a")
        fcntl.flock(handle, fcntl.LOCK_EX)
        handles.append(handle)
    try:
        assert _claim_in_another_worker(tmp_path) == f"None {sorted(allowed)}"
    finally:
        for handle in handles:
            handle.close()
