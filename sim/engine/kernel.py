"""The simulation kernel: virtual time, the order of events, nodes and their lifecycle.

Time is integer milliseconds. The kernel advances it in *lookahead windows*: a window starts at
the next event and is at most the network's minimum latency long, so nothing sent inside it can
arrive inside it. Every actor with something to do in the window gets all of it in one hand-off
(`actors.runtime`); the kernel submits to all busy actors, then collects from them in address
order, and merges what they did (log lines, sends, disk writes) by `(time, address, sequence)`.
Under Pykka the thread of the actor that finishes a window last runs that merge and opens the
next window (`_relay`); only what must not run on an actor's thread comes back to `run`'s.
That order, and the network's seeded draws made in it, are all that decide the next window: the
same scenario and seed give a byte-identical event log, whatever the threads did.

Kernel events (faults, crashes, restarts, API actions) run between windows, before any actor
event at the same millisecond; a window never spans one.

A node is what crashes together. A crash stops the node's Pykka actors, keeps what the crash
kind keeps of its disk, and breaks its connections; a restart builds new actors from the disk
alone. After a process crash the machine is still up: its operating system closes the node's
connections, so every actor that had sent to the node is told (`Disconnected`) one latency
later, and an envelope that reaches the node before it restarts is refused and its sender told
one latency after that. A power or disk loss, like a partition, closes nothing: peers hear
silence until their own timeouts. A paused node (a stop-the-world GC pause) handles nothing
until it resumes: messages to it wait in its socket buffers and its overdue timers fire on
resume.
"""

from __future__ import annotations

import hashlib
import heapq
import random
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache, partial
from itertools import chain
from operator import attrgetter
from typing import Any, NamedTuple

from actors.core import Address, Behavior
from actors.host import Batch, DirectHost, Host, PykkaHost, SingleCpu, wait_stopped
from actors.runtime import ActorRuntime, Delivery, HandlerError, OutboundFrame, WindowResult
from protocols.codec import encode_frame
from protocols.connection import Disconnected
from sim.engine.disk import CrashKind, Disk
from sim.engine.eventlog import EventLog
from sim.engine.network import LinkFault, Network, NetworkConfig
from sim.engine.trace import ActorLog, LogLine, TraceContext

__all__ = [
    "ActorSpec",
    "HostKind",
    "Kernel",
    "NodeSpec",
    "SimulationFailed",
    "StopReason",
    "derive_seed",
]

KERNEL = Address("sim", "kernel")
CONNECTION = "connection"
"""The actor name `Disconnected` comes from: the peer's end of the connection, not an actor."""
APPLICATION = "application"
"""The source of an application's calls to its client (`Kernel.tell`)."""


class HostKind(StrEnum):
    PYKKA = "pykka"
    DIRECT = "direct"


class StopReason(StrEnum):
    UNTIL = "until"
    CONDITION = "condition"
    EVENT_LIMIT = "event_limit"


@dataclass(frozen=True, slots=True)
class ActorSpec:
    name: str
    factory: Callable[[], Behavior]


@dataclass(frozen=True, slots=True)
class NodeSpec:
    name: str
    actors: tuple[ActorSpec, ...]


@dataclass(slots=True)
class _Node:
    spec: NodeSpec
    up: bool = True
    incarnation: int = 0
    paused_until: int = 0
    disk: Disk = field(default_factory=Disk)
    refusing: bool = False
    """Its process crashed but its machine is up: connections to it are refused."""
    peers: set[Address] = field(default_factory=set)
    """The actors elsewhere that sent to this node since it started: its open connections."""
    restart_after_exit_ms: int | None = None


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


def derive_seed(seed: int, *parts: object) -> int:
    """A seed for one stream, derived from the run's seed (never the global random)."""
    text = "/".join([str(seed), *map(str, parts)])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


Observer = Callable[[dict[str, Any]], Any]
"""Called with every event in log order; may return violations (objects with `invariant`,
`ts_ms`, `node`, `detail` and `as_dict()`), which the kernel logs and, unless the run only
reports them, fails the run on."""


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
    ) -> None:
        self.seed = seed
        self.trace = TraceContext(run_id, seed)
        self.now_ms = 0
        self.network = Network(network, random.Random(derive_seed(seed, "network")))
        self._lookahead_ms = self.network.lookahead_ms
        self.event_log = event_log if event_log is not None else EventLog()
        self._host_kind = host
        self._cpu = SingleCpu() if host is HostKind.PYKKA else None
        self._nodes: dict[str, _Node] = {}
        self._hosts: dict[Address, Host] = {}
        self._pending: list[tuple[int, int, Address, Address, bytes, int]] = []
        self._timers: list[tuple[int, Address]] = []  # lazy heap; _next_timer says what is live
        self._next_timer: dict[Address, int] = {}
        self._kernel_events: list[tuple[int, int, str, Callable[[], None]]] = []
        self._seq = 0
        self._log_ts = 0
        self._log = ActorLog(self.trace, KERNEL.node, KERNEL.actor, lambda: self._log_ts)
        self._observers: list[Observer] = []
        self.fail_on_violation = True
        self.invariant_violations: list[dict[str, Any]] = []
        self.delivered = 0
        self.handled = 0
        self.rejected_frames = 0
        self.dropped = 0
        self.windows = 0
        self._batch = Batch(0)  # one per kernel, reset each window: every slot is in before the next
        self._window_end = 0
        self._window_busy: list[Address] = []
        self._relay_goal = _Goal(0)
        self._relay_out: tuple[int, int] | StopReason | BaseException | _Exits | None = None
        self._relay_done = threading.Lock()
        self._relay_done.acquire()  # released by the relay's last step, taken back by `run`

    # ----------------------------------------------------------------- nodes and actors

    def add_node(self, spec: NodeSpec, disk: Disk | None = None) -> None:
        """Add a node and start its actors now, from `disk` if given (a prepared state)."""
        if spec.name in self._nodes:
            msg = f"node {spec.name!r} already exists"
            raise ValueError(msg)
        self._nodes[spec.name] = _Node(spec, disk=disk if disk is not None else Disk())
        self._start_actors(self._nodes[spec.name])

    @property
    def nodes(self) -> list[str]:
        return sorted(self._nodes)

    def addresses(self) -> list[Address]:
        """Every live actor, in the kernel's fixed order."""
        return sorted(self._hosts)

    def is_up(self, node: str) -> bool:
        return self._node(node).up

    def disk(self, node: str) -> Disk:
        return self._node(node).disk

    def snapshot(self, address: Address) -> dict[str, Any]:
        """The actor's state as plain data (between windows only)."""
        return self._hosts[address].snapshot(self.now_ms)

    def emit(self, event: str, **fields: Any) -> None:
        """Log a fact of the simulation itself (node `sim`, actor `kernel`) at the current time."""
        self._kernel_emit(self.now_ms, event, **fields)

    def observe(self, observer: Observer) -> None:
        """Call `observer` with every event, in log order, as it is written."""
        self._observers.append(observer)

    # ----------------------------------------------------------------- faults and actions

    def schedule(self, at_ms: int, description: str, action: Callable[[], None]) -> None:
        """Run `action` at `at_ms`, before any actor event of that millisecond."""
        if at_ms < self.now_ms:
            msg = f"cannot schedule {description} at {at_ms} ms: it is already {self.now_ms} ms"
            raise ValueError(msg)
        self._seq += 1
        heapq.heappush(self._kernel_events, (at_ms, self._seq, description, action))

    def apply_due(self) -> None:
        """Run the kernel events scheduled for now (an API call's fault takes effect at once)."""
        if self._kernel_events and self._kernel_events[0][0] <= self.now_ms:
            self._run_kernel_events(self.now_ms)

    def crash(self, node: str, kind: CrashKind = CrashKind.PROCESS) -> None:
        self._take_down(node, kind, self.now_ms, "node_crashed")

    def stop(self, node: str) -> None:
        """The node's process exits of its own accord (its application closed its clients
        first): for its peers, as a process crash (its operating system closes its
        connections); logged as `node_stopped`."""
        self._take_down(node, CrashKind.PROCESS, self.now_ms, "node_stopped")

    def restart_after_exit(self, node: str, after_ms: int) -> None:
        """Restart `node` `after_ms` after its process next exits on its own (a broker's
        shutdown, whose end depends on the controller's answers)."""
        self._node(node).restart_after_exit_ms = after_ms

    def _exited(self, node: str, ts_ms: int) -> None:
        """A process exited on purpose (`Out.exit`): down as after a process crash, logged as
        a stop."""
        state = self._node(node)
        self._take_down(node, CrashKind.PROCESS, ts_ms, "node_stopped")
        after, state.restart_after_exit_ms = state.restart_after_exit_ms, None
        if after is not None:
            self.schedule(ts_ms + after, f"restart {node}", lambda: self.restart(node))

    def _take_down(self, node: str, kind: CrashKind, ts_ms: int, event: str) -> None:
        state = self._node(node)
        if not state.up:
            return
        stopping = []
        for spec in state.spec.actors:
            address = Address(node, spec.name)
            stopping.append(self._hosts.pop(address).stop())
            self._next_timer.pop(address, None)
        wait_stopped(stopping)
        state.up = False
        state.paused_until = 0
        state.disk.crash(kind)
        self.network.reset_node(node, self.nodes)
        if event == "node_crashed":
            self._kernel_emit(ts_ms, event, target=node, kind=str(kind))
        else:
            self._kernel_emit(ts_ms, event, target=node)
        peers, state.peers = sorted(state.peers), set()
        state.refusing = kind is CrashKind.PROCESS
        if state.refusing:
            told = [peer for peer in peers if self._disconnect(ts_ms, node, peer)]
            if told:
                self._kernel_emit(ts_ms, "connections_closed", target=node, peers=[str(a) for a in told])

    def restart(self, node: str) -> None:
        state = self._node(node)
        if state.up:
            return
        state.up = True
        state.refusing = False
        state.incarnation += 1
        self.network.reset_node(node, self.nodes)
        self._start_actors(state)

    def pause(self, node: str, duration_ms: int) -> None:
        state = self._node(node)
        if not state.up:
            return
        state.paused_until = max(state.paused_until, self.now_ms + duration_ms)
        for spec in state.spec.actors:  # what an actor deferred happened before the pause
            address = Address(node, spec.name)
            self._set_next_timer(address, self._hosts[address].pausing(self.now_ms))
        self._kernel_emit(self.now_ms, "node_paused", target=node, until_ms=state.paused_until)
        incarnation, until = state.incarnation, state.paused_until

        def resumed() -> None:
            if state.up and state.incarnation == incarnation and state.paused_until == until:
                self._kernel_emit(until, "node_resumed", target=node)

        self.schedule(until, f"resume {node}", resumed)

    def partition(self, side_a: list[str], side_b: list[str], *, one_way: bool = False) -> None:
        for name in [*side_a, *side_b]:
            self._node(name)
        self.network.partition(side_a, side_b, one_way=one_way)
        self._kernel_emit(
            self.now_ms,
            "network_partitioned",
            side_a=sorted(side_a),
            side_b=sorted(side_b),
            one_way=one_way,
        )

    def lift(self, side_a: list[str], side_b: list[str], *, one_way: bool = False) -> None:
        """Lift the partition `partition(side_a, side_b, one_way)` made, and no other."""
        self.network.lift(side_a, side_b, one_way=one_way)
        self._kernel_emit(
            self.now_ms,
            "network_partition_lifted",
            side_a=sorted(side_a),
            side_b=sorted(side_b),
            one_way=one_way,
        )

    def heal(self) -> None:
        self.network.heal()
        self._kernel_emit(self.now_ms, "network_healed")

    def add_link_fault(self, fault: LinkFault) -> None:
        self.network.add_fault(fault)
        self._kernel_emit(
            self.now_ms,
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
                    self._write(self._log.take())
                return step
            elif self._host_kind is HostKind.PYKKA:
                step = self._relay_windows(goal, step)
                continue
            else:
                step = self._direct_windows(goal, step)
                continue
            step = self._next_step(goal)

    def _direct_windows(self, goal: _Goal, step: tuple[int, int]) -> StopReason | None:
        """Run windows from `step` on in this thread, a direct host's results being in when
        it returns, until a step is not a window; return that step."""
        while type(step) is tuple:
            start, end = step
            self._open_window(start, end)
            exits = self._close_window()
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
        if goal.max_events is not None and self.handled >= goal.max_events:
            return StopReason.EVENT_LIMIT
        start = self._next_event_ms()
        if start is None or start >= goal.until_ms:
            return StopReason.UNTIL
        self.now_ms = start
        kernel_events = self._kernel_events
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
        batch = self._batch
        batch.on_complete = self._relay
        try:
            if not self._open_window(*first):
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
        out: tuple[int, int] | StopReason | BaseException | _Exits | None
        try:
            while True:
                end = self._window_end
                exits = self._close_window()
                if exits:
                    out = _Exits(exits, end)
                    break
                self.now_ms = end
                out = self._next_step(goal)
                if type(out) is not tuple or goal.interrupted:
                    break
                if self._open_window(*out):
                    return  # the last of its actors goes on from here
        except BaseException as exc:  # noqa: BLE001 - raised again in `run`'s thread
            out = exc
        self._relay_out = out
        self._relay_done.release()

    def shutdown(self) -> None:
        """Stop every actor (their Pykka threads end) and flush the log."""
        wait_stopped([host.stop() for host in self._hosts.values()])
        self._hosts.clear()
        if self._cpu is not None:
            self._cpu.release()
        self._write(self._log.take())
        self.event_log.flush()

    # ----------------------------------------------------------------- internals

    def _node(self, name: str) -> _Node:
        try:
            return self._nodes[name]
        except KeyError:
            msg = f"no node named {name!r}"
            raise KeyError(msg) from None

    def _start_actors(self, state: _Node) -> None:
        files = state.disk.view()
        for spec in state.spec.actors:
            address = Address(state.spec.name, spec.name)
            runtime = ActorRuntime(
                address,
                spec.factory(),
                rng=random.Random(derive_seed(self.seed, address, state.incarnation)),
                log_factory=lambda clock, a=address: ActorLog(self.trace, a.node, a.actor, clock),
                start_ms=self.now_ms,
                disk=files,
            )
            host_cls = PykkaHost if self._host_kind is HostKind.PYKKA else DirectHost
            self._hosts[address] = host_cls(runtime)
            self._set_next_timer(address, self.now_ms)
        self._kernel_emit(
            self.now_ms, "node_started", target=state.spec.name, incarnation=state.incarnation
        )

    def _set_next_timer(self, address: Address, due_ms: int | None) -> None:
        if due_ms is None:
            self._next_timer.pop(address, None)
            return
        self._next_timer[address] = due_ms
        heapq.heappush(self._timers, (due_ms, address))

    def _next_event_ms(self) -> int | None:
        timers, next_timer = self._timers, self._next_timer
        while timers and next_timer.get(timers[0][1]) != timers[0][0]:
            heapq.heappop(timers)
        next_ms = None
        for queue in (self._pending, timers, self._kernel_events):
            if queue and (next_ms is None or queue[0][0] < next_ms):
                next_ms = queue[0][0]
        return next_ms

    def _run_kernel_events(self, at_ms: int) -> None:
        while self._kernel_events and self._kernel_events[0][0] <= at_ms:
            _, _, _, action = heapq.heappop(self._kernel_events)
            action()
        self._write(self._log.take())

    def _kernel_emit(self, ts_ms: int, event: str, **fields: Any) -> None:
        self._log_ts = ts_ms
        self._log.emit(event, fields)

    def _take_deliveries(self, end_ms: int) -> dict[Address, list[Delivery]]:
        by_actor: dict[Address, list[Delivery]] = {}
        pending, nodes, hosts, network = self._pending, self._nodes, self._hosts, self.network
        while pending and pending[0][0] < end_ms:
            entry = heapq.heappop(pending)
            ts, seq, src, dst, frame, connection = entry
            node = nodes.get(dst.node)
            reason = None
            current = connection == network.connection(src.node, dst.node)
            if node is None or not node.up or dst not in hosts:
                # Sent before the crash: its sender was told when the connection closed.
                refused = current and node is not None and node.refusing and src.actor != CONNECTION
                reason = "connection_refused" if refused else "node_down"
                if refused:
                    self._disconnect(ts, dst.node, src)
            elif not current:
                reason = "connection_reset"
            elif node.paused_until > ts:
                heapq.heappush(pending, (node.paused_until, *entry[1:]))
                continue
            if reason is None:
                delivery = _new_delivery((ts, seq, src, frame))
                deliveries = by_actor.get(dst)
                if deliveries is None:
                    by_actor[dst] = [delivery]
                else:
                    deliveries.append(delivery)
            else:
                self.dropped += 1
                self._kernel_emit(
                    ts, "message_dropped", src=str(src), dst=str(dst), bytes=len(frame), reason=reason
                )
        return by_actor

    def _busy_actors(self, by_actor: dict[Address, list[Delivery]], end_ms: int) -> list[Address]:
        timers = self._timers
        if not timers or timers[0][0] >= end_ms:
            return sorted(by_actor)
        busy = set(by_actor)
        next_timer, nodes = self._next_timer, self._nodes
        while timers and timers[0][0] < end_ms:
            due, address = heapq.heappop(timers)
            if next_timer.get(address) != due:
                continue
            paused_until = nodes[address.node].paused_until
            if paused_until > due:
                self._set_next_timer(address, paused_until)
                if paused_until >= end_ms:
                    continue
            busy.add(address)
        return sorted(busy)

    def _open_window(self, start_ms: int, end_ms: int) -> bool:
        """Hand every busy actor its part of the window; False if none is busy (nothing to
        wait for: `_close_window` may follow at once)."""
        self.windows += 1
        self._window_end = end_ms
        by_actor = self._take_deliveries(end_ms)
        busy = self._busy_actors(by_actor, end_ms)
        self._window_busy = busy
        batch = self._batch
        batch.reset(len(busy))
        if not busy:
            return False
        hosts, nodes = self._hosts, self._nodes
        for slot, address in enumerate(busy):
            paused_until = nodes[address.node].paused_until
            actor_start = paused_until if paused_until > start_ms else start_ms
            hosts[address].submit(actor_start, end_ms, by_actor.get(address, []), batch, slot)
        return True

    def _close_window(self) -> list[tuple[str, int]]:
        """Merge what the window's actors did (every result is in), in address order; return
        the nodes whose processes exited in it, and when."""
        busy = self._window_busy
        results: list[tuple[Address, WindowResult]] = []
        sends: list[list[OutboundFrame]] = []
        failures: list[HandlerError] = []
        for address, outcome in zip(busy, self._batch.results, strict=True):
            if isinstance(outcome, WindowResult):
                results.append((address, outcome))
                if outcome.sends:
                    sends.append(outcome.sends)
            elif isinstance(outcome, HandlerError):
                failures.append(outcome)
            else:
                raise RuntimeError(f"{address}: host failed") from outcome
        if failures:
            self._fail(results, failures)
        lines: list[list[LogLine]] = []  # the window's sources of lines with some, in merge order
        if kernel_lines := self._log.take():
            lines.append(kernel_lines)
        self._route(sends)
        if routing_lines := self._log.take():  # the sends the network dropped
            lines.append(routing_lines)
        exits = []
        next_timer = self._next_timer
        for address, result in results:
            if result.lines:
                lines.append(result.lines)
            self.delivered += result.delivered
            self.handled += result.delivered + result.timers
            self.rejected_frames += result.rejected
            if result.disk:
                disk = self._nodes[address.node].disk
                for command in result.disk:
                    disk.apply(command)
            # An unchanged time is still in the heap: a live entry leaves it only in its own
            # window, after which the actor's next timer is later.
            if result.next_timer_ms != next_timer.get(address):
                self._set_next_timer(address, result.next_timer_ms)
            if result.exited is not None:
                exits.append((address.node, result.exited))
        self._write(_merged(lines))
        return exits

    def _route(self, sends: list[list[OutboundFrame]]) -> None:
        """Hand every send to the network in (time, sender, sequence) order (`sends`: what each
        actor that sent sent, in address order)."""
        network, nodes, pending = self.network, self._nodes, self._pending
        seq = self._seq  # nothing else takes a sequence number while this routes
        for ts, dst, frame, src in _merged(sends):
            node = nodes.get(dst.node)
            if node is not None and dst.node != src.node:
                node.peers.add(src)
            routed = network.transmit(ts, src.node, dst.node, frame)
            if type(routed) is str:  # why it was dropped (a test without a call: per send)
                self.dropped += 1
                self._kernel_emit(
                    ts, "message_dropped", src=str(src), dst=str(dst), bytes=len(frame), reason=routed
                )
                continue
            for deliver_ms, delivered_frame, connection in routed:
                seq += 1
                heapq.heappush(pending, (deliver_ms, seq, src, dst, delivered_frame, connection))
        self._seq = seq

    def tell(self, actor: Address, message: Any) -> bool:
        """Hand `actor` a call from the application around it (a consumer's `close()`), now,
        before its other events of this millisecond. False if it is not up to hear it."""
        node = self._nodes.get(actor.node)
        if node is None or not node.up or actor not in self._hosts:
            return False
        self._seq += 1
        src = Address(actor.node, APPLICATION)
        connection = self.network.connection(actor.node, actor.node)
        heapq.heappush(self._pending, (self.now_ms, self._seq, src, actor, encode_frame(message), connection))
        self._kernel_emit(self.now_ms, "application_called", target=str(actor), action=getattr(message, "action", ""))
        return True

    def _disconnect(self, ts_ms: int, peer: str, actor: Address) -> bool:
        """Tell `actor` that its connection to node `peer` closed, one latency after `ts_ms`
        (from the peer's side, on the connection as it is now). False if it is not up to hear."""
        node = self._nodes.get(actor.node)
        if node is None or not node.up or actor not in self._hosts:
            return False
        self._seq += 1
        heapq.heappush(
            self._pending,
            (
                ts_ms + self.network.latency_ms(),
                self._seq,
                Address(peer, CONNECTION),
                actor,
                _disconnected_frame(peer),
                self.network.connection(peer, actor.node),
            ),
        )
        return True

    def _fail(self, results: list[tuple[Address, WindowResult]], failures: list[HandlerError]) -> None:
        """Write what happened up to the first failure, then the failure; raise."""
        first = min(failures, key=lambda f: (f.ts_ms, f.address))
        before = [line for _, r in results for line in r.lines if line.ts_ms <= first.ts_ms]
        before += first.partial.lines
        before += [line for line in self._log.take() if line.ts_ms <= first.ts_ms]
        before.sort(key=_ts)
        self._kernel_emit(
            first.ts_ms,
            "simulation_failed",
            target=str(first.address),
            handling=first.what,
            error=first.detail,
        )
        self._write([*before, *self._log.take()])
        self.event_log.flush()
        raise SimulationFailed(self.seed, first.ts_ms, str(first.address), first.what, first.detail)

    def _write(self, lines: Any) -> None:
        log = self.event_log
        observers = self._observers
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
            self._kernel_emit(
                v.ts_ms, "invariant_violated", invariant=v.invariant, target=v.node, detail=v.detail
            )
        for line in self._log.take():
            self.event_log.write(line.line)
        if self.fail_on_violation:
            first = violations[0]
            self.event_log.flush()
            raise SimulationFailed(
                self.seed, first.ts_ms, first.node, f"invariant {first.invariant}", first.detail
            )


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


_ts = attrgetter("ts_ms")
"""The time of a log line or a send: the order they are merged in."""


def _merged(sources: list[list[Any]]) -> Iterable[Any]:
    """The items of non-empty `sources`, each sorted by time, in time order, ties in source
    order (as `heapq.merge`). A window has a few items: one stable sort of them all, in C, costs
    less than merging them in Python; most windows have one source, which needs neither."""
    if len(sources) <= 1:
        return sources[0] if sources else ()
    joined = list(chain.from_iterable(sources))
    joined.sort(key=_ts)
    return joined


_new_delivery = partial(tuple.__new__, Delivery)
"""`Delivery(*fields)` built in C: a NamedTuple's own constructor runs a Python `__new__`,
and this runs for every delivery."""


@cache
def _disconnected_frame(peer: str) -> bytes:
    return encode_frame(Disconnected(peer))
