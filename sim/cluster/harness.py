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

import copy
import json
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from actors.addresses import BROKER_ACTOR
from actors.controller.zkdata import CONTROLLER as CONTROLLER_ZNODE
from actors.core import Address
from actors.group.placement import OFFSETS_TOPIC, partition_for
from actors.request_log import RequestLog
from sim.cluster.accounting import GroupAccounting
from sim.cluster.admin import AdminDesk, AdminRequest, check_admin_fault, lag_rows
from sim.cluster.anomalies import AnomalyChecks
from sim.cluster.client import CLIENT_ACTOR, Client
from sim.cluster.consumer_group_invariants import ConsumerGroupInvariants
from sim.cluster.fault_methods import FaultMethods
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
from sim.cluster.instance_ids import SharedInstanceIds
from sim.cluster.invariants import Invariants
from sim.cluster.rundir import ClusterError, build_summary, prepare_for_api, write_run_dir
from sim.cluster.scenario import Scenario, blame_overrides
from sim.cluster.skips import SkipAccounting
from sim.cluster.wiring import admin_spec, consumer_configs, node_specs
from sim.engine.disk import Disk
from sim.engine.eventlog import EventLog
from sim.engine.kernel import ActorSpec, HostKind, Kernel, NodeSpec, SimulationFailed, StopReason
from sim.engine.network import NetworkConfig
from sim.engine.trace import LOG_SCHEMA_VERSION

__all__ = ["Client", "Cluster", "ClusterError", "check_scenario"]



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


class Cluster(FaultMethods):
    """A running simulation of one scenario."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        events_path: Path | None = None,
        host: HostKind = HostKind.PYKKA,
        znodes: tuple[tuple[str, str, int], ...] = (),
        disks: dict[str, Disk] | None = None,
        run_dir: str | Path | None = None,
    ) -> None:
        """A cluster can start from a history: `znodes`, `(path, data, version)` the
        coordination service holds besides the topics (a controller epoch, partition states);
        `disks`, what a node's disk holds (by node name). `run_dir`: the run directory to
        write, as `kafkasim run` writes one: prepared now (an earlier run's files removed),
        with `scenario.toml` and the event log as it is written; `write_run()` adds the
        summary and the report."""
        self.scenario = scenario
        # Checked before the kernel starts: a bad scenario leaves no host threads or CPU hold.
        specs = node_specs(scenario, znodes)
        faults = check_scenario(scenario)
        self._started = time.perf_counter()
        self._closed = False
        self._failure: tuple[str, str] | None = None
        self.run_dir = None if run_dir is None else Path(run_dir)
        if self.run_dir is not None:
            if events_path is not None:
                msg = "Cluster: give run_dir or events_path, not both (the log of a run directory is its events.jsonl)"
                raise ClusterError(msg)
            prepare_for_api(self.run_dir)
            (self.run_dir / "scenario.toml").write_text(scenario.to_toml(), encoding="utf-8")
            events_path = self.run_dir / "events.jsonl"
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
        self.invariants = Invariants(stale_controller_writes=not scenario.profile.controller_epoch_checked_writes)
        self.kernel.observe(self.invariants)
        self.group_invariants = GroupInvariants(scenario.profile.version)
        self.kernel.observe(self.group_invariants)
        self.kernel.observe(ConsumerGroupInvariants())
        self.groups = GroupAccounting(scenario.profile.version)
        self.kernel.observe(self.groups)
        self.skips = SkipAccounting()
        self.kernel.observe(self.skips)
        self.anomalies = AnomalyChecks()
        self.kernel.observe(self.anomalies)
        self.instance_ids = SharedInstanceIds()
        self.kernel.observe(self.instance_ids)
        self.kernel.fail_on_violation = scenario.get("run", "invariants") == "fail"
        self._consumers = {c.name: c.group_id for c in consumer_configs(scenario)}
        self._admin = AdminDesk(self.kernel, lambda: admin_spec(scenario))
        self._fault_context = FaultContext(self._consumers, self.coordinator_of, self._admin.run, self.controller)
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
        return self._failing(lambda: self.kernel.run(end, condition=until, max_events=max_events))

    def run_to_end(self, between_windows: Callable[[Kernel], bool] | None = None) -> StopReason:
        """Run the scenario's `duration.ms`, honouring its `max.events`; `between_windows` is
        called after each window and stops the run by returning True."""
        limit = self.scenario.get("run", "max.events") or None
        check = None if between_windows is None else (lambda: between_windows(self.kernel))
        return self._failing(
            lambda: self.kernel.run(self.scenario.get("run", "duration.ms"), condition=check, max_events=limit)
        )

    def _failing(self, run: Callable[[], StopReason]) -> StopReason:
        """Run, keeping a simulator failure for the summary (and failure.txt) before raising it."""
        try:
            return run()
        except SimulationFailed as exc:
            self._failure = (str(exc), traceback.format_exc())
            raise

    def close(self) -> None:
        self._closed = True
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

    def controller(self) -> str | None:
        """The broker node holding ZooKeeper's `/controller` now (None: no broker does, or the
        cluster has no ZooKeeper, or ZooKeeper is down)."""
        if "zookeeper" not in self.kernel.nodes or not self.kernel.is_up("zookeeper"):
            return None
        znode = self.state("zookeeper", "zookeeper")["znodes"].get(CONTROLLER_ZNODE)
        return None if znode is None else f"broker-{json.loads(znode['data'])['brokerid']}"

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
        """An actor's state as plain data, of a running node (`ClusterError` otherwise, naming
        what can be read)."""
        address = Address(node, actor)
        try:
            return self.kernel.snapshot(address)
        except KeyError:
            live = self.kernel.addresses()
            if address in live:
                raise
            raise ClusterError(_no_state(node, actor, self.kernel.nodes, live)) from None

    def final_checks(self) -> dict[str, Any]:
        """The end-of-run checks against ground truth (docs/run-directory.md): the final logs
        against what producers had acknowledged (`sim.cluster.ground_truth`), then the groups'
        duplicates and skipped records, and Jepsen's poll and send anomalies
        (`sim.cluster.anomalies`)."""
        producers = [self.state(f"producer-{i + 1}", "producer") for i in range(len(self.scenario.producers))]
        brokers = range(1, self.scenario.get("cluster", "brokers") + 1)
        figures, logs = log_figures(self.scenario.producers, producers, replica_logs(self.kernel, brokers))
        findings = sorted([*self.invariants.findings, *self.group_invariants.findings], key=lambda f: f["ts_ms"])
        known = {"known_bug_findings": findings}
        shared = self.instance_ids.figures()
        anomalies = self.anomalies.figures()
        return {**figures, **self.groups.summary(), **self.skips.figures(logs), **anomalies, **shared, **known}

    # ------------------------------------------------------------------ the run directory

    def summary(self) -> dict[str, Any]:
        """The run's `summary.json` as it stands now: the figures of the run so far, and at its
        end (after `run_to_end()`) the same object `kafkasim run` writes, but `wall_s`. The
        end-of-run checks are made on the logs as they are now; a run the simulator failed
        has none, as in `kafkasim run`. Read it before `close()`."""
        if self._closed:
            msg = "summary(): the cluster is closed; read the summary before close() (inside the with block)"
            raise ClusterError(msg)
        checks = {} if self._failure else copy.deepcopy(self.final_checks())
        summary = build_summary(self.scenario, self.kernel, time.perf_counter() - self._started)
        summary.update(checks)
        summary["failure"] = None if self._failure is None else self._failure[0]
        return summary

    def write_run(self, path: str | Path | None = None, *, report: bool = True) -> Path:
        """Write the whole run directory of the run so far: `events.jsonl`, `scenario.toml`,
        `summary.json` (`summary()`), `failure.txt` if the simulator failed, and `report.html`
        unless `report=False`; `kafkasim report` and `kafkasim analyze` read it like any run.
        Into `run_dir` by default; into another `path` the event log is copied (a cluster
        keeps one only with `run_dir` or `events_path`). Returns the directory."""
        out = self.run_dir if path is None else Path(path)
        if out is None:
            msg = "write_run(): name the directory (write_run(PATH)), or create the Cluster with run_dir=PATH"
            raise ClusterError(msg)
        summary = self.summary()
        self.kernel.event_log.flush()
        in_place = self.run_dir is not None and out.resolve() == self.run_dir.resolve()
        failure = None if self._failure is None else self._failure[1]
        return write_run_dir(
            out, self.scenario, summary, self.kernel.event_log.path, in_place=in_place, failure=failure, report=report
        )


def _no_state(node: str, actor: str, nodes: list[str], live: list[Address]) -> str:
    """Why `state(node, actor)` has nothing to read, and what it can read."""
    if node not in nodes:
        return f"state(): no node {node!r}; the nodes are {', '.join(nodes)}"
    on_node = sorted(a.actor for a in live if a.node == node)
    if on_node:
        return f"state(): {node} has no actor {actor!r}; its actors are {', '.join(on_node)}"
    running = sorted({a.node for a in live if a.actor == actor}) or sorted({a.node for a in live})
    return f"{node} is stopped: state() reads a running node; running: {', '.join(running) or 'none'}"
