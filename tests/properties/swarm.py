"""Swarm runs (the VOPR's habit): a Kafka cluster under a random fault plan drawn from a seed,
with every invariant checked after every event and the end-of-run checks at the end.

A run is fully named by its configuration and seed: the seed draws the fault plan and seeds the
simulation, so any failing run is rerun exactly from the scenario it prints.

Whether a run may lose acknowledged records is Kafka's promise, not a guess: acks=all with
replication factor 3, min.insync.replicas 2 and unclean election off loses nothing, provided
no crash loses unflushed data (Kafka does not fsync on acknowledge: a follower still in the ISR
that comes back from a power loss without its tail is KIP-966's case), and provided the version
has the whole truncation protocol: leader epochs (KIP-101, 0.11), the truncation loop (KIP-279,
2.0), and fenced fetches with the epoch-start rule for joining the ISR (KIP-320 and KAFKA-7128,
2.1). The TLA+ specs find divergence in each era before 2.1 (Kip101.tla, Kip279.tla), and the
swarm finds replicas diverging on 0.11. Its 2.0 case (a follower that missed its LeaderAndIsr
fetches unfenced from a woken, deposed leader, then truncates to the new leader's end offset on
OFFSET_OUT_OF_RANGE, keeping records of the old epoch, and rejoins the ISR with them) needs the
deposed leader to hold unreplicated batches, which the broker's muting of a producer's
connection (one waiting produce at a time) makes rare.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from functools import cache
from typing import Any

from actors.profiles import parse_version
from sim.cluster.harness import Cluster
from sim.cluster.scenario import parse_scenario

__all__ = ["ERAS", "Outcome", "SwarmConfig", "examples", "run"]

ERAS = ("0.10.2", "0.11.0", "2.0", "2.4", "2.8", "3.6", "3.9")
"""One version per behaviour era of the profiles: truncation to HW (0.10.2), KIP-101 (0.11),
KIP-279 (2.0), KIP-320 and KAFKA-7128 (2.1 to 2.4, with the 10 s lag default), KIP-497 and
truncation on fetch (2.8), KAFKA-15021 (3.6), KAFKA-15583 (3.7 to 3.9)."""

STRUCTURAL = frozenset(
    {"hw_at_most_leo", "leader_in_isr", "monotonic_high_watermark", "single_controller_per_epoch", "fenced_controller_writes"}
)
"""Invariants no configuration may break: only the ISR data invariants depend on it."""

BASE = """
[run]
"duration.ms" = 20000
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
"unclean.leader.election.enable" = {unclean}
[[topics]]
name = "T"
partitions = 2
"replication.factor" = 3
[[producers]]
topic = "T"
acks = "{acks}"
"enable.idempotence" = {idempotence}{retries}
records = 120
"interval.ms" = 100
partitioner = "round_robin"
"request.timeout.ms" = 3000
"""
BROKERS = ("broker-1", "broker-2", "broker-3")
LINK_FAULTS = ("drop", "duplicate", "reorder", "corrupt")


def examples() -> int:
    """Seeds per era: a few in CI, hundreds locally (`KAFKASIM_SWARM_EXAMPLES=300`)."""
    return int(os.environ.get("KAFKASIM_SWARM_EXAMPLES", "6"))


@dataclass(frozen=True, slots=True)
class SwarmConfig:
    version: str
    acks: str = "all"
    unclean: bool = False
    crash_kinds: tuple[str, ...] = ("process",)
    idempotence: bool = False

    @property
    def promises_no_loss(self) -> bool:
        return (
            self.acks == "all"
            and not self.unclean
            and self.crash_kinds == ("process",)
            and parse_version(self.version) >= (2, 1, 0)
        )


def fault_plan(rng: random.Random, crash_kinds: tuple[str, ...]) -> str:
    """Up to five faults in the first 12 s: crashes (restarted within 3 s), pauses and
    isolations long enough for a 3 s session to expire, and lossy or disordered links."""
    entries = []
    for _ in range(rng.randint(0, 5)):
        at, node = rng.randint(0, 12000), rng.choice(BROKERS)
        kind = rng.choice(("crash", "pause", "partition", *LINK_FAULTS))
        entry = f'[[faults]]\nkind = "{kind}"\n"at.ms" = {at}\n'
        if kind == "crash":
            entry += (
                f'node = "{node}"\n"crash.kind" = "{rng.choice(crash_kinds)}"\n'
                f'"restart.after.ms" = {rng.randint(1, 3000)}\n'
            )
        elif kind == "pause":
            entry += f'node = "{node}"\n"duration.ms" = {rng.randint(1, 6000)}\n'
        elif kind == "partition":
            isolated = rng.choice((node, "zookeeper"))
            entry += f'isolate = ["{isolated}"]\n"duration.ms" = {rng.randint(1, 6000)}\n'
        else:
            entry += f'probability = {rng.choice((0.01, 0.1, 0.3))}\n"duration.ms" = {rng.randint(1, 3000)}\n'
        entries.append(entry)
    return "".join(entries)


@dataclass(frozen=True, slots=True)
class Outcome:
    scenario: str
    """The resolved scenario: `kafkasim run` on it replays the run."""
    violations: tuple[str, ...]
    """The invariants broken, one entry per violation, in order."""
    checks: dict[str, Any]
    unclean_elections: int
    power_losses: int

    @property
    def lost_writes(self) -> bool:
        c = self.checks
        return bool(c["lost_acked"] or c["reused_offsets"] or c["diverged_replicas"])


@cache
def run(config: SwarmConfig, seed: int) -> Outcome:
    text = BASE.format(
        acks=config.acks,
        unclean=str(config.unclean).lower(),
        idempotence=str(config.idempotence).lower(),
        # idempotence needs retries, which were off by default before 2.1
        retries="\nretries = 2147483647" if config.idempotence else "",
    )
    text += fault_plan(random.Random(seed), config.crash_kinds)
    scenario = parse_scenario(text, "swarm", [f"run.seed={seed}", f"kafka.version={config.version}"])
    events: list[dict[str, Any]] = []
    with Cluster(scenario) as cluster:
        cluster.kernel.observe(events.append)
        cluster.run_to_end()
        checks = cluster.final_checks()
        violations = tuple(v.invariant for v in cluster.invariants.violations)
    return Outcome(
        scenario.to_toml(),
        violations,
        checks,
        unclean_elections=sum(1 for e in events if e["event"] == "leader_elected" and e["unclean"]),
        power_losses=sum(1 for e in events if e["event"] == "node_crashed" and e["kind"] != "process"),
    )
