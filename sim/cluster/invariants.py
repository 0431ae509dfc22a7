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

For `weak_isr` and `strong_isr` the checker keeps a shadow of every replica's log as record
identities: the leader epoch each record was first written in (a record keeps its offset
everywhere, and one leader writes an epoch, so epoch and offset name a record). A shadow is
therefore a run list `[(start offset, epoch), ...]`, like an epoch cache, and comparing two
replicas' prefixes costs the number of epochs, not of records: the check is the same cost at
the first minute of a run and at the hundredth. A leader's `records_appended` extends it, a
follower's growth copies the leader's runs, a truncation or a recovery cuts it. Records below
a replica's log start offset were deleted (retention): the checks compare replicas only from
the higher of their log starts. The events carry offsets only, so this costs no per-record
logging. A replica whose shadow cannot be kept exactly
(it started from a prepared disk, or restarted after a power or disk loss, where Kafka itself
promises nothing: KIP-966) is left out until an ISR expansion adds it back (an expansion that
adds another broker says nothing of it).

A broker that lost its unflushed records (a power or disk loss) comes back in ZooKeeper mode
still listed in the ISR: its leader drops it only after `replica.lag.time.max.ms`, the
controller only once its old ZooKeeper session expires, and until then it may be elected with
records missing below the HW. That is Kafka's behaviour, the gap KIP-966's unclean-shutdown
handling closes in KRaft, not the simulator's fault: such a replica back with fewer records
than its leader's HW while in the ISR is a finding labelled `kip_966` (summary.json's
`known_bug_findings`, once per replica, invariant and loss), not a violation.

Before 2.1.0 a controller's ZooKeeper writes were not conditional on the controller epoch's
znode version (KAFKA-6082), so a controller that lost its place could still write a partition's
leadership: with `stale_controller_writes` (those versions) a `fenced_controller_writes` breach
is a finding labelled `kafka_6082`, not a violation.

The end-of-run checks, on the final logs, are in `sim.cluster.log_checks`.
"""

from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

__all__ = ["Invariants", "Violation"]

INT_MAX = 2**63 - 1


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


@cache
def _broker_node(broker: int) -> str:
    """The node name of a broker id (the ISR checks look one up per member per event)."""
    return f"broker-{broker}"


PartitionKey = tuple[str, int]  # (topic, partition)
UNKNOWN_EPOCH = -1
"""The epoch of records whose origin the checker did not see (a prepared disk)."""


@dataclass(slots=True)
class _Shadow:
    """One replica's log as runs of `(start offset, epoch written in)`, merged: no two adjacent
    runs share an epoch, so equal prefixes have equal runs."""

    runs: list[tuple[int, int]] = field(default_factory=list)
    length: int = 0
    log_start_offset: int = 0
    high_watermark: int = 0
    role: str = "offline"
    exact: bool = True
    """False: this replica's records are not known exactly (left out of the ISR checks)."""
    lost_unflushed: bool = False
    """It restarted after a power or disk loss and is not yet back in sync."""

    def cut(self, length: int) -> None:
        """Keep the records below `length`."""
        if length >= self.length:
            return
        runs = self.runs
        while runs and runs[-1][0] >= length:
            runs.pop()
        self.length = length

    def extend(self, epoch: int, end: int) -> None:
        """Records up to `end` (exclusive), all written in `epoch`."""
        if end <= self.length:
            return
        if not self.runs or self.runs[-1][1] != epoch:
            self.runs.append((self.length, epoch))
        self.length = end

    def copy_from(self, source: _Shadow, end: int) -> None:
        """Records from this shadow's end up to `end`, as `source` has them."""
        runs = source.runs
        i = bisect_right(runs, (self.length, INT_MAX)) - 1
        while self.length < end:
            next_start = runs[i + 1][0] if i + 1 < len(runs) else source.length
            self.extend(runs[i][1], min(next_start, end))
            i += 1

    def same_prefix(self, other: _Shadow, n: int) -> bool:
        """Both hold the same records below `n`, from the higher of their log starts."""
        if self.length < n or other.length < n:
            return False
        if self.runs == other.runs:
            return True  # the same epochs from the same offsets: the same records wherever both hold
        start = max(self.log_start_offset, other.log_start_offset)
        return start >= n or self._window(start, n) == other._window(start, n)

    def _window(self, start: int, end: int) -> list[tuple[int, int]]:
        """The runs of the records in [start, end), the first one clipped to begin at `start`."""
        first = bisect_right(self.runs, (start, INT_MAX)) - 1
        last = bisect_left(self.runs, (end, UNKNOWN_EPOCH))
        return [(start, self.runs[first][1]), *self.runs[first + 1 : last]]


@dataclass(slots=True)
class Invariants:
    """Call with each event dict; returns the violations that event caused."""

    violations: list[Violation] = field(default_factory=list)
    _leader_hw: dict[tuple[str, str, int, int], int] = field(default_factory=dict)
    _shadows: dict[PartitionKey, dict[str, _Shadow]] = field(default_factory=dict)
    """Each partition's replicas by node, kept in node order."""
    _leader_of_epoch: dict[tuple[str, int, int], str] = field(default_factory=dict)
    _leader_isr: dict[tuple[str, str, int], list[int]] = field(default_factory=dict)
    _committed_isr: dict[PartitionKey, tuple[int, list[int]]] = field(default_factory=dict)
    """The quorum's ISR with its leader epoch: only the newest epoch's leader changes it (a
    deposed leader that wakes and reports its old ISR does not)."""
    stale_controller_writes: bool = False
    """KAFKA-6082 (before 2.1.0): a deposed controller's writes are not fenced."""
    findings: list[dict[str, Any]] = field(default_factory=list)
    """Kafka's known behaviour the run showed (summary.json's `known_bug_findings`)."""
    _found: set[tuple[str, int, str, str]] = field(default_factory=set)
    """(topic, partition, replica node, invariant) already reported for the current loss."""
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
            self._shadow(event).cut(event["to_offset"])
        elif name == "log_start_offset_changed":
            self._shadow(event).log_start_offset = event["log_start_offset"]
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
        if self.stale_controller_writes:
            finding = {"invariant": "fenced_controller_writes", "label": "kafka_6082", "ts_ms": event["ts_ms"], "node": event["node"]}
            self.findings.append({**finding, "detail": detail})
            return []
        return [Violation("fenced_controller_writes", event["ts_ms"], event["node"], detail)]

    # ------------------------------------------------------------------ the shadow logs

    def _shadow(self, event: Mapping[str, Any]) -> _Shadow:
        replicas = self._shadows.get((event["topic"], event["partition"]))
        if replicas is None:
            replicas = self._shadows[(event["topic"], event["partition"])] = {}
        shadow = replicas.get(event["node"])
        if shadow is None:
            shadow = replicas[event["node"]] = _Shadow()
            if list(replicas) != sorted(replicas):  # keep node order for the checks
                ordered = dict(sorted(replicas.items()))
                replicas.clear()
                replicas.update(ordered)
        return shadow

    def _track_append(self, event: Mapping[str, Any]) -> None:
        shadow = self._shadow(event)
        base = event["base_offset"]
        if base != shadow.length:
            shadow.exact = False
            shadow.cut(base)
            shadow.extend(UNKNOWN_EPOCH, base)
        shadow.extend(event["leader_epoch"], base + event["count"])

    def _track_offsets(self, event: Mapping[str, Any]) -> None:
        shadow = self._shadow(event)
        leo = event["log_end_offset"]
        shadow.high_watermark = event["high_watermark"]
        shadow.role = event["role"]
        if leo < shadow.length:
            shadow.cut(leo)  # a truncation, or a recovery that kept a prefix
        elif leo > shadow.length:
            key = (event["topic"], event["partition"])
            leader = self._leader_of_epoch.get((*key, event["leader_epoch"]))
            source = None if leader is None else self._shadows[key].get(leader)
            if event["role"] != "follower" or source is None or source.length < leo:
                shadow.exact = False  # records from nowhere we saw (a prepared disk)
                shadow.extend(UNKNOWN_EPOCH, leo)
            else:
                shadow.copy_from(source, leo)
                shadow.exact = shadow.exact and source.exact

    def _track_isr(self, event: Mapping[str, Any]) -> None:
        topic, partition, node = event["topic"], event["partition"], event["node"]
        before = self._leader_isr.get((node, topic, partition), [])
        self._leader_isr[(node, topic, partition)] = list(event["isr"])
        epoch, _ = self._committed_isr.get((topic, partition), (-1, []))
        if event["leader_epoch"] >= epoch:
            self._committed_isr[(topic, partition)] = (event["leader_epoch"], list(event["isr"]))
        if event["event"] == "became_leader":
            self._leader_of_epoch[(topic, partition, event["leader_epoch"])] = node
            self._shadow(event).role = "leader"
        elif event["event"] == "isr_expanded":
            replicas = self._shadows.get((topic, partition), {})
            leader = replicas.get(node)
            for broker in event["isr"]:  # back in sync: its data is the leader's again
                if broker in before:
                    continue  # not added now: whatever it lost since, it has not caught up
                member = replicas.get(_broker_node(broker))
                if member is not None and leader is not None and leader.exact and not member.exact:
                    member.exact = leader.same_prefix(member, member.length)
                    if member.exact:
                        member.lost_unflushed = False
                        self._forget_findings(topic, partition, _broker_node(broker))

    def _crashed(self, node: str, kind: str) -> None:
        for key in [k for k in self._leader_hw if k[0] == node]:
            del self._leader_hw[key]
        for _, replicas in sorted(self._shadows.items()):
            shadow = replicas.get(node)
            if shadow is not None:
                shadow.role = "offline"  # a crashed broker presumes nothing
                if kind != "process":
                    shadow.exact = False  # it loses what was not flushed
                    shadow.lost_unflushed = True

    def _isr_data(self, event: Mapping[str, Any]) -> list[Violation]:
        """`WeakIsr` and `StrongIsr` for the event's partition, for every presumed leader."""
        topic, partition = event["topic"], event["partition"]
        replicas = self._shadows.get((topic, partition), {})
        found = []
        for node, leader in replicas.items():
            if leader.role != "leader" or not leader.exact:
                continue
            hw = leader.high_watermark
            agrees: dict[int, bool] = {}  # the two ISRs are mostly the same brokers: compare once
            for invariant, isr in (
                ("weak_isr", self._leader_isr.get((node, topic, partition), [])),
                ("strong_isr", self._committed_isr.get((topic, partition), (-1, []))[1]),
            ):
                for broker in isr:
                    member = replicas.get(_broker_node(broker))
                    if member is None or member is leader:
                        continue
                    if not member.exact:
                        self._lost_in_isr(event, invariant, node, leader, _broker_node(broker), member)
                        continue
                    same = agrees.get(broker)
                    if same is None:
                        same = agrees[broker] = leader.same_prefix(member, hw)
                    if not same:
                        detail = (
                            f"{topic}-{partition}: broker-{broker} lacks records below {node}'s HW "
                            f"{hw} (it has {member.length})"
                        )
                        found.append(Violation(invariant, event["ts_ms"], event["node"], detail))
        return found

    def _lost_in_isr(
        self, event: Mapping[str, Any], invariant: str, node: str, leader: _Shadow, member_node: str, member: _Shadow
    ) -> None:
        """A replica back from a power or disk loss with fewer records than the HW while still
        in the ISR: Kafka's known gap (KIP-966), reported once per loss."""
        hw = leader.high_watermark
        if not member.lost_unflushed or member.length >= hw:
            return
        topic, partition = event["topic"], event["partition"]
        key = (topic, partition, member_node, invariant)
        if key in self._found:
            return
        self._found.add(key)
        detail = (
            f"{topic}-{partition}: {member_node} lost unflushed records and is back with {member.length}, "
            f"below {node}'s HW {hw}, still in the ISR"
        )
        self.findings.append({"invariant": invariant, "label": "kip_966", "ts_ms": event["ts_ms"], "node": event["node"], "detail": detail})

    def _forget_findings(self, topic: str, partition: int, member_node: str) -> None:
        """The replica is back in sync: a later loss is reported again."""
        for key in [k for k in self._found if k[:3] == (topic, partition, member_node)]:
            self._found.discard(key)

    def _offsets(self, event: Mapping[str, Any]) -> list[Violation]:
        found = []
        node, ts = event["node"], event["ts_ms"]
        hw, leo = event["high_watermark"], event["log_end_offset"]
        if hw > leo:
            where = f"{event['topic']}-{event['partition']}"
            found.append(Violation("hw_at_most_leo", ts, node, f"{where}: HW {hw} > LEO {leo}"))
        if event["role"] == "leader":
            key = (node, event["topic"], event["partition"], event["leader_epoch"])
            previous = self._leader_hw.get(key)
            if previous is not None and hw < previous:
                where = f"{event['topic']}-{event['partition']}"
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
