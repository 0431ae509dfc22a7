"""Reading event logs for Spark: every line parsed with the documented schema (FAILFAST), with
`run` (the index of its run directory) and `ln` (its line number in the file, from 0).

The line number is the log's own order (time, then actor, then the order an actor logged), which
the group rules need. Spark gives no line number, and `monotonically_increasing_id` alone depends
on how files are packed into partitions; but within one split of one file it counts rows in
order. So each line's number is its id minus the first id of its split, plus the lines of the
file's earlier splits, which a small aggregation over the splits gives.
"""

from __future__ import annotations

import re

from pathlib import Path
from urllib.parse import unquote, urlparse

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

from sim.analytics.schema import EVENT_SCHEMA

__all__ = ["BATCH", "NEVER", "PARTITION", "read_events", "write_events"]

NEVER = 1 << 62
"""A line number after every line (a hold that never ended, the end of a last segment)."""


def hadoop_path(path: Path) -> str:
    """`path` as Spark's reader takes it: a plain path, Hadoop's glob characters escaped. A
    `file:` URI would not do: Hadoop does not decode its escapes, so a directory whose name has
    a space or a comma (`%20`, `%2C`) is not found."""
    return re.sub(r"([\\*?\[\]{}])", r"\\\1", str(path))


def _local(uri: str) -> Path:
    return Path(unquote(urlparse(uri).path)).resolve()


def read_events(spark: SparkSession, run_dirs: list[Path]) -> DataFrame:
    """Every event of these runs; a malformed line fails the job when it is read.

    Column `run` is the index of the run directory in `run_dirs` (two directories may hold the
    same run id: the same scenario and seed, run twice)."""
    files = [(d / "events.jsonl").resolve() for d in run_dirs]
    raw = spark.read.text([hadoop_path(f) for f in files]).select(
        "value",
        F.col("_metadata.file_path").alias("path"),
        F.col("_metadata.file_block_start").alias("block"),
        F.monotonically_increasing_id().alias("id"),
    )
    splits = raw.groupBy("path", "block").agg(F.min("id").alias("first"), F.count("*").alias("lines")).collect()
    run_of = {f: i for i, f in enumerate(files)}
    shift: dict[str, tuple[int, int]] = {}
    seen: dict[str, int] = {}
    for split in sorted(splits, key=lambda s: (s["path"], s["block"])):
        before = seen.get(split["path"], 0)
        shift[f"{split['path']}#{split['block']}"] = (run_of[_local(split["path"])], before - split["first"])
        seen[split["path"]] = before + split["lines"]
    key = F.concat_ws("#", "path", F.col("block").cast("string"))
    runs = F.create_map(*[x for k, (run, _) in shift.items() for x in (F.lit(k), F.lit(run))])
    deltas = F.create_map(*[x for k, (_, delta) in shift.items() for x in (F.lit(k), F.lit(delta))])
    parsed = F.from_json("value", EVENT_SCHEMA, {"mode": "FAILFAST"}).alias("e")
    return raw.select(
        parsed, runs[key].alias("run"), (F.col("id") + deltas[key]).alias("ln")
    ).select("e.*", "run", "ln")


def write_events(events: DataFrame, path: Path) -> None:
    """`read_events`' rows written once as Parquet, for analyses that read them again and again:
    a directory per event type (`event=records_processed`, ...), so that a job reads the files
    of the types it asks for and no others, and never compares an event's name row by row.
    Each file holds whole runs, each in its log's order, as a log read run by run gives them
    (the bench's copies of one run would otherwise be interleaved row by row, which compresses
    far better than real runs do). Read them back with `spark.read.parquet(path)`."""
    events.repartition("run").sortWithinPartitions("event", "run", "ln").write.partitionBy("event").parquet(str(path))


PARTITION = ["run", "topic", "partition"]
BATCH = ["run", "topic", "partition", "producer", "first_record"]
"""A batch: its producer and the number of its first record."""
