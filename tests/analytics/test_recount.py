"""Spark's duplicates, lost writes and log duplicates against summary.json, run by run.

The runs: the group swarm's first 20 fault plans (tests/properties/group_swarm.py: a consumer
group under client and broker faults, an idempotent producer), five of them under KIP-848's
consumer protocol, example 12's scenario under 3.9's consumer protocol (KAFKA-16460), and three runs of the broker
swarm in an unsafe configuration (acks=1, unclean election, power losses, no idempotence),
two of which lose acknowledged records; a group whose offsets expired, a static member fenced
by a second process with its instance id, 3.2.1's pre-rebalance commit (KAFKA-14196), 3.3.2's thrown-away older claims (KAFKA-14639), and a
reset below the group's commit after an unclean election; and runs built to skip: a group
starting late on `latest`, two groups reading one topic, retention deleting records ahead of a
slow group, worker threads under auto-commit, and an operator's resets forward and backwards
(examples/11). All are analysed by one Spark job.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from sim.analytics.jobs import analyze_runs
from sim.cluster.scenario import load_scenario, parse_scenario
from sim.engine.kernel import HostKind
from sim.studies.runner import run_scenario
from tests.properties import group_swarm, swarm
from tests.scenarios import test_retention
from tests.scenarios.test_cooperative_versions import MISSED_SYNC
from tests.scenarios.test_consumer_groups import (
    BASE,
    EXPIRED_CRASH,
    EXPIRY,
    FENCED,
    JOINER,
    SAME_INSTANCE,
    TRUNCATED,
)

pytestmark = pytest.mark.spark

MISSED_SYNC_QUICK = (
    MISSED_SYNC.format(version="3.3.2")
    .replace('"process.record.ms" = 5', '"process.record.ms" = 1')
    .replace('"at.ms" = 12198', '"at.ms" = 12111')
)
"""KAFKA-14639 with the member that missed a generation revoking before the new owner takes
the partition (tests/scenarios/test_cooperative_versions.py)."""

GROUP_SEEDS = range(20)
CONSUMER_PROTOCOL_SEEDS = (0, 1, 2, 3, 12)
"""The protocol swarm's plans under KIP-848's consumer protocol (seed 12: records processed
after a poll timeout lost their partition, then read again by the same member)."""
UNSAFE_SEEDS = (35, 45, 53)
"""Broker swarm seeds of `_unsafe` that lose acknowledged records: 35 and 45 without a retry
written twice, 53 with retries written twice, whose first copies' answers were lost."""
RETENTION_SEEDS = (45, 53)
"""Of those, the seeds where retention deleted some of the records the run without it lost."""
RETENTION = (
    "topics.1.segment.bytes=2000",
    "topics.1.retention.bytes=3000",
    "broker.log.initial.task.delay.ms=5000",
    "broker.log.retention.check.interval.ms=1000",
)
"""Segments of eleven records, and retention keeping about 18 per partition from 5 s on: the
records acknowledged below a final log's start were deleted, not lost."""


SAME_EPOCH_AGAIN = """
[run]
name = "same-epoch-again"
"duration.ms" = 20000
[cluster]
brokers = 1
"metadata.mode" = "static"
[zookeeper]
enabled = false
[[topics]]
name = "T"
partitions = 1
[[producers]]
topic = "T"
acks = "1"
records = 300
"interval.ms" = 50
"request.timeout.ms" = 3000
[[faults]]
kind = "crash"
node = "broker-1"
"at.ms" = 6000
"crash.kind" = "power_loss"
"restart.after.ms" = 500
"""
"""One broker and no controller: the power loss keeps nothing, and the broker leads again in
the same epoch, writing the offsets of the records it lost a second time."""


LATE_LATEST = BASE.format(seed=1, duration=30_000, records=2000, version="3.9") + """
[[consumers]]
"group.id" = "late"
topics = ["T"]
count = 2
"auto.offset.reset" = "latest"
"start.ms" = 5000
"""
"""A group that starts 5 s after the producer, with no committed offset and `latest`: it
skips what was written before it (`reset_latest_no_commit`)."""
TWO_GROUPS = BASE.format(seed=2, duration=30_000, records=2000, version="3.9") + """
[[consumers]]
"group.id" = "a"
topics = ["T"]
count = 2
"auto.offset.reset" = "earliest"
[[consumers]]
"group.id" = "b"
topics = ["T"]
"auto.offset.reset" = "latest"
"start.ms" = 3000
[[faults]]
kind = "crash"
node = "consumer-1"
"at.ms" = 9000
"""
"""Two groups read one topic: one from the start, with a crash, one from the log end 3 s in
(skipped): neither's records are the other's duplicates or skips."""
RETENTION_AHEAD = test_retention.SCENARIO + test_retention.CONSUMER
RETENTION_AHEAD_SETTINGS = (
    "topics.1.retention.bytes=2000",
    "broker.group.initial.rebalance.delay.ms=0",
    "broker.offsets.topic.num.partitions=1",
    "cluster.metadata.mode=zookeeper",
    "producers.1.start.ms=500",
)
"""Retention deletes records ahead of a slow consumer, which is reset out of range."""


def _unsafe(seed: int, out: Path, overrides: tuple[str, ...] = ()) -> dict[str, Any]:
    text = swarm.BASE.format(acks="1", unclean="true", idempotence="false", retries="")
    text += swarm.fault_plan(random.Random(seed), ("process", "power_loss"))
    scenario = parse_scenario(text, "swarm", [f"run.seed={seed}", "kafka.version=2.8", *overrides])
    return run_scenario(scenario, out, host=HostKind.DIRECT)


@pytest.fixture(scope="module")
def outcomes(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(name, summary.json, Spark's analysis) of every run."""
    base = tmp_path_factory.mktemp("recount")
    runs: list[tuple[str, Path, dict[str, Any]]] = []
    for seed in GROUP_SEEDS:
        done = group_swarm.run(seed, base / f"group{seed}")
        runs.append((f"group swarm seed {seed}", done.run_dir, done.summary))
    for seed in CONSUMER_PROTOCOL_SEEDS:
        done = group_swarm.run(seed, base / f"consumer{seed}", "consumer")
        runs.append((f"consumer-protocol swarm seed {seed}", done.run_dir, done.summary))
    for seed in UNSAFE_SEEDS:
        runs.append((f"unsafe swarm seed {seed}", base / f"unsafe{seed}", _unsafe(seed, base / f"unsafe{seed}")))
    for seed in RETENTION_SEEDS:
        out = base / f"retention{seed}"
        runs.append((f"unsafe swarm seed {seed} with retention", out, _unsafe(seed, out, RETENTION)))
    fenced = FENCED + "".join(SAME_INSTANCE.format(auto="true", commit="none", start=start) for start in (0, 10_000))
    stories = (
        ("same epoch again", SAME_EPOCH_AGAIN),
        ("expired offsets", EXPIRY.format(**EXPIRED_CRASH)),
        ("a fenced static member", fenced),
        ("3.2.1's awaited pre-rebalance commit", JOINER.format(version="3.2.1")),
        ("a reset below the commit after an unclean election", TRUNCATED.format(version="2.2", reset="earliest")),
    )
    stories += (
        ("a late group with latest", LATE_LATEST),
        ("two groups read one topic", TWO_GROUPS),
        ("3.3.2's thrown-away claims, a second owner", MISSED_SYNC.format(version="3.3.2")),
        ("3.3.2's thrown-away claims, a revocation", MISSED_SYNC_QUICK),
    )
    for name, text in stories:
        out = base / name.replace(" ", "-").replace("'", "")
        runs.append((name, out, run_scenario(parse_scenario(text, name), out, host=HostKind.DIRECT)))
    examples = Path(__file__).resolve().parents[2] / "examples"
    built = (
        ("worker threads under auto-commit", examples / "11_skipped_records.toml", ["consumers.1.processing=workers"]),
        ("an operator's reset to latest", examples / "11_operator_reset.toml", []),
        ("an operator's reset backwards", examples / "11_operator_reset.toml", ["faults.4.to=shift-by", "faults.4.shift.by=-100"]),
        (
            "the consumer protocol on 3.9 (KAFKA-16460)",
            examples / "12_rebalance_protocols.toml",
            ["kafka.version=3.9", "broker.group.coordinator.rebalance.protocols=classic,consumer", "consumers.1.group.protocol=consumer"],
        ),
    )
    for name, path, settings in built:
        out = base / name.replace(" ", "-").replace("'", "")
        runs.append((name, out, run_scenario(load_scenario(path, settings), out, host=HostKind.DIRECT)))
    for policy in ("earliest", "latest"):
        name = f"retention ahead of a slow group, reset to {policy}"
        settings = [*RETENTION_AHEAD_SETTINGS, f"consumers.1.auto.offset.reset={policy}"]
        out = base / name.replace(" ", "-").replace(",", "")
        runs.append((name, out, run_scenario(parse_scenario(RETENTION_AHEAD, name, settings), out, host=HostKind.DIRECT)))
    analyses = analyze_runs(spark, [d for _, d, _ in runs])
    return [(name, summary, analysis) for (name, _, summary), analysis in zip(runs, analyses, strict=True)]


def test_consumed_and_duplicates_by_cause_equal_the_summary(outcomes: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> None:
    for name, summary, analysis in outcomes:
        assert summary["failure"] is None, name
        want = {k: summary[k] for k in ("consumed", "duplicates", "duplicates_by_cause")}
        assert {k: analysis[k] for k in want} == want, name
    causes: Counter[str] = Counter()
    for _, summary, _ in outcomes:
        causes.update(summary["duplicates_by_cause"])
    assert len(causes) >= 4 and sum(causes.values()) > 1000, causes  # noqa: PLR2004 - not a comparison of zeros


def test_skipped_by_cause_and_processed_then_lost_equal_the_summary(
    outcomes: list[tuple[str, dict[str, Any], dict[str, Any]]],
) -> None:
    """Spark finds the same skipped records, by cause, and records processed then lost, as the
    summary: none in the group swarm's safe runs, and in the runs built to skip, exactly the
    summary's."""
    for name, summary, analysis in outcomes:
        want = {k: summary[k] for k in ("skipped", "skipped_by_cause", "processed_then_lost")}
        assert {k: analysis[k] for k in want} == want, name
    by_name = {name: summary for name, summary, _ in outcomes}
    for seed in GROUP_SEEDS:
        assert by_name[f"group swarm seed {seed}"]["skipped"] == 0, seed
    assert set(by_name["a late group with latest"]["skipped_by_cause"]) == {"reset_latest_no_commit"}
    two = by_name["two groups read one topic"]
    # Both groups read the records group b did not skip: neither's reads count as the other's.
    assert two["skipped_by_cause"].keys() == {"reset_latest_no_commit"} and two["consumed"] > two["acked"]
    assert by_name["retention ahead of a slow group, reset to earliest"]["skipped_by_cause"].keys() == {"out_of_range_reset"}
    assert by_name["worker threads under auto-commit"]["skipped_by_cause"] == {"committed_before_processed": 85}
    assert by_name["an operator's reset to latest"]["skipped_by_cause"] == {"admin_reset": 1515}
    back = by_name["an operator's reset backwards"]
    # 100 back on each partition; by the end the one consumer has read two of them again.
    assert (back["skipped"], back["duplicates_by_cause"]) == (0, {"admin_reset": 200})
    assert by_name["retention ahead of a slow group, reset to latest"]["skipped_by_cause"].keys() == {
        "out_of_range_reset",
        "reset_latest_no_commit",
    }


def test_lost_and_written_twice_equal_the_summary(outcomes: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> None:
    """Every append names its records, so every offset of every final log is resolved."""
    for name, summary, analysis in outcomes:
        assert analysis["log_unresolved"] == 0, name
        assert (analysis["lost_acked"], analysis["log_duplicates"]) == (summary["lost_acked"], summary["log_duplicates"]), name
    assert sum(1 for _, s, _ in outcomes if s["lost_acked"]) >= 3, [(n, s["lost_acked"]) for n, s, _ in outcomes]  # noqa: PLR2004


def test_a_retry_written_twice_without_idempotence_is_counted(
    outcomes: list[tuple[str, dict[str, Any], dict[str, Any]]],
) -> None:
    """Seed 53's retries were written twice, the first copy of each with its answer lost: the
    append names the batch all the same, so Spark counts each extra copy, as the summary does."""
    [(name, summary, analysis)] = [o for o in outcomes if o[0] == "unsafe swarm seed 53"]
    assert analysis["log_duplicates"] == summary["log_duplicates"] > 0, name
    assert analysis["lost_acked"] == summary["lost_acked"] > 0, name


def test_offsets_written_again_in_the_same_epoch_hold_the_later_records(
    outcomes: list[tuple[str, dict[str, Any], dict[str, Any]]],
) -> None:
    """The broker wrote offsets 0 up twice in epoch 0, before its power loss and after: the
    final log holds the later records, and the acknowledged earlier ones are lost."""
    [(name, summary, analysis)] = [o for o in outcomes if o[0] == "same epoch again"]
    assert analysis["lost_acked"] == summary["lost_acked"] > 0, name


def test_records_deleted_by_retention_are_not_lost(outcomes: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> None:
    """With retention the final logs start past most of what was written: Spark, like the
    summary, counts a record acknowledged below its final log's start as deleted, not lost."""
    by_name = {name: (summary, analysis) for name, summary, analysis in outcomes}
    for seed in RETENTION_SEEDS:
        summary, analysis = by_name[f"unsafe swarm seed {seed} with retention"]
        kept, _ = by_name[f"unsafe swarm seed {seed}"]
        assert analysis["log_unresolved"] == 0
        assert (analysis["lost_acked"], analysis["log_duplicates"]) == (summary["lost_acked"], summary["log_duplicates"])
        assert summary["lost_acked"] < kept["lost_acked"], (seed, summary["lost_acked"], kept["lost_acked"])
