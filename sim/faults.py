"""Faults as data: what a scenario's `[[faults]]` and the Python API both inject.

A `Fault` names its kind, when it starts, and its parameters with units in their names (the
VOPR's habit). `schedule_fault` turns one into kernel events: the fault at `at_ms`, and its end
(restart, resume, heal, or the end of a link fault) when it has a duration. Node names are
checked against the cluster before anything is scheduled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from actors.core import Address
from protocols.application import APPLICATION_ACTIONS, ApplicationCall
from protocols.metadata import ShutdownSignal
from sim.disk import CrashKind
from sim.kernel import Kernel
from sim.network import FaultKind, LinkFault

__all__ = ["CONSUMER_ACTOR", "Fault", "FaultError", "fault_from_scenario", "schedule_fault"]

CONSUMER_ACTOR = "consumer"
"""The actor of a consumer node (`consumer-N/consumer`), to which the application's calls go."""


class FaultError(ValueError):
    """A fault that names something the cluster does not have."""


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

    def nodes_named(self) -> list[str]:
        named = [self.node] if self.node else []
        return [*named, *self.side_a, *self.side_b, *self.isolate, *self.src, *self.dst]


def fault_from_scenario(entry: dict[str, Any]) -> Fault:
    """A checked `[[faults]]` table (see sim/scenario.py) as a `Fault`."""
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
    )


def check_fault(fault: Fault, nodes: list[str], where: str) -> None:
    for name in fault.nodes_named():
        if name not in nodes:
            known = ", ".join(nodes)
            msg = f"{where}: no node named {name!r} (the nodes are {known})"
            raise FaultError(msg)
    if fault.kind == "shutdown" and not (fault.node or "").startswith("broker-"):
        msg = f"{where}: node: a shutdown stops a broker, got {fault.node!r}"
        raise FaultError(msg)


def schedule_fault(kernel: Kernel, fault: Fault) -> None:
    """Schedule `fault` (and its end, if it has a duration) on the kernel."""
    at = max(fault.at_ms, kernel.now_ms)
    kind = fault.kind
    if kind == "crash":
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
        call = ApplicationCall(kind, fault.duration_ms or 0)
        target = Address(node, CONSUMER_ACTOR)
        kernel.schedule(at, f"{kind} {node}", lambda: _tell(kernel, target, call))
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
    if not kernel.tell(Address(node, "controller"), signal) and not kernel.tell(Address(node, "broker"), signal):
        kernel.emit("application_call_ignored", target=node, action=signal.action)


def _tell(kernel: Kernel, target: Address, call: ApplicationCall) -> None:
    if not kernel.tell(target, call):
        kernel.emit("application_call_ignored", target=str(target), action=call.action)


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
