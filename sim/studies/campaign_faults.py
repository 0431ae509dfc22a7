"""A fault campaign's fault kinds: the vocabulary, and how each kind draws its `[[faults]]` tables.

Each campaign kind is drawn as one or two of the scenario's own `[[faults]]` tables
(docs/scenarios.md), so a drawn plan is an ordinary scenario file that `kafkasim run` replays. A
kind that needs the cluster's shape (its brokers, its consumers, the broker coordinating the
group, the timeouts that decide when a pause becomes an expiry) reads it from `Shape`, which the
configuration drawn before it fixes. Durations are drawn so that every fault has ended by 80% of
the run, leaving its tail to recover.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["KINDS", "KIND_DOCS", "Shape", "draw_fault"]

Table = dict[str, Any]

KIND_DOCS: tuple[tuple[str, str], ...] = (
    ("crash", "a broker's process crashes (its page cache survives) and restarts 1-5 s later"),
    ("power_loss", "a broker loses power (unsynced writes are gone) and restarts 1-5 s later"),
    ("disk_loss", "a broker loses its disk and restarts empty 1-5 s later"),
    ("restart", "a broker's process crashes with no restart planned; a separate restart fault starts it"),
    ("partition", "a both-ways cut: a broker isolated, or brokers or a consumer cut from brokers; healed"),
    ("partition_one_way", "a one-way cut from one group of nodes to another; healed"),
    ("drop", "envelopes on some links are lost with a probability, for a while"),
    ("duplicate", "envelopes on some links are delivered twice with a probability, for a while"),
    ("delay", "envelopes on some links take extra latency, for a while"),
    ("corrupt", "envelopes on some links arrive corrupted with a probability, for a while"),
    ("reorder", "envelopes on some links are delayed out of order with a probability, for a while"),
    ("pause", "a broker stops the world (a GC pause) for up to 1.5 zookeeper.session.timeout.ms"),
    ("session_expiry", "a broker is cut off from ZooKeeper past zookeeper.session.timeout.ms: its session expires"),
    ("shutdown", "an operator stops a broker (a controlled shutdown first) and starts it again"),
    ("coordinator_failover", "the group's coordinator broker crashes or is shut down, and restarts"),
    ("consumer_crash", "a consumer process crashes; most are restarted, as a new process"),
    ("consumer_pause", "a consumer stops the world past its session timeout: its group session expires"),
    ("slow", "a consumer's application processes records slowly for a while"),
    ("stall", "a consumer's application stalls on a batch past max.poll.interval.ms"),
    ("zombie", "a consumer is cut off from its group's coordinator only, for a while"),
    ("rolling_restart_brokers", "every broker in turn: a controlled shutdown, then a restart"),
    ("rolling_restart_consumers", "every consumer of the group in turn: close(), then a new process"),
    ("reset_offsets", "an operator resets the group's offsets (kafka-consumer-groups --reset-offsets)"),
    ("controller_failover", "the controller's broker, whichever it is then, crashes, is shut down or pauses past its session"),
)
"""The campaign's fault kinds (the vocabulary `plan(kinds=...)` accepts), each with what it does."""

KINDS: tuple[str, ...] = tuple(name for name, _ in KIND_DOCS)


@dataclass(frozen=True, slots=True)
class Shape:
    """What the faults need of the drawn cluster."""

    brokers: tuple[str, ...]
    consumers: tuple[str, ...]
    group: str
    topic: str
    coordinator: str
    """The preferred leader of the group's `__consumer_offsets` partition: its coordinator
    as long as no earlier fault moved that partition's leadership."""
    zk_session_ms: int
    consumer_session_ms: int
    max_poll_interval_ms: int
    duration_ms: int
    safe: bool = False
    """Kafka's promise holds: a coordinator failover crashes the process, never the power."""

    @property
    def fault_end_ms(self) -> int:
        """By when every fault has ended, so the run's tail can recover."""
        return self.duration_ms * 8 // 10


def _span(rng: random.Random, shape: Shape, at: int, low: int, high: int) -> int:
    """A duration in [low, high] cut so the fault ends by `fault_end_ms` (at least 1 ms)."""
    return max(1, min(rng.randint(low, high), shape.fault_end_ms - at))


def _broker_crash(crash_kind: str) -> Callable[[random.Random, Shape, int], list[Table]]:
    def draw(rng: random.Random, shape: Shape, at: int) -> list[Table]:
        node = rng.choice(shape.brokers)
        after = _span(rng, shape, at, 1000, 5000)
        return [{"kind": "crash", "node": node, "crash.kind": crash_kind, "restart.after.ms": after}]

    return draw


def _restart(rng: random.Random, shape: Shape, at: int) -> list[Table]:
    node = rng.choice(shape.brokers)
    back = at + _span(rng, shape, at, 1000, 6000)
    return [{"kind": "crash", "node": node}, {"kind": "restart", "node": node, "at.ms": back}]


def _sides(rng: random.Random, shape: Shape) -> tuple[list[str], list[str]]:
    """Two disjoint groups of nodes: some brokers against the rest, or a consumer against some
    brokers (the only cut of a single broker's cluster)."""
    brokers = list(shape.brokers)
    if not shape.consumers or (len(brokers) > 1 and rng.random() < 0.5):  # noqa: PLR2004 - half split the brokers
        rng.shuffle(brokers)
        cut = rng.randint(1, len(brokers) - 1)
        return sorted(brokers[:cut]), sorted(brokers[cut:])
    return [rng.choice(shape.consumers)], sorted(rng.sample(brokers, rng.randint(1, len(brokers))))


def _partition(rng: random.Random, shape: Shape, at: int) -> list[Table]:
    duration = _span(rng, shape, at, 1000, 8000)
    if rng.random() < 0.3:  # noqa: PLR2004 - some cuts isolate one broker from everyone
        return [{"kind": "partition", "isolate": [rng.choice(shape.brokers)], "duration.ms": duration}]
    a, b = _sides(rng, shape)
    return [{"kind": "partition", "between": [a, b], "duration.ms": duration}]


def _one_way(rng: random.Random, shape: Shape, at: int) -> list[Table]:
    a, b = _sides(rng, shape)
    if rng.random() < 0.5:  # noqa: PLR2004 - either direction
        a, b = b, a
    return [{"kind": "partition", "between": [a, b], "one.way": True, "duration.ms": _span(rng, shape, at, 1000, 8000)}]


def _link_ends(rng: random.Random, shape: Shape) -> Table:
    """The links a lossy-path fault hits: any, those from one node, or those into one node."""
    nodes = [*shape.brokers, *shape.consumers]
    choice = rng.randrange(3)
    if choice == 0:
        return {}
    return {"src" if choice == 1 else "dst": [rng.choice(nodes)]}


def _link_fault(kind: str) -> Callable[[random.Random, Shape, int], list[Table]]:
    def draw(rng: random.Random, shape: Shape, at: int) -> list[Table]:
        table: Table = {"kind": kind}
        if kind == "delay":
            table["delay.ms"] = rng.randint(10, 500)
        else:
            table["probability"] = rng.choice((0.01, 0.05, 0.1, 0.2, 0.5))
        if kind == "reorder":
            table["delay.ms"] = rng.randint(10, 200)
        return [{**table, **_link_ends(rng, shape), "duration.ms": _span(rng, shape, at, 500, 6000)}]

    return draw


def _pause(rng: random.Random, shape: Shape, at: int) -> list[Table]:
    high = shape.zk_session_ms * 3 // 2
    return [{"kind": "pause", "node": rng.choice(shape.brokers), "duration.ms": _span(rng, shape, at, 200, high)}]


def _session_expiry(rng: random.Random, shape: Shape, at: int) -> list[Table]:
    low = shape.zk_session_ms + 500
    duration = _span(rng, shape, at, low, low + 3000)
    return [{"kind": "partition", "between": [[rng.choice(shape.brokers)], ["zookeeper"]], "duration.ms": duration}]


def _stop(rng: random.Random, shape: Shape, at: int, node: str) -> Table:
    return {"kind": "shutdown", "node": node, "restart.after.ms": _span(rng, shape, at, 1000, 5000)}


def _shutdown(rng: random.Random, shape: Shape, at: int) -> list[Table]:
    return [_stop(rng, shape, at, rng.choice(shape.brokers))]


def _coordinator_failover(rng: random.Random, shape: Shape, at: int) -> list[Table]:
    if rng.random() < 0.5:  # noqa: PLR2004 - a crash or an operator's stop
        crash_kind = "process" if shape.safe else rng.choice(("process", "power_loss"))
        after = _span(rng, shape, at, 1000, 5000)
        return [{"kind": "crash", "node": shape.coordinator, "crash.kind": crash_kind, "restart.after.ms": after}]
    return [_stop(rng, shape, at, shape.coordinator)]


def _controller_failover(rng: random.Random, shape: Shape, at: int) -> list[Table]:
    """Aimed at the `controller` role: the broker holding /controller when the fault starts."""
    choice = rng.randrange(3)
    if choice == 0:
        crash_kind = "process" if shape.safe else rng.choice(("process", "power_loss"))
        after = _span(rng, shape, at, 1000, 5000)
        return [{"kind": "crash", "node": "controller", "crash.kind": crash_kind, "restart.after.ms": after}]
    if choice == 1:
        return [_stop(rng, shape, at, "controller")]
    low = shape.zk_session_ms + 500
    return [{"kind": "pause", "node": "controller", "duration.ms": _span(rng, shape, at, low, low + 3000)}]


def _consumer_crash(rng: random.Random, shape: Shape, at: int) -> list[Table]:
    table: Table = {"kind": "crash", "node": rng.choice(shape.consumers)}
    if rng.random() < 0.8:  # noqa: PLR2004 - most crashed consumers come back
        table["restart.after.ms"] = _span(rng, shape, at, 500, 5000)
    return [table]


def _consumer_pause(rng: random.Random, shape: Shape, at: int) -> list[Table]:
    low = shape.consumer_session_ms + 500
    return [{"kind": "pause", "node": rng.choice(shape.consumers), "duration.ms": _span(rng, shape, at, low, low + 3000)}]


def _slow(rng: random.Random, shape: Shape, at: int) -> list[Table]:
    return [
        {
            "kind": "slow",
            "node": rng.choice(shape.consumers),
            "process.record.ms": rng.randint(20, 200),
            "duration.ms": _span(rng, shape, at, 1000, 8000),
        }
    ]


def _stall(rng: random.Random, shape: Shape, at: int) -> list[Table]:
    low = shape.max_poll_interval_ms + 500
    return [{"kind": "stall", "node": rng.choice(shape.consumers), "duration.ms": _span(rng, shape, at, low, low + 3000)}]


def _zombie(rng: random.Random, shape: Shape, at: int) -> list[Table]:
    return [{"kind": "zombie", "node": rng.choice(shape.consumers), "duration.ms": _span(rng, shape, at, 1000, 8000)}]


def _interval(rng: random.Random, shape: Shape, at: int, low: int, high: int, nodes: int) -> int:
    """A rolling restart's interval, shortened so that its last node starts by `fault_end_ms`."""
    return min(rng.randint(low, high), max(0, (shape.fault_end_ms - at) // nodes))


def _rolling_brokers(rng: random.Random, shape: Shape, at: int) -> list[Table]:
    return [
        {
            "kind": "rolling_restart",
            "nodes": list(shape.brokers),
            "interval.ms": _interval(rng, shape, at, 3000, 8000, len(shape.brokers)),
            "down.ms": rng.choice((0, 500, 2000)),
        }
    ]


def _rolling_consumers(rng: random.Random, shape: Shape, at: int) -> list[Table]:
    return [
        {
            "kind": "rolling_restart",
            "group": shape.group,
            "interval.ms": _interval(rng, shape, at, 2000, 6000, len(shape.consumers)),
            "down.ms": rng.choice((0, 500, 2000)),
        }
    ]


def _reset_offsets(rng: random.Random, shape: Shape, at: int) -> list[Table]:
    table: Table = {"kind": "admin", "operation": "reset_offsets", "group": shape.group}
    if rng.random() < 0.5:  # noqa: PLR2004 - --topic T, or --all-topics
        table["topic"] = shape.topic
    target = rng.choice(("earliest", "latest", "datetime", "shift-by"))
    table["to"] = target
    if target == "datetime":
        table["datetime.ms"] = rng.randint(0, at)
    elif target == "shift-by":
        table["shift.by"] = rng.randint(-50, 50)
    return [table]


_DRAW: dict[str, Callable[[random.Random, Shape, int], list[Table]]] = {
    "crash": _broker_crash("process"),
    "power_loss": _broker_crash("power_loss"),
    "disk_loss": _broker_crash("disk_loss"),
    "restart": _restart,
    "partition": _partition,
    "partition_one_way": _one_way,
    "drop": _link_fault("drop"),
    "duplicate": _link_fault("duplicate"),
    "delay": _link_fault("delay"),
    "corrupt": _link_fault("corrupt"),
    "reorder": _link_fault("reorder"),
    "pause": _pause,
    "session_expiry": _session_expiry,
    "shutdown": _shutdown,
    "coordinator_failover": _coordinator_failover,
    "consumer_crash": _consumer_crash,
    "consumer_pause": _consumer_pause,
    "slow": _slow,
    "stall": _stall,
    "zombie": _zombie,
    "rolling_restart_brokers": _rolling_brokers,
    "rolling_restart_consumers": _rolling_consumers,
    "reset_offsets": _reset_offsets,
    "controller_failover": _controller_failover,
}
assert tuple(_DRAW) == KINDS, "every campaign kind has a drawer, in the vocabulary's order"


def draw_fault(rng: random.Random, kind: str, shape: Shape, at: int) -> list[Table]:
    """The `[[faults]]` tables of one fault of `kind` starting at `at` ms (each with its `at.ms`)."""
    return [{"kind": table["kind"], "at.ms": at, **table} for table in _DRAW[kind](rng, shape, at)]
