"""Hosts: where an `ActorRuntime` runs.

`PykkaHost` gives each simulated actor its own Pykka `ThreadingActor` (a daemon thread, so a
failed run can never hang the process). It is a thin adapter with no protocol logic: it receives
a window's deliveries as one message and puts the runtime's `WindowResult` into the window's
`Batch`, so there is one thread hand-off per actor per window, not one per event; the actor
putting in the last result runs the kernel's next step itself (`Batch.on_complete`), so the
kernel's thread is not woken between windows (measured: the cost of a simulation is the number
of thread hand-offs; docs/performance.md).

`DirectHost` runs the same runtime in the caller's thread. It is the reference the Pykka path is
measured against by `kafkasim bench`, never a second way the product runs.

Results land in the batch by slot, and the kernel reads the slots in its fixed actor order, so
actors of one window run concurrently while the merged result cannot depend on which thread
finished first.

`SingleCpu` pins the kernel's thread, and so every actor thread it starts (Linux threads inherit
their creator's affinity and scheduling policy), to one CPU. Under the GIL only one of them runs
Python at a time anyway; on one CPU a hand-off is a cheap local switch instead of the GIL
migrating between cores, which measured 40 us against 16 us per hop here, and made the per-hop
cost grow with the work done. It also puts them under `SCHED_BATCH`: a thread woken by a
hand-off then waits for the one that woke it to block, instead of preempting it only to find
the GIL held and sleep again (a minute of the standard workload: 321,000 context switches, 40
per cent of them involuntary, against 121,000, one per hop). Nothing the simulation can see
depends on it.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

import pykka

from actors.runtime import ActorRuntime, Delivery, WindowResult

__all__ = ["Batch", "DirectHost", "Host", "PykkaHost", "SingleCpu", "wait_stopped"]


class SingleCpu:
    """Pins the calling thread (and the threads it starts) to one CPU, under `SCHED_BATCH`,
    until `release()`.

    The CPU is picked from the allowed set by process id, so parallel simulations (a sweep's
    executors) spread over the cores. Where affinity or the policy is not supported, that part
    does nothing.
    """

    def __init__(self) -> None:
        self._previous: set[int] | None = None
        self._policy: int | None = None
        if hasattr(os, "sched_setaffinity"):
            allowed = sorted(os.sched_getaffinity(0))
            if len(allowed) > 1:
                self._previous = set(allowed)
                os.sched_setaffinity(0, {allowed[os.getpid() % len(allowed)]})
        if hasattr(os, "SCHED_BATCH"):
            try:
                policy = os.sched_getscheduler(0)
                if policy == os.SCHED_OTHER:
                    os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
                    self._policy = policy
            except OSError:  # not permitted here: hand-offs only cost more
                pass

    def release(self) -> None:
        if self._previous is not None:
            os.sched_setaffinity(0, self._previous)
            self._previous = None
        if self._policy is not None:
            os.sched_setscheduler(0, self._policy, os.sched_param(0))
            self._policy = None


class Batch:
    """The results of one window, one slot per busy actor.

    The thread that puts in the last result calls `on_complete` (the kernel's relay). A host
    that runs in the kernel's own thread `put`s its result instead: it is in when `submit`
    returns, so there is nothing to count, lock or wake."""

    __slots__ = ("_lock", "_remaining", "on_complete", "results")

    def __init__(self, size: int) -> None:
        self._lock = threading.Lock()
        self.on_complete: Callable[[], None] | None = None
        self.reset(size)

    def reset(self, size: int) -> None:
        """Make ready for a window of `size` slots (only once every slot of the last is in)."""
        self.results: list[WindowResult | BaseException | None] = [None] * size
        self._remaining = size

    def complete(self, slot: int, result: WindowResult | BaseException) -> None:
        self.results[slot] = result
        with self._lock:
            self._remaining -= 1
            last = self._remaining == 0
        if last and self.on_complete is not None:
            self.on_complete()

    def put(self, slot: int, result: WindowResult | BaseException) -> None:
        """A result from the kernel's own thread (`DirectHost`)."""
        self.results[slot] = result


class _RunWindow(NamedTuple):
    start_ms: int
    end_ms: int
    deliveries: list[Delivery]
    batch: Batch
    slot: int


class _Snapshot(NamedTuple):
    now_ms: int


class _Pausing(NamedTuple):
    now_ms: int


class Host(Protocol):
    """Runs one actor's windows, putting each result into the window's batch."""

    def submit(
        self, start_ms: int, end_ms: int, deliveries: list[Delivery], batch: Batch, slot: int
    ) -> None: ...

    def snapshot(self, now_ms: int) -> dict[str, Any]: ...

    def pausing(self, now_ms: int) -> int | None:
        """The node is paused from `now_ms`: `ActorRuntime.pausing`, between windows."""
        ...

    def stop(self) -> Any:
        """Begin stopping; returns something to `wait_stopped` on (or None)."""
        ...


def wait_stopped(pending: list[Any]) -> None:
    """Wait for every stop begun by `Host.stop` (stop them all first: they stop in parallel)."""
    for future in pending:
        if future is not None:
            future.get()


class _Ident(NamedTuple):
    pass


class _PykkaActor(pykka.ThreadingActor):
    use_daemon_thread = True

    @staticmethod
    def _create_actor_inbox() -> queue.SimpleQueue[Any]:
        """The inbox as the C `SimpleQueue` (put, get and empty are all Pykka uses): a window's
        hand-off no longer runs `queue.Queue`'s condition variables in Python on both sides."""
        return queue.SimpleQueue()

    def __init__(self, runtime: ActorRuntime) -> None:
        super().__init__()
        self._runtime = runtime

    def on_receive(self, message: Any) -> Any:
        if isinstance(message, _RunWindow):
            try:
                result: WindowResult | BaseException = self._runtime.run_window(
                    message.start_ms, message.end_ms, message.deliveries
                )
            except Exception as exc:  # noqa: BLE001 - handed to the kernel, which fails the run
                result = exc
            message.batch.complete(message.slot, result)
            return None
        if isinstance(message, _Snapshot):
            return self._runtime.snapshot(message.now_ms)
        if isinstance(message, _Pausing):
            return self._runtime.pausing(message.now_ms)
        if isinstance(message, _Ident):
            return threading.get_ident()
        return super().on_receive(message)


class PykkaHost:
    """One Pykka `ThreadingActor` per simulated actor."""

    __slots__ = ("_ref", "_runtime", "_thread")

    def __init__(self, runtime: ActorRuntime) -> None:
        self._ref = _PykkaActor.start(runtime)
        self._runtime = runtime
        self._thread: int = self._ref.ask(_Ident())

    def submit(
        self, start_ms: int, end_ms: int, deliveries: list[Delivery], batch: Batch, slot: int
    ) -> None:
        self._ref.tell(_RunWindow(start_ms, end_ms, deliveries, batch, slot))

    # Between windows the kernel's relay may run on this actor's own thread (a run's stop
    # condition asking for a snapshot): asking itself would wait forever, and its runtime is
    # idle there, so it is called directly.

    def snapshot(self, now_ms: int) -> dict[str, Any]:
        if threading.get_ident() == self._thread:
            return self._runtime.snapshot(now_ms)
        return self._ref.ask(_Snapshot(now_ms))

    def pausing(self, now_ms: int) -> int | None:
        if threading.get_ident() == self._thread:
            return self._runtime.pausing(now_ms)
        return self._ref.ask(_Pausing(now_ms))

    def stop(self) -> Any:
        return self._ref.stop(block=False) if self._ref.is_alive() else None


class DirectHost:
    """The same runtime, called in the kernel's own thread."""

    __slots__ = ("_runtime",)

    def __init__(self, runtime: ActorRuntime) -> None:
        self._runtime = runtime

    def submit(
        self, start_ms: int, end_ms: int, deliveries: list[Delivery], batch: Batch, slot: int
    ) -> None:
        try:
            result: WindowResult | BaseException = self._runtime.run_window(
                start_ms, end_ms, deliveries
            )
        except Exception as exc:  # noqa: BLE001 - as under Pykka: the kernel fails the run
            result = exc
        batch.put(slot, result)

    def snapshot(self, now_ms: int) -> dict[str, Any]:
        return self._runtime.snapshot(now_ms)

    def pausing(self, now_ms: int) -> int | None:
        return self._runtime.pausing(now_ms)

    def stop(self) -> None:
        return None
