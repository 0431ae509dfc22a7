"""Invariants checked after every event, and the end-of-run checks against ground truth.

The invariants watch the event stream in log order (the kernel calls them on every event it
writes), so they see each replica's state as it changes, with no extra inspection of the actors.
They are named after the TLA+ specs (hachikuji/kafka-specification) where one exists:
- `hw_at_most_leo`: on every replica, HW <= LEO;
- `leader_in_isr` (`LeaderInIsr`): a leader is in its own ISR;
- `monotonic_high_watermark`: a leader's HW never goes back while it leads in one epoch.

`WeakIsr` and `StrongIsr` compare data across replicas and so belong to the end-of-run checks
for now (`diverged_replicas`); checking them after every event needs the record contents in the
events, which the log schema does not carry.

The end-of-run checks compare final replica logs: committed prefixes that differ between
replicas, and acknowledged records that no longer exist.
"""

from __future__ import annotations

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


@dataclass(slots=True)
class Invariants:
    """Call with each event dict; returns the violations that event caused."""

    violations: list[Violation] = field(default_factory=list)
    _leader_hw: dict[tuple[str, str, int, int], int] = field(default_factory=dict)

    def __call__(self, event: Mapping[str, Any]) -> list[Violation]:
        name = event["event"]
        found: list[Violation] = []
        if name == "replica_offsets_changed":
            found = self._offsets(event)
        elif name in ("became_leader", "isr_shrunk", "isr_expanded"):
            found = self._leader_in_isr(event)
        elif name == "node_crashed":
            node = event["target"]
            for key in [k for k in self._leader_hw if k[0] == node]:
                del self._leader_hw[key]
        self.violations.extend(found)
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
