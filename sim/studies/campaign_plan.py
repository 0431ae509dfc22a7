"""A fault campaign's generator: from a seed, a scenario of randomised configuration and faults.

Swarm testing (Groce et al., "Swarm Testing", ISSTA 2012; FoundationDB's and TigerBeetle's
simulation campaigns): each seed enables a random subset of the fault kinds (`KINDS`, or exactly
`kinds` when given) and draws two to six faults of those kinds, so that kinds which mask each
other (a partition that hides a slow consumer) also run apart. The configuration is drawn too,
within what the Kafka version allows: brokers, replication factor, min.insync.replicas, acks,
idempotence, unclean leader election, the group's commit strategy, processing on the poll
thread or on workers, and its assignor or protocol (eager, cooperative, static members, KIP-848's
consumer protocol from 3.7).

`plan` is pure: it reads nothing but its arguments and draws only from `random.Random(seed)`,
so the same arguments give byte-identical text. The text is a scenario file; the timeouts are
shortened (seconds, not Kafka's minutes) so that a 30 s run sees faults detected and healed.

`safe=True` is the configuration under which Kafka promises not to lose an acknowledged record:
acks=all, replication factor 3, min.insync.replicas 2, no unclean election, an idempotent
producer, and processing on the poll thread (the commit strategies still vary). Its seeds
draw only from `SAFE_KINDS` unless `kinds` is given.
"""

from __future__ import annotations

import json
import random
from typing import Any

from actors.group.placement import partition_for
from actors.profiles import Version, parse_version
from sim.studies.campaign_faults import KIND_DOCS, KINDS, Shape, draw_fault

__all__ = [
    "COMMITS",
    "KINDS",
    "KIND_DOCS",
    "PROFILES",
    "PROTOCOLS",
    "SAFE_KINDS",
    "check_kinds",
    "draw_faults",
    "drawn_kinds",
    "enabled_kinds",
    "plan",
    "swarm",
]

PROFILES = ("2.3", "2.8", "3.3", "3.6", "3.7", "3.9", "4.0")
"""The versions a seed draws from when no profile is given: one on each side of the rules that
change the group and replication protocols most (static membership, incremental cooperative
rebalancing, ineligible replicas, min-ISR-bound HW, the consumer protocol)."""

COMMITS = ("auto", "sync", "async", "on_revoke", "processed")
"""The application's commit strategy: auto-commit alone, or `commit` = the strategy with
auto-commit off."""

PROTOCOLS: tuple[tuple[str, Version], ...] = (
    ("eager", (0, 10, 0)),
    ("cooperative", (2, 4, 0)),
    ("static", (2, 3, 0)),
    ("consumer", (3, 7, 0)),
)
"""The group's assignment, with the version that brought it: an eager assignor (range,
roundrobin or sticky), cooperative-sticky (KIP-429), static members (KIP-345) with an eager
assignor, or KIP-848's consumer protocol."""

UNPROMISED_KINDS = frozenset({"power_loss", "disk_loss", "duplicate", "reorder"})
"""Faults outside Kafka's promise: it acknowledges a write before any replica flushes it, so a
broker that loses its page cache or its disk can take acknowledged records with it; and TCP
never delivers a segment twice or out of order, so Kafka's protocols do not guard against it."""

SAFE_KINDS: tuple[str, ...] = tuple(kind for kind in KINDS if kind not in UNPROMISED_KINDS)
"""The kinds a safe seed draws from: those Kafka's guarantees cover."""

GROUP = "campaign"
TOPIC = "T"
DURATION_MS = 30_000


def plan(
    seed: int,
    profile: str | None = None,
    kinds: tuple[str, ...] | list[str] | None = None,
    *,
    safe: bool = False,
    duration_ms: int = DURATION_MS,
) -> str:
    """The seed's scenario as TOML text: a configuration drawn within `profile` (a Kafka version,
    drawn from `PROFILES` when None) and faults of a random subset of `KINDS` (or of `kinds`).
    Raises ValueError naming an unknown kind or profile."""
    chosen = check_kinds(kinds)
    rng = random.Random(seed)
    version_text = rng.choice(PROFILES) if profile is None else profile
    version = _check_profile(version_text, safe=safe)
    if duration_ms < 1000:  # noqa: PLR2004
        msg = f"duration_ms {duration_ms} is too short for a campaign run (at least 1000)"
        raise ValueError(msg)
    tables, shape = _configuration(rng, seed, version_text, version, safe=safe, duration_ms=duration_ms)
    enabled = chosen if chosen is not None else swarm(rng, SAFE_KINDS if safe else KINDS)
    head = f"# kafkasim fault campaign: seed {seed}; kinds {', '.join(enabled)}{'; safe' if safe else ''}\n"
    return head + "".join(_table(name, table) for name, table in tables) + draw_faults(rng, shape, enabled)


def draw_faults(rng: random.Random, shape: Shape, enabled: tuple[str, ...]) -> str:
    """Two to six faults of the `enabled` kinds over `shape`'s run, as `[[faults]]` tables in
    the order they start, each under a comment naming its campaign kind."""
    faults: list[tuple[int, int, str, dict[str, Any]]] = []
    duration_ms = shape.duration_ms
    for _ in range(rng.randint(2, 6)):
        kind = rng.choice(enabled)
        at = rng.randint(duration_ms // 10, duration_ms * 6 // 10)
        faults.extend((table["at.ms"], len(faults), kind, table) for table in draw_fault(rng, kind, shape, at))
    faults.sort(key=lambda fault: (fault[0], fault[1]))
    return "".join(f"# campaign kind: {kind}\n" + _table("[faults]", table) for _, _, kind, table in faults)


def enabled_kinds(text: str) -> list[str]:
    """The campaign kinds a plan's seed enabled (named in its first line)."""
    parts = text.split("\n", 1)[0].split("; ")
    return next(part for part in parts if part.startswith("kinds ")).removeprefix("kinds ").split(", ")


def drawn_kinds(text: str) -> list[str]:
    """The campaign kinds of a plan's faults, in the plan's order (a kind drawn as two tables,
    such as `restart`, is named twice)."""
    prefix = "# campaign kind: "
    return [line[len(prefix) :] for line in text.splitlines() if line.startswith(prefix)]


def check_kinds(kinds: tuple[str, ...] | list[str] | None) -> tuple[str, ...] | None:
    if kinds is None:
        return None
    for kind in kinds:
        if kind not in KINDS:
            msg = f"unknown fault kind {kind!r} (known: {', '.join(KINDS)})"
            raise ValueError(msg)
    if not kinds:
        msg = f"no fault kinds given (known: {', '.join(KINDS)})"
        raise ValueError(msg)
    return tuple(dict.fromkeys(kinds))


def _check_profile(text: str, *, safe: bool) -> Version:
    try:
        version = parse_version(text)
    except ValueError as exc:
        msg = f"unknown profile {text!r}: {exc}"
        raise ValueError(msg) from None
    if safe and version < (0, 11, 0):
        msg = f"profile {text!r}: the safe flavour needs an idempotent producer, Kafka 0.11 or later"
        raise ValueError(msg)
    return version


def swarm(rng: random.Random, kinds: tuple[str, ...]) -> tuple[str, ...]:
    """Each of `kinds` on with probability one half; at least one."""
    enabled = tuple(kind for kind in kinds if rng.random() < 0.5)  # noqa: PLR2004
    return enabled or (rng.choice(kinds),)


def _configuration(
    rng: random.Random, seed: int, version_text: str, version: Version, *, safe: bool, duration_ms: int
) -> tuple[list[tuple[str, dict[str, Any]]], Shape]:
    """The scenario's sections, drawn, and the shape the faults read."""
    brokers = rng.randint(3, 5)
    rf = 3 if safe else rng.randint(1, 3)
    min_isr = 2 if safe else rng.randint(1, rf)
    partitions = rng.randint(2, 6)
    offsets_partitions = rng.choice((1, 3, 5))
    zk_session = rng.choice((3000, 4000, 6000))
    protocol = rng.choice([name for name, since in PROTOCOLS if version >= since])
    consumer_protocol = protocol == "consumer"
    broker: dict[str, Any] = {
        "min.insync.replicas": min_isr,
        "unclean.leader.election.enable": False if safe else rng.random() < 0.3,  # noqa: PLR2004
        "zookeeper.session.timeout.ms": zk_session,
        "replica.lag.time.max.ms": rng.choice((2000, 5000, 10000)),
        "replica.socket.timeout.ms": 3000,
        "offsets.topic.num.partitions": offsets_partitions,
        "group.initial.rebalance.delay.ms": 300,
        "group.min.session.timeout.ms": 1000,
    }
    if consumer_protocol and version < (4, 0, 0):
        broker["group.coordinator.rebalance.protocols"] = ["classic", "consumer"]
    acks = "all" if safe else rng.choice(("0", "1", "all"))
    idempotent = safe or (acks == "all" and version >= (0, 11, 0) and rng.random() < 0.5)  # noqa: PLR2004
    interval = rng.choice((5, 10, 20))
    producer: dict[str, Any] = {
        "topic": TOPIC,
        "acks": acks,
        "enable.idempotence": idempotent,
        "retries": 2147483647 if idempotent else rng.choice((0, 3, 2147483647)),
        "request.timeout.ms": 3000,
        "records": duration_ms // interval,
        "interval.ms": interval,
        "keys": rng.choice((0, 8, 64)),
    }
    consumers = rng.randint(2, 4)
    consumer, session, max_poll = _consumer(rng, protocol, safe=safe)
    tables = [
        ("run", {"name": f"campaign-{seed}", "seed": seed, "duration.ms": duration_ms, "invariants": "report"}),
        ("kafka", {"version": version_text}),
        ("network", {"latency.min.ms": 1, "latency.max.ms": rng.choice((2, 5, 10))}),
        ("cluster", {"brokers": brokers}),
        ("broker", broker),
        ("[topics]", {"name": TOPIC, "partitions": partitions, "replication.factor": rf}),
        ("[producers]", producer),
        ("[consumers]", {"group.id": GROUP, "topics": [TOPIC], "count": consumers, **consumer}),
    ]
    coordinator = partition_for(GROUP, offsets_partitions) % brokers + 1
    shape = Shape(
        brokers=tuple(f"broker-{n}" for n in range(1, brokers + 1)),
        consumers=tuple(f"consumer-{n}" for n in range(1, consumers + 1)),
        group=GROUP,
        topic=TOPIC,
        coordinator=f"broker-{coordinator}",
        zk_session_ms=zk_session,
        consumer_session_ms=session,
        max_poll_interval_ms=max_poll,
        duration_ms=duration_ms,
        safe=safe,
    )
    return tables, shape


CONSUMER_PROTOCOL_SESSION_MS = 45_000
"""The brokers' `group.consumer.session.timeout.ms` default, which the consumer protocol's
members get from their coordinator."""


def _consumer(rng: random.Random, protocol: str, *, safe: bool) -> tuple[dict[str, Any], int, int]:
    """The group's consumer settings, its session timeout and its max.poll.interval.ms."""
    commit = rng.choice(COMMITS)
    max_poll = rng.choice((4000, 8000))
    settings: dict[str, Any] = {
        "enable.auto.commit": commit == "auto",
        "commit": "none" if commit == "auto" else commit,
        "auto.commit.interval.ms": rng.choice((500, 1000, 5000)),
        "auto.offset.reset": "earliest",
        "max.poll.interval.ms": max_poll,
        "max.poll.records": rng.choice((10, 50, 500)),
        "request.timeout.ms": 3000,
        "default.api.timeout.ms": 6000,
        "process.record.ms": rng.choice((0, 1, 5, 10)),
    }
    if not safe and rng.random() < 0.5:  # noqa: PLR2004
        settings["processing"] = "workers"
        settings["worker.threads"] = rng.randint(1, 4)
    if protocol == "consumer":
        # The coordinator sets the session and heartbeat; 4.0 refuses the classic keys beside it.
        settings["group.protocol"] = "consumer"
        return settings, CONSUMER_PROTOCOL_SESSION_MS, max_poll
    session = rng.choice((3000, 6000))
    settings["session.timeout.ms"] = session
    settings["heartbeat.interval.ms"] = 1000
    if protocol == "cooperative":
        settings["partition.assignment.strategy"] = ["cooperative-sticky"]
    else:
        settings["partition.assignment.strategy"] = [rng.choice(("range", "roundrobin", "sticky"))]
    if protocol == "static":
        settings["group.instance.id"] = "instance"
    return settings, session, max_poll


def _table(name: str, values: dict[str, Any]) -> str:
    """One TOML table (`[name]`, or `[[name]]` when `name` is `[...]`), every key quoted."""
    lines = [f"[{name}]"] + [f"{json.dumps(key)} = {_value(value)}" for key, value in values.items()]
    return "\n".join(lines) + "\n"


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    return "[" + ", ".join(_value(item) for item in value) + "]"
