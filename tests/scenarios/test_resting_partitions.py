"""Two shortcuts of the fetch path change nothing a run shows, over fault plans of the swarm
(crashes, pauses, isolations, lossy links) and the standard workload through its crash and
restart:
- a leader's resting partitions (partitions of a fetch session skipped while they stay as they
  were): with resting turned off, so that every Fetch reads every partition of its session as
  Kafka does, every log is byte-identical;
- a follower's steady fetches (a request built from the partitions whose answers were applied
  since the last one): built from every partition instead, every log is byte-identical."""

from __future__ import annotations

import random

import pytest

from actors.broker import follower, leader
from sim.cluster.harness import Cluster
from sim.cluster.scenario import Scenario, parse_scenario
from sim.engine.kernel import HostKind
from sim.studies.builtin import STANDARD_WORKLOAD
from tests.properties.swarm import BASE, fault_plan


def _digest(scenario: Scenario) -> str:
    with Cluster(scenario, host=HostKind.DIRECT) as cluster:
        cluster.run_to_end()
        return cluster.kernel.event_log.digest


def _swarm(seed: int) -> Scenario:
    text = BASE.format(acks="all", unclean="false", idempotence="false", retries="")
    text += fault_plan(random.Random(seed), ("process", "power_loss"))
    return parse_scenario(text, "swarm", [f"run.seed={seed}", "kafka.version=3.9"])


# Seeds 12 and 33 duplicate or delay a Fetch so that a follower replaces its session while a
# fetch of the old one still waits at the leader.
SCENARIOS = {
    **{f"swarm-{seed}": (lambda seed=seed: _swarm(seed)) for seed in (0, 1, 2, 3, 4, 5, 12, 33)},
    "standard-to-95s": lambda: parse_scenario(STANDARD_WORKLOAD, "standard", ["run.duration.ms=95000"]),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_resting_partitions_leave_the_log_as_reading_every_partition_does(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    resting = _digest(SCENARIOS[name]())
    monkeypatch.setattr(leader, "_come_to_rest", lambda *_: None)  # nothing ever rests
    assert _digest(SCENARIOS[name]()) == resting


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_steady_fetches_leave_the_log_as_building_every_request_whole_does(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    steady = _digest(SCENARIOS[name]())
    monkeypatch.setattr(follower, "_next_steady_fetch", lambda *_: None)  # every request built whole
    assert _digest(SCENARIOS[name]()) == steady
