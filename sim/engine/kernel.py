"""The simulation kernel: virtual time and the order of events; its public API and run loop.

Time is integer milliseconds. The kernel advances it in *lookahead windows*: a window starts at
the next event and is at most the network's minimum latency long, so nothing sent inside it can
arrive inside it. Every actor with something to do in the window gets all of it in one hand-off
(`actors.runtime`); the kernel submits to all busy actors, then collects from them in address
order, and merges what they did (log lines, sends, disk writes) by `(time, address, sequence)`
(`sim.engine.windows`). Under Pykka the thread of the actor that finishes a window last runs
that merge and opens the next window (`_relay`); only what must not run on an actor's thread
comes back to `run`'s. That order, and the network's seeded draws made in it, are all that
decide the next window: the same scenario and seed give a byte-identical event log, whatever
the threads did.

Kernel events (faults, crashes, restarts, API actions) run between windows, before any actor
event at the same millisecond; a window never spans one. What a crash, a stop, a restart or a
pause does to a node is `sim.engine.lifecycle`'s; what the kernel writes to the event log, and
how a failure or a broken invariant stops the run, `sim.engine.journal`'s.
"""

from __future__ import annotations

import heapq
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple

from actors.core import Address
from actors.host import Host, SingleCpu
from sim.engine.disk import CrashKind, Disk
from sim.engine.eventlog import EventLog
from sim.engine.journal import Journal, Observer, SimulationFailed
from sim.engine.lifecycle import Nodes
from sim.engine.network import LinkFault, Network, NetworkConfig
from sim.engine.nodes import ActorSpec, HostKind, Node, NodeSpec, Wrap, derive_seed
from sim.engine.trace import TraceContext
from sim.engine.windows import Windows

__all__ = [
    "ActorSpec",
    "HostKind",
    "Kernel",
    "NodeSpec",
    "SimulationFailed",
    "StopReason",
    "Wrap",
    "derive_seed",
]


class StopReason(StrEnum):
    UNTIL = "until"
    CONDITION = "condition"
    EVENT_LIMIT = "event_limit"


class Kernel:
    """Owns virtual time and the order of events; hosts every actor."""

    def __init__(
        self,
        *,
        seed: int,
        run_id: str,
        network: NetworkConfig,
        host: HostKind = HostKind.PYKKA,
        event_log: EventLog | None = None,
        wrap: Wrap | None = None,
    ) -> None:
        """`wrap`, if given, is applied to every behaviour as its actor starts (a generic hook:
        the cluster logs the protocol's requests with it)."""
        self.seed = seed
        self.trace = TraceContext(run_id, seed)
        self.now_ms = 0
        self.network = Network(network, random.Random(derive_seed(seed, "network")))
        self._lookahead_ms = self.network.lookahead_ms
        event_log = event_log if event_log is not None else EventLog()
        self._journal = Journal(self.trace, seed, event_log)
        self._host_kind = host
        self._cpu = SingleCpu() if host is HostKind.PYKKA else None
        records: dict[str, Node] = {}
        self._hosts: dict[Address, Host] = {}
        self._windows = Windows(records, self._hosts, self.network, self._journal)
        self._nodes = Nodes(
            records, self._hosts, self._windows, self._journal,
            seed=seed, trace=self.trace, host=host, schedule=self.schedule, wrap=wrap,
        )
        self._kernel_events: list[tuple[int, int, str, Callable[[], None]]] = []
        self._relay_goal = _Goal(0)
        self._relay_out: tuple[int, int] | StopReason | BaseException | _Exits | None = None
        self._relay_done = threading.Lock()
        self._relay_done.acquire()  # released by the relay's last step, taken back by `run`

    # ----------------------------------------------------------------- the log and the counts

    @property
    def event_log(self) -> EventLog:
        return self._journal.event_log

    @event_log.setter
    def event_log(self, event_log: EventLog) -> None:
        self._journal.event_log = event_log

    @property
    def fail_on_violation(self) -> bool:
        """False when the run only reports invariant violations (a study of an unsafe
        configuration)."""
        return self._journal.fail_on_violation

    @fail_on_violation.setter
    def fail_on_violation(self, fail: bool) -> None:
        self._journal.fail_on_violation = fail

    @property
    def invariant_violations(self) -> list[dict[str, Any]]:
        return self._journal.invariant_violations

    @property
    def delivered(self) -> int:
        return self._windows.delivered

    @property
    def handled(self) -> int:
        """Handler calls: deliveries and timers."""
        return self._windows.handled

    @property
    def rejected_frames(self) -> int:
        return self._windows.rejected_frames

    @property
    def dropped(self) -> int:
        return self._windows.dropped

    @property
    def windows(self) -> int:
        """Windows opened."""
        return self._windows.opened

    def emit(self, event: str, **fields: Any) -> None:
        """Log a fact of the simulation itself (node `sim`, actor `kernel`) at the current time."""
        self._journal.emit(self.now_ms, event, **fields)

    def observe(self, observer: Observer) -> None:
        """Call `observer` with every event, in log order, as it is written."""
        self._journal.observers.append(observer)

    # ----------------------------------------------------------------- nodes and actors

    def add_node(self, spec: NodeSpec, disk: Disk | None = None) -> None:
        """Add a node and start its actors now, from `disk` if given (a prepared state)."""
        self._nodes.add(spec, disk, self.now_ms)

    @property
    def nodes(self) -> list[str]:
        return sorted(self._nodes.records)

    def addresses(self) -> list[Address]:
        """Every live actor, in the kernel's fixed order."""
        return sorted(self._hosts)

    def is_up(self, node: str) -> bool:
        return self._nodes.get(node).up

    def disk(self, node: str) -> Disk:
        return self._nodes.get(node).disk

    def snapshot(self, address: Address) -> dict[str, Any]:
        """The actor's state as plain data (between windows only)."""
        return self._hosts[address].snapshot(self.now_ms)

    def tell(self, actor: Address, message: Any, *, log: bool = True) -> bool:
        """Hand `actor` a call from the application around it (a consumer's `close()`), now,
        before its other events of this millisecond. False if it is not up to hear it.
        `log=False` leaves it out of the log: a script's own bookkeeping, not a fact of the run."""
        if not self._windows.call(self.now_ms, actor, message):
            return False
        if log:
            self.emit("application_called", target=str(actor), action=getattr(message, "action", ""))
        return True

    # ----------------------------------------------------------------- faults and actions

    def schedule(self, at_ms: int, description: str, action: Callable[[], None]) -> None:
        """Run `action` at `at_ms`, before any actor event of that millisecond."""
        if at_ms < self.now_ms:
            msg = f"cannot schedule {description} at {at_ms} ms: it is already {self.now_ms} ms"
            raise ValueError(msg)
        windows = self._windows  # one sequence for the envelopes and the kernel events
        windows.seq += 1
        heapq.heappush(self._kernel_events, (at_ms, windows.seq, description, action))

    def apply_due(self) -> None:
        """Run the kernel events scheduled for now (an API call's fault takes effect at once)."""
        if self._kernel_events and self._kernel_events[0][0] <= self.now_ms:
            self._run_kernel_events(self.now_ms)

    def crash(self, node: str, kind: CrashKind = CrashKind.PROCESS) -> None:
        self._nodes.take_down(node, kind, self.now_ms, "node_crashed")

    def stop(self, node: str) -> None:
        """The node's process exits of its own accord (its application closed its clients
        first): for its peers, as a process crash (its operating system closes its
        connections); logged as `node_stopped`."""
        self._nodes.take_down(node, CrashKind.PROCESS, self.now_ms, "node_stopped")

    def restart_after_exit(self, node: str, after_ms: int) -> None:
        """Restart `node` `after_ms` after its process next exits on its own (a broker's
        shutdown, whose end depends on the controller's answers)."""
        self._nodes.get(node).restart_after_exit_ms = after_ms

    def restart(self, node: str) -> None:
        self._nodes.restart(node, self.now_ms)

    def pause(self, node: str, duration_ms: int) -> None:
        self._nodes.pause(node, self.now_ms, duration_ms)

    def partition(self, side_a: list[str], side_b: list[str], *, one_way: bool = False) -> None:
        for name in [*side_a, *side_b]:
            self._nodes.get(name)
        self.network.partition(side_a, side_b, one_way=one_way)
        self._windows.hold_in_flight()
        self.emit(
            "network_partitioned", side_a=sorted(side_a), side_b=sorted(side_b), one_way=one_way
        )

    def lift(self, side_a: list[str], side_b: list[str], *, one_way: bool = False) -> None:
        """Lift the partition `partition(side_a, side_b, one_way)` made, and no other; what the
        links it opens held goes on."""
        opened = self.network.lift(side_a, side_b, one_way=one_way)
        released = self._windows.release(self.now_ms, opened)
        self.emit(
            "network_partition_lifted",
            side_a=sorted(side_a),
            side_b=sorted(side_b),
            one_way=one_way,
            released=released,
        )

    def heal(self) -> None:
        """Lift every partition; what the links held goes on."""
        released = self._windows.release(self.now_ms, self.network.heal())
        self.emit("network_healed", released=released)

    def add_link_fault(self, fault: LinkFault) -> None:
        self.network.add_fault(fault)
        self.emit(
            "link_fault_added",
            kind=str(fault.kind),
            src=sorted(fault.src),
            dst=sorted(fault.dst),
            probability=fault.probability,
            delay_ms=fault.delay_ms,
            end_ms=fault.end_ms,
        )

    # ----------------------------------------------------------------- running

    def run(
        self,
        until_ms: int,
        *,
        condition: Callable[[], bool] | None = None,
        max_events: int | None = None,
    ) -> StopReason:
        """Process every event before `until_ms`, or stop early when `condition()` holds
        (checked after each window) or when `max_events` handler calls have run."""
        goal = _Goal(until_ms, condition, max_events)
        step = self._next_step(goal)
        while True:
            if step is None:
                self._run_kernel_events(self.now_ms)
            elif isinstance(step, StopReason):
                if step is StopReason.UNTIL:
                    self.now_ms = max(self.now_ms, until_ms)
                    self._journal.write(self._journal.lines.take())
                return step
            elif self._host_kind is HostKind.PYKKA:
                step = self._relay_windows(goal, step)
                continue
            else:
                step = self._direct_windows(goal, step)
                continue
            step = self._next_step(goal)

    def _run_kernel_events(self, at_ms: int) -> None:
        while self._kernel_events and self._kernel_events[0][0] <= at_ms:
            _, _, _, action = heapq.heappop(self._kernel_events)
            action()
        self._journal.write(self._journal.lines.take())

    def _direct_windows(self, goal: _Goal, step: tuple[int, int]) -> StopReason | None:
        """Run windows from `step` on in this thread, a direct host's results being in when
        it returns, until a step is not a window; return that step."""
        windows = self._windows
        while type(step) is tuple:
            start, end = step
            windows.open(start, end)
            exits = windows.close()
            if exits:
                self._finish(exits, end)
            else:
                self.now_ms = end
            step = self._next_step(goal)
        return step

    def _next_step(self, goal: _Goal) -> tuple[int, int] | StopReason | None:
        """What comes after the last window: the next window `(start, end)`, a reason to stop,
        or None when kernel events are due now (the time is then theirs)."""
        if goal.condition is not None and goal.condition():
            return StopReason.CONDITION
        if goal.max_events is not None and self._windows.handled >= goal.max_events:
            return StopReason.EVENT_LIMIT
        start = self._windows.next_event_ms()
        kernel_events = self._kernel_events
        if kernel_events and (start is None or kernel_events[0][0] < start):
            start = kernel_events[0][0]
        if start is None or start >= goal.until_ms:
            return StopReason.UNTIL
        self.now_ms = start
        if kernel_events and kernel_events[0][0] == start:
            return None
        end = start + self._lookahead_ms
        if end > goal.until_ms:
            end = goal.until_ms
        if kernel_events and kernel_events[0][0] < end:
            end = kernel_events[0][0]
        return start, end

    def _finish(self, exits: list[tuple[str, int]], end_ms: int) -> None:
        for node, ts_ms in exits:  # after the window's lines: the exit is logged after what led to it
            self._exited(node, ts_ms)
        self.now_ms = end_ms

    def _exited(self, node: str, ts_ms: int) -> None:
        """A process exited on purpose (`Out.exit`): down as after a process crash, logged as
        a stop."""
        state = self._nodes.get(node)
        self._nodes.take_down(node, CrashKind.PROCESS, ts_ms, "node_stopped")
        after, state.restart_after_exit_ms = state.restart_after_exit_ms, None
        if after is not None:
            self.schedule(ts_ms + after, f"restart {node}", lambda: self.restart(node))

    def _relay_windows(self, goal: _Goal, first: tuple[int, int]) -> tuple[int, int] | StopReason | None:
        """Run windows from `first` on, each one opened by the thread of the last actor to
        finish the one before (`_relay`), until a step needs `run`'s thread: kernel events
        (they stop and start actors), a process exit, a stop, or a failure (raised here).
        Returns the step `run` takes next.

        The kernel waiting for every window's results cost two thread hand-offs per window on
        top of one per busy actor; now the actor that finishes a window last hands straight to
        the next window's actors, or to itself through its own inbox, for nothing. The windows,
        their order and what they merge are the same whoever's thread runs the kernel's code:
        one thread does at a time, and every hand-off is a queue or a lock."""
        self._relay_goal = goal
        batch = self._windows.batch
        batch.on_complete = self._relay
        try:
            if not self._windows.open(*first):
                self._relay()
            try:
                self._relay_done.acquire()
            except KeyboardInterrupt:  # a second Ctrl-C: let the window end, then raise
                goal.interrupted = True
                self._relay_done.acquire()
                raise
        finally:
            batch.on_complete = None
        out, self._relay_out = self._relay_out, None
        if isinstance(out, BaseException):
            raise out
        if isinstance(out, _Exits):
            self._finish(out.exits, out.end_ms)
            return self._next_step(goal)
        return out

    def _relay(self) -> None:
        """Close the window whose last result just came in and open the next, on this thread;
        leave to `run`'s thread what needs it (`_relay_windows`)."""
        goal = self._relay_goal
        windows = self._windows
        out: tuple[int, int] | StopReason | BaseException | _Exits | None
        try:
            while True:
                end = windows.end_ms
                exits = windows.close()
                if exits:
                    out = _Exits(exits, end)
                    break
                self.now_ms = end
                out = self._next_step(goal)
                if type(out) is not tuple or goal.interrupted:
                    break
                if windows.open(*out):
                    return  # the last of its actors goes on from here
        except BaseException as exc:  # noqa: BLE001 - raised again in `run`'s thread
            out = exc
        self._relay_out = out
        self._relay_done.release()

    def shutdown(self) -> None:
        """Stop every actor (their Pykka threads end) and flush the log."""
        self._nodes.stop_all()
        if self._cpu is not None:
            self._cpu.release()
        self._journal.write(self._journal.lines.take())
        self._journal.event_log.flush()


@dataclass(slots=True)
class _Goal:
    """Where a `Kernel.run` stops."""

    until_ms: int
    condition: Callable[[], bool] | None = None
    max_events: int | None = None
    interrupted: bool = False
    """Set when `run`'s thread was interrupted: the relay stops at the end of its window."""


class _Exits(NamedTuple):
    """Processes that exited in the window ending at `end_ms`: `run`'s thread takes them down."""

    exits: list[tuple[str, int]]
    end_ms: int
