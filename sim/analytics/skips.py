"""Records a group skipped, and records it processed that the final log no longer holds, on
Spark, from the events alone.

The rules are `sim/cluster/skips.py`'s (its module docstring has the table). Per group and
partition, in log order, each commit moves the group's committed offset from the one before it
(0 if none) to its own, and each position reset moves a member from that committed offset to
the reset's: a *pass* over the offsets between, with a cause. An offset keeps the cause of the
first pass over it. A skipped record is an acknowledged one, in the final log where it was
acknowledged (or deleted by retention below its log start), that some pass went over and the
group never processed; one processed by the group in another leader epoch (since truncated)
is `out_of_range_reset`.

Everything stays offset ranges: per group and partition, the passes, the acknowledged records'
ranges and the processed ones (merged per leader epoch) are cut at every range boundary, so
that each piece is wholly inside or outside each range, and a piece's facts are one
aggregation over the ranges that cover it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention
from pyspark.sql.types import ArrayType, StringType

from sim.analytics.events import BATCH, PARTITION

__all__ = ["FinalLogs", "commits", "final_logs", "group_skips", "processed_ranges", "skip_figures"]

KEY = ["run", "group", "tp"]
TRIPLES = ArrayType(ArrayType(StringType()))
"""`offsets`: a list of [topic, partition, offset]."""


@dataclass(frozen=True, slots=True)
class FinalLogs:
    """The final logs as the group figures read them (`sim.analytics.skips`), each keyed by
    (run, tp)."""

    acked: DataFrame
    """Acknowledged records where they were acknowledged: epoch, [lo, hi)."""
    deleted: DataFrame
    """Acknowledged records below the log start offset: [lo, hi)."""
    records: DataFrame
    """Every record: epoch (null where no append names it), [lo, hi), and the log start."""


def final_logs(pieces: DataFrame, acked: DataFrame, sources: DataFrame, starts: DataFrame) -> FinalLogs:
    """The final logs from the tables of `sim.analytics.final_logs`: the batches' pieces in
    them, the acknowledged batches, the ranges each epoch wrote, and the log start offsets."""
    tp = F.concat_ws("-", F.col("topic"), F.col("partition").cast("string")).alias("tp")
    p, k = pieces.alias("p"), acked.alias("k")
    # A batch's piece where its acknowledgement put it: the records from the first kept on.
    held = p.join(k, [F.col(f"p.{c}") == F.col(f"k.{c}") for c in [*BATCH, "base_offset"]]).select(
        *[F.col(f"p.{c}") for c in PARTITION],
        F.col("p.epoch"),
        (F.col("p.base_offset") + F.greatest("p.i0", "k.first")).alias("lo"),
        (F.col("p.base_offset") + F.col("p.i1")).alias("hi"),
    )
    deleted = acked.select(
        *PARTITION, F.col("base_offset").alias("lo"), F.least(F.col("base_offset") + F.col("size"), F.coalesce("start", F.lit(0))).alias("hi")
    )
    records = sources.join(F.broadcast(starts), PARTITION, "left").select(
        *PARTITION, F.col("written_in.epoch").alias("epoch"), "lo", "hi", F.coalesce("start", F.lit(0)).alias("start")
    )
    return FinalLogs(
        held.where(F.col("hi") > F.col("lo")).select("run", tp, "epoch", "lo", "hi"),
        deleted.where(F.col("hi") > F.col("lo")).select("run", tp, "lo", "hi"),
        records.select("run", tp, "epoch", "lo", "hi", "start"),
    )


def _tp() -> Column:
    return F.concat_ws("-", F.col("topic"), F.col("partition").cast("string")).alias("tp")


def processed_ranges(events: DataFrame) -> DataFrame:
    """What each group processed, merged per leader epoch: (run, group, tp, epoch, lo, hi)."""
    processed = events.where(F.col("event") == "records_processed").select(
        "run", F.col("group_id").alias("group"), _tp(), F.col("leader_epoch").alias("epoch"),
        F.col("first_offset").alias("lo"), F.col("end_offset").alias("hi"),
    )
    return _islands(processed.where(F.col("hi") > F.col("lo")), [*KEY, "epoch"])


def _islands(ranges: DataFrame, keys: list[str]) -> DataFrame:
    """Overlapping or touching ranges merged: a range starts an island when no range before it
    (in offset order) reaches its start."""
    order = Window.partitionBy(*keys).orderBy("lo", "hi")
    reach = F.max("hi").over(order.rowsBetween(Window.unboundedPreceding, -1))
    island = F.sum(F.when(reach.isNull() | (reach < F.col("lo")), 1).otherwise(0)).over(order)
    return ranges.withColumn("island", island).groupBy(*keys, "island").agg(F.min("lo").alias("lo"), F.max("hi").alias("hi")).drop("island")


def commits(events: DataFrame) -> DataFrame:
    """Each partition of each accepted commit, and whether an operator's reset made it:
    (run, ln, group, admin, tp, offset)."""
    accepted = events.where((F.col("event") == "offset_commit_completed") & (F.col("error") == "NONE")).select(
        "run", "ln", F.col("group_id").alias("group"), "member_id", "generation_id",
        F.from_json("offsets", TRIPLES).alias("sent"), F.lit(None).cast(TRIPLES).alias("pending"),
    )
    # The reset an operator is committing now: from its request to its answer.
    admin = events.where(F.col("event").isin("admin_offsets_reset_sent", "admin_offsets_reset")).select(
        "run", "ln", F.col("group_id").alias("group"), F.lit(None).cast("string").alias("member_id"),
        F.lit(None).cast("long").alias("generation_id"), F.lit(None).cast(TRIPLES).alias("sent"),
        F.when(F.col("event") == "admin_offsets_reset_sent", F.from_json("offsets", TRIPLES))
        .otherwise(F.array().cast(TRIPLES)).alias("pending"),
    )
    before = Window.partitionBy("run", "group").orderBy("ln").rowsBetween(Window.unboundedPreceding, -1)
    is_admin = (F.col("member_id") == "") & (F.col("generation_id") < 0) & (F.col("sent") == F.col("waiting"))
    return (
        accepted.unionByName(admin)
        .withColumn("waiting", F.last("pending", ignorenulls=True).over(before))
        .where(F.col("sent").isNotNull())
        .select("run", "ln", "group", F.coalesce(is_admin, F.lit(False)).alias("admin"), F.explode("sent").alias("o"))
        .select(
            "run", "ln", "group", "admin",
            F.concat_ws("-", F.col("o")[0], F.col("o")[1]).alias("tp"), F.col("o")[2].cast("long").alias("offset"),
        )
    )


def _passes(events: DataFrame) -> DataFrame:
    """Every pass (KEY, ln, lo, hi, cause): commits that move the committed offset forward,
    and position resets past it."""
    committed = commits(events).select(*KEY, "ln", F.lit("commit").alias("kind"), "offset", "admin", *_none("source", "reason"))
    resets = events.where((F.col("event") == "fetch_position_set") & (F.col("source") != "committed")).select(
        "run", F.col("group_id").alias("group"), _tp(), "ln", F.lit("reset").alias("kind"), "offset",
        F.lit(None).cast("boolean").alias("admin"), "source", "reason",
    )
    names = F.explode(F.from_json("partitions", ArrayType(StringType()))).alias("tp")
    removed = events.where(
        (F.col("event") == "offsets_expired") | ((F.col("event") == "group_offsets_deleted") & (F.col("error") == "NONE"))
    ).select(
        "run", F.col("group_id").alias("group"), names, "ln",
        F.when(F.col("event") == "offsets_expired", "expired").otherwise("deleted").alias("kind"),
        *_none("offset", "admin", "source", "reason"),
    )
    # A deleted group's committed offsets go with it.
    deleted_groups = events.where((F.col("event") == "group_deleted") & (F.col("error") == "NONE")).select(
        "run", F.col("group_id").alias("group"), F.col("ln").alias("deleted_ln")
    )
    ever = committed.select(*KEY, F.col("ln").alias("committed_ln"))
    dropped = (
        ever.join(F.broadcast(deleted_groups), ["run", "group"])
        .where(F.col("committed_ln") < F.col("deleted_ln"))
        .select(*KEY, F.col("deleted_ln").alias("ln"))
        .distinct()
        .select(*KEY, "ln", F.lit("deleted").alias("kind"), *_none("offset", "admin", "source", "reason"))
    )
    rows = committed.unionByName(resets).unionByName(removed).unionByName(dropped)
    before = Window.partitionBy(*KEY).orderBy("ln").rowsBetween(Window.unboundedPreceding, -1)
    frontier = F.coalesce(F.last(F.when(F.col("kind") == "commit", F.col("offset")), ignorenulls=True).over(before), F.lit(0))
    status = F.last(F.when(F.col("kind") != "reset", F.col("kind")), ignorenulls=True).over(before)
    reset_cause = (
        F.when(F.col("reason") != "no_committed_offset", "out_of_range_reset")
        .when(F.col("status") == "deleted", "admin_reset")
        .when(F.col("status") == "expired", "offsets_expired_reset")
        .when(F.col("source") == "latest", "reset_latest_no_commit")
        .otherwise("out_of_range_reset")
    )
    cause = (
        F.when(F.col("kind") == "reset", reset_cause)
        .when(F.col("admin"), "admin_reset")
        .otherwise("committed_before_processed")
    )
    return (
        rows.withColumn("lo", frontier)
        .withColumn("status", status)
        .where(F.col("kind").isin("commit", "reset") & (F.col("offset") > F.col("lo")))
        .select(*KEY, "ln", "lo", F.col("offset").alias("hi"), cause.alias("cause"))
    )


def _none(*names: str) -> list[Column]:
    types = {"offset": "long", "admin": "boolean"}
    return [F.lit(None).cast(types.get(n, "string")).alias(n) for n in names]


def _cut(ranges: DataFrame, keys: list[str]) -> DataFrame:
    """Every range (keys, lo, hi, ...) as the pieces [at, next) it covers, where the pieces are
    cut at every boundary of the ranges of its keys."""
    bounds = ranges.select(*keys, F.col("lo").alias("at")).unionByName(ranges.select(*keys, F.col("hi").alias("at"))).distinct()
    order = Window.partitionBy(*keys).orderBy("at")
    bounds = bounds.withColumn("i", F.row_number().over(order)).withColumn("next", F.lead("at").over(order)).localCheckpoint()
    lo = bounds.select(*keys, F.col("at").alias("lo"), F.col("i").alias("i_lo"))
    hi = bounds.select(*keys, F.col("at").alias("hi"), F.col("i").alias("i_hi"))
    return (
        ranges.join(lo, [*keys, "lo"])
        .join(hi, [*keys, "hi"])
        .withColumn("i", F.explode(F.sequence("i_lo", F.col("i_hi") - 1)))
        .drop("lo", "hi", "i_lo", "i_hi")
        .join(bounds.select(*keys, "i", "at", "next"), [*keys, "i"])
    )


def group_skips(events: DataFrame, processed: DataFrame, acked: DataFrame, deleted: DataFrame, final: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(skipped per run and cause, processed_then_lost per run).

    `processed` is `processed_ranges`; `acked` the acknowledged records in the final logs where
    they were acknowledged (run, tp, epoch, lo, hi); `deleted` those below the log start (run,
    tp, lo, hi); `final` the final logs (run, tp, epoch, lo, hi, start)."""
    passes = _passes(events).localCheckpoint()
    groups = passes.select(*KEY).distinct()
    fields = ["kind", "ln", "cause", "epoch"]

    def rows(df: DataFrame, kind: str, *present: str) -> DataFrame:
        return df.select(*KEY, "lo", "hi", F.lit(kind).alias("kind"), *[F.col(c) if c in present else _null(c) for c in fields[1:]])

    on_passed = lambda df: df.join(F.broadcast(groups), ["run", "tp"]) if "group" not in df.columns else df.join(F.broadcast(groups), KEY, "left_semi")  # noqa: E731
    ranges = (
        rows(passes, "pass", "ln", "cause")
        .unionByName(rows(on_passed(processed), "processed", "epoch"))
        .unionByName(rows(on_passed(acked), "acked", "epoch"))
        .unionByName(rows(on_passed(deleted), "deleted"))
        .where(F.col("hi") > F.col("lo"))
    )
    kind = F.col("kind")
    pieces = (
        _cut(ranges, KEY)
        .groupBy(*KEY, "at", "next")
        .agg(
            F.min(F.when(kind == "pass", F.struct("ln", "cause"))).alias("first_pass"),
            F.max(F.when(kind == "acked", F.col("epoch"))).alias("acked_epoch"),
            F.max(F.when(kind == "deleted", 1)).alias("deleted"),
            F.collect_set(F.when(kind == "processed", F.col("epoch"))).alias("read"),
        )
    )
    unread = F.col("acked_epoch").isNotNull() & ~F.array_contains("read", F.col("acked_epoch"))
    gone_unread = F.col("deleted").isNotNull() & (F.size("read") == 0)
    cause = F.when(F.col("acked_epoch").isNotNull() & (F.size("read") > 0), "out_of_range_reset").otherwise(F.col("first_pass.cause"))
    skipped = (
        pieces.where(F.col("first_pass").isNotNull() & (unread | gone_unread))
        .groupBy("run", cause.alias("cause"))
        .agg(F.sum(F.col("next") - F.col("at")).alias("skipped"))
    )
    return skipped, _processed_then_lost(processed, final)


def _null(name: str) -> Column:
    return F.lit(None).cast({"ln": "long", "epoch": "long"}.get(name, "string")).alias(name)


def _processed_then_lost(processed: DataFrame, final: DataFrame) -> DataFrame:
    """Per run, the records groups processed whose offset the final log no longer holds in the
    same leader epoch, at or above its log start."""
    starts = final.select("run", "tp", "start").distinct()
    groups = processed.select(*KEY).distinct()
    held = final.join(F.broadcast(groups), ["run", "tp"]).select(*KEY, "lo", "hi", "epoch", F.lit("final").alias("kind"))
    below = groups.join(F.broadcast(starts), ["run", "tp"]).select(*KEY, F.lit(0).cast("long").alias("lo"), F.col("start").alias("hi"), _null("epoch"), F.lit("start").alias("kind"))
    ranges = processed.select(*KEY, "lo", "hi", "epoch", F.lit("processed").alias("kind")).unionByName(held).unionByName(below).where(F.col("hi") > F.col("lo"))
    kind = F.col("kind")
    pieces = _cut(ranges, KEY).groupBy(*KEY, "at", "next").agg(
        F.collect_set(F.when(kind == "processed", F.col("epoch"))).alias("read"),
        F.max(F.when(kind == "final", F.col("epoch"))).alias("kept"),
        F.max(F.when(kind == "final", 1)).alias("in_log"),
        F.max(F.when(kind == "start", 1)).alias("deleted"),
    )
    # An offset whose record no append names (`log_unresolved`) is taken as the one processed.
    lost = F.size(F.filter("read", lambda e: F.col("in_log").isNull() | (F.col("kept").isNotNull() & (e != F.col("kept")))))
    return pieces.where(F.col("deleted").isNull()).groupBy("run").agg(F.sum((F.col("next") - F.col("at")) * lost).alias("processed_then_lost"))


def skip_figures(skipped: DataFrame, lost: DataFrame, runs: int) -> list[dict[str, Any]]:
    """`skipped`, `skipped_by_cause` and `processed_then_lost` for runs 0 .. runs-1."""
    out: list[dict[str, Any]] = [{"skipped": 0, "skipped_by_cause": {}, "processed_then_lost": 0} for _ in range(runs)]
    for row in skipped.collect():
        out[row["run"]]["skipped_by_cause"][row["cause"]] = row["skipped"]
    for row in lost.collect():
        out[row["run"]]["processed_then_lost"] = row["processed_then_lost"] or 0
    for figures in out:
        figures["skipped_by_cause"] = dict(sorted(figures["skipped_by_cause"].items()))
        figures["skipped"] = sum(figures["skipped_by_cause"].values())
    return out
