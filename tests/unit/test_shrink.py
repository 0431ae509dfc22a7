"""Shrinking a failing campaign seed: delta debugging over its faults, a bisection of its
length, simplifications of its configuration; every step keeps only what fails the same check."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from sim.cluster.scenario import parse_scenario
from sim.studies.campaign import check_tasks, checks, figures_of, run_check_task
from sim.studies.campaign_plan import drawn_kinds, plan
from sim.studies.runner import run_scenario
from sim.studies.shrink import ShrinkError, ddmin, run_checks, run_shrink_task, shrink, shrink_tasks


def _counting(predicate):
    calls: list[tuple[int, ...]] = []

    def fails(items: list[int]) -> bool:
        calls.append(tuple(items))
        return predicate(set(items))

    return fails, calls


def test_ddmin_finds_the_two_elements_that_fail_together():
    fails, calls = _counting(lambda items: {3, 7} <= items)
    assert ddmin(list(range(10)), fails) == [3, 7]
    assert len(calls) == len(set(calls)) == 22  # noqa: PLR2004 - each sublist tested once


def test_ddmin_tries_the_empty_list_first_and_keeps_a_single_culprit():
    fails, calls = _counting(lambda _: True)
    assert ddmin(list(range(6)), fails) == []
    assert calls == [()]
    fails, calls = _counting(lambda items: 5 in items)
    assert ddmin(list(range(8)), fails) == [5]
    assert calls == [(), (0, 1, 2, 3), (4, 5, 6, 7), (4, 5), (4,), (5,)]  # the half that fails, halved


def test_ddmin_keeps_everything_when_everything_is_needed():
    fails, calls = _counting(lambda items: len(items) == 6)  # noqa: PLR2004
    assert ddmin(list(range(6)), fails) == list(range(6))
    assert len(calls) <= 6 * 6


def test_ddmin_result_is_one_minimal_for_every_culprit_set_of_up_to_three_among_seven():
    """No element of the result can be removed; with a monotone predicate it is the culprits."""
    for size in (1, 2, 3):
        for culprits in itertools.combinations(range(7), size):
            fails, calls = _counting(lambda items, c=set(culprits): c <= items)
            assert ddmin(list(range(7)), fails) == list(culprits)
            assert len(calls) == len(set(calls)) <= 7 * 7


def _fake_run(text: str) -> list[str]:
    """A stand-in run: a reorder fault over a run of at least 2.5 s breaks committed offsets;
    fewer than 3 partitions gives another failure, which the shrinker must not take."""
    scenario = parse_scenario(text, "fake")
    if scenario.topics[0]["partitions"] < 3:  # noqa: PLR2004
        return ["lost_acked"]
    reorder = any(fault["kind"] == "reorder" for fault in scenario.faults)
    return ["invariant monotonic_committed_offset"] if reorder and scenario.get("run", "duration.ms") >= 2500 else []  # noqa: PLR2004


KINDS = ("shutdown", "power_loss", "reorder")
SEED_18 = plan(18, kinds=KINDS, duration_ms=4000)
"""Kafka 2.8, 3 brokers, 4 partitions, 2 consumers, a producer with acks=1; a reorder from 813
ms, shutdowns at 1101 and 1904 ms. Drawn from three kinds given, so that a kind added to the
vocabulary does not change it."""


def test_shrink_keeps_only_what_fails_the_same_check():
    assert drawn_kinds(SEED_18) == ["reorder", "shutdown", "shutdown"]
    shrunk = shrink(SEED_18, "seed-18.toml", "invariant monotonic_committed_offset", _fake_run)
    scenario = parse_scenario(shrunk.text, "shrunk")
    assert [fault["kind"] for fault in scenario.faults] == ["reorder"]
    assert shrunk.text.count("# campaign kind: ") == 1
    assert "# campaign kind: reorder\n[[faults]]\n" in shrunk.text
    # Bisected between the fault's start (813) and 4000 to within 100 ms of 2500.
    assert (shrunk.duration_before, shrunk.duration_after) == (4000, 2505)
    assert (shrunk.faults_before, shrunk.faults_after) == (3, 1)
    # 1 and 2 partitions give another check: the first count down that keeps this one is 3.
    assert scenario.topics[0]["partitions"] == 3  # noqa: PLR2004
    assert scenario.get("cluster", "brokers") == 3  # noqa: PLR2004 - the replication factor
    assert scenario.consumers == scenario.producers == ()
    assert shrunk.runs == 16  # noqa: PLR2004
    assert _fake_run(shrunk.text) == ["invariant monotonic_committed_offset"]


def test_shrink_refuses_a_scenario_that_does_not_fail_the_check():
    with pytest.raises(ShrinkError, match=r"^seed-18\.toml: its run does not fail 'lost_acked'; nothing to shrink$"):
        shrink(SEED_18, "seed-18.toml", "lost_acked", _fake_run)


def test_a_real_failing_seed_shrinks_to_two_faults_and_its_file_replays_the_check(tmp_path: Path):
    """Seed 18 of a campaign over three kinds at 4 s: the acks=1 producer loses acknowledged
    records when the reorder holds a follower back and the first shutdown moves leadership; the
    second shutdown has nothing to do with it, nor the last 2.8 s, nor two of the four
    partitions."""
    tasks = check_tasks(18, tmp_path, kinds=KINDS, duration_ms=4000)
    result = run_check_task(tasks[17])
    assert checks(result) == ["lost_acked"]
    [task] = shrink_tasks([{"seed": 18, "check": checks(result)[0], "scenario": result["scenario"]}], tmp_path, 5)
    shrunk = run_shrink_task(task)
    path = tmp_path / "shrunk" / "seed-18.toml"
    assert shrunk == {
        "seed": 18,
        "check": "lost_acked",
        "shrunk": str(path),
        "error": None,
        "runs": 16,
        "faults_before": 3,
        "faults_after": 2,
        "duration_before": 4000,
        "duration_after": 1191,
    }
    text = path.read_text(encoding="utf-8")
    assert text.startswith(
        "# kafkasim shrunk scenario: `kafkasim run` of this file fails the check 'lost_acked'\n"
        f"# shrunk from {result['scenario']}: fault events 3 -> 2, duration.ms 4000 -> 1191 (16 runs)\n"
    )
    scenario = parse_scenario(text, str(path))
    assert [fault["kind"] for fault in scenario.faults] == ["reorder", "shutdown"]
    assert (scenario.get("cluster", "brokers"), scenario.topics[0]["partitions"]) == (3, 2)
    summary = run_scenario(scenario, tmp_path / "replay")
    assert checks(figures_of(summary)) == ["lost_acked"]
    assert run_checks(text) == ["lost_acked"]


def test_a_seed_that_cannot_be_shrunk_says_why_and_writes_nothing(tmp_path: Path):
    task = {"seed": 3, "check": "lost_acked", "scenario": str(tmp_path / "none.toml"), "shrunk": str(tmp_path / "s.toml")}
    result = run_shrink_task(task)
    assert result["shrunk"] is None
    assert result["error"].startswith("[Errno 2] No such file or directory")
    assert not (tmp_path / "s.toml").exists()


def test_shrink_tasks_take_the_first_check_of_the_first_failing_seeds(tmp_path: Path):
    failures = [
        {"seed": 2, "check": "lost_acked", "scenario": "s2"},
        {"seed": 2, "check": "invariant leader_in_isr", "scenario": "s2"},
        {"seed": 5, "check": "duplicates kafka_14196", "scenario": "s5"},
        {"seed": 9, "check": "lost_acked", "scenario": "s9"},
    ]
    assert [(t["seed"], t["check"], t["shrunk"]) for t in shrink_tasks(failures, tmp_path, 2)] == [
        (2, "lost_acked", str(tmp_path / "shrunk" / "seed-2.toml")),
        (5, "duplicates kafka_14196", str(tmp_path / "shrunk" / "seed-5.toml")),
    ]
    assert shrink_tasks(failures, tmp_path, 0) == []
