"""Faults as data: what a scenario's `[[faults]]` and the Python API both inject.

A `Fault` names its kind, when it starts, and its parameters with units in their names (the
VOPR's habit). `schedule_fault` turns one into kernel events: the fault at `at_ms`, and its end
(restart, resume, heal, or the end of a link fault) when it has a duration. `resolve_fault`
checks a fault against the cluster (its nodes, which of them are consumers and of which group)
before anything is scheduled, and names a group's consumers.

Client faults act on consumers: the application's calls (`close`, `unsubscribe`, `stall`,
`slow`), a rolling restart of consumer processes, and a zombie (a consumer cut off from its
group's coordinator only, looked up when the fault starts).

A broker fault (`crash`, `shutdown`, `pause`) may name a role instead of a node: `controller`
is the broker that holds ZooKeeper's `/controller` when the fault starts, so a schedule written
before the run can fail the controller over, whichever broker won the first election.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from actors.addresses import BROKER_ACTOR, CONTROLLER_ACTOR
from actors.core import Address
from protocols.application import APPLICATION_ACTIONS, ApplicationCall
from protocols.metadata import ShutdownSignal
from sim.engine.disk import CrashKind
from sim.engine.kernel import Kernel
from sim.engine.network import FaultKind, LinkFault

__all__ = [
    "CONSUMER_ACTOR",
    "CONSUMER_FAULTS",
    "Fault",
    "FaultContext",
    "FaultError",
    "fault_from_scenario",
    "resolve_fault",
    "schedule_fault",
]

CONSUMER_ACTOR = "consumer"
"""The actor of a consumer node (`consumer-N/consumer`), to which the application's calls go."""


CONSUMER_FAULTS = (*APPLICATION_ACTIONS, "rolling_restart", "zombie")
"""The kinds whose nodes must be consumers."""
CONTROLLER = "controller"
"""A broker fault's `node` meaning the active controller's broker when the fault starts."""
ROLE_FAULTS = ("crash", "shutdown", "pause")
"""The kinds whose `node` may be the `controller` role."""
ROLLING_INTERVAL_MS = 10_000
"""`interval.ms` of a rolling restart: from one consumer's restart to the next one's close()."""


class FaultError(ValueError):
    """A fault that names something the cluster does not have."""


@dataclass(frozen=True, slots=True)
class FaultContext:
    """What faults need to know of the cluster besides its node names."""

    consumers: Mapping[str, str]
    """Each consumer node, in node order, with its `group.id`."""
    coordinator: Callable[[str], str | None]
    """The broker node coordinating a group now (the leader of its `__consumer_offsets`
    partition), or None while that partition has no leader."""
    admin: Callable[[Fault], None] | None = None
    """Hands an operator's group command to the cluster's admin client (made on first use)."""
    controller: Callable[[], str | None] = lambda: None
    """The broker node holding ZooKeeper's `/controller` now, or None (no controller, or no
    ZooKeeper)."""


@dataclass(frozen=True, slots=True)
class Fault:
    kind: str
    at_ms: int = 0
    node: str | None = None
    crash_kind: CrashKind = CrashKind.PROCESS
    restart_after_ms: int | None = None
    exit_after_ms: int = 0
    duration_ms: int | None = None
    side_a: tuple[str, ...] = ()
    side_b: tuple[str, ...] = ()
    isolate: tuple[str, ...] = ()
    one_way: bool = False
    probability: float = 1.0
    delay_ms: int = 0
    src: tuple[str, ...] = ()
    dst: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()
    """A rolling restart's consumers, in order."""
    group: str | None = None
    """A rolling restart of every consumer of this `group.id`, in node order."""
    interval_ms: int = ROLLING_INTERVAL_MS
    down_ms: int = 0
    process_record_ms: int | None = None
    """A slow spell's processing time per record."""
    operation: str | None = None
    """An operator's group command (`admin`): one of `protocols.admin.ADMIN_OPERATIONS`; `group`
    names the group."""
    topic: str | None = None
    partitions: tuple[int, ...] = ()
    target: str | None = None
    """A reset's target (`to`)."""
    datetime_ms: int | None = None
    shift_by: int | None = None

    def nodes_named(self) -> list[tuple[str, str]]:
        """(key, node) of every node the fault names."""
        named = [("node", self.node)] if self.node else []
        keyed = (
            ("between", self.side_a),
            ("between", self.side_b),
            ("isolate", self.isolate),
            ("src", self.src),
            ("dst", self.dst),
            ("nodes", self.nodes),
        )
        return named + [(key, n) for key, names in keyed for n in names]


def fault_from_scenario(entry: dict[str, Any]) -> Fault:
    """A checked `[[faults]]` table (see sim/cluster/scenario.py) as a `Fault`."""
    between = entry.get("between") or [[], []]
    return Fault(
        kind=entry["kind"],
        at_ms=entry["at.ms"],
        node=entry.get("node"),
        crash_kind=CrashKind(entry.get("crash.kind", "process")),
        restart_after_ms=entry.get("restart.after.ms"),
        exit_after_ms=entry.get("exit.after.ms") or 0,
        duration_ms=entry.get("duration.ms"),
        side_a=tuple(between[0]),
        side_b=tuple(between[1]),
        isolate=tuple(entry.get("isolate", ())),
        one_way=entry.get("one.way", False),
        probability=entry.get("probability") or 1.0,
        delay_ms=entry.get("delay.ms") or 0,
        src=tuple(entry.get("src", ())),
        dst=tuple(entry.get("dst", ())),
        nodes=tuple(entry.get("nodes", ())),
        group=entry.get("group"),
        interval_ms=entry.get("interval.ms", ROLLING_INTERVAL_MS),
        down_ms=entry.get("down.ms", 0),
        process_record_ms=entry.get("process.record.ms"),
        operation=entry.get("operation"),
        topic=entry.get("topic"),
        partitions=tuple(entry.get("partitions", ())),
        target=entry.get("to"),
        datetime_ms=entry.get("datetime.ms"),
        shift_by=entry.get("shift.by"),
    )


def resolve_fault(fault: Fault, nodes: list[str], consumers: Mapping[str, str], where: str) -> Fault:
    """`fault` checked against the cluster (raises `FaultError` naming the key and value),
    with a rolling restart's group replaced by its consumers."""
    for key, value in (
        ("at.ms", fault.at_ms),
        ("duration.ms", fault.duration_ms),
        ("restart.after.ms", fault.restart_after_ms),
        ("exit.after.ms", fault.exit_after_ms),
        ("delay.ms", fault.delay_ms),
        ("interval.ms", fault.interval_ms),
        ("down.ms", fault.down_ms),
        ("process.record.ms", fault.process_record_ms),
    ):
        if value is not None and value < 0:
            msg = f"{where}: {key}: must be at least 0, got {value}"
            raise FaultError(msg)
    if fault.node == CONTROLLER and fault.kind in ROLE_FAULTS:
        if "zookeeper" not in nodes:
            msg = f"{where}: node: 'controller' names ZooKeeper's controller, and this cluster has no ZooKeeper"
            raise FaultError(msg)
        return fault
    for key, name in fault.nodes_named():
        if name not in nodes:
            msg = f"{where}: {key}: no node named {name!r} (the nodes are {', '.join(nodes)})"
            raise FaultError(msg)
    if fault.kind == "shutdown" and not (fault.node or "").startswith("broker-"):
        msg = f"{where}: node: a shutdown stops a broker, got {fault.node!r}"
        raise FaultError(msg)
    if fault.kind not in CONSUMER_FAULTS:
        return fault
    known = ", ".join(consumers) or "none"
    if fault.kind == "rolling_restart":
        if fault.nodes and fault.group is not None:
            both = f"nodes {list(fault.nodes)}, group {fault.group!r}"
            msg = f"{where}: nodes, group: a rolling restart takes one, not both ({both})"
            raise FaultError(msg)
        if not fault.nodes and fault.group is None:
            msg = f"{where}: a rolling restart needs `nodes` (a list of consumers) or `group` (a group.id)"
            raise FaultError(msg)
        if fault.group is not None:
            members = tuple(n for n, g in consumers.items() if g == fault.group)
            if not members:
                groups = ", ".join(sorted(set(consumers.values()))) or "none"
                msg = f"{where}: group: no consumer has group.id {fault.group!r} (the groups are {groups})"
                raise FaultError(msg)
            fault = replace(fault, nodes=members, group=None)
        named = [("nodes", n) for n in fault.nodes]
    else:
        if fault.node is None:
            msg = f"{where}: a {fault.kind} fault needs a node"
            raise FaultError(msg)
        named = [("node", fault.node)]
    if fault.kind == "slow" and fault.process_record_ms is None:
        msg = f"{where}: a slow fault needs process.record.ms"
        raise FaultError(msg)
    for key, name in named:
        if name in consumers or (fault.kind == "rolling_restart" and name.startswith("broker-")):
            continue
        what = "a consumer or a broker" if fault.kind == "rolling_restart" else "a consumer"
        msg = f"{where}: {key}: {name!r} is not {what} (the consumers are {known})"
        raise FaultError(msg)
    return fault


def schedule_fault(kernel: Kernel, fault: Fault, context: FaultContext | None = None) -> None:
    """Schedule `fault` (and its end, if it has a duration) on the kernel; a zombie needs the
    `context` to find its coordinator."""
    at = max(fault.at_ms, kernel.now_ms)
    kind = fault.kind
    if fault.node == CONTROLLER and kind in ROLE_FAULTS:
        kernel.schedule(at, f"{kind} controller", lambda: _on_controller(kernel, fault, context))
    elif kind == "crash":
        node = _node(fault)
        kernel.schedule(at, f"crash {node}", lambda: kernel.crash(node, fault.crash_kind))
        if fault.restart_after_ms is not None:
            restart_at = at + fault.restart_after_ms
            kernel.schedule(restart_at, f"restart {node}", lambda: kernel.restart(node))
    elif kind == "restart":
        node = _node(fault)
        kernel.schedule(at, f"restart {node}", lambda: kernel.restart(node))
    elif kind == "shutdown":
        node = _node(fault)
        kernel.schedule(at, f"shutdown {node}", lambda: _shut_down(kernel, node, fault))
    elif kind == "pause":
        node = _node(fault)
        duration = fault.duration_ms or 0
        kernel.schedule(at, f"pause {node}", lambda: kernel.pause(node, duration))
    elif kind == "partition":
        kernel.schedule(at, "partition", lambda: _partition(kernel, fault))
        if fault.duration_ms is not None:
            kernel.schedule(at + fault.duration_ms, "heal", kernel.heal)
    elif kind == "heal":
        kernel.schedule(at, "heal", kernel.heal)
    elif kind in APPLICATION_ACTIONS:
        node = _node(fault)
        call = ApplicationCall(kind, fault.duration_ms or 0, fault.process_record_ms or 0)
        target = Address(node, CONSUMER_ACTOR)
        kernel.schedule(at, f"{kind} {node}", lambda: _tell(kernel, target, call))
    elif kind == "rolling_restart":
        rolling = _RollingRestart(kernel, list(fault.nodes), fault.interval_ms, fault.down_ms)
        kernel.observe(rolling)
        kernel.schedule(at, "rolling restart", rolling.next)
    elif kind == "admin":
        if context is None or context.admin is None:
            msg = "an admin fault needs the cluster's admin client"
            raise FaultError(msg)
        admin = context.admin
        kernel.schedule(at, f"admin {fault.operation}", lambda: admin(fault))
    elif kind == "zombie":
        if context is None:
            msg = "a zombie fault needs the cluster's context to find the coordinator"
            raise FaultError(msg)
        node = _node(fault)
        kernel.schedule(at, f"zombie {node}", lambda: _zombie(kernel, node, fault.duration_ms, context))
    else:
        link = LinkFault(
            kind=FaultKind(kind),
            start_ms=at,
            end_ms=None if fault.duration_ms is None else at + fault.duration_ms,
            src=frozenset(fault.src),
            dst=frozenset(fault.dst),
            probability=fault.probability,
            delay_ms=fault.delay_ms,
        )
        kernel.schedule(at, f"{kind} fault", lambda: kernel.add_link_fault(link))


def _shut_down(kernel: Kernel, node: str, fault: Fault) -> None:
    """The operator's signal goes to the broker's ZooKeeper client, which runs the controlled
    shutdown; without a controller (static metadata), to the replica manager, which exits."""
    if fault.restart_after_ms is not None:
        kernel.restart_after_exit(node, fault.restart_after_ms)
    signal = ShutdownSignal(fault.exit_after_ms)
    if not kernel.tell(Address(node, CONTROLLER_ACTOR), signal) and not kernel.tell(Address(node, BROKER_ACTOR), signal):
        kernel.emit("application_call_ignored", target=node, action=signal.action)


def _tell(kernel: Kernel, target: Address, call: ApplicationCall) -> bool:
    if not kernel.tell(target, call):
        kernel.emit("application_call_ignored", target=str(target), action=call.action)
        return False
    return True


class _RollingRestart:
    """Restart consumers one after the other, as an operator rolls a deployment: the
    application calls close() (its commit, revocation and LeaveGroup); when close() returns
    (`consumer_closed`) the process exits; `down_ms` later a new process starts, from nothing
    (a new JVM: a new member id); `interval_ms` after that the next consumer is closed.

    The kernel acts between its windows, so the process exits `latency.min.ms` (the
    lookahead) after close() returned: the window that logged it has already run. A consumer
    that is down at its turn is only started, `down_ms` later; one that crashes while it
    closes is started `down_ms` after the crash."""

    def __init__(self, kernel: Kernel, nodes: list[str], interval_ms: int, down_ms: int) -> None:
        self.kernel = kernel
        self.queue = nodes
        self.interval_ms = interval_ms
        self.down_ms = down_ms
        self.closing: str | None = None
        """The consumer whose close() the restart waits for."""

    def next(self) -> None:
        if not self.queue:
            return
        node = self.queue.pop(0)
        if not self.kernel.is_up(node):
            self._down(node)
        elif node.startswith("broker-"):
            # A broker is stopped by its operator: a controlled shutdown, then its own exit,
            # after which the kernel restarts it `down_ms` later.
            self.closing = node
            _shut_down(self.kernel, node, Fault("shutdown", node=node, restart_after_ms=self.down_ms))
        elif _tell(self.kernel, Address(node, CONSUMER_ACTOR), ApplicationCall("close")):
            self.closing = node
        else:
            self._down(node)

    def __call__(self, event: Mapping[str, Any]) -> list[Any]:
        """Watch for the closing consumer's `consumer_closed` (or its crash), or the stopping
        broker's exit."""
        name = event["event"]
        node = self.closing
        if node is None or name not in ("consumer_closed", "node_crashed", "node_started"):
            return []
        if name == "node_started" and event["target"] == node:
            self.closing = None  # a broker, back
            self.kernel.schedule(event["ts_ms"] + self.interval_ms, "rolling restart", self.next)
        elif name == "consumer_closed" and event["node"] == node:
            self.closing = None
            at = event["ts_ms"] + self.kernel.network.lookahead_ms
            self.kernel.schedule(at, f"stop {node}", lambda: self._exit(node))
        elif name == "node_crashed" and event["target"] == node:
            self.closing = None
            self._down(node)
        return []

    def _exit(self, node: str) -> None:
        self.kernel.stop(node)
        self._down(node)

    def _down(self, node: str) -> None:
        restart_at = self.kernel.now_ms + self.down_ms
        self.kernel.schedule(restart_at, f"restart {node}", lambda: self._restart(node))

    def _restart(self, node: str) -> None:
        self.kernel.restart(node)
        self.kernel.schedule(self.kernel.now_ms + self.interval_ms, "rolling restart", self.next)


def _zombie(kernel: Kernel, node: str, duration_ms: int | None, context: FaultContext) -> None:
    """Cut `node` off from its group's coordinator both ways, and lift that cut alone after
    `duration_ms`: the consumer still reaches the partitions' leaders (unless the coordinator's
    broker leads some of them: the cut is between nodes)."""
    broker = context.coordinator(context.consumers[node])
    if broker is None:
        reason = "the group's __consumer_offsets partition has no leader"
        kernel.emit("fault_skipped", kind="zombie", target=node, reason=reason)
        return
    kernel.partition([node], [broker])
    if duration_ms is not None:
        kernel.schedule(kernel.now_ms + duration_ms, f"lift zombie {node}", lambda: kernel.lift([node], [broker]))


def _on_controller(kernel: Kernel, fault: Fault, context: FaultContext | None) -> None:
    """`fault` aimed at the controller's broker, looked up now, from now on."""
    broker = None if context is None else context.controller()
    if broker is None or not kernel.is_up(broker):
        # A crashed controller's znode stays until its session expires: the role is vacant.
        reason = "no broker holds /controller" if broker is None else f"{broker} holds /controller but is down"
        kernel.emit("fault_skipped", kind=fault.kind, target=CONTROLLER, reason=reason)
        return
    schedule_fault(kernel, replace(fault, node=broker, at_ms=kernel.now_ms), context)


def _node(fault: Fault) -> str:
    if fault.node is None:
        msg = f"a {fault.kind} fault needs a node"
        raise FaultError(msg)
    return fault.node


def _partition(kernel: Kernel, fault: Fault) -> None:
    if fault.isolate:
        others = [n for n in kernel.nodes if n not in fault.isolate]
        kernel.partition(list(fault.isolate), others, one_way=fault.one_way)
    else:
        kernel.partition(list(fault.side_a), list(fault.side_b), one_way=fault.one_way)
