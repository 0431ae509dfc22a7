"""A Kafka cluster built from a scenario file: brokers, topics, producers, faults, checks."""

from __future__ import annotations

from pathlib import Path

import orjson
import pykka

from sim.cluster.harness import Cluster
from sim.cluster.scenario import parse_scenario
from sim.studies.runner import run_scenario

KAFKA = """
[run]
"duration.ms" = 20000
[network]
"latency.min.ms" = 1
"latency.max.ms" = 3
[cluster]
brokers = 3
[broker]
"min.insync.replicas" = 2
"replica.lag.time.max.ms" = 2000
[[topics]]
name = "T"
partitions = 2
"replication.factor" = 3
[[producers]]
topic = "T"
records = 150
"interval.ms" = 100
partitioner = "round_robin"
"""


def _events(run_dir: Path) -> list[dict]:
    return [orjson.loads(line) for line in (run_dir / "events.jsonl").read_bytes().splitlines()]


def test_a_follower_crash_shrinks_and_regrows_the_isr_and_loses_nothing(tmp_path: Path) -> None:
    faults = '[[faults]]\nkind = "crash"\nnode = "broker-3"\n"at.ms" = 3000\n"crash.kind" = "power_loss"\n"restart.after.ms" = 6000\n'
    summary = run_scenario(parse_scenario(KAFKA + faults, "test"), tmp_path)
    assert (summary["produced"], summary["acked"], summary["lost_acked"]) == (150, 150, 0)
    assert (summary["log_duplicates"], summary["diverged_replicas"], summary["invariant_violations"]) == (0, [], [])
    events = _events(tmp_path)
    shrunk = [(e["ts_ms"], e["partition"], e["isr"]) for e in events if e["event"] == "isr_shrunk"]
    expanded = [(e["partition"], e["isr"]) for e in events if e["event"] == "isr_expanded"]
    # broker-3 last fetched just before 3000; the check runs every 1000 ms and removes it when
    # more than 2000 ms have passed: at 5000 or 6000, both partitions, leaders 1 and 2.
    assert sorted(p for _, p, _ in shrunk) == [0, 1]
    assert all(5000 <= t <= 6000 and 3 not in isr for t, _, isr in shrunk)
    assert sorted(expanded) == [(0, [1, 2, 3]), (1, [1, 2, 3])]


def test_acks_all_fails_under_min_isr_and_acks_nothing_it_loses(tmp_path: Path) -> None:
    faults = (
        '[[faults]]\nkind = "crash"\nnode = "broker-2"\n"at.ms" = 3000\n'
        '[[faults]]\nkind = "crash"\nnode = "broker-3"\n"at.ms" = 3000\n'
    )
    # The controller hears of the crashes when the sessions expire (18 s), so the run is longer.
    # Without retries each refused batch is an outcome of its own.
    text = KAFKA.replace("partitions = 2", "partitions = 1").replace("20000", "40000").replace("150", "350")
    text = text.replace('partitioner = "round_robin"', 'partitioner = "round_robin"\nretries = 0')
    summary = run_scenario(parse_scenario(text + faults, "test"), tmp_path)
    events = _events(tmp_path)
    errors = {e["error"] for e in events if e["event"] == "produce_completed"}
    assert {"NONE", "NOT_ENOUGH_REPLICAS"} <= errors
    assert summary["acked"] < summary["produced"] == 350
    assert summary["lost_acked"] == 0
    assert summary["invariant_violations"] == []


def test_same_seed_same_log_with_broker_faults() -> None:
    faults = (
        '[[faults]]\nkind = "pause"\nnode = "broker-2"\n"at.ms" = 2000\n"duration.ms" = 3000\n'
        '[[faults]]\nkind = "drop"\nprobability = 0.05\n"at.ms" = 6000\n"duration.ms" = 4000\n'
        '[[faults]]\nkind = "crash"\nnode = "broker-3"\n"at.ms" = 8000\n"restart.after.ms" = 1000\n'
    )
    digests = {}
    for seed in range(6):
        runs = set()
        for _ in range(2):
            with Cluster(parse_scenario(KAFKA + faults, "test", [f"run.seed={seed}"])) as cluster:
                cluster.run_to_end()
                runs.add(cluster.kernel.event_log.digest)
        assert len(runs) == 1
        digests[seed] = runs.pop()
    assert len(set(digests.values())) == 6


def test_every_broker_and_producer_is_a_live_pykka_actor() -> None:
    with Cluster(parse_scenario(KAFKA, "test")) as cluster:
        cluster.run(for_ms=100)
        names = sorted(str(a) for a in cluster.actors())
        brokers = [f"broker-{b}/{actor}" for b in (1, 2, 3) for actor in ("broker", "controller")]
        assert names == [*brokers, "producer-1/producer", "zookeeper/zookeeper"]
        assert len(pykka.ActorRegistry.get_all()) == 8


def test_a_topic_level_min_insync_replicas_overrides_the_brokers(tmp_path: Path) -> None:
    """Two topics on the same brokers; only the one with min.insync.replicas 3 refuses acks=all
    once a broker is down and out of the ISR. On 3.9 the produce parked when the ISR shrank
    waits its 30 s (the HW stays under min ISR), and U's connection is muted meanwhile: the
    refusals come after it, so the run lasts 40 s."""
    text = KAFKA.replace("partitions = 2", "partitions = 1").replace("20000", "40000") + (
        '[[topics]]\nname = "U"\n"replication.factor" = 3\n"min.insync.replicas" = 3\n'
        '[[producers]]\ntopic = "U"\nrecords = 150\n"interval.ms" = 100\n'
        '[[faults]]\nkind = "crash"\nnode = "broker-3"\n"at.ms" = 1000\n'
    )
    run_scenario(parse_scenario(text, "test"), tmp_path)
    refused: dict[str, set[str]] = {"T": set(), "U": set()}
    for e in _events(tmp_path):
        if e["event"] == "produce_rejected":
            refused[e["topic"]].add(e["error"])
    assert refused == {"T": set(), "U": {"NOT_ENOUGH_REPLICAS"}}


def test_a_static_cluster_runs_without_the_coordination_service(tmp_path: Path) -> None:
    """`metadata.mode = "static"`: no ZooKeeper, no controller; partitions start as created and
    producers use the first replica as the leader."""
    text = KAFKA.replace("brokers = 3", 'brokers = 3\n"metadata.mode" = "static"\n[zookeeper]\nenabled = false')
    with Cluster(parse_scenario(text, "test")) as cluster:
        cluster.run(for_ms=100)
        assert sorted(str(a) for a in cluster.actors()) == [
            "broker-1/broker", "broker-2/broker", "broker-3/broker", "producer-1/producer",
        ]
    summary = run_scenario(parse_scenario(text, "test"), tmp_path)
    assert (summary["produced"], summary["acked"], summary["lost_acked"]) == (150, 150, 0)
