"""`kafkasim bench`: the kernel's throughput under Pykka against the direct executor.

Both hosts run the same workload (the gossip stand-in, msgpack on every hop) in one process, one
after the other, twice each in alternation; the best of each is reported, since these machines
are noisy and ratios taken in one run are what is compared. Both runs must produce the same event
log digest, which is itself a determinism check: the Pykka threads change nothing the simulation
can see.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from actors.core import Address
from actors.workload import GossipActor, GossipConfig
from sim.kernel import ActorSpec, HostKind, Kernel, NodeSpec
from sim.network import NetworkConfig

__all__ = ["BenchConfig", "run_kernel_bench"]


@dataclass(frozen=True, slots=True)
class BenchConfig:
    nodes: int = 25
    actors_per_node: int = 4
    tokens_per_actor: int = 16
    min_deliveries: int = 200_000
    latency_min_ms: int = 5
    latency_max_ms: int = 10
    seed: int = 1
    rounds: int = 2


def _gossip_kernel(config: BenchConfig, host: HostKind) -> Kernel:
    kernel = Kernel(
        seed=config.seed,
        run_id="bench",
        network=NetworkConfig(config.latency_min_ms, config.latency_max_ms),
        host=host,
    )
    addresses = [
        Address(f"node-{n}", f"gossip-{a}")
        for n in range(config.nodes)
        for a in range(config.actors_per_node)
    ]

    def factory(address: Address) -> GossipActor:
        peers = tuple(p for p in addresses if p != address)
        return GossipActor(GossipConfig(address, peers, tokens=config.tokens_per_actor))

    for n in range(config.nodes):
        node = f"node-{n}"
        actors = tuple(
            ActorSpec(a.actor, lambda a=a: factory(a)) for a in addresses if a.node == node
        )
        kernel.add_node(NodeSpec(node, actors))
    return kernel


def _measure(config: BenchConfig, host: HostKind) -> tuple[float, int, str]:
    kernel = _gossip_kernel(config, host)
    try:
        started = time.perf_counter()
        kernel.run(10**12, max_events=config.min_deliveries)
        elapsed = time.perf_counter() - started
    finally:
        kernel.shutdown()
    return kernel.delivered / elapsed, kernel.delivered, kernel.event_log.digest


def run_kernel_bench(config: BenchConfig | None = None) -> dict[str, Any]:
    """Deliveries per second of both hosts on one workload, and their ratio."""
    config = config or BenchConfig()
    best = {HostKind.PYKKA: 0.0, HostKind.DIRECT: 0.0}
    digests: set[str] = set()
    deliveries = 0
    for _ in range(config.rounds):
        for host in (HostKind.PYKKA, HostKind.DIRECT):
            rate, deliveries, digest = _measure(config, host)
            best[host] = max(best[host], rate)
            digests.add(digest)
    pykka_rate, direct_rate = best[HostKind.PYKKA], best[HostKind.DIRECT]
    return {
        "pykka_deliveries_per_s": round(pykka_rate),
        "direct_deliveries_per_s": round(direct_rate),
        "ratio": round(pykka_rate / direct_rate, 3),
        "actors": config.nodes * config.actors_per_node,
        "deliveries": deliveries,
        "same_digest": len(digests) == 1,
    }
