"""The Python API: build a cluster from a scenario, run it, inject faults, inspect state.

    cluster = Cluster(load_scenario("examples/gossip.toml"))
    cluster.run(for_ms=10_000)
    cluster.crash("node-1", "power_loss")
    cluster.run(until=lambda: cluster.state("node-0", "gossip-0")["received"] > 100)
    cluster.close()

Every fault a scenario file can name is a method here, applied at the current simulated time;
both go through `sim.faults.schedule_fault`. The cluster's first event, `run_started`, carries
the seed, so every log says how to reproduce it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from actors.core import Address
from actors.workload import GossipActor, GossipConfig
from sim.eventlog import EventLog
from sim.faults import Fault, check_fault, fault_from_scenario, schedule_fault
from sim.kernel import ActorSpec, HostKind, Kernel, NodeSpec, StopReason
from sim.network import NetworkConfig
from sim.scenario import Scenario
from sim.trace import LOG_SCHEMA_VERSION

__all__ = ["Cluster", "check_scenario"]


def check_scenario(scenario: Scenario) -> list[Fault]:
    """The scenario's faults, checked against its nodes (raises `FaultError`)."""
    names = sorted(spec.name for spec in _workload_nodes(scenario))
    faults = [fault_from_scenario(entry) for entry in scenario.faults]
    for i, fault in enumerate(faults):
        check_fault(fault, names, f"{scenario.source}: [[faults]] #{i + 1}")
    return faults


class Cluster:
    """A running simulation of one scenario."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        events_path: Path | None = None,
        host: HostKind = HostKind.PYKKA,
    ) -> None:
        self.scenario = scenario
        net = scenario.sections["network"]
        self.kernel = Kernel(
            seed=scenario.seed,
            run_id=f"{scenario.name}-seed{scenario.seed}",
            network=NetworkConfig(net["latency.min.ms"], net["latency.max.ms"]),
            host=host,
            event_log=EventLog(events_path),
        )
        self.kernel.emit(
            "run_started",
            scenario=scenario.name,
            kafka_version=scenario.profile.name,
            log_schema_version=LOG_SCHEMA_VERSION,
        )
        specs = _workload_nodes(scenario)
        faults = check_scenario(scenario)
        for spec in specs:
            self.kernel.add_node(spec)
        for fault in faults:
            schedule_fault(self.kernel, fault)

    # ------------------------------------------------------------------ running

    @property
    def now_ms(self) -> int:
        return self.kernel.now_ms

    def run(
        self,
        *,
        for_ms: int | None = None,
        until_ms: int | None = None,
        until: Callable[[], bool] | None = None,
        max_events: int | None = None,
    ) -> StopReason:
        """Run for a duration, to a time, or until `until()` holds (checked between windows)."""
        if for_ms is not None:
            end = self.kernel.now_ms + for_ms
        elif until_ms is not None:
            end = until_ms
        else:
            end = self.scenario.get("run", "duration.ms")
        return self.kernel.run(end, condition=until, max_events=max_events)

    def run_to_end(self, progress: Callable[[Kernel], None] | None = None) -> StopReason:
        """Run the scenario's `duration.ms`, honouring its `max.events`."""
        limit = self.scenario.get("run", "max.events") or None

        def check() -> bool:
            if progress is not None:
                progress(self.kernel)
            return False

        return self.kernel.run(
            self.scenario.get("run", "duration.ms"), condition=check, max_events=limit
        )

    def close(self) -> None:
        self.kernel.shutdown()
        self.kernel.event_log.close()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ faults

    def inject(self, fault: Fault) -> None:
        """Apply a fault now (or at its `at_ms`, if later)."""
        check_fault(fault, self.kernel.nodes, "fault")
        schedule_fault(self.kernel, fault)
        self.kernel.apply_due()

    def crash(self, node: str, kind: str = "process") -> None:
        from sim.disk import CrashKind  # noqa: PLC0415

        self.inject(Fault("crash", node=node, crash_kind=CrashKind(kind)))

    def restart(self, node: str) -> None:
        self.inject(Fault("restart", node=node))

    def pause(self, node: str, duration_ms: int) -> None:
        self.inject(Fault("pause", node=node, duration_ms=duration_ms))

    def partition(self, side_a: list[str], side_b: list[str], *, one_way: bool = False) -> None:
        self.inject(Fault("partition", side_a=tuple(side_a), side_b=tuple(side_b), one_way=one_way))

    def isolate(self, *nodes: str) -> None:
        self.inject(Fault("partition", isolate=nodes))

    def heal(self) -> None:
        self.inject(Fault("heal"))

    def link_fault(self, kind: str, **params: Any) -> None:
        """`drop`, `delay`, `duplicate`, `reorder` or `corrupt`, with `Fault`'s parameters."""
        self.inject(Fault(kind, **params))

    # ------------------------------------------------------------------ inspection

    @property
    def nodes(self) -> list[str]:
        return self.kernel.nodes

    def actors(self) -> list[Address]:
        return self.kernel.addresses()

    def state(self, node: str, actor: str) -> dict[str, Any]:
        """An actor's state as plain data."""
        return self.kernel.snapshot(Address(node, actor))


def _workload_nodes(scenario: Scenario) -> list[NodeSpec]:
    w = scenario.sections["workload"]
    addresses = [
        Address(f"node-{n}", f"gossip-{a}")
        for n in range(w["nodes"])
        for a in range(w["actors.per.node"])
    ]

    def factory(address: Address) -> Callable[[], GossipActor]:
        peers = tuple(p for p in addresses if p != address) or (address,)
        config = GossipConfig(
            address,
            peers,
            tokens=w["tokens.per.actor"],
            ping_interval_ms=w["ping.interval.ms"],
            report_interval_ms=w["report.interval.ms"],
        )
        return lambda: GossipActor(config)

    return [
        NodeSpec(
            f"node-{n}",
            tuple(ActorSpec(a.actor, factory(a)) for a in addresses if a.node == f"node-{n}"),
        )
        for n in range(w["nodes"])
    ]
