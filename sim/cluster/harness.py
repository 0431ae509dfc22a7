"""The Python API: build a cluster from a scenario, run it, inject faults, inspect state.

    cluster = Cluster(load_scenario("examples/00_kernel_faults.toml"))
    cluster.run(for_ms=10_000)
    cluster.crash("node-1", "power_loss")
    cluster.run(until=lambda: cluster.state("node-0", "gossip-0")["pings_answered"] > 100)
    cluster.close()

Every fault a scenario file can name is a method here, applied at the current simulated time;
both go through `sim.cluster.faults.schedule_fault`. The cluster's first event, `run_started`, carries
the seed, so every log says how to reproduce it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from actors.addresses import BROKER_ACTOR
from actors.core import Address
from actors.group.placement import OFFSETS_TOPIC, partition_for
from actors.request_log import RequestLog
from sim.cluster.accounting import GroupAccounting
from sim.cluster.admin import AdminDesk, AdminRequest, check_admin_fault, lag_rows
from sim.cluster.client import CLIENT_ACTOR, Client
from sim.cluster.faults import (
    Fault,
    FaultContext,
    FaultError,
    fault_from_scenario,
    resolve_fault,
    schedule_fault,
)
from sim.cluster.ground_truth import log_figures, replica_logs
from sim.cluster.group_invariants import GroupInvariants
from sim.cluster.invariants import Invariants
from sim.cluster.scenario import Scenario, blame_overrides
from sim.cluster.skips import SkipAccounting
from sim.cluster.wiring import admin_spec, consumer_configs, node_specs
from sim.engine.disk import CrashKind, Disk
from sim.engine.eventlog import EventLog
from sim.engine.kernel import ActorSpec, HostKind, Kernel, NodeSpec, StopReason
from sim.engine.network import NetworkConfig
from sim.engine.trace import LOG_SCHEMA_VERSION

__all__ = ["Client", "Cluster", "check_scenario"]


def check_scenario(scenario: Scenario) -> list[Fault]:
    """The scenario's faults, checked against its nodes and resolved (raises `FaultError`,
    naming the `--set` that brought the mistake, if one did)."""
    try:
        return _check_faults(scenario)
    except FaultError as exc:
        raise blame_overrides(scenario.text, scenario.source, scenario.overrides, exc, _check_faults) from None


def _check_faults(scenario: Scenario) -> list[Fault]:
    names = sorted(spec.name for spec in node_specs(scenario))
    consumers = {c.name: c.group_id for c in consumer_configs(scenario)}
    faults = []
    for i, entry in enumerate(scenario.faults):
        where = f"{scenario.source}: [[faults]] #{i + 1}"
        fault = resolve_fault(fault_from_scenario(entry), names, consumers, where)
        if fault.kind == "admin":
            _check_admin(scenario, fault, where)
        faults.append(fault)
    return faults


def _check_admin(scenario: Scenario, fault: Fault, where: str) -> None:
    if not scenario.get("cluster", "brokers"):
        msg = f"{where}: an admin command needs brokers: set [cluster] brokers"
        raise FaultError(msg)
    if not scenario.has_groups:
        msg = f"{where}: the scenario has no group coordinators (they run with [[consumers]] or admin faults)"
        raise FaultError(msg)
    check_admin_fault(fault, {t["name"]: t["partitions"] for t in scenario.topics}, where)


class Cluster:
    """A running simulation of one scenario."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        events_path: Path | None = None,
        host: HostKind = HostKind.PYKKA,
        znodes: tuple[tuple[str, str, int], ...] = (),
        disks: dict[str, Disk] | None = None,
    ) -> None:
        """A cluster can start from a history: `znodes`, `(path, data, version)` the
        coordination service holds besides the topics (a controller epoch, partition states);
        `disks`, what a node's disk holds (by node name)."""
        self.scenario = scenario
        # Checked before the kernel starts: a bad scenario leaves no host threads or CPU hold.
        specs = node_specs(scenario, znodes)
        faults = check_scenario(scenario)
        net = scenario.sections["network"]
        self.kernel = Kernel(
            seed=scenario.seed,
            run_id=f"{scenario.name}-seed{scenario.seed}",
            network=NetworkConfig(net["latency.min.ms"], net["latency.max.ms"]),
            host=host,
            event_log=EventLog(events_path),
            wrap=RequestLog if scenario.get("run", "log.requests") else None,
        )
        self.kernel.emit(
            "run_started",
            scenario=scenario.name,
            kafka_version=scenario.profile.name,
            log_schema_version=LOG_SCHEMA_VERSION,
        )
        self.invariants = Invariants()
        self.kernel.observe(self.invariants)
        self.kernel.observe(GroupInvariants(scenario.profile.version))
        self.groups = GroupAccounting(scenario.profile.version)
        self.kernel.observe(self.groups)
        self.skips = SkipAccounting()
        self.kernel.observe(self.skips)
        self.kernel.fail_on_violation = scenario.get("run", "invariants") == "fail"
        self._consumers = {c.name: c.group_id for c in consumer_configs(scenario)}
        self._admin = AdminDesk(self.kernel, lambda: admin_spec(scenario))
        self._fault_context = FaultContext(self._consumers, self.coordinator_of, self._admin.run)
        for spec in specs:
            self.kernel.add_node(spec, disk=(disks or {}).get(spec.name))
        for fault in faults:
            schedule_fault(self.kernel, fault, self._fault_context)

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

    def run_to_end(self, between_windows: Callable[[Kernel], bool] | None = None) -> StopReason:
        """Run the scenario's `duration.ms`, honouring its `max.events`; `between_windows` is
        called after each window and stops the run by returning True."""
        limit = self.scenario.get("run", "max.events") or None
        check = None if between_windows is None else (lambda: between_windows(self.kernel))
        return self.kernel.run(
            self.scenario.get("run", "duration.ms"), condition=check, max_events=limit
        )

    def close(self) -> None:
        try:
            self.kernel.shutdown()
        finally:
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
        fault = resolve_fault(fault, self.kernel.nodes, self._consumers, f"{fault.kind} fault")
        if fault.kind == "admin":
            _check_admin(self.scenario, fault, f"admin {fault.operation}")
        schedule_fault(self.kernel, fault, self._fault_context)
        self.kernel.apply_due()

    def crash(self, node: str, kind: str = "process") -> None:

        self.inject(Fault("crash", node=node, crash_kind=CrashKind(kind)))

    def restart(self, node: str) -> None:
        self.inject(Fault("restart", node=node))

    def shutdown(self, node: str, *, exit_after_ms: int = 0, restart_after_ms: int | None = None) -> None:
        """Stop a broker as an operator does: a controlled shutdown (with
        `controlled.shutdown.enable`), then the process exits; optionally it restarts later."""
        self.inject(Fault("shutdown", node=node, exit_after_ms=exit_after_ms, restart_after_ms=restart_after_ms))

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

    # The application around a consumer, and its operator.

    def close_consumer(self, node: str) -> None:
        """The consumer's application calls `close()`."""
        self.inject(Fault("close", node=node))

    def unsubscribe(self, node: str) -> None:
        self.inject(Fault("unsubscribe", node=node))

    def stall(self, node: str, duration_ms: int) -> None:
        """The processing in hand takes `duration_ms` longer."""
        self.inject(Fault("stall", node=node, duration_ms=duration_ms))

    def slow(self, node: str, process_record_ms: int, duration_ms: int | None = None) -> None:
        """From now, each record the consumer's application processes takes
        `process_record_ms`, for `duration_ms` (None: to the end), then its configured time."""
        self.inject(Fault("slow", node=node, process_record_ms=process_record_ms, duration_ms=duration_ms))

    def rolling_restart(
        self,
        nodes: list[str] | None = None,
        *,
        group: str | None = None,
        interval_ms: int = 10_000,
        down_ms: int = 0,
    ) -> None:
        """Close and restart consumers one after the other: `nodes` in order, or every
        consumer of `group`, in node order (sim.cluster.faults._RollingRestart)."""
        self.inject(
            Fault("rolling_restart", nodes=tuple(nodes or ()), group=group, interval_ms=interval_ms, down_ms=down_ms)
        )

    def zombie(self, node: str, duration_ms: int | None = None) -> None:
        """Cut the consumer off from its group's coordinator (as it is now) both ways, for
        `duration_ms` (None: until a heal); it still reaches the partitions' leaders."""
        self.inject(Fault("zombie", node=node, duration_ms=duration_ms))

    # The operator's group commands (`kafka-consumer-groups`), through the admin client. Each
    # is sent now; its outcome is read once the run has gone on (`AdminRequest.result`).

    def reset_offsets(
        self,
        group: str,
        to: str,
        *,
        topic: str | None = None,
        partitions: Sequence[int] = (),
        datetime_ms: int | None = None,
        shift_by: int | None = None,
    ) -> AdminRequest:
        """`--reset-offsets --execute` with `--to-earliest`, `--to-latest`, `--to-datetime`
        (`datetime_ms`) or `--shift-by` (`shift_by`); `topic` (and `partitions`) or, without
        one, every partition the group has an offset for (`--all-topics`)."""
        fault = Fault("admin", operation="reset_offsets", group=group, target=to, topic=topic,
                      partitions=tuple(partitions), datetime_ms=datetime_ms, shift_by=shift_by)
        return self._admin_command(fault)

    def delete_offsets(self, group: str, topic: str, partitions: Sequence[int] = ()) -> AdminRequest:
        """`--delete-offsets --topic T[:P,...]` (OffsetDelete, KIP-496)."""
        return self._admin_command(Fault("admin", operation="delete_offsets", group=group, topic=topic, partitions=tuple(partitions)))

    def delete_group(self, group: str) -> AdminRequest:
        """`--delete --group G` (DeleteGroups)."""
        return self._admin_command(Fault("admin", operation="delete_group", group=group))

    def describe_group(self, group: str) -> AdminRequest:
        """`--describe --group G --members`: state, protocol, members and assignments."""
        return self._admin_command(Fault("admin", operation="describe_group", group=group))

    def list_groups(self) -> AdminRequest:
        """`--list --state`: every group on every broker's coordinator."""
        return self._admin_command(Fault("admin", operation="list_groups"))

    def _admin_command(self, fault: Fault) -> AdminRequest:
        self.inject(fault)
        return AdminRequest(self._admin, self._admin.last_id)

    def lag(self, group_id: str) -> list[dict[str, Any]]:
        """`--describe --group G` now, read from the coordinator and the leaders' state (no
        request): per partition with an owner or a committed offset, the committed offset
        (None if none), the log end offset (the leader's HW, what ListOffsets latest answers a
        client), the lag (None without a committed offset), and the owner's member id, host and
        client id (None without one)."""
        coordinator = self.coordinator_of(group_id)
        group = None if coordinator is None else self.state(coordinator, "group-coordinator")["groups"].get(group_id)
        return lag_rows(group, self._high_watermark)

    def _high_watermark(self, tp: str) -> int | None:
        leader = self._live_leader(tp)
        return None if leader is None else leader[1]["high_watermark"]

    def coordinator_of(self, group_id: str) -> str | None:
        """The broker node coordinating `group_id` now: the live leader, with the highest
        leader epoch, of the group's `__consumer_offsets` partition (None: it has none)."""
        tp = f"{OFFSETS_TOPIC}-{partition_for(group_id, self.scenario.get('broker', 'offsets.topic.num.partitions'))}"
        leader = self._live_leader(tp)
        return None if leader is None else leader[0]

    def _live_leader(self, tp: str) -> tuple[str, dict[str, Any]] | None:
        """The live broker leading `tp` with the highest leader epoch, and its replica's state."""
        leaders = []
        for b in range(1, self.scenario.get("cluster", "brokers") + 1):
            node = f"broker-{b}"
            if self.kernel.is_up(node):
                replica = self.state(node, BROKER_ACTOR)["partitions"].get(tp)
                if replica is not None and replica["role"] == "leader":
                    leaders.append((replica["leader_epoch"], b, node, replica))
        if not leaders:
            return None
        _, _, node, replica = max(leaders, key=lambda leader: leader[:2])
        return node, replica

    # ------------------------------------------------------------------ scripted clients

    def client(self, name: str) -> Client:
        """A scripted client on a new node `name`, started now: it sends raw requests of
        `protocols/` at the times `Client.send` says and records every answer
        (sim.cluster.client)."""
        handle = Client(self.kernel, name)
        self.kernel.add_node(NodeSpec(name, (ActorSpec(CLIENT_ACTOR, lambda: handle.script),)))
        return handle

    # ------------------------------------------------------------------ inspection

    @property
    def nodes(self) -> list[str]:
        return self.kernel.nodes

    def actors(self) -> list[Address]:
        return self.kernel.addresses()

    def state(self, node: str, actor: str) -> dict[str, Any]:
        """An actor's state as plain data."""
        return self.kernel.snapshot(Address(node, actor))

    def final_checks(self) -> dict[str, Any]:
        """The end-of-run checks against ground truth (docs/run-directory.md): the final logs
        against what producers had acknowledged (`sim.cluster.ground_truth`), then the groups'
        duplicates and skipped records."""
        producers = [self.state(f"producer-{i + 1}", "producer") for i in range(len(self.scenario.producers))]
        brokers = range(1, self.scenario.get("cluster", "brokers") + 1)
        figures, logs = log_figures(self.scenario.producers, producers, replica_logs(self.kernel, brokers))
        return {**figures, **self.groups.summary(), **self.skips.figures(logs)}
