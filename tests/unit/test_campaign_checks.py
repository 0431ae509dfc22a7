"""What a fault campaign calls a failure: every broken promise of Kafka's, not only a crash of
the simulator or a broken invariant; the duplicates of at-least-once delivery stay figures."""

from __future__ import annotations

from pathlib import Path

from sim.studies.campaign import check_tasks, checks, run_check_task, totals


def _result(**figures: object) -> dict[str, object]:
    base: dict[str, object] = {
        "seed": 1,
        "scenario": "s.toml",
        "failure": None,
        "violations": [],
        "lost_acked": 0,
        "skipped_by_cause": {},
        "anomalies": {"poll-skip": 0, "nonmonotonic-poll": 0, "nonmonotonic-send": 0},
        "duplicates_by_cause": {},
    }
    return {**base, **figures}


def test_each_broken_promise_is_one_check_in_a_fixed_order():
    result = _result(
        failure="SimulationFailed: boom",
        violations=["leader_in_isr", "monotonic_committed_offset"],
        lost_acked=3,
        skipped_by_cause={"admin_reset": 5, "committed_before_processed": 2, "out_of_range_reset": 0},
        anomalies={"poll-skip": 0, "nonmonotonic-poll": 1, "nonmonotonic-send": 2},
        duplicates_by_cause={"crash_before_commit": 40, "kafka_14196": 7, "kafka_14639": 0, "revoked_without_commit": 1},
        known_bugs=["kafka_6082", "kip_966"],
    )
    assert checks(result) == [
        "failure: SimulationFailed: boom",
        "invariant leader_in_isr",
        "invariant monotonic_committed_offset",
        "known kafka_6082",
        "known kip_966",
        "lost_acked",
        "skipped committed_before_processed",
        "nonmonotonic-poll unexplained",
        "nonmonotonic-send unexplained",
        "duplicates kafka_14196",
    ]


def test_at_least_once_duplicates_and_an_operators_reset_are_no_failure():
    result = _result(
        duplicates_by_cause={"crash_before_commit": 40, "coordinator_failover": 3, "poll_interval_exceeded": 2},
        skipped_by_cause={"admin_reset": 12},
    )
    assert checks(result) == []
    assert totals([{**result, "violation_count": 0, "skipped": 12, "duplicates": 45}])["failures"] == []


def test_a_campaign_over_unsafe_configurations_fails_on_lost_writes_a_kafka_bug_and_skipped_records(tmp_path: Path):
    """Seeds 10, 21 and 38 of the drawn configurations at 8 s, and seed 39 of the 3.9 profile:
    acks=1 and a crash lose 132 acknowledged records (3.7); a crash before a commit duplicates 69
    records, which at-least-once allows (2.8); auto-commit with processing on workers commits
    638 records not yet processed (3.9), and its power loss brings a broker back short in the ISR
    (KIP-966's gap); the consumer protocol's KAFKA-16460 processes a record
    twice (3.9)."""
    tasks = check_tasks(38, tmp_path, duration_ms=8000)
    results = [run_check_task(tasks[seed - 1]) for seed in (10, 21, 38)]
    results.append(run_check_task(check_tasks(39, tmp_path, profile="3.9", duration_ms=8000)[38]))
    assert [(r["version"], r["lost_acked"]) for r in results] == [("3.7", 132), ("2.8", 0), ("3.9", 0), ("3.9", 0)]
    assert results[1]["duplicates_by_cause"] == {"crash_before_commit": 69}
    assert results[2]["skipped_by_cause"] == {"committed_before_processed": 638}
    assert results[3]["duplicates_by_cause"] == {"kafka_16460": 1}
    figures = totals(results)
    assert [(f["seed"], f["check"], f["shrunk"]) for f in figures["failures"]] == [
        (10, "lost_acked", None),
        (38, "known kip_966", None),
        (38, "skipped committed_before_processed", None),
        (39, "duplicates kafka_16460", None),
    ]
    assert figures["failures"][0]["replay"] == f"kafkasim run {tmp_path / 'scenarios' / 'seed-10.toml'}"
