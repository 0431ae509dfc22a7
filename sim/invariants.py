"""Invariants checked after every event, and the end-of-run checks against ground truth.

The invariants watch the event stream in log order (the kernel calls them on every event it
writes), so they see each replica's state as it changes, with no extra inspection of the actors.
They are named after the TLA+ specs (hachikuji/kafka-specification) where one exists:
- `hw_at_most_leo`: on every replica, HW <= LEO;
- `leader_in_isr` (`LeaderInIsr`): a leader is in its own ISR;
- `monotonic_high_watermark`: a leader's HW never goes back while it leads in one epoch;
- `weak_isr` (`WeakIsr`): records below a presumed leader's HW are on every member of its ISR;
- `strong_isr` (`StrongIsr`): the same for every member of the latest committed ISR;
- `single_controller_per_epoch`: no two brokers are elected controller with the same epoch;
- `fenced_controller_writes`: ZooKeeper accepts a new leader or leader epoch for a partition
  only with the controller epoch current at ZooKeeper (a stale controller's writes are fenced).

For the last two the checker keeps a shadow of every replica's log as record identities (the
leader epoch and offset each record was first written with): a leader's `records_appended` adds
them, a follower's growth copies them from the leader of its epoch, a truncation or a recovery
cuts them. The events carry offsets only, so this costs no per-record logging. A replica whose
shadow cannot be kept exactly (it started from a prepared disk, or restarted after a power or
disk loss, where Kafka itself promises nothing: KIP-966) is left out until it is back in sync.

The end-of-run checks compare final replica logs: committed prefixes that differ between
replicas, and acknowledged records that no longer exist.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Invariants", "Violation", "diverged_replicas", "lost_acknowledged"]


@dataclass(frozen=True, slots=True)
class Violation:
    invariant: str
    ts_ms: int
    node: str
    detail: str

    def as_dict(self) -> dict[str, Any]:
        return {"invariant": self.invariant, "ts_ms": self.ts_ms, "node": self.node, "detail": self.detail}


def _broker_id(node: str) -> int | None:
    prefix, _, number = node.rpartition("-")
    return int(number) if prefix == "broker" and number.isdigit() else None


Replica = tuple[str, str, int]  # (node, topic, partition)
RecordId = tuple[int, int]  # (leader epoch, offset) of the write


@dataclass(slots=True)
class _Shadow:
    records: list[RecordId] = field(default_factory=list)
    high_watermark: int = 0
    role: str = "offline"
    exact: bool = True
    """False: this replica's records are not known exactly (left out of the ISR checks)."""


@dataclass(slots=True)
class Invariants:
    """Call with each event dict; returns the violations that event caused."""

    violations: list[Violation] = field(default_factory=list)
    _leader_hw: dict[tuple[str, str, int, int], int] = field(default_factory=dict)
    _shadows: dict[Replica, _Shadow] = field(default_factory=dict)
    _leader_of_epoch: dict[tuple[str, int, int], str] = field(default_factory=dict)
    _leader_isr: dict[Replica, list[int]] = field(default_factory=dict)
    _committed_isr: dict[tuple[str, int], list[int]] = field(default_factory=dict)
    _controllers: dict[int, int] = field(default_factory=dict)
    _controller_epoch: int = 0
    _partition_states: dict[str, tuple[int, int]] = field(default_factory=dict)

    def __call__(self, event: Mapping[str, Any]) -> list[Violation]:
        name = event["event"]
        found: list[Violation] = []
        if name == "replica_offsets_changed":
            found = self._offsets(event)
            self._track_offsets(event)
            found += self._isr_data(event)
        elif name == "records_appended":
            self._track_append(event)
        elif name == "log_truncated":
            shadow = self._shadow(event)
            del shadow.records[event["to_offset"] :]
        elif name in ("became_leader", "isr_shrunk", "isr_expanded"):
            found = self._leader_in_isr(event)
            self._track_isr(event)
            found += self._isr_data(event)
        elif name == "became_follower":
            self._shadow(event).role = "follower"
        elif name == "node_crashed":
            self._crashed(event["target"], event["kind"])
        elif name == "controller_elected":
            found = self._controller(event)
        elif name == "znode_changed" and "data" in event:
            found = self._znode(event)
        self.violations.extend(found)
        return found

    def _controller(self, event: Mapping[str, Any]) -> list[Violation]:
        epoch, broker = event["controller_epoch"], event["broker_id"]
        holder = self._controllers.setdefault(epoch, broker)
        if holder == broker:
            return []
        detail = f"controller epoch {epoch} elected broker {holder} and broker {broker}"
        return [Violation("single_controller_per_epoch", event["ts_ms"], event["node"], detail)]

    def _znode(self, event: Mapping[str, Any]) -> list[Violation]:
        path = event["path"]
        if path == "/controller_epoch":
            self._controller_epoch = int(event["data"])
            return []
        if not (path.startswith("/brokers/topics/") and path.endswith("/state")):
            return []
        state = json.loads(event["data"])
        leadership = (state["leader"], state["leader_epoch"])
        previous = self._partition_states.get(path)
        self._partition_states[path] = leadership
        if previous is None and event["op"] != "create":
            return []  # a partition from before the run: its leadership now is known
        if leadership == previous or state["controller_epoch"] == self._controller_epoch:
            return []  # an ISR-only change (a leader's write before 2.7), or a fenced write
        detail = (
            f"{path}: leader {state['leader']} epoch {state['leader_epoch']} written with controller "
            f"epoch {state['controller_epoch']}, current {self._controller_epoch}"
        )
        return [Violation("fenced_controller_writes", event["ts_ms"], event["node"], detail)]

    # ------------------------------------------------------------------ the shadow logs

    def _shadow(self, event: Mapping[str, Any]) -> _Shadow:
        key = (event["node"], event["topic"], event["partition"])
        shadow = self._shadows.get(key)
        if shadow is None:
            shadow = self._shadows[key] = _Shadow()
        return shadow

    def _track_append(self, event: Mapping[str, Any]) -> None:
        shadow = self._shadow(event)
        if event["base_offset"] != len(shadow.records):
            shadow.exact = False
        epoch, base = event["leader_epoch"], event["base_offset"]
        shadow.records[base:] = [(epoch, base + i) for i in range(event["count"])]

    def _track_offsets(self, event: Mapping[str, Any]) -> None:
        shadow = self._shadow(event)
        leo = event["log_end_offset"]
        shadow.high_watermark = event["high_watermark"]
        shadow.role = event["role"]
        if leo < len(shadow.records):
            del shadow.records[leo:]  # a truncation, or a recovery that kept a prefix
        elif leo > len(shadow.records):
            leader = self._leader_of_epoch.get((event["topic"], event["partition"], event["leader_epoch"]))
            source = None if leader is None else self._shadows.get((leader, event["topic"], event["partition"]))
            if event["role"] != "follower" or source is None or len(source.records) < leo:
                shadow.exact = False  # records from nowhere we saw (a prepared disk)
                shadow.records += [(-1, o) for o in range(len(shadow.records), leo)]
            else:
                shadow.records += source.records[len(shadow.records) : leo]
                shadow.exact = shadow.exact and source.exact

    def _track_isr(self, event: Mapping[str, Any]) -> None:
        key = (event["node"], event["topic"], event["partition"])
        self._leader_isr[key] = list(event["isr"])
        self._committed_isr[(event["topic"], event["partition"])] = list(event["isr"])
        if event["event"] == "became_leader":
            self._leader_of_epoch[(event["topic"], event["partition"], event["leader_epoch"])] = event["node"]
            self._shadow(event).role = "leader"
        elif event["event"] == "isr_expanded":
            for broker in event["isr"]:  # back in sync: its data is the leader's again
                member = self._shadows.get((f"broker-{broker}", event["topic"], event["partition"]))
                leader = self._shadows.get(key)
                if member is not None and leader is not None and leader.exact:
                    member.exact = member.exact or member.records == leader.records[: len(member.records)]

    def _crashed(self, node: str, kind: str) -> None:
        for key in [k for k in self._leader_hw if k[0] == node]:
            del self._leader_hw[key]
        for (n, _, _), shadow in self._shadows.items():
            if n == node:
                shadow.role = "offline"  # a crashed broker presumes nothing
                if kind != "process":
                    shadow.exact = False  # it loses what was not flushed

    def _isr_data(self, event: Mapping[str, Any]) -> list[Violation]:
        """`WeakIsr` and `StrongIsr` for the event's partition, for every presumed leader."""
        topic, partition = event["topic"], event["partition"]
        found = []
        for (node, t, p), leader in sorted(self._shadows.items()):
            if (t, p) != (topic, partition) or leader.role != "leader" or not leader.exact:
                continue
            committed = leader.records[: leader.high_watermark]
            for invariant, isr in (
                ("weak_isr", self._leader_isr.get((node, t, p), [])),
                ("strong_isr", self._committed_isr.get((t, p), [])),
            ):
                for broker in isr:
                    member = self._shadows.get((f"broker-{broker}", t, p))
                    if member is None or not member.exact or f"broker-{broker}" == node:
                        continue
                    if member.records[: len(committed)] != committed:
                        detail = (
                            f"{t}-{p}: broker-{broker} lacks records below {node}'s HW "
                            f"{leader.high_watermark} (it has {len(member.records)})"
                        )
                        found.append(Violation(invariant, event["ts_ms"], event["node"], detail))
        return found

    def _offsets(self, event: Mapping[str, Any]) -> list[Violation]:
        found = []
        node, ts = event["node"], event["ts_ms"]
        hw, leo = event["high_watermark"], event["log_end_offset"]
        where = f"{event['topic']}-{event['partition']}"
        if hw > leo:
            found.append(Violation("hw_at_most_leo", ts, node, f"{where}: HW {hw} > LEO {leo}"))
        if event["role"] == "leader":
            key = (node, event["topic"], event["partition"], event["leader_epoch"])
            previous = self._leader_hw.get(key)
            if previous is not None and hw < previous:
                found.append(
                    Violation(
                        "monotonic_high_watermark", ts, node, f"{where}: leader HW {previous} -> {hw}"
                    )
                )
            self._leader_hw[key] = max(hw, previous if previous is not None else hw)
        return found

    def _leader_in_isr(self, event: Mapping[str, Any]) -> list[Violation]:
        broker = _broker_id(event["node"])
        if broker is None or broker in event["isr"]:
            return []
        where = f"{event['topic']}-{event['partition']}"
        return [
            Violation("leader_in_isr", event["ts_ms"], event["node"], f"{where}: ISR {event['isr']} lacks leader {broker}")
        ]


Log = Sequence[tuple[int, int, str]]  # (offset, leader_epoch, value)


def diverged_replicas(replicas: Mapping[int, tuple[Log, int]]) -> list[dict[str, Any]]:
    """Pairs of replicas whose committed prefixes differ: records below both HWs that are not
    the same record (`WeakIsr`'s consequence: committed data is the same everywhere)."""
    found = []
    brokers = sorted(replicas)
    for i, a in enumerate(brokers):
        for b in brokers[i + 1 :]:
            (log_a, hw_a), (log_b, hw_b) = replicas[a], replicas[b]
            limit = min(hw_a, hw_b, len(log_a), len(log_b))
            for offset in range(limit):
                if log_a[offset] != log_b[offset]:
                    found.append({"replicas": [a, b], "offset": offset, "values": [log_a[offset][2], log_b[offset][2]]})
                    break
    return found


def lost_acknowledged(acknowledged: Sequence[str], committed_values: Sequence[str]) -> list[str]:
    """Acknowledged records (by value: producer and sequence) absent from the committed log."""
    present = set(committed_values)
    return [value for value in acknowledged if value not in present]
