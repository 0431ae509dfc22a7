"""The kernel's `SingleCpu`: the simulation's threads share one CPU under `SCHED_BATCH` while
it is held, and the thread gets back what it had when it is released."""

from __future__ import annotations

import os
import threading

import pytest

from actors.host import SingleCpu

pytestmark = pytest.mark.skipif(
    not hasattr(os, "SCHED_BATCH") or len(os.sched_getaffinity(0)) < 2,
    reason="needs Linux scheduling policies and at least two cores",
)


def _in_a_thread() -> dict[str, object]:
    """What a kernel's thread sees: inside the hold, in a thread it starts, and after."""
    seen: dict[str, object] = {}

    def kernel_thread() -> None:
        seen["before"] = (os.sched_getaffinity(0), os.sched_getscheduler(0))
        cpu = SingleCpu()
        seen["held"] = (os.sched_getaffinity(0), os.sched_getscheduler(0))
        actor = threading.Thread(
            target=lambda: seen.__setitem__("actor", (os.sched_getaffinity(0), os.sched_getscheduler(0)))
        )
        actor.start()
        actor.join()
        cpu.release()
        seen["after"] = (os.sched_getaffinity(0), os.sched_getscheduler(0))

    thread = threading.Thread(target=kernel_thread)
    thread.start()
    thread.join()
    return seen


def test_held_one_cpu_under_sched_batch_inherited_and_given_back() -> None:
    seen = _in_a_thread()
    before_cpus, before_policy = seen["before"]
    held_cpus, held_policy = seen["held"]
    assert before_policy == os.SCHED_OTHER
    assert len(held_cpus) == 1 and held_cpus <= before_cpus
    assert held_policy == os.SCHED_BATCH
    assert seen["actor"] == (held_cpus, os.SCHED_BATCH)  # Linux threads inherit both
    assert seen["after"] == (before_cpus, os.SCHED_OTHER)
