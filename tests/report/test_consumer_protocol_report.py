"""The report of KIP-848's consumer protocol: example 12's scenario under every rebalance
protocol (eager, cooperative, static, the consumer protocol dynamic and static), told and
drawn truthfully: a consumer group's rebalances are its target assignments, its holds carry
member epochs, a revoked partition waits on the timeline until its next owner, a fenced or
replaced member and a consumer stopped on a fatal error are told; and a known Kafka bug
(KAFKA-14639 on 3.3.2) is told as Kafka's behaviour."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest

from sim.cluster.scenario import load_scenario
from sim.engine.kernel import HostKind
from sim.report.narrative import narrate
from sim.report.page import write_report
from sim.report.run_facts import scan_events
from sim.studies.runner import run_scenario
from tests.report.story_claims import check

HERE = Path(__file__).parent
EXAMPLE = HERE.parent.parent / "examples" / "12_rebalance_protocols.toml"
PROTOCOLS = {
    "eager range": ["consumers.1.partition.assignment.strategy=range"],
    "cooperative-sticky": ["consumers.1.partition.assignment.strategy=cooperative-sticky"],
    "static range": ["consumers.1.partition.assignment.strategy=range", "consumers.1.group.instance.id=c"],
    "consumer protocol": ["consumers.1.group.protocol=consumer"],
    "consumer protocol, static": ["consumers.1.group.protocol=consumer", "consumers.1.group.instance.id=c"],
}
"""examples/12_rebalance_protocols.py's protocols, with its overrides (tests/report/test_story_claims.py
checks each one's story against its log)."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, Any]]]:
    out = {}
    for name, overrides in PROTOCOLS.items():
        run_dir = tmp_path_factory.mktemp(name.replace(",", "").replace(" ", "_"))
        out[name] = (run_dir, run_scenario(load_scenario(EXAMPLE, overrides), run_dir, host=HostKind.DIRECT))
    return out


def _story(run_dir: Path, summary: dict[str, Any]) -> list[str]:
    return narrate(summary, scan_events(run_dir / "events.jsonl", summary["sim_ms"])).lines()


def _group_lines(lines: list[str]) -> list[str]:
    """The story's sentences of the group and its consumers (not the brokers')."""
    return [line for line in lines if "consumer-" in line or "group study" in line or line.startswith("Figures")
            or "more than once" in line]


def test_the_consumer_protocols_story_tells_target_assignments_member_epochs_and_the_fenced_member(
    runs: dict[str, tuple[Path, dict[str, Any]]],
) -> None:
    """Eight target assignments (three joins, one per restart after its leave and join, the new
    consumer-2's join, the crashed member fenced at its session timeout), never a generation."""
    run_dir, summary = runs["consumer protocol"]
    assert _group_lines(_story(run_dir, summary)) == [
        "184 records were processed more than once (crash_before_commit 184).",
        "At 0.1 s group study computed its target assignment at epoch 1 after consumer-1 joined: consumer-1 T-0, T-1, "
        "T-2, T-3, T-4 and T-5.",
        "At 0.1 s group study computed its target assignment at epoch 2 after consumer-2 joined: consumer-1 T-0, T-1 and "
        "T-2; consumer-2 T-3, T-4 and T-5.",
        "At 0.1 s group study computed its target assignment at epoch 3 after consumer-3 joined: consumer-1 T-0 and T-1; "
        "consumer-2 T-3 and T-4; consumer-3 T-2 and T-5.",
        "From 0.2 s T-2, T-3, T-4 and T-5 of group study had no owner (revoked) for 5.0 s, until member epoch 3.",
        "At 10.0 s, 20.0 s and 30.1 s consumer-1, consumer-2 and consumer-3 in turn called close() and restarted (a "
        "rolling restart): each commits what it processed, revokes its partitions and leaves the group before its "
        "process exits.",
        "At 10.1 s group study computed its target assignment at epoch 5 after consumer-1 left and consumer-1 joined: "
        "consumer-1 T-0 and T-1; consumer-2 T-3 and T-4; consumer-3 T-2 and T-5.",
        "At 20.1 s group study computed its target assignment at epoch 7 after consumer-2 left and consumer-2 joined: "
        "consumer-1 T-0 and T-1; consumer-2 T-3 and T-4; consumer-3 T-2 and T-5.",
        "At 30.1 s group study computed its target assignment at epoch 9 after consumer-3 left and consumer-3 joined: "
        "consumer-1 T-0 and T-1; consumer-2 T-3 and T-4; consumer-3 T-2 and T-5.",
        "At 60.0 s consumer-2 crashed (process); its partition T-4 had no owner for 40.3 s until member epoch 11; T-3 "
        "had no owner for 45.2 s until member epoch 11; it had processed 184 records since its last auto-commit at "
        "55.3 s, read again by consumer-1 and consumer-2 (crash_before_commit); it restarted at 65.0 s.",
        "At 65.0 s group study computed its target assignment at epoch 10 after consumer-2 joined: consumer-1 T-0; "
        "consumer-2 (an ended process) T-3 and T-4; consumer-2 T-1; consumer-3 T-2 and T-5.",
        "From 65.2 s T-1 of group study had no owner (revoked) for 4.9 s, until member epoch 10.",
        "At 100.2 s group study's coordinator fenced consumer-2's member at epoch 9: no heartbeat came within its "
        "session timeout.",
        "At 100.2 s group study computed its target assignment at epoch 11 after consumer-2 was fenced: consumer-1 T-0 "
        "and T-4; consumer-2 T-1 and T-3; consumer-3 T-2 and T-5.",
        "From 100.3 s to 105.2 s consumer-1 and consumer-2 processed again 184 records (crash_before_commit): T-3 "
        "offsets 1108 to 1199 and T-4 offsets 1108 to 1199; its previous owner crashed after processing them but "
        "before committing their offsets, and the next owner resumed from the last committed offset (at-least-once "
        "delivery).",
        "Figures: 81149 events over 150.0 s simulated; 18000 records produced, 18000 acknowledged; 18184 consumed, "
        "8 rebalances (target assignments).",
    ]


def test_the_static_consumer_protocols_story_tells_the_replacements_and_the_fatal_unreleased_instance_id(
    runs: dict[str, tuple[Path, dict[str, Any]]],
) -> None:
    """Each restart's new process takes its static member's place (a -2 leave kept the
    assignment: no target); the crashed consumer-2 never left, so its new process's join is
    answered UNRELEASED_INSTANCE_ID and it stops; the old member is fenced at 100.2 s."""
    run_dir, summary = runs["consumer protocol, static"]
    lines = _group_lines(_story(run_dir, summary))
    told = [
        "At 10.0 s, 20.0 s and 30.1 s consumer-1, consumer-2 and consumer-3 in turn called close() and restarted (a "
        "rolling restart): each commits what it processed, revokes its partitions and leaves with member epoch -2, "
        "which keeps its assignment for the next process with its group.instance.id.",
        "At 10.1 s consumer-1's new process took the place of consumer-1's static member in group study "
        "(group.instance.id c-1) at epoch 3 with T-0 and T-1, and no target assignment was computed.",
        "At 20.1 s consumer-2's new process took the place of consumer-2's static member in group study "
        "(group.instance.id c-2) at epoch 3 with T-3 and T-4, and no target assignment was computed.",
        "At 30.1 s consumer-3's new process took the place of consumer-3's static member in group study "
        "(group.instance.id c-3) at epoch 3 with T-2 and T-5, and no target assignment was computed.",
        "At 60.0 s consumer-2 crashed (process); its partition T-3 had no owner for 40.3 s until member epoch 4; T-4 "
        "had no owner for 45.2 s until member epoch 4; it had processed 188 records since its last auto-commit at "
        "55.3 s, read again by consumer-1 and consumer-3 (crash_before_commit); it restarted at 65.0 s.",
        "At 65.0 s consumer-2 stopped on a fatal error (ConsumerGroupHeartbeat: UNRELEASED_INSTANCE_ID): its old member "
        "had not left, and Kafka's client gives up.",
        "At 100.2 s group study's coordinator fenced consumer-2's member at epoch 3: no heartbeat came within its "
        "session timeout.",
        "At 100.2 s group study computed its target assignment at epoch 4 after consumer-2 was fenced: consumer-1 T-0, "
        "T-1 and T-4; consumer-3 T-2, T-3 and T-5.",
    ]
    assert told[0] in lines
    assert lines[lines.index(told[0]):][: len(told)] == told
    assert lines[-1].endswith("18188 consumed, 4 rebalances (target assignments).")


def test_a_classic_static_rolling_restart_is_not_told_as_leaving(runs: dict[str, tuple[Path, dict[str, Any]]]) -> None:
    run_dir, summary = runs["static range"]
    assert ("At 10.0 s, 20.0 s and 30.0 s consumer-1, consumer-2 and consumer-3 in turn called close() and restarted (a "
            "rolling restart): each commits what it processed and revokes its partitions; a static member sends no "
            "LeaveGroup, and its next process takes its place by its group.instance.id.") in _story(run_dir, summary)


def _titles(page: str, css: str) -> list[str]:
    return [html.unescape(t) for t in re.findall(rf'<g class="{css}"><title>([^<]*)</title>', page)]


def test_the_timeline_labels_member_epochs_and_draws_each_revoked_partition_until_its_next_owner(
    runs: dict[str, tuple[Path, dict[str, Any]]],
) -> None:
    run_dir, summary = runs["consumer protocol"]
    page = write_report(run_dir, summary).read_text()
    holds = _titles(page, "hold")
    assert holds[:3] == [
        "consumer-1 held T-0 at member epoch 1 from 0.200 s to 10.021 s (partitions_revoked)",
        "consumer-1 held T-1 at member epoch 1 from 0.200 s to 10.021 s (partitions_revoked)",
        "consumer-1 held T-2 at member epoch 1 from 0.200 s to 0.231 s (partitions_revoked)",
    ]
    assert "consumer-2 held T-3 at member epoch 11 from 105.231 s to the end" in holds
    assert ">T-0 e5</text>" in page and " g5</text>" not in page
    assert _titles(page, "handoff-gap") == [
        "consumer-1 revoked T-2 at 0.231 s; consumer-3 was assigned it at 5.200 s (member epoch 3): 4.969 s without an owner",
        "consumer-1 revoked T-3 at 0.231 s; consumer-2 was assigned it at 5.200 s (member epoch 3): 4.969 s without an owner",
        "consumer-1 revoked T-4 at 0.231 s; consumer-2 was assigned it at 5.200 s (member epoch 3): 4.969 s without an owner",
        "consumer-1 revoked T-5 at 0.231 s; consumer-3 was assigned it at 5.200 s (member epoch 3): 4.969 s without an owner",
        "consumer-1 revoked T-0 at 10.021 s; consumer-1 was assigned it at 10.138 s (member epoch 5): 0.117 s without an owner",
        "consumer-1 revoked T-1 at 10.021 s; consumer-1 was assigned it at 10.138 s (member epoch 5): 0.117 s without an owner",
        "consumer-2 revoked T-3 at 20.056 s; consumer-2 was assigned it at 20.170 s (member epoch 7): 0.114 s without an owner",
        "consumer-2 revoked T-4 at 20.056 s; consumer-2 was assigned it at 20.170 s (member epoch 7): 0.114 s without an owner",
        "consumer-3 revoked T-2 at 30.087 s; consumer-3 was assigned it at 30.210 s (member epoch 9): 0.123 s without an owner",
        "consumer-3 revoked T-5 at 30.087 s; consumer-3 was assigned it at 30.210 s (member epoch 9): 0.123 s without an owner",
        "consumer-1 revoked T-1 at 65.234 s; consumer-2 was assigned it at 70.100 s (member epoch 10): 4.866 s without an owner",
    ]
    assert "revoked, not yet reassigned" in page


def test_a_classic_timeline_keeps_generations_and_draws_no_handoff(runs: dict[str, tuple[Path, dict[str, Any]]]) -> None:
    run_dir, summary = runs["cooperative-sticky"]
    page = write_report(run_dir, summary).read_text()
    assert _titles(page, "hold")[0] == "consumer-2 held T-0 in generation 1 from 0.320 s to 20.054 s (partitions_revoked)"
    assert 'class="handoff-gap"' not in page and "member epoch" not in page


def test_the_page_shows_the_group_epoch_target_assignments_and_the_group_protocol(
    runs: dict[str, tuple[Path, dict[str, Any]]],
) -> None:
    run_dir, summary = runs["consumer protocol"]
    page = write_report(run_dir, summary).read_text()
    assert ('<table id="groups"><tr><th>group</th><th>protocol</th><th>coordinators</th><th>rebalances</th><th>last</th>'
            '</tr><tr><td>study</td><td>consumer (KIP-848)</td><td>broker-1, broker-2</td><td>8 target assignments</td>'
            '<td>group epoch 11</td></tr></table>') in page
    assert "<tr><th>group protocol</th><td>study consumer</td></tr>" in page
    assert "<tr><th>rebalances (target assignments)</th><td>8</td></tr>" in page
    run_dir, summary = runs["eager range"]
    page = write_report(run_dir, summary).read_text()
    assert "<td>study</td><td>classic</td><td>broker-1</td><td>5 generations formed</td><td>generation 5</td>" in page
    assert "<tr><th>rebalances</th><td>5</td></tr>" in page


def test_a_known_kafka_bug_is_told_as_kafkas_behaviour(tmp_path: Path) -> None:
    """3.3.2's KAFKA-14639 (tests/report/kafka_14639.toml): summary.json's finding in one
    sentence, and the duplicates it caused with Kafka's reason, not 'no rule explains them'."""
    summary = run_scenario(load_scenario(HERE / "kafka_14639.toml"), tmp_path, host=HostKind.DIRECT)
    lines = _story(tmp_path, summary)
    assert lines[:2] == [
        "85 records were processed more than once (cooperative_revocation_gap 5, kafka_14639 80).",
        "Kafka 3.3.2's known bug KAFKA-14639 showed at 15.2 s on consumer-3: T-2 of group g was given to another member "
        "in generation 3 while a member whose claim the leader's assignor threw away for its older generation still "
        "held it; this is Kafka's behaviour in that version, not a fault of the simulator.",
    ]
    assert ("From 15.2 s to 15.3 s consumer-3 processed again 80 records (kafka_14639): T-2 offsets 300 to 379; the leader's "
            "assignor threw away their owner's claim for its older generation and gave them to another member while it "
            "still held them (KAFKA-14639).") in lines
    # a generation no member change began is told at its formation, in time order
    formed = "At 18.2 s group g formed generation 4 with consumer-1, consumer-2 and consumer-3."
    assert lines.index(formed) == len(lines) - 2
    assert check(tmp_path, lines) == []


def test_the_check_finds_a_consumer_protocol_claim_the_log_contradicts(runs: dict[str, tuple[Path, dict[str, Any]]]) -> None:
    """A target at another epoch, a trigger that was not, a member's partitions misassigned, a
    generation in a consumer group, another fencing reason, a fatal error's reason that is not
    the log's, and a rebalance count off by one: each is reported."""
    run_dir, _ = runs["consumer protocol, static"]
    target = ("At 100.2 s group study computed its target assignment at epoch 4 after consumer-2 was fenced: consumer-1 "
              "T-0, T-1 and T-4; consumer-3 T-2, T-3 and T-5.")
    fenced = ("At 100.2 s group study's coordinator fenced consumer-2's member at epoch 3: no heartbeat came within its "
              "session timeout.")
    stopped = ("At 65.0 s consumer-2 stopped on a fatal error (ConsumerGroupHeartbeat: UNRELEASED_INSTANCE_ID): its old "
               "member had not left, and Kafka's client gives up.")
    gap = "From 0.2 s T-2, T-3, T-4 and T-5 of group study had no owner (revoked) for 5.0 s, until member epoch 3."
    assert check(run_dir, [target, fenced, stopped, gap]) == []
    lies = [
        target.replace("epoch 4", "epoch 5"),
        target.replace("consumer-2 was fenced", "consumer-2 left"),
        target.replace("T-1 and T-4; consumer-3 T-2, T-3", "T-1 and T-3; consumer-3 T-2, T-4"),
        fenced.replace("no heartbeat came within its session timeout", "it had not revoked its partitions within its "
                       "rebalance timeout"),
        stopped.replace("UNRELEASED_INSTANCE_ID)", "FENCED_INSTANCE_ID)"),
        gap.replace("member epoch", "generation"),
        "Figures: 80836 events over 150.0 s simulated; 18000 records produced, 18000 acknowledged; 18188 consumed, "
        "5 rebalances (target assignments).",
    ]
    found = check(run_dir, lies)
    assert len(found) == len(lies) and all(w.startswith(repr(lie) + ": ") for w, lie in zip(found, lies, strict=True)), found
