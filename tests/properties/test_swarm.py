"""Swarm runs: random fault plans against a Kafka cluster, with every invariant checked after
every event (the VOPR's habit). A failure prints the scenario to rerun."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.cluster import Cluster
from sim.scenario import parse_scenario

BASE = """
[run]
"duration.ms" = 20000
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
[[topics]]
name = "T"
partitions = 2
"replication.factor" = 3
[[producers]]
topic = "T"
records = 120
"interval.ms" = 100
"""

NODES = ["broker-1", "broker-2", "broker-3", "producer-1"]


@st.composite
def faults(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, 12000))
        kind = draw(st.sampled_from(["crash", "pause", "partition", "drop", "duplicate", "reorder", "corrupt"]))
        node = draw(st.sampled_from(NODES[:3]))
        entry = f'[[faults]]\nkind = "{kind}"\n"at.ms" = {at}\n'
        if kind == "crash":
            entry += f'node = "{node}"\n"restart.after.ms" = {draw(st.integers(1, 3000))}\n'
        elif kind == "pause":  # long enough, often, for the session to expire (3 s)
            entry += f'node = "{node}"\n"duration.ms" = {draw(st.integers(1, 6000))}\n'
        elif kind == "partition":
            target = draw(st.sampled_from([node, "zookeeper"]))
            entry += f'isolate = ["{target}"]\n"duration.ms" = {draw(st.integers(1, 6000))}\n'
        else:
            entry += f'probability = {draw(st.sampled_from([0.01, 0.1, 0.3]))}\n"duration.ms" = {draw(st.integers(1, 3000))}\n'
        lines.append(entry)
    return "".join(lines)


@settings(max_examples=int(os.environ.get("KAFKASIM_SWARM_EXAMPLES", "12")), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), plan=faults(), version=st.sampled_from(["3.9", "0.11.0"]))
def test_invariants_hold_under_random_faults(seed: int, plan: str, version: str) -> None:
    scenario = parse_scenario(BASE + plan, "swarm", [f"run.seed={seed}", f"kafka.version={version}"])
    with Cluster(scenario) as cluster:
        cluster.run_to_end()  # a violation raises SimulationFailed, naming seed and event
        checks = cluster.final_checks()
    assert checks["diverged_replicas"] == [], scenario.to_toml()
    assert checks["acked"] <= checks["produced"] == 120
