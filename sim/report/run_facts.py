"""What the run report tells, gathered in one streaming pass over a run's `events.jsonl`.

The pass keeps only what the narrative and the report's plots need, in the order the log gives
it (the log is deterministic, so the facts are too): the faults injected; controller elections;
leader elections and ISR changes, with the leader each one left; each replica's highest LEO and
HW per simulated second; partitions left without a live leader, and leaders whose high watermark
stood still while records waited; each consumer's holds on its partitions; the group's
rebalances (from the coordinator's state changes); and, at each consumer crash, what it had
processed beyond its group's committed offsets (what a new owner reads again).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from sim.engine.trace import KERNEL_FAULT_EVENTS
from sim.report.consumer_group_facts import ConsumerGroupScan

__all__ = ["FAULT_EVENTS", "HW_STALL_MS", "RunFacts", "scan_events"]

FAULT_EVENTS = frozenset((*KERNEL_FAULT_EVENTS, "application_called", "fault_skipped"))
"""Those and the client faults (an application's calls) and faults that could not act."""

HW_STALL_MS = 2000
"""A leader whose HW does not move for this long while its log holds records above it stalls
its partition's consumers and its acks=all producers."""


@dataclass(slots=True)
class RunFacts:
    """The facts of one run, each list in log order; times in simulated ms."""

    end_ms: int = 0
    faults: list[dict[str, Any]] = field(default_factory=list)
    controllers: list[dict[str, Any]] = field(default_factory=list)
    """`controller_elected` and `controller_resigned`: `ts_ms`, `event`, `broker_id`, `epoch`."""
    leader_changes: list[dict[str, Any]] = field(default_factory=list)
    """Every ISR or leader change: `ts_ms`, `event`, `partition`, `election` (or null),
    `unclean`, `leader` (broker id, -1 for none), `leader_epoch`, `isr`, `previous_isr`,
    `logged_by` (the node: the controller, or the leader that changed its ISR)."""
    election_failures: list[dict[str, Any]] = field(default_factory=list)
    replica_offsets: dict[str, dict[int, list[int]]] = field(default_factory=dict)
    """`topic-partition@node` -> second -> [highest LEO, highest HW] in that second."""
    leaderless: list[dict[str, Any]] = field(default_factory=list)
    """Spells without a live leader: `partition`, `from_ms`, `to_ms` (null: to the end),
    `broker` (the leader lost), `lost_by` (`node_crashed`, `node_stopped`, or `became_follower`
    / `replica_stopped`: it gave the leadership up), `resumed_by` (the broker that then took it,
    or null). A live leader is a running broker that took the leadership (`became_leader`) and
    has not given it up since: the controller's election alone leads nothing until its
    LeaderAndIsr reaches the broker, and a restarted broker that the controller hands its
    partitions back without any election leads them again."""
    hw_stalls: list[dict[str, Any]] = field(default_factory=list)
    """`partition`, `leader` (node), `from_ms`, `to_ms`, `high_watermark`: see HW_STALL_MS."""
    holds: list[dict[str, Any]] = field(default_factory=list)
    """`consumer`, `group_id`, `partition`, `generation_id`, `from_ms`, `to_ms` (null until it
    ends), `ended_by` (the event that ended it)."""
    rebalances: list[dict[str, Any]] = field(default_factory=list)
    """Per generation formed: `group_id`, `coordinator` (its node), `generation_id`, `members` (consumer nodes),
    `began_ms` (PreparingRebalance, or null), `trigger` (the member change that began it:
    `change`, joined or removed, `member`, its consumer, `reason`; or null), `removed`
    ([consumer, reason] of members removed meanwhile), `formed_ms`."""
    out_of_group: list[dict[str, Any]] = field(default_factory=list)
    """Spells of a running consumer out of its group: `consumer`, `group_id`, `from_ms` (the
    coordinator removed its member, for any reason but its own LeaveGroup), `reason`, `to_ms`
    and `generation_id` (the first generation with a member of it again; null: none)."""
    consumer_crashes: list[dict[str, Any]] = field(default_factory=list)
    """`consumer`, `ts_ms`, `kind`, `partitions` (it held), `uncommitted` (records this process
    had processed above the group's committed offsets), `uncommitted_ranges` (partition ->
    [committed offset, end of what it processed], where it processed more), `last_commit_ms`,
    `last_commit_kind`."""
    truncations: list[dict[str, Any]] = field(default_factory=list)
    """`log_truncated`: `ts_ms`, `partition`, `node`, `from_offset`, `to_offset`, `reason`."""
    admin_actions: list[dict[str, Any]] = field(default_factory=list)
    """The operator's commands as they were answered: `ts_ms`, `operation` (the `admin` fault's),
    `group_id` (null for `list_groups`), `error`, `detail` (a reset's target, or empty)."""
    # KIP-848 consumer groups (sim/report/consumer_group_facts.py)
    group_protocols: dict[str, str] = field(default_factory=dict)
    """Group -> `classic` or `consumer` (its consumers' `group.protocol`)."""
    consumer_setup: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Consumer node -> `group_id`, `protocol`, `static` (a `group.instance.id`), as last started."""
    group_epochs: dict[str, int] = field(default_factory=dict)
    """A consumer group's last group epoch."""
    group_coordinators: dict[str, list[str]] = field(default_factory=dict)
    """A consumer group's coordinators, in the order they took it."""
    target_assignments: list[dict[str, Any]] = field(default_factory=list)
    """`ts_ms`, `group_id`, `coordinator`, `epoch`, `members` ([consumer, of an ended process,
    partitions]), `triggers` ([{reason, consumer}] of the epoch bumps since the last target)."""
    member_removals: list[dict[str, Any]] = field(default_factory=list)
    """`consumer_member_removed`: `ts_ms`, `group_id`, `coordinator`, `member_id`, `consumer`,
    `member_epoch`, `reason`, `instance_id`, `successor` (a replacing member's `consumer`,
    `member_epoch`, `assigned`, or null)."""


def scan_events(path: Path, end_ms: int = 0) -> RunFacts:
    """Read `path` once and return its facts. `end_ms` is the run's simulated end (summary.json's
    `sim_ms`), which can come after its last event: a spell still open then lasts until it."""
    scan = _Scan()
    with path.open("rb") as lines:
        for line in lines:
            scan.see(orjson.loads(line))
    scan.facts.end_ms = max(scan.facts.end_ms, end_ms)
    return scan.finish()


def _tp(event: dict[str, Any]) -> str:
    return f"{event['topic']}-{event['partition']}"


class _Scan(ConsumerGroupScan):
    """The pass's state; `see` takes events in log order."""

    def __init__(self) -> None:
        self.facts = RunFacts()
        self.isr: dict[str, list[int]] = {}
        self.leader: dict[str, int] = {}  # the controller's choice
        self.leading: dict[str, list[int]] = {}  # partition -> the running brokers acting as its leader
        self.leaderless: dict[str, dict[str, Any]] = {}
        self.hw: dict[tuple[str, str], dict[str, Any]] = {}  # (partition, leader node) -> its HW, since when records wait
        self.open_holds: dict[tuple[str, str], dict[str, Any]] = {}
        self.member_node: dict[str, str] = {}
        self.rebalance: dict[tuple[str, str], dict[str, Any]] = {}  # (coordinator, group) -> the rebalance begun
        self.last_member_event: dict[tuple[str, str], tuple[int, dict[str, str]]] = {}
        self.committed: dict[tuple[str, str], int] = {}
        self.processed: dict[tuple[str, str, str], int] = {}  # (node, group, tp) -> end offset
        self.last_commit: dict[str, tuple[int, str]] = {}
        self.up: dict[str, int] = {}  # nodes whose process runs -> when it started
        self.member_process: dict[str, int] = {}  # member id -> when the process that had it started
        self.removals: dict[tuple[str, str], dict[str, Any]] = {}  # (group, member id) -> its first removal
        self.pending_commits: dict[tuple[str, int], str] = {}
        self._bumps: dict[tuple[str, str], dict[str, Any]] = {}  # (coordinator, group) -> epoch bumps since its last target

    def see(self, e: dict[str, Any]) -> None:
        self.facts.end_ms = e["ts_ms"]
        handler = getattr(self, f"_on_{e['event']}", None)
        if e["event"] in FAULT_EVENTS:
            self._on_fault(e)
        if handler is not None:
            handler(e)

    # faults and nodes

    def _on_fault(self, e: dict[str, Any]) -> None:
        keys = ("ts_ms", "event", "target", "kind", "action", "until_ms", "side_a", "side_b", "one_way", "incarnation", "reason")
        self.facts.faults.append({k: e.get(k) for k in keys})
        if e["event"] == "node_started":
            self.up[e["target"]] = e["ts_ms"]
            for key in [k for k in self.processed if k[0] == e["target"]]:  # a new process starts from the committed offsets
                del self.processed[key]
        if e["event"] in ("node_crashed", "node_stopped"):
            self.up.pop(e["target"], None)
            self._node_down(e)

    def _node_down(self, e: dict[str, Any]) -> None:
        node, now = e["target"], e["ts_ms"]
        if node.startswith("broker-"):
            broker = int(node.removeprefix("broker-"))
            for partition, leaders in self.leading.items():
                if broker in leaders:
                    self._step_down(partition, broker, now, e["event"])
            for partition, leader in [key for key in self.hw if key[1] == node]:  # a leader by static metadata
                self._leader_gone(partition, leader, now)
            return
        held = sorted(tp for (holder, tp) in self.open_holds if holder == node)
        if e["event"] == "node_crashed" and held:
            group = self.open_holds[(node, held[0])]["group_id"]
            ranges = {tp: [self.committed.get((group, tp), 0), self.processed.get((node, group, tp), 0)] for tp in held}
            last_ms, last_kind = self.last_commit.get(node, (None, None))
            self.facts.consumer_crashes.append(
                {"consumer": node, "ts_ms": now, "kind": e["kind"], "partitions": held,
                 "uncommitted": sum(max(0, end - start) for start, end in ranges.values()),
                 "uncommitted_ranges": {tp: r for tp, r in ranges.items() if r[1] > r[0]},
                 "last_commit_ms": last_ms, "last_commit_kind": last_kind}
            )
        for tp in held:
            self._end_hold(node, tp, now, e["event"])

    # controller, leaders, ISR

    def _on_controller_elected(self, e: dict[str, Any]) -> None:
        self.facts.controllers.append(
            {"ts_ms": e["ts_ms"], "event": e["event"], "broker_id": e["broker_id"], "epoch": e["controller_epoch"]}
        )

    def _on_controller_resigned(self, e: dict[str, Any]) -> None:
        self._on_controller_elected(e)

    def _isr_change(self, e: dict[str, Any]) -> None:
        partition = _tp(e)
        leader = e.get("leader", self.leader.get(partition, -1))
        if e["event"] in ("isr_shrunk", "isr_expanded"):
            leader = int(e["node"].removeprefix("broker-"))
        self.facts.leader_changes.append(
            {
                "ts_ms": e["ts_ms"],
                "event": e["event"],
                "partition": partition,
                "election": e.get("election"),
                "unclean": bool(e.get("unclean")),
                "leader": leader,
                "leader_epoch": e["leader_epoch"],
                "isr": list(e["isr"]),
                "previous_isr": self.isr.get(partition, []),
                "logged_by": e["node"],
            }
        )
        self.isr[partition] = list(e["isr"])

    def _on_leader_elected(self, e: dict[str, Any]) -> None:
        self._isr_change(e)
        self.leader[_tp(e)] = e["leader"]

    # the brokers' own view: who acts as leader

    def _on_became_leader(self, e: dict[str, Any]) -> None:
        partition, broker, now = _tp(e), int(e["node"].removeprefix("broker-")), e["ts_ms"]
        leaders = self.leading.setdefault(partition, [])
        if broker not in leaders:
            leaders.append(broker)
        gap = self.leaderless.pop(partition, None)
        if gap is not None:
            gap["to_ms"], gap["resumed_by"] = now, broker
            self.facts.leaderless.append(gap)

    def _on_became_follower(self, e: dict[str, Any]) -> None:
        partition, broker = _tp(e), int(e["node"].removeprefix("broker-"))
        if broker in self.leading.get(partition, ()):
            self._step_down(partition, broker, e["ts_ms"], e["event"])

    _on_replica_stopped = _on_became_follower

    def _step_down(self, partition: str, broker: int, now: int, why: str) -> None:
        """`broker` no longer leads `partition`: it went down or gave the leadership up."""
        leaders = self.leading[partition]
        leaders.remove(broker)
        self._leader_gone(partition, f"broker-{broker}", now)
        if not leaders and partition not in self.leaderless:
            self.leaderless[partition] = {"partition": partition, "from_ms": now, "to_ms": None, "broker": broker,
                                          "lost_by": why, "resumed_by": None}

    _on_isr_shrunk = _isr_change
    _on_isr_expanded = _isr_change

    def _on_replica_removed_from_isr(self, e: dict[str, Any]) -> None:
        self._isr_change(e)
        if e["leader"] == -1:
            partition = _tp(e)
            self.leader[partition] = -1

    def _on_leader_election_failed(self, e: dict[str, Any]) -> None:
        self.facts.election_failures.append(
            {"ts_ms": e["ts_ms"], "partition": _tp(e), "election": e["election"], "reason": e["reason"]}
        )

    def _on_replica_offsets_changed(self, e: dict[str, Any]) -> None:
        partition, now = _tp(e), e["ts_ms"]
        leo, hw = e["log_end_offset"], e["high_watermark"]
        second = self.facts.replica_offsets.setdefault(f"{partition}@{e['node']}", {})
        best = second.setdefault(now // 1000, [leo, hw])
        best[0], best[1] = max(best[0], leo), max(best[1], hw)
        if e.get("role") != "leader":
            return
        key = (partition, e["node"])
        state = self.hw.setdefault(key, {"hw": hw, "waiting_ms": None})
        if hw > state["hw"]:
            self._close_hw_stall(key, state, now)
            state["hw"], state["waiting_ms"] = hw, None
        if leo > state["hw"] and state["waiting_ms"] is None:
            state["waiting_ms"] = now

    def _leader_gone(self, partition: str, node: str, now: int) -> None:
        """A leader that went down or gave up its leadership no longer holds the partition's HW
        back; a later leadership of the same broker starts its own count."""
        state = self.hw.pop((partition, node), None)
        if state is not None:
            self._close_hw_stall((partition, node), state, now)

    def _close_hw_stall(self, key: tuple[str, str], state: dict[str, Any], now: int) -> None:
        since = state["waiting_ms"]
        if since is not None and now - since >= HW_STALL_MS:
            self.facts.hw_stalls.append(
                {"partition": key[0], "leader": key[1], "from_ms": since, "to_ms": now, "high_watermark": state["hw"]}
            )

    # consumers and groups

    def _on_partitions_assigned(self, e: dict[str, Any]) -> None:
        self._see_member(e["member_id"], e["node"])
        for tp in e["partitions"]:
            self._end_hold(e["node"], tp, e["ts_ms"], "partitions_assigned")
            hold = {"consumer": e["node"], "group_id": e["group_id"], "partition": tp,
                    "generation_id": e["generation_id"], "from_ms": e["ts_ms"], "to_ms": None, "ended_by": None}
            self.open_holds[(e["node"], tp)] = hold
            self.facts.holds.append(hold)

    def _on_partitions_revoked(self, e: dict[str, Any]) -> None:
        for tp in e["partitions"]:
            self._end_hold(e["node"], tp, e["ts_ms"], e["event"])

    _on_partitions_lost = _on_partitions_revoked

    def _end_hold(self, node: str, tp: str, now: int, why: str) -> None:
        hold = self.open_holds.pop((node, tp), None)
        if hold is not None:
            hold["to_ms"], hold["ended_by"] = now, why

    def _on_records_processed(self, e: dict[str, Any]) -> None:
        key = (e["node"], e["group_id"], _tp(e))
        self.processed[key] = max(self.processed.get(key, 0), e["end_offset"])

    def _see_member(self, member_id: str, node: str) -> None:
        self.member_node[member_id] = node
        self.member_process.setdefault(member_id, self.up.get(node, -1))

    def _on_join_group_failed(self, e: dict[str, Any]) -> None:
        if e["assigned_member_id"]:
            self._see_member(e["assigned_member_id"], e["node"])

    def _on_offset_commit_sent(self, e: dict[str, Any]) -> None:
        self._see_member(e["member_id"], e["node"])
        self.pending_commits[(e["node"], e["commit_id"])] = e["kind"]

    def _on_offset_commit_answered(self, e: dict[str, Any]) -> None:
        kind = self.pending_commits.pop((e["node"], e["commit_id"]), e["kind"])
        if e["error"] == "NONE":
            self.last_commit[e["node"]] = (e["ts_ms"], kind)

    def _on_offset_commit_completed(self, e: dict[str, Any]) -> None:
        if e["error"] == "NONE":
            for topic, partition, offset in e["offsets"]:
                self.committed[(e["group_id"], f"{topic}-{partition}")] = offset

    # A group's events are keyed by its coordinator too: a coordinator cut off from the cluster
    # can go on with the group while another broker coordinates it.

    def _on_group_member_added(self, e: dict[str, Any]) -> None:
        group = (e["node"], e["group_id"])
        self.last_member_event[group] = (e["ts_ms"], {"change": "joined", "member": e["member_id"], "reason": ""})

    def _on_group_member_removed(self, e: dict[str, Any]) -> None:
        group = (e["node"], e["group_id"])
        self.last_member_event[group] = (e["ts_ms"], {"change": "removed", "member": e["member_id"], "reason": e["reason"]})
        if group in self.rebalance:
            self.rebalance[group]["removed"].append([e["member_id"], e["reason"]])
        node = self.member_node.get(e["member_id"])
        running = node in self.up and self.member_process.get(e["member_id"]) == self.up[node]  # not a crashed process's
        if e["reason"] != "leave" and running and (e["group_id"], e["member_id"]) not in self.removals:
            self.removals[(e["group_id"], e["member_id"])] = {
                "consumer": node, "group_id": e["group_id"], "from_ms": e["ts_ms"], "reason": e["reason"]}

    def _on_group_state_changed(self, e: dict[str, Any]) -> None:
        group = (e["node"], e["group_id"])
        if e["state"] == "PreparingRebalance" and group not in self.rebalance:
            ts, trigger = self.last_member_event.get(group, (None, None))
            self.rebalance[group] = {"began_ms": e["ts_ms"], "trigger": trigger if ts == e["ts_ms"] else None, "removed": []}
        elif e["state"] == "Dead":
            self.rebalance.pop(group, None)

    def _on_generation_started(self, e: dict[str, Any]) -> None:
        started = self.rebalance.pop((e["node"], e["group_id"]), {"began_ms": None, "trigger": None, "removed": []})
        self.facts.rebalances.append(
            {
                "group_id": e["group_id"],
                "coordinator": e["node"],
                "generation_id": e["generation_id"],
                "members": list(e["members"]),
                "formed_ms": e["ts_ms"],
                **started,
            }
        )

    # truncations and the operator's commands

    def _on_log_truncated(self, e: dict[str, Any]) -> None:
        self.facts.truncations.append(
            {"ts_ms": e["ts_ms"], "partition": _tp(e), "node": e["node"], "from_offset": e["from_offset"],
             "to_offset": e["to_offset"], "reason": e["reason"]}
        )

    def _admin(self, e: dict[str, Any], operation: str, detail: str = "") -> None:
        self.facts.admin_actions.append(
            {"ts_ms": e["ts_ms"], "operation": operation, "group_id": e.get("group_id"), "error": e["error"], "detail": detail}
        )

    def _on_admin_offsets_reset(self, e: dict[str, Any]) -> None:
        self._admin(e, "reset_offsets", f"to {e['target']}")

    def _on_admin_offsets_deleted(self, e: dict[str, Any]) -> None:
        self._admin(e, "delete_offsets", ", ".join(e["partitions"]))

    def _on_admin_group_deleted(self, e: dict[str, Any]) -> None:
        self._admin(e, "delete_group")

    def _on_admin_group_described(self, e: dict[str, Any]) -> None:
        self._admin(e, "describe_group", f"state {e['state']}")

    def _on_admin_groups_listed(self, e: dict[str, Any]) -> None:
        self._admin(e, "list_groups")

    def finish(self) -> RunFacts:
        facts = self.facts
        self.finish_consumer_groups()
        for gap in self.leaderless.values():
            facts.leaderless.append(gap)
        for key, state in self.hw.items():
            self._close_hw_stall(key, state, facts.end_ms)
        for rebalance in facts.rebalances:  # member ids are known by the end, if not when they joined
            rebalance["members"] = sorted(self.member_node.get(m, m) for m in rebalance["members"])
            rebalance["removed"] = [[self.member_node.get(m, m), why] for m, why in rebalance["removed"]]
            if rebalance["trigger"] is not None:
                rebalance["trigger"]["member"] = self.member_node.get(rebalance["trigger"]["member"], "a new member")
        for out in self.removals.values():
            back = [r for r in facts.rebalances if r["group_id"] == out["group_id"] and r["formed_ms"] >= out["from_ms"]
                    and out["consumer"] in r["members"]]
            out["to_ms"], out["generation_id"] = (back[0]["formed_ms"], back[0]["generation_id"]) if back else (None, None)
            facts.out_of_group.append(out)
        facts.out_of_group.sort(key=lambda o: (o["from_ms"], o["consumer"]))
        facts.leaderless.sort(key=lambda g: (g["from_ms"], g["partition"]))
        facts.hw_stalls.sort(key=lambda s: (s["from_ms"], s["partition"]))
        return facts
