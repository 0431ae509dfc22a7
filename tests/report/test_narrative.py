"""The run report's story, sentence by sentence, on a small run with a story
(tests/report/story.toml: a leader's crash, then a consumer's between two auto-commits); and
its pure parts on hand-made facts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sim.cluster.scenario import load_scenario
from sim.report.narrative import MAX_LINES, narrate
from sim.report.narrative_text import partitions
from sim.report.page import _leader_rows
from sim.report.run_facts import RunFacts, scan_events
from sim.studies.runner import run_scenario

STORY = Path(__file__).with_name("story.toml")


@pytest.fixture(scope="module")
def story_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], RunFacts]:
    out = tmp_path_factory.mktemp("story")
    summary = run_scenario(load_scenario(str(STORY)), out)
    return summary, scan_events(out / "events.jsonl")


def test_the_story_of_a_leader_crash_and_a_consumer_crash(story_run: tuple[dict[str, Any], RunFacts]) -> None:
    summary, facts = story_run
    story = narrate(summary, facts)
    assert story.headline == ["799 records were processed more than once (crash_before_commit 799)."]
    assert story.moments == [
        "At 0.0 s broker-3 became the controller (epoch 1).",
        "At 0.1 s the controller broker-3 elected the first leaders of T-0, T-1 and 50 partitions of __consumer_offsets.",
        "At 6.1 s group g (coordinator broker-1) formed generation 1 with consumer-1 and consumer-2.",
        "At 8.0 s broker-1 crashed (process); it restarted at 28.0 s.",
        "From 8.0 s T-0 and 17 partitions of __consumer_offsets had no live leader for 16.0 s, until 24.0 s: "
        "broker-1, their leader, crashed.",
        "At 15.0 s consumer-1 crashed (process); its partition T-0 had no owner for 21.3 s until generation 2; it had "
        "processed 799 records without having committed, read again by consumer-2 (crash_before_commit).",
        "At 24.0 s the controller broker-3 elected new leaders (offline election) of T-0 and 17 partitions of "
        "__consumer_offsets: T-0 to broker-2.",
        "At 24.0 s broker-1 left the ISR of 33 partitions of __consumer_offsets.",
        "Between 28.1 s and 28.7 s broker-1 rejoined the ISR of T-0 and 50 partitions of __consumer_offsets.",
        "At 34.0 s consumer-1 was expelled (session timeout) and group g (coordinator broker-2) began a rebalance; "
        "generation 2 formed 2.2 s later with consumer-2.",
        "At 36.6 s consumer-2 processed again 799 records (crash_before_commit): T-0 offsets 0 to 798; its previous "
        "owner crashed after processing them but before committing their offsets, and the next owner resumed from "
        "the last committed offset (at-least-once delivery).",
    ]
    assert story.figures == (
        "Figures: 21058 events over 40.0 s simulated; 3000 records produced, 3000 acknowledged; 3799 consumed, "
        "2 rebalances."
    )


def test_the_facts_behind_it(story_run: tuple[dict[str, Any], RunFacts]) -> None:
    _, facts = story_run
    assert facts.consumer_crashes == [
        {"consumer": "consumer-1", "ts_ms": 15000, "kind": "process", "partitions": ["T-0"], "uncommitted": 799,
         "uncommitted_ranges": {"T-0": [0, 799]}, "last_commit_ms": None, "last_commit_kind": None}
    ]
    assert [g for g in facts.leaderless if g["partition"] == "T-0"] == [
        {"partition": "T-0", "from_ms": 8000, "to_ms": 24042, "broker": 1, "lost_by": "node_crashed", "resumed_by": 2}
    ]
    # an eager rebalance revokes consumer-2's T-1 too; the holds of generation 2 last to the end
    assert [(h["consumer"], h["partition"], h["generation_id"], h["from_ms"], h["to_ms"], h["ended_by"])
            for h in facts.holds] == [
        ("consumer-2", "T-1", 1, 6119, 36249, "partitions_revoked"),
        ("consumer-1", "T-0", 1, 6122, 15000, "node_crashed"),
        ("consumer-2", "T-0", 2, 36272, None, None),
        ("consumer-2", "T-1", 2, 36272, None, None),
    ]


def _summary(**figures: Any) -> dict[str, Any]:
    return {"events": 10, "sim_ms": 5000, "produced": 0, "consumed": 0, **figures}


def test_lost_writes_and_log_duplicates_come_first_with_their_partitions() -> None:
    lost = [{"partition": "T-1", "offset": o, "value": f"producer-1:{o}"} for o in (40, 41, 42, 50)]
    twice = [{"partition": "T-0", "value": "producer-1:7", "offsets": [7, 9]}]
    facts = RunFacts(end_ms=5000)
    facts.leader_changes.append({"ts_ms": 3000, "event": "leader_elected", "partition": "T-1", "election": "offline",
                                 "unclean": True, "leader": 3, "leader_epoch": 2, "isr": [3], "previous_isr": [1],
                                 "logged_by": "broker-2"})
    story = narrate(_summary(lost_records=lost, duplicated_records=twice, log_duplicates=1), facts)
    assert story.headline == [
        "4 acknowledged writes were lost: T-1 offsets 40 to 42, 50.",
        "1 extra copy of 1 record in the final logs, a producer's retry written again without idempotence: "
        "producer-1:7 at T-0 offsets 7 and 9.",
    ]
    assert story.moments == [
        "At 3.0 s broker-3 became leader of T-1 (epoch 2) in an unclean election: it was not in the ISR [1], so what "
        "the old leader had acknowledged beyond its log is lost.",
        "T-1 lost 4 acknowledged records: the unclean election at 3.0 s gave the partition to a replica that lacked "
        "them.",
    ]


def test_a_quiet_run_says_so() -> None:
    assert narrate(_summary(), RunFacts(end_ms=5000)).lines() == [
        "No acknowledged write was lost, none was written twice, no record was processed twice, and no record was "
        "skipped.",
        "Figures: 10 events over 5.0 s simulated.",
    ]


def test_the_story_is_capped_and_says_how_much_it_left_out() -> None:
    facts = RunFacts(end_ms=100000)
    facts.faults = [{"ts_ms": 1000 * i, "event": "node_paused", "target": f"broker-{i}", "until_ms": 1000 * i + 500,
                     "kind": None, "action": None} for i in range(1, 61)]
    lines = narrate(_summary(), facts).lines()
    assert len(lines) == MAX_LINES
    assert lines[-2] == "... and 23 more moments: see the tables below."
    assert lines[1] == "At 1.0 s broker-1 was paused (stop-the-world) until 1.5 s."


def test_partitions_are_named_up_to_six_per_topic_and_internal_ones_counted() -> None:
    assert partitions(["T-10", "T-2", "__consumer_offsets-3", "U-0"]) == "T-2, T-10, U-0 and 1 partition of __consumer_offsets"
    assert partitions(f"T-{i}" for i in range(7)) == "7 partitions of T"


def test_leader_and_isr_rows_are_never_merged_and_name_the_new_leader() -> None:
    """Two changes by one controller in one millisecond are two rows (the table was once keyed
    by time and node)."""
    facts = RunFacts()
    for p, leader in ((0, 2), (1, 3)):
        facts.leader_changes.append({"ts_ms": 24038, "event": "leader_elected", "partition": f"T-{p}",
                                     "election": "offline", "unclean": False, "leader": leader, "leader_epoch": 1,
                                     "isr": [leader], "previous_isr": [1, leader], "logged_by": "broker-3"})
    assert _leader_rows(facts) == [
        [24038, "T-0", "leader_elected (offline)", "broker-2", 1, [1, 2], [2], "broker-3"],
        [24038, "T-1", "leader_elected (offline)", "broker-3", 1, [1, 3], [3], "broker-3"],
    ]
