"""Acknowledged records lost, and records written twice, on Spark, from the events alone.

summary.json's `lost_acked` and `log_duplicates` compare what producers had acknowledged with
each partition's final log: the live leader with the highest epoch, else the longest replica.
The events do not list a log's records, so this rebuilds them, as offset ranges throughout:

- Each replica's log end offset over time: `replica_offsets_changed` follows every append,
  fetch and truncation; a restart keeps only the partitions `broker_started` names (the others'
  logs are empty), and a disk loss empties them all. A replica's LEO only falls at a truncation
  (`log_truncated`) or a restart, so between two of those, and within one leader epoch, its
  changes only grow: each such run of changes is kept as its first and last change, found by
  an aggregation, not a sort of every change.
- The final log's offset `o` was last taken by the replica's latest LEO growth across it, in
  leader epoch S (its own append as leader, or a fetch from the leader of S). The record there
  is the one written at `o` in the highest epoch up to S that wrote `o` (`records_appended`):
  one leader writes an offset once in its epoch, appending from its LEO up without a gap, and a
  fetch in epoch S copies the leader of S, whose log holds at `o` the record of the latest epoch
  it has followed. Within one epoch the later segment of the run wins: a leader that restarts
  with no controller to give it a new epoch writes the offsets it lost again in the same one.
  This is exact unless a leader of an epoch between the record's and S wrote `o` and the
  leader of S never had it (a leader elected uncleanly that never fetched from it), or a
  follower took `o` from a leader whose newer epoch it had not heard of yet (before KIP-320,
  in 2.1, a fetch carries no epoch).
- An append's records: `records_appended` names its batch (its producer and record numbers),
  every copy of a retry included. A record belongs to one batch, so a record written twice is
  a batch whose pieces in its final log overlap, and an acknowledged record is lost when no
  piece of its batch holds it: both are found per batch, with the batch's records listed only
  where it is in several pieces. Offsets no append names are counted in `log_unresolved`.

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
from pyspark.sql.types import ArrayType, StringType

from sim.analytics.events import BATCH, NEVER, PARTITION
from sim.analytics.skips import FinalLogs, final_logs, group_skips, processed_ranges, skip_figures

__all__ = ["final_log_figures", "lost_and_duplicated"]

REPLICA = ["run", "node", "topic", "partition"]
FACTS = (
    "became_leader",
    "became_follower",
    "node_started",
    "node_crashed",
    "node_stopped",
    "broker_started",
    "log_truncated",
    "log_start_offset_changed",
)


def _user() -> Column:
    """Not an internal topic's (`__consumer_offsets` holds the coordinator's records)."""
    return ~F.col("topic").startswith("__")


def _facts(events: DataFrame) -> DataFrame:
    """The few events about replicas' roles, restarts, truncations and log starts, with the
    columns read of them: one scan, kept for every table below that reads them."""
    return events.where(F.col("event").isin(*FACTS)).select(
        "run", "ln", "event", "node", "target", "kind", "topic", "partition", "leader_epoch", "log_start_offset", "partitions"
    )


def _segments(facts: DataFrame) -> DataFrame:
    """Each run's lines cut where some LEO may fall (a broker's restart or crash, a replica's
    truncation): segment `segment` is lines [from_ln, to_ln), and segment 0 the lines before
    the first cut."""
    cuts = facts.where(F.col("event").isin("broker_started", "node_crashed", "log_truncated")).select("run", F.col("ln").alias("from_ln"))
    order = Window.partitionBy("run").orderBy("from_ln")
    return (
        cuts.unionByName(cuts.select("run").distinct().select("run", F.lit(-1).cast("long").alias("from_ln")))
        .withColumn("segment", F.row_number().over(order) - 1)
        .withColumn("to_ln", F.coalesce(F.lead("from_ln").over(order), F.lit(NEVER)))
    )


def _in_segment(rows: DataFrame, segments: DataFrame) -> DataFrame:
    """`rows` with the segment (`_segments`) of its run's lines each falls in: a broadcast range
    join (a run has few cuts; a run without any has all its lines in segment 0)."""
    segments = F.broadcast(segments).alias("cut")
    inside = (F.col("row.run") == F.col("cut.run")) & (F.col("row.ln") >= F.col("cut.from_ln")) & (F.col("row.ln") < F.col("cut.to_ln"))
    return rows.alias("row").join(segments, inside, "left").select("row.*", F.coalesce("cut.segment", F.lit(0)).alias("segment"))


def _version() -> Column:
    """What orders two writes of one offset: the leader epoch, then the segment of the run (a
    leader restarted without a new epoch, with no controller to give one, writes its offsets
    again in the same epoch)."""
    return F.struct(F.col("leader_epoch").alias("epoch"), F.col("segment"))


def _growths(events: DataFrame, segments: DataFrame) -> DataFrame:
    """Each replica's LEO changes, one row per run of them that only grows: within one segment
    of its run's lines and one leader epoch (REPLICA, segment, leader_epoch, first_ln,
    first_leo, last_ln, last_leo, leads: whether the last change was a leader's)."""
    changes = events.where((F.col("event") == "replica_offsets_changed") & _user()).select(
        *REPLICA, "ln", F.col("log_end_offset").alias("leo"), "leader_epoch", "role"
    )
    rows = _in_segment(changes, segments)
    # Within such a run the first change has the lowest LEO and the last the highest, and the
    # replica's role is the same throughout (a role changes only with the leader epoch): plain
    # minimums and maximums, cheaper than taking the values at the first and last lines.
    return rows.groupBy(*REPLICA, "segment", "leader_epoch").agg(
        F.min("ln").alias("first_ln"),
        F.min("leo").alias("first_leo"),
        F.max("ln").alias("last_ln"),
        F.max("leo").alias("last_leo"),
        # An int: a string in an aggregation's buffer would make Spark sort every change.
        F.max(F.when(F.col("role") == "leader", 1).otherwise(0)).alias("leads"),
    )


def _log_end_offsets(facts: DataFrame, segments: DataFrame, growths: DataFrame) -> DataFrame:
    """The LEO changes that matter, in log order (REPLICA, ln, leo, leader_epoch, segment):
    each run's first and last, and a zero where a log was emptied."""
    ends = [("first_ln", "first_leo"), ("last_ln", "last_leo")]
    kept = [growths.select(*REPLICA, F.col(ln).alias("ln"), F.col(leo).alias("leo"), "leader_epoch", "segment") for ln, leo in ends]
    empty = _in_segment(
        _emptied(facts, growths.select(*REPLICA).distinct()).select(
            *REPLICA, "ln", F.lit(0).cast("long").alias("leo"), F.lit(None).cast("long").alias("leader_epoch")
        ),
        segments,
    )
    return kept[0].unionByName(kept[1]).unionByName(empty)


def _log_start_offsets(facts: DataFrame, authority: DataFrame) -> DataFrame:
    """Each final log's log start offset: (run, topic, partition) -> start."""
    changes = facts.where((F.col("event") == "log_start_offset_changed") & _user()).select(
        *REPLICA, "ln", F.col("log_start_offset").alias("start")
    )
    empty = _emptied(facts, changes.select(*REPLICA).distinct()).select(*REPLICA, "ln", F.lit(0).cast("long").alias("start"))
    starts = changes.unionByName(empty).groupBy(*REPLICA).agg(F.max_by("start", "ln").alias("start"))
    return authority.join(F.broadcast(starts), REPLICA).select(*PARTITION, "start")


def _emptied(facts: DataFrame, replicas: DataFrame) -> DataFrame:
    """When each of these replicas' logs was emptied: a restart that did not keep it, or a disk
    loss (REPLICA, ln)."""
    kept = F.from_json("partitions", ArrayType(StringType()))
    restarts = facts.where(F.col("event") == "broker_started").select("run", "node", "ln", kept.alias("kept"))
    emptied = (
        restarts.join(F.broadcast(replicas), ["run", "node"])
        .where(~F.array_contains("kept", F.concat_ws("-", "topic", F.col("partition").cast("string"))))
        .select(*REPLICA, "ln")
    )
    wiped = (
        facts.where((F.col("event") == "node_crashed") & (F.col("kind") == "disk_loss"))
        .select("run", F.col("target").alias("node"), "ln")
        .join(F.broadcast(replicas), ["run", "node"])
        .select(*REPLICA, "ln")
    )
    return emptied.unionByName(wiped)


def _authorities(facts: DataFrame, growths: DataFrame, leos: DataFrame) -> DataFrame:
    """Each partition's final log: (run, topic, partition) -> node and final LEO."""
    became = facts.where(F.col("event").isin("became_leader", "became_follower")).select(
        *REPLICA,
        F.col("ln").alias("last_ln"),
        F.when(F.col("event") == "became_leader", 1).otherwise(0).alias("leads"),
        "leader_epoch",
    )
    roles = growths.select(*REPLICA, "last_ln", "leads", "leader_epoch").unionByName(became)
    # A restarted broker leads nothing until a LeaderAndIsr says so again.
    restarted = (
        facts.where(F.col("event") == "broker_started")
        .select("run", "node", F.col("ln").alias("last_ln"))
        .join(F.broadcast(roles.select(*REPLICA).distinct()), ["run", "node"])
        .select(*REPLICA, "last_ln", F.lit(0).alias("leads"), F.lit(None).cast("long").alias("leader_epoch"))
    )
    # Each replica's last role and last LEO, side by side in one aggregation.
    told = roles.unionByName(restarted).select(
        *REPLICA, "last_ln", "leads", "leader_epoch", F.lit(None).cast("long").alias("ln"), F.lit(None).cast("long").alias("leo")
    )
    logged = leos.select(
        *REPLICA, F.lit(None).cast("long").alias("last_ln"), F.lit(None).cast("int").alias("leads"),
        F.lit(None).cast("long").alias("leader_epoch"), "ln", "leo",
    )
    last = told.unionByName(logged).groupBy(*REPLICA).agg(
        F.max_by(F.struct("leads", "leader_epoch"), "last_ln").alias("role"), F.max_by("leo", "ln").alias("leo")
    )
    down = (
        facts.where(F.col("event").isin("node_started", "node_crashed", "node_stopped"))
        .groupBy("run", F.col("target").alias("node"))
        .agg(F.max_by("event", "ln").alias("event"))
        .where(F.col("event") != "node_started")
        .select("run", "node", F.lit(True).alias("down"))
    )
    final = (
        # A replica told its role that never logged a LEO change has an empty log.
        last.select(*REPLICA, "role.*", F.coalesce("leo", F.lit(0)).alias("leo"))
        .join(F.broadcast(down), ["run", "node"], "left")
        .withColumn("leads", F.col("down").isNull() & (F.col("leads") == 1))
        .withColumn("broker", F.regexp_extract("node", r"(\d+)$", 1).cast("long"))
    )
    # The live leader with the highest epoch, else the longest log (the lowest broker on a tie).
    best = Window.partitionBy(*PARTITION).orderBy(
        F.col("leads").desc(),
        F.when(F.col("leads"), F.col("leader_epoch")).desc_nulls_last(),
        F.col("leo").desc(),
        F.col("broker"),
    )
    return final.withColumn("k", F.row_number().over(best)).where("k = 1").select(*REPLICA, "leo")


def _taken(leos: DataFrame, authority: DataFrame, starts: DataFrame) -> DataFrame:
    """The final logs as ranges [lo, hi) with the version (epoch S, segment) each was last taken
    in, from the log start offset up."""
    # The authority's LEO changes, newest first: the one before each (`lead`), and the lowest
    # from it to the end of the run (a running `min`). A growth finally takes the offsets from
    # the LEO before it up to that lowest LEO: no later change goes below them (every later
    # growth starts at or above it), and every offset from it up was taken again later.
    newest_first = Window.partitionBy(*REPLICA).orderBy(F.col("ln").desc(), F.col("leo").desc())
    since = newest_first.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    return (
        leos.join(F.broadcast(authority.select(*REPLICA)), REPLICA, "left_semi")
        .withColumn("before", F.coalesce(F.lead("leo").over(newest_first), F.lit(0)))
        .withColumn("kept", F.min("leo").over(since))
        .join(F.broadcast(starts), PARTITION, "left")
        # Below the final log start offset a record was deleted by retention, not lost.
        .select(*PARTITION, _version().alias("taken_in"), F.greatest("before", F.coalesce("start", F.lit(0))).alias("lo"), F.col("kept").alias("hi"))
        .where(F.col("hi") > F.col("lo"))
    )


def _written(appended: DataFrame) -> DataFrame:
    """The offsets each epoch's leader wrote in each segment of the run, [from, to): its
    appends are one range, from its LEO when it became leader (or restarted) up."""
    return appended.groupBy(*PARTITION, "version").agg(
        F.min("base_offset").alias("from"), F.max(F.col("base_offset") + F.col("count")).alias("to")
    )


def _sources(taken: DataFrame, written: DataFrame) -> DataFrame:
    """The final logs as ranges [lo, hi) with the epoch whose leader wrote them (`written_in`;
    null where no append wrote them): for each offset, the highest epoch up to the one it was
    taken in that wrote it."""
    t, w = taken.alias("t"), F.broadcast(written).alias("w")
    candidates = t.join(
        w,
        [F.col(f"t.{k}") == F.col(f"w.{k}") for k in PARTITION]
        + [F.col("w.version") <= F.col("t.taken_in"), F.col("w.from") < F.col("t.hi"), F.col("w.to") > F.col("t.lo")],
    ).select("t.*", "w.version", "w.from", "w.to")
    # Cut each taken range at every bound of the epochs' ranges inside it; each piece has one source.
    range_key = [*PARTITION, "lo"]
    inner = candidates.select(*range_key, F.explode(F.array("from", "to")).alias("at")).join(F.broadcast(taken), range_key).where(
        (F.col("at") > F.col("lo")) & (F.col("at") < F.col("hi"))
    )
    bounds = taken.select(*range_key, F.col("lo").alias("at")).unionByName(inner.select(*range_key, "at")).distinct()
    order = Window.partitionBy(*range_key).orderBy("at")
    pieces = (
        bounds.join(F.broadcast(taken), range_key)
        .withColumn("end", F.coalesce(F.lead("at").over(order), F.col("hi")))
        .select(*PARTITION, "taken_in", "lo", F.col("at").alias("piece_lo"), F.col("end").alias("piece_hi"))
    )
    p, c = pieces.alias("p"), F.broadcast(candidates).alias("c")
    return (
        p.join(
            c,
            [F.col(f"p.{k}") == F.col(f"c.{k}") for k in range_key]
            + [F.col("c.from") <= F.col("p.piece_lo"), F.col("c.to") >= F.col("p.piece_hi")],
            "left",
        )
        .groupBy(*[F.col(f"p.{k}") for k in PARTITION], "p.piece_lo", "p.piece_hi")
        .agg(F.max("c.version").alias("written_in"))
        .select(*PARTITION, "written_in", F.col("piece_lo").alias("lo"), F.col("piece_hi").alias("hi"))
    )


def _appended(events: DataFrame, segments: DataFrame) -> DataFrame:
    """Every append of a user topic: where, in which version (epoch and segment), and which
    batch (BATCH; a null producer where its values are not a producer's numbered records)."""
    appends = events.where((F.col("event") == "records_appended") & _user() & (F.col("count") > 0)).select(
        *_batch(), "ln", "leader_epoch", "base_offset", "count"
    )
    return _in_segment(appends, segments).select(*BATCH, _version().alias("version"), "base_offset", "count")


def _batch() -> list[Column]:
    """A batch's key (BATCH) from an event that names its records: one producer's records are
    each in one batch, so its first record names it."""
    return [*map(F.col, PARTITION), F.col("producer"), F.regexp_extract("records", r"\d+", 0).cast("long").alias("first_record")]


def _pieces(appended: DataFrame, sources: DataFrame) -> DataFrame:
    """Each append's piece of the final log: its records from index i0 to i1 (BATCH, size, i0,
    i1, first: null)."""
    s, a = F.broadcast(sources).alias("s"), appended.alias("a")
    return a.join(
        s,
        [F.col(f"a.{k}") == F.col(f"s.{k}") for k in PARTITION]
        + [
            F.col("a.version") == F.col("s.written_in"),
            F.col("a.base_offset") < F.col("s.hi"),
            F.col("a.base_offset") + F.col("a.count") > F.col("s.lo"),
        ],
    ).select(
        *[F.col(f"a.{k}") for k in BATCH],
        F.col("a.count").alias("size"),
        (F.greatest("s.lo", "a.base_offset") - F.col("a.base_offset")).alias("i0"),
        (F.least("s.hi", F.col("a.base_offset") + F.col("a.count")) - F.col("a.base_offset")).alias("i1"),
        F.lit(None).cast("long").alias("first"),
        F.col("a.base_offset").alias("base_offset"),
        F.col("s.written_in.epoch").alias("epoch"),
        F.lit(None).cast("long").alias("start"),
    )


def _count(records: Column) -> Column:
    """The numbers in a JSON list of them, without parsing it: its commas and one."""
    return F.length(records) - F.length(F.translate(records, ",", "")) + 1


def lost_and_duplicated(events: DataFrame) -> tuple[DataFrame, FinalLogs]:
    """Per run: lost_acked, log_duplicates and log_unresolved (offsets whose record no event
    names); and the final logs."""
    # Every table before the batches' is small: one row per run of LEO growth, replica or range.
    facts = _facts(events).localCheckpoint()
    segments = _segments(facts).localCheckpoint()
    growths = _growths(events, segments).localCheckpoint()
    leos = _log_end_offsets(facts, segments, growths)
    authority = _authorities(facts, growths, leos).localCheckpoint()
    starts = _log_start_offsets(facts, authority).localCheckpoint()
    appended = _appended(events, segments)
    written = _written(appended).localCheckpoint()
    sources = _sources(_taken(leos, authority, starts).localCheckpoint(), written).localCheckpoint()
    pieces = _pieces(appended, sources).localCheckpoint()
    # Each acknowledged batch, from its first record at or above its final log's start (the
    # records below it were deleted by retention, not lost).
    acked = (
        events.where((F.col("event") == "produce_completed") & (F.col("error") == "NONE") & (F.col("acks") != 0))
        .select(*_batch(), _count(F.col("records")).alias("size"), "base_offset")
        .join(F.broadcast(starts), PARTITION, "left")
        .select(
            *BATCH,
            "size",
            F.lit(None).cast("long").alias("i0"),
            F.lit(None).cast("long").alias("i1"),
            F.greatest(F.lit(0), F.coalesce("start", F.lit(0)) - F.col("base_offset")).alias("first"),
            "base_offset",
            F.lit(None).cast("long").alias("epoch"),
            "start",
        )
        .localCheckpoint()
    )
    # One row per batch: its pieces in the final logs and its acknowledgement, side by side.
    batches = (
        pieces.unionByName(acked)
        # A batch's piece and its acknowledgement are read by different tasks, so a task
        # sees nearly every batch once: aggregating its rows before the shuffle would only
        # copy them into a hash map as large as its input. Shuffled by run first, they are
        # aggregated once, after it.
        .repartition("run")
        .groupBy(*BATCH)
        .agg(
            F.max("size").alias("size"),
            F.count("i0").alias("n"),
            F.sum(F.col("i1") - F.col("i0")).alias("held"),
            F.min("i0").alias("i0"),
            F.max("i1").alias("i1"),
            F.max("first").alias("first"),
        )
        .localCheckpoint()
    )
    # Most batches have one piece, whose records are its range. The few in several pieces (a
    # batch written twice, or cut where the final log's epochs change) have their records
    # listed to compare them.
    several = batches.where((F.col("n") > 1) & F.col("producer").isNotNull()).select(*BATCH)
    listed = (
        pieces.join(F.broadcast(several), BATCH, "left_semi")
        .groupBy(*BATCH)
        .agg(F.array_distinct(F.flatten(F.collect_list(F.sequence("i0", F.col("i1") - 1)))).alias("indexes"))
    )
    batches = batches.join(F.broadcast(listed), BATCH, "left")
    listed = F.col("indexes").isNotNull()
    written_twice = F.when(listed, F.col("held") - F.size("indexes")).otherwise(0)
    kept = F.greatest(F.lit(0), F.col("size") - F.col("first"))
    in_piece = F.greatest(F.lit(0), F.least("size", "i1") - F.greatest("first", "i0"))
    in_pieces = F.size(F.filter("indexes", lambda i: i >= F.col("first")))
    lost = F.when(F.col("first").isNull(), 0).otherwise(
        kept - F.when(F.col("n") == 0, 0).when(listed, in_pieces).otherwise(in_piece)
    )
    # Offsets no event names: those no append wrote, and those an append of unnamed values did.
    unnamed = F.when(F.col("producer").isNull(), F.col("held"))
    named = F.col("producer").isNotNull()
    figures = batches.groupBy("run").agg(
        F.sum(F.when(named, written_twice)).alias("log_duplicates"),
        F.sum(F.when(named, lost)).alias("lost_acked"),
        F.sum(unnamed).alias("unnamed"),
    )
    unwritten = sources.where(F.col("written_in").isNull()).select(
        "run", *[F.lit(None).cast("long").alias(c) for c in ("log_duplicates", "lost_acked")], (F.col("hi") - F.col("lo")).alias("unnamed")
    )
    figures = (
        figures.unionByName(unwritten)
        .groupBy("run")
        .agg(F.sum("log_duplicates").alias("log_duplicates"), F.sum("lost_acked").alias("lost_acked"), F.coalesce(F.sum("unnamed"), F.lit(0)).alias("log_unresolved"))
    )
    return figures, final_logs(pieces, acked, sources, starts)


def final_log_figures(events: DataFrame, runs: int) -> list[dict[str, Any]]:
    """`lost_acked`, `log_duplicates`, `log_unresolved`, and the group figures that need the
    final logs (`skipped`, `skipped_by_cause`, `processed_then_lost`), for runs 0 .. runs-1."""
    figures, logs = lost_and_duplicated(events)
    out: list[dict[str, Any]] = [{"lost_acked": 0, "log_duplicates": 0, "log_unresolved": 0} for _ in range(runs)]
    for row in figures.collect():
        for key in out[0]:
            out[row["run"]][key] = row[key] or 0
    skipped, lost = group_skips(events, processed_ranges(events), logs.acked, logs.deleted, logs.records)
    for run, more in enumerate(skip_figures(skipped, lost, runs)):
        out[run].update(more)
    return out
