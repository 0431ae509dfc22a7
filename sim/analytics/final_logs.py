"""Acknowledged records lost, and records written twice, on Spark, from the events alone.

summary.json's `lost_acked` and `log_duplicates` compare what producers had acknowledged with
each partition's final log: the live leader with the highest epoch, else the longest replica.
The events do not list a log's records, so this rebuilds them:

- Each replica's log end offset over time: `replica_offsets_changed` follows every append,
  fetch and truncation; a restart keeps only the partitions `broker_started` names (the others'
  logs are empty), and a disk loss empties them all.
- The final log's offset `o` was last taken by the replica's latest LEO growth across it, in
  leader epoch S (its own append as leader, or a fetch from the leader of S). The record there
  is the one written at `o` in the highest epoch up to S that wrote `o` (`records_appended`):
  one leader writes an offset once in its epoch, and a fetch in epoch S copies the leader of S,
  whose log holds at `o` the record of the latest epoch it has followed. This is exact unless a
  leader of an epoch between the record's and S wrote `o` and lost it before the leader of S
  fetched it (a leader that lived for less than one replication round trip).
- An append's records: with idempotence, the batch whose producer id, epoch and base sequence
  it carries (`batch_sent`); without, only an acknowledged append is named, by the offset and
  broker of its batch's last attempt (`produce_completed`). An unacknowledged append of a
  producer without idempotence (a retry's first copy, whose answer was lost) names no batch: its
  offsets are counted in `log_unresolved` and in neither figure.

- Retention: the final log holds only the offsets from its replica's last log start offset
  (`log_start_offset_changed`; 0 again where the log was emptied). An acknowledged record
  acknowledged below it was deleted, not lost, and the records deleted are not in the figures.

A broker down at the end counts with the LEO it last logged (a power loss may have kept less:
Kafka does not flush on acknowledge, and the log says what survived only at the restart).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention
from pyspark.sql.types import ArrayType, LongType, StringType

__all__ = ["final_log_figures", "lost_and_duplicated"]

REPLICA = ["run", "node", "topic", "partition"]


def _user() -> Column:
    """Not an internal topic's (`__consumer_offsets` holds the coordinator's records)."""
    return ~F.col("topic").startswith("__")


def _log_end_offsets(events: DataFrame) -> DataFrame:
    """Every change of a replica's LEO, in log order, with the epoch and role it came in."""
    changes = events.where((F.col("event") == "replica_offsets_changed") & _user()).select(
        *REPLICA, "ln", F.col("log_end_offset").alias("leo"), "leader_epoch", "role"
    )
    empty = _emptied(events, changes.select(*REPLICA).distinct()).select(
        *REPLICA, "ln", F.lit(0).cast("long").alias("leo"), F.lit(None).cast("long").alias("leader_epoch"), F.lit("offline").alias("role")
    )
    return changes.unionByName(empty)


def _log_start_offsets(events: DataFrame, authority: DataFrame) -> DataFrame:
    """Each final log's log start offset: (run, topic, partition) -> start."""
    changes = events.where((F.col("event") == "log_start_offset_changed") & _user()).select(
        *REPLICA, "ln", F.col("log_start_offset").alias("start")
    )
    empty = _emptied(events, changes.select(*REPLICA).distinct()).select(*REPLICA, "ln", F.lit(0).cast("long").alias("start"))
    last = Window.partitionBy(*REPLICA).orderBy(F.col("ln").desc())
    starts = changes.unionByName(empty).withColumn("k", F.row_number().over(last)).where("k = 1")
    return authority.join(starts, REPLICA).select("run", "topic", "partition", "start")


def _emptied(events: DataFrame, replicas: DataFrame) -> DataFrame:
    """When each of these replicas' logs was emptied: a restart that did not keep it, or a disk
    loss (REPLICA, ln)."""
    kept = F.from_json("partitions", ArrayType(StringType()))
    restarts = events.where(F.col("event") == "broker_started").select("run", "node", "ln", kept.alias("kept"))
    emptied = (
        restarts.join(replicas, ["run", "node"])
        .where(~F.array_contains("kept", F.concat_ws("-", "topic", F.col("partition").cast("string"))))
        .select(*REPLICA, "ln")
    )
    wiped = (
        events.where((F.col("event") == "node_crashed") & (F.col("kind") == "disk_loss"))
        .select("run", F.col("target").alias("node"), "ln")
        .join(replicas, ["run", "node"])
        .select(*REPLICA, "ln")
    )
    return emptied.unionByName(wiped)


def _authorities(events: DataFrame, leos: DataFrame) -> DataFrame:
    """Each partition's final log: (run, topic, partition) -> node and final LEO."""
    # Each "last" is an aggregation by line number (`max_by`), not a window: no sort.
    roles = events.where(F.col("event").isin("replica_offsets_changed", "became_leader", "became_follower")).select(
        *REPLICA,
        "ln",
        F.when(F.col("event") == "became_leader", "leader")
        .when(F.col("event") == "became_follower", "follower")
        .otherwise(F.col("role"))
        .alias("role"),
        "leader_epoch",
    )
    role = roles.groupBy(*REPLICA).agg(F.max_by(F.struct("role", "leader_epoch"), "ln").alias("r")).select(*REPLICA, "r.*")
    leo = leos.groupBy(*REPLICA).agg(F.max_by("leo", "ln").alias("leo"))
    down = (
        events.where(F.col("event").isin("node_started", "node_crashed", "node_stopped"))
        .groupBy("run", F.col("target").alias("node"))
        .agg(F.max_by("event", "ln").alias("event"))
        .where(F.col("event") != "node_started")
        .select("run", "node", F.lit(True).alias("down"))
    )
    final = (
        leo.join(role, REPLICA, "left")
        .join(down, ["run", "node"], "left")
        .withColumn("leads", F.col("down").isNull() & (F.col("role") == "leader"))
        .withColumn("broker", F.regexp_extract("node", r"(\d+)$", 1).cast("long"))
    )
    # The live leader with the highest epoch, else the longest log (the lowest broker on a tie).
    best = Window.partitionBy("run", "topic", "partition").orderBy(
        F.col("leads").desc(),
        F.when(F.col("leads"), F.col("leader_epoch")).desc_nulls_last(),
        F.col("leo").desc(),
        F.col("broker"),
    )
    return final.withColumn("k", F.row_number().over(best)).where("k = 1").select("run", "node", "topic", "partition", "leo")


def _appends(events: DataFrame) -> DataFrame:
    """Each append's offsets with the value written at each, where the log names its batch."""
    numbers = F.from_json("records", ArrayType(LongType()))
    appended = events.where((F.col("event") == "records_appended") & ~F.col("topic").startswith("__")).select(
        "run", "ln", "node", "topic", "partition", "leader_epoch", "base_offset", "count",
        "producer_id", "producer_epoch", "base_sequence",
    )
    batch = ["run", "topic", "partition", "producer_id", "producer_epoch", "base_sequence"]
    sent = events.where(F.col("event") == "batch_sent")
    sequenced = (
        sent.where(F.col("producer_id") >= 0)
        .groupBy(*batch)
        .agg(F.min(F.struct("producer", numbers.alias("numbers"))).alias("b"))
        .select(*batch, "b.producer", "b.numbers")
    )
    by_sequence = appended.where(F.col("producer_id") >= 0).join(sequenced, batch, "left")
    # Without idempotence only the acknowledgement names an append: the broker of the batch's
    # last attempt, and the offset it answered; the append is the latest there before the answer.
    attempt = ["run", "producer", "batch", "attempt"]
    acked = (
        events.where((F.col("event") == "produce_completed") & (F.col("error") == "NONE") & (F.col("base_offset") >= 0))
        .select(*attempt, "topic", "partition", "base_offset", numbers.alias("numbers"), F.col("ln").alias("acked_ln"))
        .join(sent.select(*attempt, F.concat(F.lit("broker-"), F.col("broker_id").cast("string")).alias("node")), attempt)
    )
    plain = appended.where(F.col("producer_id") < 0)
    named = (
        plain.join(acked, ["run", "node", "topic", "partition", "base_offset"])
        .where(F.col("ln") < F.col("acked_ln"))
        .groupBy("run", "producer", "batch")
        .agg(F.max_by(F.struct("ln", "numbers"), "ln").alias("a"))
        .select("run", "a.ln", "producer", "a.numbers")
    )
    by_ack = plain.join(named, ["run", "ln"], "left")
    cols = ["run", "topic", "partition", "leader_epoch", "base_offset", "count", "producer", "numbers"]
    both = by_sequence.select(*cols).unionByName(by_ack.select(*cols))
    i = F.posexplode(F.sequence(F.lit(0), F.col("count") - 1))
    return both.where(F.col("count") > 0).select("run", "topic", "partition", "leader_epoch", "base_offset", "producer", "numbers", i).select(
        "run", "topic", "partition", "leader_epoch",
        (F.col("base_offset") + F.col("col")).alias("offset"),
        F.when(F.col("producer").isNotNull(), F.concat_ws(":", "producer", F.col("numbers")[F.col("pos")].cast("string"))).alias("value"),
    )


def lost_and_duplicated(events: DataFrame) -> DataFrame:
    """Per run: lost_acked, log_duplicates and log_unresolved (offsets whose record is unnamed)."""
    leos = _log_end_offsets(events)
    authority = _authorities(events, leos).localCheckpoint()
    starts = _log_start_offsets(events, authority)
    # The authority's LEO changes, newest first: the one before each (`lead`), and the lowest
    # from it to the end of the run (a running `min`). A growth finally takes the offsets from
    # the LEO before it up to that lowest LEO: no later change goes below them (every later
    # growth starts at or above it), and every offset from it up was taken again later.
    newest_first = Window.partitionBy(*REPLICA).orderBy(F.col("ln").desc())
    since = newest_first.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    taken = (
        leos.join(F.broadcast(authority.select(*REPLICA)), REPLICA, "left_semi")
        .withColumn("before", F.coalesce(F.lead("leo").over(newest_first), F.lit(0)))
        .withColumn("kept", F.min("leo").over(since))
        .where(F.col("kept") > F.col("before"))
        .select("run", "topic", "partition", "leader_epoch", F.explode(F.sequence("before", F.col("kept") - 1)).alias("offset"))
        # Below the final log start offset a record was deleted by retention, not lost.
        .join(starts, ["run", "topic", "partition"], "left")
        .where(F.col("offset") >= F.coalesce("start", F.lit(0)))
        .drop("start")
    )
    writes = _appends(events).alias("w")
    final = (
        taken.alias("l")
        .join(
            writes,
            (F.col("l.run") == F.col("w.run"))
            & (F.col("l.topic") == F.col("w.topic"))
            & (F.col("l.partition") == F.col("w.partition"))
            & (F.col("l.offset") == F.col("w.offset"))
            & (F.col("w.leader_epoch") <= F.col("l.leader_epoch")),
            "left",
        )
        .groupBy("l.run", "l.topic", "l.partition", "l.offset")
        .agg(F.max(F.struct(F.col("w.leader_epoch"), F.col("w.value"))).alias("r"))
        .select("run", "topic", "partition", F.col("r.value").alias("value"))
    ).localCheckpoint()
    unresolved = final.where(F.col("value").isNull()).groupBy("run").agg(F.count("*").alias("log_unresolved"))
    duplicated = (
        final.where(F.col("value").isNotNull())
        .groupBy("run", "topic", "partition", "value")
        .count()
        .groupBy("run")
        .agg(F.sum(F.col("count") - 1).alias("log_duplicates"))
    )
    numbers = F.from_json("records", ArrayType(LongType()))
    # An acknowledged record at an offset below its final log's start was deleted, not lost.
    acked = (
        events.where((F.col("event") == "produce_completed") & (F.col("error") == "NONE") & (F.col("acks") != 0))
        .select("run", "producer", "topic", "partition", "base_offset", F.posexplode(numbers).alias("i", "n"))
        .join(starts, ["run", "topic", "partition"], "left")
        .where(F.col("base_offset") + F.col("i") >= F.coalesce("start", F.lit(0)))
    )
    present = final.where(F.col("value").isNotNull()).select("run", "value").distinct()
    lost = (
        acked.select("run", F.concat_ws(":", "producer", F.col("n").cast("string")).alias("value"))
        .join(present, ["run", "value"], "left_anti")
        .groupBy("run")
        .agg(F.count("*").alias("lost_acked"))
    )
    return duplicated.join(lost, "run", "full").join(unresolved, "run", "full")


def final_log_figures(events: DataFrame, runs: int) -> list[dict[str, Any]]:
    """`lost_acked`, `log_duplicates` and `log_unresolved` for runs 0 .. runs-1."""
    out = [{"lost_acked": 0, "log_duplicates": 0, "log_unresolved": 0} for _ in range(runs)]
    for row in lost_and_duplicated(events).collect():
        for key in out[0]:
            out[row["run"]][key] = row[key] or 0
    return out
