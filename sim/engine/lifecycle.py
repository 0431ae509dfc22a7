"""A node's lifecycle: start, crash or stop, restart, pause; and the connections a crash closes.

A node is what crashes together. A crash stops the node's Pykka actors, keeps what the crash
kind keeps of its disk, and breaks its connections; a restart builds new actors from the disk
alone, each with a random stream seeded from its incarnation. After a process crash the
machine is still up: its operating system closes the node's connections, so every actor that
had sent to the node is told (`Disconnected`) one latency later, and an envelope that reaches
the node before it restarts is refused and its sender told one latency after that
(`Windows.take_deliveries`). A power or disk loss, like a partition, closes nothing: peers hear
silence until their own timeouts. Either crash ends what the node's connections held on a cut
link (`Windows.purge_held`). A paused node (a stop-the-world GC pause) handles nothing
until it resumes: messages to it wait in its socket buffers and its overdue timers fire on
resume.

Everything here runs between windows, on the thread that called `Kernel.run`, at the time the
kernel says.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from actors.core import Address
from actors.host import DirectHost, Host, PykkaHost, wait_stopped
from actors.runtime import ActorRuntime
from sim.engine.disk import CrashKind, Disk
from sim.engine.journal import Journal
from sim.engine.nodes import HostKind, Node, NodeSpec, Wrap, derive_seed
from sim.engine.trace import ActorLog, TraceContext
from sim.engine.windows import Windows


class Nodes:
    """The nodes by name and their live actors' hosts by address; starts, stops and pauses them."""

    def __init__(
        self,
        nodes: dict[str, Node],
        hosts: dict[Address, Host],
        windows: Windows,
        journal: Journal,
        *,
        seed: int,
        trace: TraceContext,
        host: HostKind,
        schedule: Callable[[int, str, Callable[[], None]], None],
        wrap: Wrap | None = None,
    ) -> None:
        self.records = nodes
        self.hosts = hosts
        self._seed = seed
        self._trace = trace
        self._host_cls = PykkaHost if host is HostKind.PYKKA else DirectHost
        self._network = windows.network
        self._windows = windows
        self._emit = journal.emit
        self._schedule = schedule
        """Puts a kernel event in the kernel's order (a pause's end)."""
        self._wrap = wrap

    def get(self, name: str) -> Node:
        try:
            return self.records[name]
        except KeyError:
            msg = f"no node named {name!r}"
            raise KeyError(msg) from None

    def add(self, spec: NodeSpec, disk: Disk | None, now_ms: int) -> None:
        if spec.name in self.records:
            msg = f"node {spec.name!r} already exists"
            raise ValueError(msg)
        self.records[spec.name] = Node(spec, disk=disk if disk is not None else Disk())
        self._start_actors(self.records[spec.name], now_ms)

    def _start_actors(self, state: Node, now_ms: int) -> None:
        files = state.disk.view()
        for spec in state.spec.actors:
            address = Address(state.spec.name, spec.name)
            behavior = spec.factory()
            if self._wrap is not None:
                behavior = self._wrap(address, behavior)
            runtime = ActorRuntime(
                address,
                behavior,
                rng=random.Random(derive_seed(self._seed, address, state.incarnation)),
                log_factory=lambda clock, a=address: ActorLog(self._trace, a.node, a.actor, clock),
                start_ms=now_ms,
                disk=files,
            )
            self.hosts[address] = self._host_cls(runtime)
            self._windows.set_next_timer(address, now_ms)
        self._emit(now_ms, "node_started", target=state.spec.name, incarnation=state.incarnation)

    def take_down(self, node: str, kind: CrashKind, ts_ms: int, event: str) -> None:
        """Stop the node's actors and keep what `kind` keeps of its disk; after a process crash
        tell its peers their connections closed. Logged as `event`."""
        state = self.get(node)
        if not state.up:
            return
        stopping = []
        next_timer = self._windows.next_timer
        for spec in state.spec.actors:
            address = Address(node, spec.name)
            stopping.append(self.hosts.pop(address).stop())
            next_timer.pop(address, None)
        wait_stopped(stopping)
        state.up = False
        state.paused_until = 0
        state.disk.crash(kind)
        self._network.reset_node(node, sorted(self.records))
        if event == "node_crashed":
            self._emit(ts_ms, event, target=node, kind=str(kind))
        else:
            self._emit(ts_ms, event, target=node)
        self._windows.purge_held(ts_ms, node)
        peers, state.peers = sorted(state.peers), set()
        state.refusing = kind is CrashKind.PROCESS
        if state.refusing:
            told = [peer for peer in peers if self._windows.disconnect(ts_ms, node, peer)]
            if told:
                self._emit(ts_ms, "connections_closed", target=node, peers=[str(a) for a in told])

    def restart(self, node: str, now_ms: int) -> None:
        state = self.get(node)
        if state.up:
            return
        state.up = True
        state.refusing = False
        state.incarnation += 1
        self._network.reset_node(node, sorted(self.records))
        self._windows.purge_held(now_ms, node)
        self._start_actors(state, now_ms)

    def pause(self, node: str, now_ms: int, duration_ms: int) -> None:
        state = self.get(node)
        if not state.up:
            return
        state.paused_until = max(state.paused_until, now_ms + duration_ms)
        for spec in state.spec.actors:  # what an actor deferred happened before the pause
            address = Address(node, spec.name)
            self._windows.set_next_timer(address, self.hosts[address].pausing(now_ms))
        self._emit(now_ms, "node_paused", target=node, until_ms=state.paused_until)
        incarnation, until = state.incarnation, state.paused_until

        def resumed() -> None:
            if state.up and state.incarnation == incarnation and state.paused_until == until:
                self._emit(until, "node_resumed", target=node)

        self._schedule(until, f"resume {node}", resumed)

    def stop_all(self) -> None:
        """Stop every actor (their Pykka threads end)."""
        wait_stopped([host.stop() for host in self.hosts.values()])
        self.hosts.clear()
