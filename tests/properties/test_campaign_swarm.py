"""The campaign swarm: `kafkasim check`'s own generator (sim.studies.campaign_plan) in the suite,
each seed a drawn configuration under a drawn fault schedule, short runs.

- The safe flavour on 3.9 keeps every promise: no check fails but the duplicates of 3.9's
  KAFKA-16460, which is Kafka's behaviour.
- Any configuration, any version: the simulator never fails, the invariants that no
  configuration may break hold (tests/properties/swarm.py's STRUCTURAL), and no Jepsen anomaly
  is left without its cause.

`KAFKASIM_SWARM_EXAMPLES=200` runs 200 seeds of each. A failure names the seed; its scenario is
`sim.studies.campaign_plan.plan(seed, ...)`, which `kafkasim run` replays.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sim.studies.campaign import check_tasks, checks, run_check_task
from tests.properties.swarm import STRUCTURAL

SEEDS = range(1, int(os.environ.get("KAFKASIM_SWARM_EXAMPLES", "30")) + 1)
ALLOWED_ON_3_9 = {"duplicates kafka_16460"}


@pytest.fixture(scope="module")
def safe_results(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    out = tmp_path_factory.mktemp("safe")
    return [run_check_task(task) for task in check_tasks(SEEDS[-1], out, profile="3.9", safe=True, duration_ms=8000)]


@pytest.fixture(scope="module")
def any_results(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    out = tmp_path_factory.mktemp("any")
    return [run_check_task(task) for task in check_tasks(SEEDS[-1], out, duration_ms=6000)]


def test_the_safe_flavour_keeps_every_promise(safe_results: list[dict]) -> None:
    broken = {r["seed"]: checks(r) for r in safe_results if set(checks(r)) - ALLOWED_ON_3_9}
    assert broken == {}
    assert sum(r["duplicates"] for r in safe_results) > 0  # faults happened and were recovered from


def test_any_configuration_keeps_the_structural_invariants(any_results: list[dict]) -> None:
    failed = {r["seed"]: r["failure"] for r in any_results if r["failure"]}
    structural = {r["seed"]: sorted(set(r["violations"]) & STRUCTURAL) for r in any_results if set(r["violations"]) & STRUCTURAL}
    unexplained = {r["seed"]: r["anomalies"] for r in any_results if any(r["anomalies"].values())}
    assert (failed, structural, unexplained) == ({}, {}, {})
    versions = {r["version"] for r in any_results}
    assert len(versions) >= 4  # noqa: PLR2004 - the seeds draw several versions


def test_the_scenarios_are_written_and_replayable(any_results: list[dict]) -> None:
    assert all(Path(r["scenario"]).is_file() for r in any_results)
