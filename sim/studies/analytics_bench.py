"""`kafkasim bench --analytics`: the warm throughput of the duplicate and final-log jobs.

The events: one run of a consumer group under faults (`SCENARIO`, a consumer crash, an
expulsion and a broker crash), replicated with shifted run indexes (each copy is its own run
to the jobs) until there are at least `min_events`, and written to Parquet once
(`sim.analytics.events.write_events`: a directory per event type). The jobs then
run twice on `local[2]`, side by side as `kafkasim analyze` runs them; the second, warm, run is
timed: events per second is all the events over its wall time.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["SCENARIO", "analytics_figures"]

SCENARIO = """
[run]
name = "analytics-bench"
"duration.ms" = 30000
[network]
"latency.min.ms" = 1
"latency.max.ms" = 4
[cluster]
brokers = 3
[broker]
"min.insync.replicas" = 2
"offsets.topic.num.partitions" = 1
"group.initial.rebalance.delay.ms" = 300
"group.min.session.timeout.ms" = 1000
[[topics]]
name = "T"
partitions = 3
"replication.factor" = 3
[[producers]]
topic = "T"
acks = "all"
records = 5000
"interval.ms" = 5
[[consumers]]
"group.id" = "bench"
topics = ["T"]
count = 3
"session.timeout.ms" = 3000
"heartbeat.interval.ms" = 1000
"max.poll.interval.ms" = 4000
"max.poll.records" = 20
"auto.offset.reset" = "earliest"
"process.record.ms" = 2
[[faults]]
kind = "crash"
node = "consumer-1"
"at.ms" = 6000
"restart.after.ms" = 2000
[[faults]]
kind = "pause"
node = "consumer-2"
"at.ms" = 12000
"duration.ms" = 4000
[[faults]]
kind = "crash"
node = "broker-2"
"at.ms" = 18000
"restart.after.ms" = 2000
"""


def _jvm_cpu_s(spark: Any) -> float:
    """CPU seconds the driver's JVM has used (user and system, from /proc; 0 where there is none)."""
    pid = spark.sparkContext._gateway.proc.pid  # noqa: SLF001 - the JVM pyspark launched
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cpu_s(spark: Any) -> float:
    """CPU seconds of this process and Spark's JVM together: the jobs' cost on a shared machine."""
    return time.process_time() + _jvm_cpu_s(spark)


def analytics_figures(min_events: int = 5_000_000, master: str = "local[2]") -> dict[str, Any]:
    from pyspark.sql import functions as F  # noqa: N812, PLC0415 - Spark only when asked

    from sim.analytics.duplicates import duplicates_by_run  # noqa: PLC0415
    from sim.analytics.events import read_events, write_events  # noqa: PLC0415
    from sim.analytics.final_logs import final_log_figures  # noqa: PLC0415
    from sim.analytics.session import spark_session, together  # noqa: PLC0415
    from sim.cluster.scenario import parse_scenario  # noqa: PLC0415
    from sim.engine.kernel import HostKind  # noqa: PLC0415
    from sim.studies.runner import run_scenario  # noqa: PLC0415

    with tempfile.TemporaryDirectory(prefix="kafkasim-analytics-") as tmp:
        run_dir = Path(tmp) / "run"
        summary = run_scenario(parse_scenario(SCENARIO, "analytics bench"), run_dir, host=HostKind.DIRECT)
        copies = -(-min_events // summary["events"])
        spark = spark_session(master, quiet=True)
        try:
            one = read_events(spark, [run_dir]).drop("run")
            many = one.crossJoin(spark.range(copies).withColumnRenamed("id", "run")).withColumn(
                "run_id", F.concat_ws("#", "run_id", F.col("run").cast("string"))
            )
            parquet = Path(tmp) / "events.parquet"
            write_events(many, parquet)
            events = spark.read.parquet(str(parquet))
            total = events.count()
            walls, cpus = [], []
            for _ in range(2):
                started, cpu = time.perf_counter(), _cpu_s(spark)
                groups, logs = together(lambda: duplicates_by_run(events, copies), lambda: final_log_figures(events, copies))
                walls.append(time.perf_counter() - started)
                cpus.append(_cpu_s(spark) - cpu)
        finally:
            spark.stop()
    same = all(g == groups[0] for g in groups) and all(g == logs[0] for g in logs)
    return {
        "events": total,
        "runs": copies,
        "source_events": summary["events"],
        "cold_s": round(walls[0], 2),
        "warm_s": round(walls[1], 2),
        "events_per_s": round(total / walls[1]),
        "warm_cpu_s": round(cpus[1], 2),
        "events_per_cpu_s": round(total / cpus[1]),
        "load_average": round(os.getloadavg()[0], 1),
        "master": master,
        "copies_agree": same,
        "duplicates_per_run": groups[0]["duplicates"],
        "summary_duplicates": summary["duplicates"],
    }
