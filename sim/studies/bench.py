"""`kafkasim bench`: what a run costs, as ratios taken in one run (these machines are noisy).

`kernel`: the kernel's throughput under Pykka against the direct executor. Both hosts run the same workload (the gossip stand-in, msgpack on every hop) in one process, one
after the other, twice each in alternation; the best of each is reported, since these machines
are noisy and ratios taken in one run are what is compared. Both runs must produce the same event
log digest, which is itself a determinism check: the Pykka threads change nothing the simulation
can see.

`std`: the standard workload (`sim.studies.builtin.STANDARD_WORKLOAD`: 3 brokers, 12 partitions of
replication factor 3, an acks=all producer at 1,000 records per second, four consumers with
auto-commit, a broker crash and restart) as a user runs it: Pykka host, every invariant on, five simulated minutes timed minute by
minute. Beside it, in the same process, the floor: a bare loop doing per delivery what the product
cannot avoid (a heap, a dict dispatch, a msgpack frame packed and unpacked with its CRC, and 1.74
structlog events rendered by orjson). `floor_ratio` is the workload's cost per delivery over the
floor's. The workload runs in a child process so that its peak RSS is its own. Beside each
segment's wall time is its CPU time (every thread of the process): on a machine shared with
other work, `cpu_minute5_vs_minute1` is the steadier measure of whether cost grows. `--quick` runs
one simulated minute (crash at 20 s, restart at 30 s) and compares its fifth 12 s to its first.

`protocols` (with `--protocols`): what KIP-848's consumer protocol costs against the classic
one. The standard workload on Kafka 4.0 (whose brokers serve both), its consumers on the
classic protocol, then on the consumer protocol, each in a child process, alternated twice
(`--quick`: one simulated minute each); the best wall time of each is kept, and
`consumer_vs_classic` is the consumer protocol's wall time per simulated second over the
classic one's (1.0: the same cost).

`sweep` (with `--sweep`): what Spark's parallelism buys a sweep. Eight runs of the standard
workload cut to ten simulated seconds (two auto-commit intervals, four seeds) as Spark tasks on
`local[1]`, then on `local[2]`, in a child process; each timed from the job's start to its last
result, after a warm-up job has started the Python workers. `speedup` is the ratio of the two
wall times (two cores: at most 2). Every run's digest must be the same both times.
"""

from __future__ import annotations

import heapq
import json
import resource
import subprocess
import sys
import time
import zlib
from dataclasses import dataclass
from typing import Any

import msgpack
import orjson
import structlog

from actors.core import Address
from actors.workload import GossipActor, GossipConfig
from sim.engine.kernel import ActorSpec, HostKind, Kernel, NodeSpec
from sim.engine.network import NetworkConfig

__all__ = [
    "BenchConfig",
    "floor_us_per_delivery",
    "run_kernel_bench",
    "run_protocols_bench",
    "run_std_bench",
    "run_sweep_bench",
    "std_figures",
    "sweep_figures",
]

FLOOR_EVENTS_PER_DELIVERY = 1.74
"""What the standard workload logged per delivery when the floor was defined."""


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


# ------------------------------------------------------------------ the floor


class _Lines:
    """structlog's last stop for the floor: keeps rendered lines, as the product's trace does."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []

    def info(self, line: bytes) -> None:
        self.lines.append(line)


def floor_us_per_delivery(deliveries: int = 200_000) -> float:
    """Microseconds per delivery of the bare loop (see the module docstring)."""
    sink = _Lines()
    clock = [0]

    def stamp(_logger: Any, _method: str, event_dict: dict[str, Any]) -> dict[str, Any]:
        event_dict["ts_ms"] = clock[0]
        return event_dict

    log = structlog.wrap_logger(
        sink,
        processors=[stamp, structlog.processors.JSONRenderer(serializer=orjson.dumps)],
        context_class=dict,
        cache_logger_on_first_use=True,
    ).bind(run_id="floor", seed=1, node="broker-1", actor="broker")
    handlers = {key: (lambda body: body["offset"]) for key in range(8)}
    heap = [(i, i, i % 8) for i in range(256)]
    heapq.heapify(heap)
    owed = 0.0
    started = time.perf_counter()
    for _ in range(deliveries):
        ts, seq, key = heapq.heappop(heap)
        clock[0] = ts
        payload = msgpack.packb([1, key, 0, seq, {"topic": "T", "partition": key, "offset": seq}])
        frame = payload + zlib.crc32(payload).to_bytes(4, "big")
        body, crc = frame[:-4], frame[-4:]
        if zlib.crc32(body).to_bytes(4, "big") != crc:
            raise AssertionError("crc")
        handlers[key](msgpack.unpackb(body)[4])
        owed += FLOOR_EVENTS_PER_DELIVERY
        while owed >= 1:
            log.info("records_appended", topic="T", partition=key, base_offset=seq, count=1)
            owed -= 1
        if len(sink.lines) > 4096:
            sink.lines.clear()
        heapq.heappush(heap, (ts + 1, seq + 256, key))
    return (time.perf_counter() - started) / deliveries * 1e6


# ------------------------------------------------------------------ the standard workload


QUICK = ("run.duration.ms=60000", "faults.1.at.ms=20000", "faults.1.restart.after.ms=10000")


def std_figures(overrides: tuple[str, ...] = ()) -> dict[str, Any]:
    """The standard workload's figures, measured in this process (with `overrides` applied)."""
    from sim.cluster.harness import Cluster  # noqa: PLC0415 - the CLI imports this module early
    from sim.cluster.scenario import parse_scenario  # noqa: PLC0415
    from sim.studies.builtin import STANDARD_WORKLOAD  # noqa: PLC0415

    scenario = parse_scenario(STANDARD_WORKLOAD, "standard workload", list(overrides))
    duration = scenario.get("run", "duration.ms")
    segment = duration // 5
    floor = floor_us_per_delivery()
    walls, cpus = [], []
    with Cluster(scenario) as cluster:
        for k in range(1, 6):
            started, cpu_started = time.perf_counter(), time.process_time()
            cluster.run(until_ms=k * segment)
            walls.append(time.perf_counter() - started)
            cpus.append(time.process_time() - cpu_started)
        kernel = cluster.kernel
        deliveries, events, digest = kernel.delivered, kernel.event_log.count, kernel.event_log.digest
        windows = kernel.windows
        violations = len(kernel.invariant_violations)
        producer = cluster.state("producer-1", "producer")
        summary = cluster.groups.summary()
    wall = sum(walls)
    per_delivery = wall / deliveries * 1e6
    return {
        "simulated_s": duration / 1000,
        "wall_s": round(wall, 2),
        "realtime_factor": round(duration / 1000 / wall, 3),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "deliveries": deliveries,
        "events": events,
        "us_per_delivery": round(per_delivery, 2),
        "events_per_delivery": round(events / deliveries, 3),
        "windows": windows,
        "segment_s": segment / 1000,
        "wall_per_segment_s": [round(w, 3) for w in walls],
        "minute5_vs_minute1": round(walls[4] / walls[0], 3),
        "cpu_per_segment_s": [round(c, 3) for c in cpus],
        "cpu_minute5_vs_minute1": round(cpus[4] / cpus[0], 3),
        "floor_us_per_delivery": round(floor, 2),
        "floor_ratio": round(per_delivery / floor, 2),
        "invariant_violations": violations,
        "digest": digest,
        "producer": {
            "records": producer["sent"],
            "acked": producer["acked"],
            "produce_requests": producer["produce_requests"],
            "records_per_request": round(producer["sent"] / max(1, producer["produce_requests"]), 2),
            "records_per_wall_s": round(producer["sent"] / wall),
        },
        "consumers": {
            "consumed": summary["consumed"],
            "duplicates": summary["duplicates"],
            "rebalances": summary["rebalances"],
        },
    }


def _std_child(overrides: tuple[str, ...]) -> dict[str, Any]:
    """The standard workload's figures with `overrides`, measured in a child process, so that
    its peak RSS is its own."""
    command = [sys.executable, "-m", "sim.studies.bench", "--std", *(f"--set={o}" for o in overrides)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["no output"]
        settings = f" ({' '.join(overrides)})" if overrides else ""
        msg = f"the standard workload failed{settings}: {lines[-1]}"
        raise RuntimeError(msg)
    return json.loads(done.stdout)


def run_std_bench(*, quick: bool = False) -> dict[str, Any]:
    """The standard workload's figures, measured in a child process."""
    return _std_child(QUICK if quick else ())


# ------------------------------------------------------------------ the rebalance protocols

PROTOCOL_SETS = {
    "classic": ("kafka.version=4.0",),
    "consumer": ("kafka.version=4.0", "consumers.1.group.protocol=consumer"),
}


def run_protocols_bench(*, quick: bool = False, rounds: int = 2, overrides: tuple[str, ...] = ()) -> dict[str, Any]:
    """The standard workload on 4.0 under the classic and the consumer protocol, alternated
    (`overrides`, a test's shorter run, go after `--quick`'s)."""
    best: dict[str, dict[str, Any]] = {}
    for _ in range(rounds):
        for protocol, sets in PROTOCOL_SETS.items():
            figures = _std_child((*(QUICK if quick else ()), *overrides, *sets))
            if protocol not in best or figures["wall_s"] < best[protocol]["wall_s"]:
                best[protocol] = figures
    classic, consumer = best["classic"], best["consumer"]
    return {
        "simulated_s": classic["simulated_s"],
        "classic_wall_s": classic["wall_s"],
        "consumer_wall_s": consumer["wall_s"],
        "classic_realtime_factor": classic["realtime_factor"],
        "consumer_realtime_factor": consumer["realtime_factor"],
        "consumer_vs_classic": round(consumer["wall_s"] / classic["wall_s"], 3),
        "classic_events": classic["events"],
        "consumer_events": consumer["events"],
        "classic_rebalances": classic["consumers"]["rebalances"],
        "consumer_rebalances": consumer["consumers"]["rebalances"],
        "invariant_violations": classic["invariant_violations"] + consumer["invariant_violations"],
    }


# ------------------------------------------------------------------ the sweep on Spark


SWEEP_SETS = ("run.duration.ms=10000",)
SWEEP_GRID = ("consumers.1.auto.commit.interval.ms=1000,5000",)
SWEEP_SEEDS = 4


def _warm(_: int) -> int:
    import sim.studies.runner  # noqa: F401, PLC0415 - the worker imports the simulator once, as a run would

    return 0


def sweep_figures() -> dict[str, Any]:
    """The sweep's wall time on local[1] and local[2], measured in this process."""
    import os  # noqa: PLC0415
    import tempfile  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    from sim.analytics.session import spark_session  # noqa: PLC0415
    from sim.studies.builtin import STANDARD_WORKLOAD  # noqa: PLC0415
    from sim.studies.sweep import prepare_sweep_dir, run_sweep_tasks  # noqa: PLC0415
    from sim.studies.sweep_plan import plan_sweep  # noqa: PLC0415

    load_before = os.getloadavg()[0]
    walls: dict[str, float] = {}
    digests: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(prefix="kafkasim-bench-") as tmp:
        scenario = Path(tmp) / "standard.toml"
        scenario.write_text(STANDARD_WORKLOAD, encoding="utf-8")
        plan = plan_sweep(str(scenario), SWEEP_SETS, SWEEP_GRID, SWEEP_SEEDS)
        for slots in (1, 2):
            master = f"local[{slots}]"
            out = Path(tmp) / f"local{slots}"
            prepare_sweep_dir(out)
            spark = spark_session(master)
            try:
                spark.sparkContext.parallelize(range(slots), slots).map(_warm).collect()
                started = time.perf_counter()
                results = run_sweep_tasks(spark, plan, out)
                walls[master] = time.perf_counter() - started
            finally:
                spark.stop()
            failed = [r for r in results if r["failure"]]
            if failed:
                msg = f"sweep run {failed[0]['run_dir']} failed: {failed[0]['failure']}"
                raise RuntimeError(msg)
            digests[master] = [
                json.loads((Path(r["run_dir"]) / "summary.json").read_text())["events_digest"] for r in results
            ]
    return {
        "runs": len(plan.configs) * plan.seeds,
        "simulated_s_per_run": 10.0,
        "local1_wall_s": round(walls["local[1]"], 2),
        "local2_wall_s": round(walls["local[2]"], 2),
        "speedup": round(walls["local[1]"] / walls["local[2]"], 3),
        "same_digests": digests["local[1]"] == digests["local[2]"],
        "cpus": os.cpu_count(),
        "load_average_before": round(load_before, 2),
        "load_average_after": round(os.getloadavg()[0], 2),
    }


def run_sweep_bench() -> dict[str, Any]:
    """The sweep's figures, measured in a child process (its own JVMs)."""
    done = subprocess.run([sys.executable, "-m", "sim.studies.bench", "--sweep"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["no output"]
        msg = f"the sweep bench failed: {lines[-1]}"
        raise RuntimeError(msg)
    return json.loads(done.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    if "--std" in sys.argv:
        sets = tuple(a.removeprefix("--set=") for a in sys.argv if a.startswith("--set="))
        sys.stdout.write(json.dumps(std_figures((QUICK if "--quick" in sys.argv else ()) + sets)) + "\n")
    elif "--sweep" in sys.argv:
        sys.stdout.write(json.dumps(sweep_figures()) + "\n")
