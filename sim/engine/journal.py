"""The event log as the kernel writes it: its own lines, the observers, and the failures.

The kernel logs the facts of the simulation itself (node `sim`, actor `kernel`): faults, nodes
started and stopped, dropped messages. Its lines wait in one `ActorLog` until the kernel merges
them with the actors' (`sim.engine.windows`) or writes them between windows. Every line written
goes to the event log and then, in log order, to each observer (the invariants); a violation
is logged right after the event that broke it and stops the run unless the run only reports
violations. An actor's handler that raised stops the run too, after what happened before it.
Either way the run ends in `SimulationFailed`, naming the seed and the event.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any

from actors.core import Address
from actors.runtime import HandlerError, WindowResult
from sim.engine.eventlog import EventLog
from sim.engine.nodes import KERNEL
from sim.engine.trace import ActorLog, TraceContext

Observer = Callable[[dict[str, Any]], Any]
"""Called with every event in log order; may return violations (objects with `invariant`,
`ts_ms`, `node`, `detail` and `as_dict()`), which the kernel logs and, unless the run only
reports them, fails the run on."""

ts_of = attrgetter("ts_ms")
"""The time of a log line or a send: the order they are merged in."""


class SimulationFailed(Exception):
    """An actor's handler raised, or an invariant broke: the run stops, naming seed and event."""

    def __init__(self, seed: int, ts_ms: int, where: str, what: str, detail: str) -> None:
        super().__init__(
            f"simulation failed (seed {seed}) at {ts_ms} ms in {where} handling {what}: {detail}"
        )
        self.seed = seed
        self.ts_ms = ts_ms
        self.where = where
        self.what = what
        self.detail = detail


class Journal:
    """Writes the event log: the kernel's own lines, the actors' merged ones, and what the
    observers find in them."""

    def __init__(self, trace: TraceContext, seed: int, event_log: EventLog) -> None:
        self.seed = seed
        self.event_log = event_log
        self.observers: list[Observer] = []
        self.fail_on_violation = True
        self.invariant_violations: list[dict[str, Any]] = []
        self._ts = 0
        self.lines = ActorLog(trace, KERNEL.node, KERNEL.actor, lambda: self._ts)
        """The kernel's lines not yet written: `take()` them to merge or write them."""

    def emit(self, ts_ms: int, event: str, **fields: Any) -> None:
        """Log a fact of the simulation itself at `ts_ms`."""
        self._ts = ts_ms
        self.lines.emit(event, fields)

    def write(self, lines: Any) -> None:
        log = self.event_log
        observers = self.observers
        for line in lines:
            log.write(line.line)
            for observer in observers:
                violations = observer(line.event)
                if violations:
                    self._violated(violations)

    def _violated(self, violations: list[Any]) -> None:
        """Log each violation right after the event that broke it; fail the run unless the
        scenario only reports violations (a study of an unsafe configuration)."""
        for v in violations:
            self.invariant_violations.append(v.as_dict())
            self.emit(
                v.ts_ms, "invariant_violated", invariant=v.invariant, target=v.node, detail=v.detail
            )
        for line in self.lines.take():
            self.event_log.write(line.line)
        if self.fail_on_violation:
            first = violations[0]
            self.event_log.flush()
            raise SimulationFailed(
                self.seed, first.ts_ms, first.node, f"invariant {first.invariant}", first.detail
            )

    def fail(self, results: list[tuple[Address, WindowResult]], failures: list[HandlerError]) -> None:
        """Write what happened up to the first failure, then the failure; raise."""
        first = min(failures, key=lambda f: (f.ts_ms, f.address))
        before = [line for _, r in results for line in r.lines if line.ts_ms <= first.ts_ms]
        before += first.partial.lines
        before += [line for line in self.lines.take() if line.ts_ms <= first.ts_ms]
        before.sort(key=ts_of)
        self.emit(
            first.ts_ms,
            "simulation_failed",
            target=str(first.address),
            handling=first.what,
            error=first.detail,
        )
        self.write([*before, *self.lines.take()])
        self.event_log.flush()
        raise SimulationFailed(self.seed, first.ts_ms, str(first.address), first.what, first.detail)
