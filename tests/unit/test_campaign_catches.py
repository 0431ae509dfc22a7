"""The campaign can fail: with the leader's high watermark deliberately wrong, a few seeds of the
safe flavour catch it, and the shrinker reduces the first to a scenario that fails only with
the bug in place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import actors.broker.partition as partition_module
from actors.broker.replica_state import ReplicaState
from sim.cluster.scenario import parse_scenario
from sim.studies.campaign import check_tasks, checks, run_check_task, totals
from sim.studies.shrink import run_checks, run_shrink_task, shrink_tasks

_HIGH_WATERMARK = partition_module.high_watermark


def _one_fetch_ahead(**rule: Any) -> int:
    """`maybeIncrementLeaderHW` counting each follower one fetch ahead: at the leader's log end
    when it last fetched (what the leader sent it), not at its fetch offset (what it has)."""
    followers: dict[int, ReplicaState] = rule["followers"]
    ahead = {
        broker: state._replace(log_end_offset=max(state.log_end_offset, state.last_fetch_leader_log_end_offset))
        for broker, state in followers.items()
    }
    return _HIGH_WATERMARK(**{**rule, "followers": ahead})


def test_a_safe_campaign_catches_a_high_watermark_one_fetch_early_and_shrinks_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seeds 1 to 3 of the safe flavour at 6 s (Kafka 2.8, 4.0, 2.8): each passes with the
    model as it is, and each breaks `weak_isr` and `strong_isr` (the HW passes a follower's log
    end) with the bug. The first seed's three fault events shrink to none, its group goes, and
    1.2 s of a producer writing to replicated partitions show it."""
    tasks = check_tasks(3, tmp_path / "clean", safe=True, duration_ms=6000)
    assert [checks(run_check_task(task)) for task in tasks] == [[], [], []]

    monkeypatch.setattr(partition_module, "high_watermark", _one_fetch_ahead)
    results = [run_check_task(task) for task in check_tasks(3, tmp_path, safe=True, duration_ms=6000)]
    assert [r["version"] for r in results] == ["2.8", "4.0", "2.8"]
    failures = totals(results)["failures"]
    assert [(f["seed"], f["check"]) for f in failures] == [
        (seed, check) for seed in (1, 2, 3) for check in ("invariant strong_isr", "invariant weak_isr")
    ]

    [task] = shrink_tasks(failures, tmp_path, 1)
    shrunk = run_shrink_task(task)
    assert shrunk["check"] == "invariant strong_isr"
    assert (shrunk["faults_before"], shrunk["faults_after"]) == (3, 0)
    assert (shrunk["duration_before"], shrunk["duration_after"], shrunk["runs"]) == (6000, 1218, 13)
    text = Path(shrunk["shrunk"]).read_text(encoding="utf-8")
    scenario = parse_scenario(text, "shrunk")
    assert scenario.faults == scenario.consumers == ()
    assert len(scenario.producers) == 1
    assert [(t["partitions"], t["replication.factor"]) for t in scenario.topics] == [(2, 3)]
    assert "invariant strong_isr" in run_checks(text)

    monkeypatch.setattr(partition_module, "high_watermark", _HIGH_WATERMARK)
    assert run_checks(text) == []
