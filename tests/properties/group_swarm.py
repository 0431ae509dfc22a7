"""Group swarm runs: a small cluster with one consumer group under a random plan of client and
broker faults, both drawn from the seed, run through the real runner into a run directory.

The cluster: three brokers, topic T with three partitions led by brokers 2 and 3, and
`__consumer_offsets` with one partition whose preferred leader, broker 1, coordinates the group;
so isolating a consumer from broker 1 cuts it off from its coordinator only, as long as the
coordinator has not moved. A producer writes 200 records a second and three consumers
process 10 ms a record, so they are busy and a fault lands on records in hand.

The seed draws the group's configuration (auto-commit or the application's commits, eager or
cooperative assignment, static membership) and three to six faults between 1.5 s and 9 s of a 15 s run:
- client faults: a consumer process crash (restarted or not), a stop-the-world pause past the
  session timeout, a processing stall past `max.poll.interval.ms`, `close()`, `unsubscribe()`,
  and an isolation of a consumer from the coordinator;
- broker faults: a crash of each kind (process, power loss, disk loss) of any broker or of the
  coordinator's, restarted within 3 s, and an isolation of a broker.

Each run is a scenario file: `kafkasim run` on the scenario.toml of its run directory replays it.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim.cluster.scenario import parse_scenario
from sim.engine.kernel import HostKind
from sim.studies.runner import run_scenario

__all__ = ["COMMITS", "PROTOCOLS", "GroupRun", "commit_of", "examples", "plan", "protocol_plan", "run"]

BASE = """
[run]
name = "group-swarm"
"duration.ms" = 15000
invariants = "report"
[network]
"latency.min.ms" = 1
"latency.max.ms" = 4
[cluster]
brokers = 3
[broker]
"min.insync.replicas" = 2
"replica.lag.time.max.ms" = 2000
"replica.socket.timeout.ms" = 3000
"zookeeper.session.timeout.ms" = 3000
"offsets.topic.num.partitions" = 1
"group.initial.rebalance.delay.ms" = 300
"group.min.session.timeout.ms" = 1000
[[topics]]
name = "T"
partitions = 3
"replication.factor" = 3
replicas = [[2, 3, 1], [3, 2, 1], [2, 1, 3]]
[[producers]]
topic = "T"
acks = "all"
records = 2000
"interval.ms" = 5
partitioner = "round_robin"
"request.timeout.ms" = 3000
[[consumers]]
"group.id" = "swarm"
topics = ["T"]
count = 3
"session.timeout.ms" = 3000
"heartbeat.interval.ms" = 1000
"max.poll.interval.ms" = 4000
"max.poll.records" = 20
"auto.offset.reset" = "earliest"
"auto.commit.interval.ms" = 1000
"request.timeout.ms" = 3000
"default.api.timeout.ms" = 6000
"process.record.ms" = 10
"""
CONSUMERS = ("consumer-1", "consumer-2", "consumer-3")
BROKERS = ("broker-1", "broker-2", "broker-3")
COORDINATOR = "broker-1"
"""The preferred leader of `__consumer_offsets-0`, so the group's coordinator while it leads."""


FAULT_KINDS = (
    "crash", "pause", "stall", "close", "unsubscribe", "isolate", "broker_crash", "coordinator_crash", "broker_isolate",
)
FAULT_WEIGHTS = (3, 2, 2, 1, 1, 2, 1, 2, 1)
"""Faults that end a consumer for good (`close()`, `unsubscribe()`) are rarer, so that a run
keeps a group to hand partitions over to."""


COMMITS = (
    ("none", True), ("none", True), ("async", True), ("sync", False), ("async", False), ("none", False), ("on_revoke", False),
)
"""(what the application commits, enable.auto.commit): auto-commit alone, with commitAsync
after each poll, or manual commits: commitSync or commitAsync after each poll, none at all,
or commitSync in `onPartitionsRevoked`."""


def examples() -> int:
    """Seeds: 50 in CI, more locally (`KAFKASIM_SWARM_EXAMPLES=200`)."""
    return max(50, int(os.environ.get("KAFKASIM_SWARM_EXAMPLES", "50")))


def _group_config(rng: random.Random) -> str:
    """The group's settings drawn from the seed: what the application commits, the assignor,
    and static membership."""
    commit, auto = rng.choice(COMMITS)
    strategy = rng.choice(('["range"]', '["roundrobin"]', '["cooperative-sticky"]'))
    lines = [
        f'commit = "{commit}"',
        f'"enable.auto.commit" = {str(auto).lower()}',
        f'"partition.assignment.strategy" = {strategy}',
    ]
    if rng.random() < 0.25:  # noqa: PLR2004 - one seed in four has static members
        lines.append('"group.instance.id" = "instance"')
    return "\n".join(lines) + "\n"


def _fault(rng: random.Random, at: int) -> str:
    [kind] = rng.choices(FAULT_KINDS, weights=FAULT_WEIGHTS)
    consumer, broker = rng.choice(CONSUMERS), rng.choice(BROKERS)
    head = f'[[faults]]\n"at.ms" = {at}\n'
    if kind == "crash":
        restart = f'"restart.after.ms" = {rng.randint(500, 3000)}\n' if rng.random() < 0.7 else ""  # noqa: PLR2004
        return head + f'kind = "crash"\nnode = "{consumer}"\n' + restart
    if kind == "pause":
        return head + f'kind = "pause"\nnode = "{consumer}"\n"duration.ms" = {rng.randint(1000, 5000)}\n'
    if kind == "stall":
        return head + f'kind = "stall"\nnode = "{consumer}"\n"duration.ms" = {rng.randint(2000, 6000)}\n'
    if kind in ("close", "unsubscribe"):
        return head + f'kind = "{kind}"\nnode = "{consumer}"\n'
    if kind == "isolate":
        cut = f'kind = "partition"\nbetween = [["{consumer}"], ["{COORDINATOR}"]]\n'
        return head + cut + f'"duration.ms" = {rng.randint(2000, 6000)}\n'
    if kind in ("broker_crash", "coordinator_crash"):
        target = COORDINATOR if kind == "coordinator_crash" else broker
        crash = rng.choice(("process", "process", "power_loss", "disk_loss"))
        restart = f'"restart.after.ms" = {rng.randint(500, 3000)}\n'
        return head + f'kind = "crash"\nnode = "{target}"\n"crash.kind" = "{crash}"\n' + restart
    return head + f'kind = "partition"\nisolate = ["{broker}"]\n"duration.ms" = {rng.randint(1000, 5000)}\n'


def plan(seed: int) -> str:
    """The seed's scenario: the base cluster, the group's configuration and its faults."""
    rng = random.Random(seed)
    text = BASE + _group_config(rng)
    times = sorted(rng.randint(1500, 9000) for _ in range(rng.randint(3, 6)))
    return text + "".join(_fault(rng, at) for at in times)


PROTOCOLS = ("eager", "cooperative", "static", "consumer")
"""The rebalance protocols the protocol swarm compares, all on Kafka 4.0: eager range,
cooperative-sticky, static members with range, and KIP-848's consumer protocol."""
_PROTOCOL_LINES = {
    "eager": '"partition.assignment.strategy" = ["range"]\n',
    "cooperative": '"partition.assignment.strategy" = ["cooperative-sticky"]\n',
    "static": '"partition.assignment.strategy" = ["range"]\n"group.instance.id" = "instance"\n',
    "consumer": '"group.protocol" = "consumer"\n',
}
_CLASSIC_ONLY = ('"session.timeout.ms" = 3000\n', '"heartbeat.interval.ms" = 1000\n')
"""Keys 4.0 refuses beside `group.protocol = "consumer"`: its coordinator sets both (the
broker's `group.consumer.session.timeout.ms` and `group.consumer.heartbeat.interval.ms`)."""


def protocol_plan(seed: int, protocol: str) -> str:
    """The seed's scenario on Kafka 4.0 under `protocol`: the same commits and faults as every
    other protocol draws for this seed, the group's assignment as the protocol has it."""
    rng = random.Random(seed)
    commit, auto = rng.choice(COMMITS)
    base = BASE.replace('[network]', '[kafka]\nversion = "4.0"\n[network]', 1)
    if protocol == "consumer":
        for line in _CLASSIC_ONLY:
            base = base.replace(line, "", 1)
    text = base + f'commit = "{commit}"\n"enable.auto.commit" = {str(auto).lower()}\n' + _PROTOCOL_LINES[protocol]
    times = sorted(rng.randint(1500, 9000) for _ in range(rng.randint(3, 6)))
    return text + "".join(_fault(rng, at) for at in times)


def commit_of(seed: int) -> tuple[str, bool]:
    """The seed's (what the application commits, enable.auto.commit), as `plan` draws them."""
    return random.Random(seed).choice(COMMITS)


@dataclass(frozen=True, slots=True)
class GroupRun:
    run_dir: Path
    summary: dict[str, Any]


def run(seed: int, out_dir: Path, protocol: str | None = None) -> GroupRun:
    """Run the seed's scenario (`plan`, or with a `protocol` `protocol_plan`) into `out_dir`
    with the real runner (events.jsonl, summary.json)."""
    text = plan(seed) if protocol is None else protocol_plan(seed, protocol)
    scenario = parse_scenario(text, "group-swarm", [f"run.seed={seed}"])
    summary = run_scenario(scenario, out_dir, host=HostKind.DIRECT)
    return GroupRun(out_dir, summary)
