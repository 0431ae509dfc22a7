"""Spark jobs over run directories.

`analyze_runs` reads the event logs of any number of runs in one job and computes, per run:
events by type, dropped messages by reason, rejected frames, produce outcomes by error, ISR
changes, each replica's LEO and HW per second (for the report), the faults injected, and for the
gossip stand-in its ping round trips; the records consumed and the duplicates by cause
(`sim.analytics.duplicates`), and the acknowledged records lost and records written twice
(`sim.analytics.final_logs`). No Python UDFs: everything is built-in expressions, aggregations
and windows, which stay in the JVM.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention
from pyspark.sql.types import ArrayType, StringType

from sim.analytics.duplicates import duplicates_by_run
from sim.analytics.events import read_events
from sim.analytics.final_logs import final_log_figures
from sim.analytics.session import together
from sim.engine.trace import KERNEL_FAULT_EVENTS as FAULT_EVENTS

__all__ = ["analyze_runs", "read_events"]

OWNERSHIP_ENDS = ("partitions_revoked", "partitions_lost")
"""A consumer's events that end its hold on the partitions they list; its node's crash or stop
ends every hold it has."""

ISR_EVENTS = (
    "isr_shrunk",  # a leader's change, committed
    "isr_expanded",
    "replica_removed_from_isr",  # the controller's, for a dead broker
    "leader_elected",  # a new leader and its ISR
)


def _by_run(rows: list[Any], key: str, value: str) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    for row in rows:
        out.setdefault(row["run"], {})[row[key]] = row[value]
    return {run: dict(sorted(items.items())) for run, items in out.items()}


def analyze_runs(spark: SparkSession, run_dirs: list[Path]) -> list[dict[str, Any]]:
    """For each run directory, in order: the figures of analysis.json (docs/run-directory.md)."""
    events = read_events(spark, run_dirs).cache()
    by_type = events.groupBy("run", "event").count().collect()  # fills the cache for the jobs below
    groups, logs, (drops, rtt, timeline, outcomes, offsets, isr_changes, faults, ownership, ends) = together(
        lambda: duplicates_by_run(events, len(run_dirs)),
        lambda: final_log_figures(events, len(run_dirs)),
        lambda: _small_figures(events),
    )
    events.unpersist()
    counts = _by_run(by_type, "event", "count")
    drop_counts = _by_run(drops, "reason", "count")
    result = [
        {
            "events_by_type": counts.get(run, {}),
            "dropped_by_reason": drop_counts.get(run, {}),
            "rejected_frames": counts.get(run, {}).get("frame_rejected", 0),
            "ping_rtt_ms": {},
            "ping_timeline": [],
            "faults": [],
            "produce_outcomes": {},
            "isr_changes": [],
            "replica_offsets": {},
            "ownership": [],
            **groups[run],
            **logs[run],
        }
        for run in range(len(run_dirs))
    ]
    for run, by_error in _by_run(outcomes, "error", "count").items():
        result[run]["produce_outcomes"] = by_error
    for row in offsets:
        replica = f"{row['topic']}-{row['partition']}@{row['node']}"
        series = result[row["run"]]["replica_offsets"].setdefault(replica, [])
        series.append({"second": row["second"], "log_end_offset": row["leo"], "high_watermark": row["hw"]})
    for row in isr_changes:
        result[row["run"]]["isr_changes"].append(
            {
                "ts_ms": row["ts_ms"],
                "event": row["event"],
                "node": row["node"],
                "partition": f"{row['topic']}-{row['partition']}",
                "isr": list(row["isr"]),
            }
        )
    for row in rtt:
        result[row["run"]]["ping_rtt_ms"] = {
            k: row[k] for k in ("count", "p50", "p99", "max")
        }
    for row in timeline:
        result[row["run"]]["ping_timeline"].append(
            {"second": row["second"], "pings": row["pings"], "max_rtt_ms": row["max_rtt_ms"]}
        )
    end_of = {row["run"]: row["end_ms"] for row in ends}
    for row in ownership:
        result[row["run"]]["ownership"].append(
            {
                "consumer": row["node"],
                "partition": row["tp"],
                "generation_id": row["generation_id"],
                "from_ms": row["from_ms"],
                "to_ms": end_of[row["run"]] if row["to_ms"] is None else row["to_ms"],
            }
        )
    for row in faults:
        result[row["run"]]["faults"].append(
            {"ts_ms": row["ts_ms"], "event": row["event"], "target": row["target"], "kind": row["kind"]}
        )
    return result


def _small_figures(events: DataFrame) -> tuple[list[Any], ...]:
    """The figures but duplicates and final logs, as rows: dropped messages, the gossip
    stand-in's pings, produce outcomes, LEO and HW per second, ISR changes, faults,
    ownership, each run's end."""
    drops = (
        events.where(F.col("event") == "message_dropped")
        .groupBy("run", "reason")
        .count()
        .collect()
    )
    pings = events.where(F.col("event") == "ping_answered")
    rtt = (
        pings.groupBy("run")
        .agg(
            F.count("*").alias("count"),
            F.percentile_approx("rtt_ms", 0.5).alias("p50"),
            F.percentile_approx("rtt_ms", 0.99).alias("p99"),
            F.max("rtt_ms").alias("max"),
        )
        .collect()
    )
    timeline = (
        pings.withColumn("second", F.floor(F.col("ts_ms") / 1000).cast("long"))
        .groupBy("run", "second")
        .agg(F.count("*").alias("pings"), F.max("rtt_ms").alias("max_rtt_ms"))
        .orderBy("run", "second")
        .collect()
    )
    outcomes = (
        events.where(F.col("event") == "produce_completed").groupBy("run", "error").count().collect()
    )
    offsets = (
        events.where(F.col("event") == "replica_offsets_changed")
        .withColumn("second", F.floor(F.col("ts_ms") / 1000).cast("long"))
        .groupBy("run", "node", "topic", "partition", "second")
        .agg(F.max("log_end_offset").alias("leo"), F.max("high_watermark").alias("hw"))
        .orderBy("run", "topic", "partition", "node", "second")
        .collect()
    )
    isr_changes = (
        events.where(F.col("event").isin(*ISR_EVENTS))
        .select("run", "ts_ms", "event", "node", "topic", "partition", "isr")
        .orderBy("run", "ts_ms", "node")
        .collect()
    )
    faults = (
        events.where(F.col("event").isin(*FAULT_EVENTS))
        .select("run", "ts_ms", "event", "target", "kind")
        .orderBy("run", "ts_ms")
        .collect()
    )
    ownership = _ownership(events).collect()
    ends = events.groupBy("run").agg(F.max("ts_ms").alias("end_ms")).collect()
    return drops, rtt, timeline, outcomes, offsets, isr_changes, faults, ownership, ends


def _ownership(events: DataFrame) -> DataFrame:
    """Each consumer's holds: a partition from its `partitions_assigned` to the first later
    revocation or loss of it, or crash or stop of the consumer's node (null: the run's end)."""
    names = F.from_json("partitions", ArrayType(StringType()))
    group = events.where(F.col("event").isin("partitions_assigned", *OWNERSHIP_ENDS)).select(
        "run", "ts_ms", "node", "event", "generation_id", F.explode(names).alias("tp")
    )
    starts = group.where(F.col("event") == "partitions_assigned").select(
        "run", "node", "tp", "generation_id", F.col("ts_ms").alias("from_ms")
    )
    released = group.where(F.col("event") != "partitions_assigned").select(
        "run", "node", "tp", F.col("ts_ms").alias("end_ms")
    )
    stopped = (
        events.where(F.col("event").isin("node_crashed", "node_stopped"))
        .select("run", F.col("target").alias("node"), F.col("ts_ms").alias("end_ms"))
        .join(starts.select("run", "node", "tp").distinct(), ["run", "node"])
        .select("run", "node", "tp", "end_ms")
    )
    ends = released.unionByName(stopped)
    hold = starts.alias("s").join(
        ends.alias("e"),
        (F.col("s.run") == F.col("e.run"))
        & (F.col("s.node") == F.col("e.node"))
        & (F.col("s.tp") == F.col("e.tp"))
        & (F.col("e.end_ms") > F.col("s.from_ms")),
        "left",
    )
    return (
        hold.groupBy("s.run", "s.node", "s.tp", "s.generation_id", "s.from_ms")
        .agg(F.min("e.end_ms").alias("to_ms"))
        .orderBy("run", "node", "from_ms", "tp")
    )
