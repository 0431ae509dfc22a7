"""The Spark analytics, checked against the event logs they read."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from sim.analytics.jobs import ISR_EVENTS, analyze_runs
from sim.cluster.scenario import parse_scenario
from sim.engine.kernel import HostKind
from sim.studies.runner import run_scenario

pytestmark = pytest.mark.spark

SCENARIO = """
[run]
"duration.ms" = 4000
[workload]
nodes = 3
"ping.interval.ms" = 100
[[faults]]
kind = "corrupt"
"at.ms" = 1000
probability = 0.2
"duration.ms" = 1000
[[faults]]
kind = "crash"
"at.ms" = 2500
node = "node-2"
"restart.after.ms" = 500
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    dirs = []
    for seed in (1, 2, 1):  # the same run twice: two directories, one run id
        out = tmp_path_factory.mktemp(f"run{seed}")
        run_scenario(parse_scenario(SCENARIO, "test", [f"run.seed={seed}"]), out)
        dirs.append(out)
    return dirs


def _events(run_dir: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (run_dir / "events.jsonl").read_bytes().splitlines()]


def test_counts_match_the_logs_run_by_run(spark: Any, runs: list[Path]) -> None:
    analyses = analyze_runs(spark, runs)
    assert len(analyses) == 3
    for run_dir, analysis in zip(runs, analyses, strict=True):
        events = _events(run_dir)
        assert analysis["events_by_type"] == dict(sorted(Counter(e["event"] for e in events).items()))
        summary = json.loads((run_dir / "summary.json").read_text())
        assert analysis["rejected_frames"] == summary["rejected_frames"] > 0
        drops = Counter(e["reason"] for e in events if e["event"] == "message_dropped")
        assert analysis["dropped_by_reason"] == dict(sorted(drops.items()))
        rtts = sorted(e["rtt_ms"] for e in events if e["event"] == "ping_answered")
        assert analysis["ping_rtt_ms"]["count"] == len(rtts)
        assert analysis["ping_rtt_ms"]["max"] == rtts[-1]
        crashes = [f for f in analysis["faults"] if f["event"] == "node_crashed"]
        assert crashes == [{"ts_ms": 2500, "event": "node_crashed", "target": "node-2", "kind": "process"}]
    assert analyses[0] == analyses[2]
    assert analyses[0] != analyses[1]


def test_a_malformed_line_fails_the_job_instead_of_becoming_nulls(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "events.jsonl").write_text('{"ts_ms": 1, "run_id": "r", "event": "x"}\n{"ts_ms": "late"\n')
    with pytest.raises(Exception, match="(?i)malformed|FAILFAST"):
        analyze_runs(spark, [tmp_path])


def test_kafka_figures_match_the_log(spark: Any, tmp_path: Path) -> None:
    """Produce outcomes, ISR changes and each replica's LEO/HW per second, on the first 50 s of
    the broker-fault example (a power loss, then a return)."""
    from sim.cluster.scenario import load_scenario

    example = Path(__file__).resolve().parents[2] / "examples" / "03_idempotent_retries.toml"
    run_scenario(load_scenario(str(example), ["run.duration.ms=50000"]), tmp_path)
    [analysis] = analyze_runs(spark, [tmp_path])
    events = _events(tmp_path)
    outcomes = Counter(e["error"] for e in events if e["event"] == "produce_completed")
    assert analysis["produce_outcomes"] == dict(sorted(outcomes.items()))
    changes = [(e["ts_ms"], e["event"], e["isr"]) for e in events if e["event"] in ISR_EVENTS]
    assert {c[1] for c in changes} >= {"leader_elected", "replica_removed_from_isr"}  # a crash and a return
    assert [(c["ts_ms"], c["event"], c["isr"]) for c in analysis["isr_changes"]] == changes
    replicas = {
        f"{e['topic']}-{e['partition']}@{e['node']}" for e in events if e["event"] == "replica_offsets_changed"
    }
    series = analysis["replica_offsets"]
    assert set(series) == replicas
    for replica, points in series.items():
        seconds = [p["second"] for p in points]
        assert seconds == sorted(set(seconds))
        assert max(p["log_end_offset"] for p in points) == max(
            e["log_end_offset"] for e in events
            if e["event"] == "replica_offsets_changed" and f"{e['topic']}-{e['partition']}@{e['node']}" == replica
        )


GROUP = """
[run]
"duration.ms" = 40000
[network]
"latency.min.ms" = 2
"latency.max.ms" = 4
[cluster]
brokers = 3
[broker]
"min.insync.replicas" = 2
"offsets.topic.num.partitions" = 5
[[topics]]
name = "T"
partitions = 4
"replication.factor" = 3
[[producers]]
topic = "T"
records = 3000
"interval.ms" = 10
[[consumers]]
"group.id" = "g"
topics = ["T"]
count = 2
"session.timeout.ms" = 10000
"auto.commit.interval.ms" = 1000
"auto.offset.reset" = "earliest"
"process.record.ms" = 1
[[faults]]
kind = "crash"
node = "consumer-1"
"at.ms" = 12500
"""


def _holds(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same holds, computed by hand from the log: each assignment of a partition until the
    consumer's next revocation or loss of it, or its node's crash."""
    end = events[-1]["ts_ms"]
    holds: list[dict[str, Any]] = []
    open_: dict[tuple[str, str], dict[str, Any]] = {}
    for e in events:
        if e["event"] == "partitions_assigned":
            for tp in e["partitions"]:
                hold = {"consumer": e["node"], "partition": tp, "generation_id": e["generation_id"], "from_ms": e["ts_ms"], "to_ms": end}
                open_[(e["node"], tp)] = hold
                holds.append(hold)
        elif e["event"] in ("partitions_revoked", "partitions_lost"):
            for tp in e["partitions"]:
                hold = open_.pop((e["node"], tp), None)
                if hold is not None:
                    hold["to_ms"] = e["ts_ms"]
        elif e["event"] in ("node_crashed", "node_stopped"):
            for key in [k for k in open_ if k[0] == e["target"]]:
                open_.pop(key)["to_ms"] = e["ts_ms"]
    return sorted(holds, key=lambda h: (h["consumer"], h["from_ms"], h["partition"]))


def test_partition_ownership_per_consumer_matches_the_log(spark: Any, tmp_path: Path) -> None:
    """A crashed consumer's holds end at its crash; the survivor's generation-1 holds end at
    the revocation before generation 2, and its generation-2 holds last to the end."""
    out = tmp_path / "group"
    run_scenario(parse_scenario(GROUP, "group"), out)
    [analysis] = analyze_runs(spark, [out])
    events = _events(out)
    assert analysis["ownership"] == _holds(events)
    crash = next(e["ts_ms"] for e in events if e["event"] == "node_crashed")
    assert {h["to_ms"] for h in analysis["ownership"] if h["consumer"] == "consumer-1"} == {crash}
    assert {h["generation_id"] for h in analysis["ownership"] if h["consumer"] == "consumer-2"} == {1, 2}


def test_two_groups_reading_one_topic_count_their_duplicates_apart(spark: Any, tmp_path: Path) -> None:
    """A duplicate is a record one group processes again: group `h` reads every record of `T`
    that group `g` reads, and neither reading is a duplicate of the other. Spark's count keeps
    the groups apart and equals summary.json: only `g`'s crash makes duplicates, and the records
    consumed are both groups'."""
    out = tmp_path / "two-groups"
    text = GROUP + '[[consumers]]\n"group.id" = "h"\ntopics = ["T"]\n"auto.offset.reset" = "earliest"\n'
    summary = run_scenario(parse_scenario(text, "two-groups"), out, host=HostKind.DIRECT)
    [analysis] = analyze_runs(spark, [out])
    events = _events(out)
    by_group: Counter[str] = Counter()
    for e in events:
        if e["event"] == "records_processed":
            by_group[e["group_id"]] += e["end_offset"] - e["first_offset"]
    assert by_group["h"] == 3000 and by_group["g"] > 3000
    assert list(summary["duplicates_by_cause"]) == ["crash_before_commit"]
    assert summary["duplicates"] == by_group["g"] - 3000
    want = {k: summary[k] for k in ("consumed", "duplicates", "duplicates_by_cause")}
    assert {k: analysis[k] for k in want} == want
    assert analysis["consumed"] == by_group["g"] + by_group["h"]


def test_a_run_directory_named_with_spaces_commas_and_brackets_is_read(spark: Any, runs: list[Path], tmp_path: Path) -> None:
    """Spark's reader takes plain paths with Hadoop's glob characters escaped: a `file:` URI's
    escapes (`%20`, `%2C`) are not decoded, and an unescaped `[` or `{` is a pattern."""
    import shutil  # noqa: PLC0415

    odd = tmp_path / "a run, [seed 1] {copy}"
    shutil.copytree(runs[0], odd)
    [plain, copied] = analyze_runs(spark, [runs[0], odd])
    assert sum(copied["events_by_type"].values()) == sum(plain["events_by_type"].values()) == len(_events(runs[0]))
    assert copied == plain
