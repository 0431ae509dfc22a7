"""Offsets a group reads again because its position was moved back, on Spark: the rule before
the label table of `sim/cluster/accounting.py`.

A hold that began at a reset to `s` below the group's committed offset `c` reads `[s, c)` again
because of the reset (`log_truncation_or_reset`), or because of the expiry if `c` had expired
(`offsets_expired_reset`), or because of the operator if they had deleted it (`admin_reset`). A hold whose position came from a committed offset `s` that an
operator's reset had moved back from `c` (the first such position after that reset) reads
`[s, c)` again because of the operator (`admin_reset`).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention
from pyspark.sql.types import ArrayType, StringType

from sim.analytics.events import NEVER
from sim.analytics.skips import commits

__all__ = ["rewinds"]


def _tp() -> Column:
    return F.concat_ws("-", F.col("topic"), F.col("partition").cast("string")).alias("tp")


def rewinds(events: DataFrame, consumers: DataFrame, timeline: DataFrame) -> DataFrame:
    """Every rewound hold: (run, group, node, tp, hold, lo, hi, why). `timeline` is the
    duplicates job's, with its holds' starts and ends."""
    return _reset_rewinds(events, consumers).unionByName(_admin_rewinds(events, consumers, timeline))


def _reset_rewinds(events: DataFrame, consumers: DataFrame) -> DataFrame:
    """Holds that began at a reset to `s` below the group's committed offset `c`: (run,
    group, node, tp, hold: the reset's line, lo: s, hi: c, why). `c` is the group's last
    commit of the partition before the reset (`log_truncation_or_reset`), or the one the
    retention sweep or an operator removed, if that came after it (`offsets_expired_reset`,
    `admin_reset`)."""
    names = F.explode(F.from_json("partitions", ArrayType(StringType()))).alias("tp")
    # Offsets removed: expired (KIP-211), or deleted by an operator (OffsetDelete; DeleteGroups
    # removes every partition the group committed before).
    why = F.when(F.col("event") == "offsets_expired", "offsets_expired_reset").otherwise("admin_reset").alias("why")
    removals = events.where(
        (F.col("event") == "offsets_expired") | ((F.col("event") == "group_offsets_deleted") & (F.col("error") == "NONE"))
    ).select("run", "ln", "group_id", names, why)
    triple = F.explode(F.from_json("offsets", ArrayType(ArrayType(StringType())))).alias("o")
    commits = (
        events.where((F.col("event") == "offset_commit_completed") & (F.col("error") == "NONE"))
        .select("run", "ln", "group_id", triple)
        .select("run", "ln", "group_id", F.concat_ws("-", F.col("o")[0], F.col("o")[1]).alias("tp"), F.col("o")[2].cast("long").alias("c"))
    )
    key = ["run", "group_id", "tp"]
    deleted_groups = events.where((F.col("event") == "group_deleted") & (F.col("error") == "NONE")).select("run", "ln", "group_id")
    d, ever = deleted_groups.alias("d"), commits.select("run", "group_id", "tp", F.col("ln").alias("c_ln")).alias("ever")
    removals = removals.unionByName(
        d.join(ever, (F.col("d.run") == F.col("ever.run")) & (F.col("d.group_id") == F.col("ever.group_id")) & (F.col("ever.c_ln") < F.col("d.ln")))
        .select("d.run", "d.ln", "d.group_id", "ever.tp", F.lit("admin_reset").alias("why"))
        .distinct()
    )
    e, c = removals.alias("e"), F.broadcast(commits).alias("c")
    removed = (
        e.join(c, [F.col(f"e.{k}") == F.col(f"c.{k}") for k in key] + [F.col("c.ln") < F.col("e.ln")])
        .groupBy(*[F.col(f"e.{k}") for k in key], "e.ln", "e.why")
        .agg(F.max_by("c.c", "c.ln").alias("c"))
        .select(*key, "ln", "c", "why")
    )
    marks = removed.unionByName(commits.withColumn("why", F.lit("log_truncation_or_reset")))
    resets = consumers.where((F.col("event") == "fetch_position_set") & (F.col("source") != "committed")).select(
        "run", "node", "ln", "group_id", _tp(), "offset"
    )
    r, m = resets.alias("r"), F.broadcast(marks).alias("m")
    last = (
        r.join(m, [F.col(f"r.{k}") == F.col(f"m.{k}") for k in key] + [F.col("m.ln") < F.col("r.ln")])
        .groupBy("r.run", "r.node", "r.ln", "r.group_id", "r.tp", "r.offset")
        .agg(F.max(F.struct(F.col("m.ln"), F.col("m.c"), F.col("m.why"))).alias("mark"))
    )
    return last.where(F.col("mark.c") > F.col("offset")).select(
        "run", F.col("group_id").alias("group"), "node", "tp", F.col("ln").alias("hold"),
        F.col("offset").alias("lo"), F.col("mark.c").alias("hi"), F.col("mark.why").alias("why"),
    )


def _admin_rewinds(events: DataFrame, consumers: DataFrame, timeline: DataFrame) -> DataFrame:
    """Holds whose position came from a committed offset an operator's reset had moved back."""
    key = ["run", "group", "tp"]
    by_key = Window.partitionBy(*key).orderBy("ln")
    done = commits(events).withColumn("before", F.lag("offset").over(by_key))
    back = F.col("admin") & (F.col("offset") < F.col("before"))
    marks = done.select(*key, "ln", F.when(back, F.col("before")).alias("rewound_from"), F.lit(None).cast("long").alias("offset"), F.lit(None).cast("string").alias("node"))
    positions = consumers.where((F.col("event") == "fetch_position_set") & (F.col("source") == "committed")).select(
        "run", F.col("group_id").alias("group"), _tp(), "ln", F.lit(None).cast("long").alias("rewound_from"), "offset", "node"
    )
    before = by_key.rowsBetween(Window.unboundedPreceding, -1)
    rows = (
        marks.unionByName(positions)
        .withColumn("mark_ln", F.last(F.when(F.col("node").isNull(), F.col("ln")), ignorenulls=True).over(before))
        .where(F.col("node").isNotNull() & F.col("mark_ln").isNotNull())
    )
    first = rows.withColumn("k", F.row_number().over(Window.partitionBy(*key, "mark_ln").orderBy("ln"))).where("k = 1").drop("rewound_from")
    m = marks.where(F.col("rewound_from").isNotNull()).select(*key, F.col("ln").alias("mark_ln"), "rewound_from")
    found = first.join(F.broadcast(m), [*key, "mark_ln"]).where(F.col("offset") < F.col("rewound_from"))
    holds = timeline.where("starts").select(
        "run", "node", "tp", "hold", F.coalesce(F.col("exit.ln"), F.lit(NEVER)).alias("exit_ln")
    )
    f, h = found.alias("f"), F.broadcast(holds).alias("h")
    inside = [F.col(f"f.{k}") == F.col(f"h.{k}") for k in ("run", "node", "tp")] + [
        F.col("h.hold") <= F.col("f.ln"),
        F.col("f.ln") < F.col("h.exit_ln"),
    ]
    return f.join(h, inside).select(
        "f.run", "f.group", "f.node", "f.tp", "h.hold", F.col("f.offset").alias("lo"),
        F.col("f.rewound_from").alias("hi"), F.lit("admin_reset").alias("why"),
    )
