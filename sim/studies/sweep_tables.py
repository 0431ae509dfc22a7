"""A sweep's tables, built with Spark DataFrames from every run's summary.json.

`runs`: one row per (configuration, seed): the grid values, the seed, and the run's figures,
with one `duplicates_<cause>` column per cause. `configs`: one row per configuration: `n` (the
runs that finished: no simulator failure, no interrupt), `failed`, and for each of `FIGURES`
its mean, sample standard deviation and the 95% confidence interval of the mean, Student's t
with n - 1 degrees of freedom (empty below two runs), its low end clipped at 0: every figure is
a count or a duration, which is never negative. Both are written as Parquet (a directory,
as Spark writes it) and as one CSV file with a header; grid keys are the column names, dots
and all (quote them in Spark SQL: `` `consumers.1.linger.ms` ``).
"""

from __future__ import annotations

import shutil
from collections.abc import Collection
from pathlib import Path
from typing import Any

from sim.studies.stats import t_quantile
from sim.studies.sweep_plan import SweepPlan

__all__ = ["DUPLICATE_CAUSES", "FIGURES", "SKIP_CAUSES", "build_tables", "write_table"]

FIGURES = ("duplicates", "skipped", "consumed", "rebalances", "acked", "lost_acked", "log_duplicates", "processed_then_lost", "wall_s")
"""The figures the per-configuration table summarises."""

DUPLICATE_CAUSES = (
    "crash_before_commit",
    "expelled_session_timeout",
    "poll_interval_exceeded",
    "static_poll_timeout_self_replay",
    "unsubscribe_without_commit",
    "coordinator_failover",
    "commit_failed_or_fenced",
    "cooperative_revocation_gap",
    "revoked_without_commit",
    "log_truncation_or_reset",
)
"""sim.cluster.accounting' labels, so every sweep has the same columns; a label a run shows that is not
listed here (`unexplained`, or one added later) gets its column too."""

SKIP_CAUSES = (
    "reset_latest_no_commit",
    "offsets_expired_reset",
    "out_of_range_reset",
    "committed_before_processed",
    "admin_reset",
)
"""sim.cluster.skips' causes, listed for the same reason."""

_COUNTS = (
    "produced", "acked", "lost_acked", "reused_offsets", "log_duplicates", "consumed", "duplicates", "skipped",
    "processed_then_lost", "rebalances",
)


def _summary_schema() -> Any:
    from pyspark.sql import types as T  # noqa: PLC0415, N812

    def longs(*names: str) -> list[Any]:
        return [T.StructField(n, T.LongType()) for n in names]

    return T.StructType(
        [
            T.StructField("run_id", T.StringType()),
            *longs("seed", "sim_ms", "events"),
            T.StructField("events_digest", T.StringType()),
            T.StructField("wall_s", T.DoubleType()),
            *longs(*_COUNTS),
            T.StructField("duplicates_by_cause", T.MapType(T.StringType(), T.LongType())),
            T.StructField("skipped_by_cause", T.MapType(T.StringType(), T.LongType())),
            # Only counted: an element that is an object is read as its JSON text.
            T.StructField("consumer_failures", T.ArrayType(T.StringType())),
            T.StructField("invariant_violations", T.ArrayType(T.StringType())),
            T.StructField("interrupted", T.BooleanType()),
            T.StructField("failure", T.StringType()),
        ]
    )


def _grid_type(values: list[Any]) -> Any:
    from pyspark.sql import types as T  # noqa: PLC0415, N812

    if all(isinstance(v, bool) for v in values):
        return T.BooleanType()
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return T.LongType()
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return T.DoubleType()
    return T.StringType()


def _plan_frame(spark: Any, plan: SweepPlan, only: Collection[str] | None) -> Any:
    """One row per run of the plan (of those named in `only`): run name, configuration, grid
    values, seed."""
    from pyspark.sql import types as T  # noqa: PLC0415, N812

    types = [_grid_type([c.values[i] for c in plan.configs]) for i in range(len(plan.grids))]
    fields = [T.StructField("run", T.StringType()), T.StructField("config_id", T.StringType())]
    fields += [T.StructField(key, t) for key, t in zip(plan.grid_keys, types, strict=True)]
    fields.append(T.StructField("seed", T.LongType()))
    rows = []
    for config in plan.configs:
        cells = [
            str(v) if isinstance(t, T.StringType) else float(v) if isinstance(t, T.DoubleType) else v
            for v, t in zip(config.values, types, strict=True)
        ]
        for seed in range(1, plan.seeds + 1):
            if only is None or plan.run_name(config, seed) in only:
                rows.append((plan.run_name(config, seed), config.config_id, *cells, seed))
    return spark.createDataFrame(rows, T.StructType(fields))


def _q(name: str) -> Any:
    from pyspark.sql import functions as F  # noqa: PLC0415, N812

    return F.col(f"`{name}`")


def build_tables(spark: Any, plan: SweepPlan, out: Path, only: Collection[str] | None = None) -> tuple[Any, Any]:
    """The `runs` and `configs` DataFrames of the sweep in `out` (not yet written): of every
    run of the plan, or of the runs named in `only` (a sweep stopped part way)."""
    from pyspark.sql import functions as F  # noqa: PLC0415, N812

    runs_dir = out.resolve() / "runs"
    planned = _plan_frame(spark, plan, only)
    paths = [str(p) for p in sorted(runs_dir.glob("*/summary.json"))]
    summaries = (
        spark.read.schema(_summary_schema()).option("multiLine", True).json(paths)
        .withColumn("run", F.regexp_extract(F.input_file_name(), r"/runs/([^/]+)/summary\.json$", 1))
        .drop("seed")
        if paths
        else spark.createDataFrame([], _summary_schema()).withColumn("run", F.lit("")).drop("seed")
    )
    joined = planned.join(summaries, "run", "left")
    causes = _causes(joined, "duplicates_by_cause", DUPLICATE_CAUSES)
    skip_causes = _causes(joined, "skipped_by_cause", SKIP_CAUSES)
    grid_cols = [_q(k) for k in plan.grid_keys]
    no_summary = F.col("run_id").isNull()
    runs = joined.select(
        "config_id",
        *grid_cols,
        "seed",
        "run_id",
        F.concat(F.lit("runs/"), F.col("run")).alias("run_dir"),
        "duplicates",
        *[F.coalesce(F.col("duplicates_by_cause")[c], F.when(~no_summary, F.lit(0))).alias(f"duplicates_{c}") for c in causes],
        "skipped",
        *[F.coalesce(F.col("skipped_by_cause")[c], F.when(~no_summary, F.lit(0))).alias(f"skipped_{c}") for c in skip_causes],
        "processed_then_lost",
        "consumed",
        "rebalances",
        "produced",
        "acked",
        "lost_acked",
        "reused_offsets",
        "log_duplicates",
        F.size("invariant_violations").alias("invariant_violations"),
        F.size("consumer_failures").alias("consumer_failures"),
        "sim_ms",
        "events",
        "events_digest",
        "wall_s",
        "interrupted",
        F.when(no_summary, F.lit("no summary.json (see failure.txt)")).otherwise(F.col("failure")).alias("failure"),
    ).withColumn(
        # size() of a missing array is -1: a run without a summary has no counts at all.
        "invariant_violations", F.when(no_summary, None).otherwise(F.col("invariant_violations"))
    ).withColumn("consumer_failures", F.when(no_summary, None).otherwise(F.col("consumer_failures")))
    runs = runs.repartition(1).sortWithinPartitions("config_id", "seed")
    return runs, _configs(spark, plan, runs)


def _causes(joined: Any, column: str, known: tuple[str, ...]) -> list[str]:
    """The causes listed, then any other a run shows."""
    from pyspark.sql import functions as F  # noqa: PLC0415, N812

    seen = [r[0] for r in joined.select(F.explode(column)).select("key").distinct().collect()]
    return [*known, *sorted(set(seen) - set(known))]


def _configs(spark: Any, plan: SweepPlan, runs: Any) -> Any:
    from pyspark.sql import functions as F  # noqa: PLC0415, N812

    finished = F.col("failure").isNull() & ~F.col("interrupted")
    aggregates = [
        F.sum(F.when(finished, 1).otherwise(0)).alias("n"),
        F.sum(F.when(finished, 0).otherwise(1)).alias("failed"),
    ]
    for figure in FIGURES:
        value = F.when(finished, F.col(figure))
        aggregates += [F.mean(value).alias(f"{figure}_mean"), F.stddev_samp(value).alias(f"{figure}_sd")]
    stats = runs.groupBy("config_id", *[_q(k) for k in plan.grid_keys]).agg(*aggregates)
    # The t factor per sample size, as a small table joined on n.
    factors = spark.createDataFrame(
        [(n, t_quantile(0.975, n - 1)) for n in range(2, plan.seeds + 1)], "n long, t975 double"
    )
    stats = stats.join(factors, "n", "left")
    columns = ["config_id", *[_q(k) for k in plan.grid_keys], "n", "failed"]
    for figure in FIGURES:
        mean, sd = F.col(f"{figure}_mean"), F.col(f"{figure}_sd")
        half = F.col("t975") * sd / F.sqrt(F.col("n"))
        # Every figure is a count (or a duration): never below 0, so neither is its interval.
        low = mean - half
        columns += [mean, sd, F.when(low < 0, 0.0).otherwise(low).alias(f"{figure}_ci95_low"), (mean + half).alias(f"{figure}_ci95_high")]
    return stats.select(*columns).repartition(1).sortWithinPartitions("config_id")


def write_table(df: Any, out: Path, name: str) -> None:
    """`out/NAME.parquet` (Spark's directory) and `out/NAME.csv` (one file, with a header)."""
    df.write.mode("overwrite").parquet(str(out.resolve() / f"{name}.parquet"))
    scratch = out.resolve() / f".{name}.csv.parts"
    df.write.mode("overwrite").option("header", True).csv(str(scratch))
    (part,) = scratch.glob("part-*.csv")
    part.replace(out / f"{name}.csv")
    shutil.rmtree(scratch)


def rows(df: Any) -> list[dict[str, Any]]:
    return [row.asDict() for row in df.collect()]
