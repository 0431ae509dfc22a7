"""The story cannot lie: every sentence of a run's story, parsed back into its claims, is checked
against the run's own log (tests/report/story_claims.py) over the group swarm's runs, which put
broker crashes, isolations and consumer faults together, and over runs written to need the
rules the story's spans depend on."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.cluster.scenario import load_scenario
from sim.engine.kernel import HostKind
from sim.report.narrative import narrate
from sim.report.run_facts import scan_events
from sim.studies.builtin import load_study
from sim.studies.runner import run_scenario
from tests.properties import group_swarm
from tests.report.story_claims import check
from tests.report.test_consumer_protocol_report import PROTOCOLS

HERE = Path(__file__).parent
EXAMPLES = HERE.parent.parent / "examples"
SWARM_SEEDS = range(1, 31)
STORIES = {
    "a leader crash, then a consumer's": (HERE / "story.toml", []),
    "an unclean election loses writes": (EXAMPLES / "10_unclean_election.toml", []),
    "truncation to the high watermark": (EXAMPLES / "09_truncation_vs_epochs.toml", []),
    "a zombie past max.poll.interval.ms": (EXAMPLES / "06_slow_poll_zombie.toml", []),
    "worker threads skip records": (EXAMPLES / "11_skipped_records.toml", ["consumers.1.processing=workers"]),
    "an operator's reset skips records": (EXAMPLES / "11_operator_reset.toml", []),
    **{f"example 12, {name}": (EXAMPLES / "12_rebalance_protocols.toml", overrides) for name, overrides in PROTOCOLS.items()},
    "KAFKA-14639 on 3.3.2": (HERE / "kafka_14639.toml", []),
}
"""Runs whose stories use the other forms of sentence: lost writes, an unclean election, a
truncation, a zombie, skipped records of two causes, every rebalance protocol under the same
faults (the consumer protocol's target assignments, fenced and replaced members, a fatal
UNRELEASED_INSTANCE_ID), and a known Kafka bug."""
CONSUMER_SWARM_SEEDS = range(1, 11)


def _story(run_dir: Path, summary: dict) -> list[str]:
    return narrate(summary, scan_events(run_dir / "events.jsonl", summary["sim_ms"])).lines()


def test_two_brokers_crash_in_turn_and_a_restarted_leader_resumes(tmp_path: Path) -> None:
    """broker-1 crashes at 20 s, broker-2 at 30 s; broker-1 comes back at 40 s and, once the new
    controller (broker-3, at 42 s) sends it its partitions, leads T-0 again without any
    election: T-0's spell without a leader ends there, not at the end of the run."""
    summary = run_scenario(load_scenario(str(HERE / "two_crashes.toml")), tmp_path, host=HostKind.DIRECT)
    lines = _story(tmp_path, summary)
    assert "From 20.0 s T-0 had no live leader for 22.1 s, until 42.1 s: broker-1, its leader, crashed." in lines
    assert "From 30.0 s T-1 had no live leader for 12.1 s, until 42.1 s: broker-2, its leader, crashed." in lines
    assert not [line for line in lines if "no live leader" in line and "end of the run" in line]
    assert check(tmp_path, lines) == []


@pytest.mark.parametrize("seed", SWARM_SEEDS)
def test_no_claim_of_a_swarm_runs_story_is_contradicted_by_its_log(seed: int, tmp_path: Path) -> None:
    run = group_swarm.run(seed, tmp_path)
    assert check(tmp_path, _story(tmp_path, run.summary)) == []


@pytest.mark.parametrize("seed", CONSUMER_SWARM_SEEDS)
def test_no_claim_of_a_consumer_protocol_swarm_runs_story_is_contradicted_by_its_log(seed: int, tmp_path: Path) -> None:
    """The group swarm's fault plans under KIP-848's consumer protocol on 4.0."""
    run = group_swarm.run(seed, tmp_path, "consumer")
    assert check(tmp_path, _story(tmp_path, run.summary)) == []


@pytest.fixture(scope="module")
def default_study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("default-study")
    return out, run_scenario(load_study(None), out, host=HostKind.DIRECT)


def test_no_claim_of_the_default_studys_story_is_contradicted_by_its_log(default_study: tuple[Path, dict]) -> None:
    run_dir, summary = default_study
    assert check(run_dir, _story(run_dir, summary)) == []


def test_a_restarted_consumer_is_not_told_out_of_its_group_for_its_dead_processs_member(
    default_study: tuple[Path, dict],
) -> None:
    """consumer-2 crashes at 31 s and starts again at 51 s; its first process's member is
    removed for its session at 75.1 s, when the new process is in the group already: that is
    no spell out of the group, and the check says why."""
    run_dir, summary = default_study
    assert not [line for line in _story(run_dir, summary) if "still running" in line]
    told = ("From 75.1 s consumer-2, still running, was out of group billing for 15.0 s, until generation 3 took it back: "
            "the coordinator removed it (its session timed out).")
    assert check(run_dir, [told]) == [f"{told!r}: the member removed was an earlier process's, not the running one's"]


@pytest.mark.parametrize("name", sorted(STORIES))
def test_no_claim_of_a_written_story_is_contradicted_by_its_log(name: str, tmp_path: Path) -> None:
    path, overrides = STORIES[name]
    summary = run_scenario(load_scenario(str(path), overrides), tmp_path, host=HostKind.DIRECT)
    assert check(tmp_path, _story(tmp_path, summary)) == []


def test_the_check_finds_a_claim_the_log_contradicts(tmp_path: Path) -> None:
    """The checker is not a rubber stamp: a spell ended a tenth of a second off, a crash at
    another time, a partition named that had a leader, or a sentence of no known form, each
    is reported."""
    summary = run_scenario(load_scenario(str(HERE / "two_crashes.toml")), tmp_path, host=HostKind.DIRECT)
    true = _story(tmp_path, summary)
    spell = "From 20.0 s T-0 had no live leader for 22.1 s, until 42.1 s: broker-1, its leader, crashed."
    assert spell in true
    lies = [
        spell.replace("22.1 s, until 42.1 s", "22.2 s, until 42.2 s"),
        spell.replace("to the end", "").replace("until 42.1 s", "to the end of the run"),
        spell.replace("T-0 had", "T-0 and T-2 had"),
        "At 21.0 s broker-1 crashed (process); it restarted at 40.0 s.",
        "At 20.0 s broker-1 crashed (process).",
        "Broker-1 was unlucky.",
    ]
    assert [line.split("': ")[0].strip("'\"") for line in check(tmp_path, lies)] == lies
