"""The claims a leader's sticky assignor threw away for their older generation (KAFKA-14639),
which the duplicate rules read: a partition so given to another member in the same rebalance
ends its earlier hold as `kafka_14639` (see `sim.analytics.duplicates`)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention
from pyspark.sql.types import ArrayType, StringType

__all__ = ["thrown_away_claims"]


def thrown_away_claims(events: DataFrame) -> DataFrame:
    """(run, group, generation, member, tp) whose claim the leader's assignor threw away for the
    member's older generation (`owned_partitions_ignored`), in the releases that did so: 2.6.0
    to 3.4.0 (KAFKA-14639)."""
    version = r"^(\d+)\.(\d+)(?:\.(\d+))?$"
    major, minor, patch = (
        F.coalesce(F.nullif(F.regexp_extract("kafka_version", version, i), F.lit("")), F.lit("0")).cast("int") for i in (1, 2, 3)
    )
    release = major * 1_000_000 + minor * 1_000 + patch
    runs = events.where((F.col("event") == "run_started") & release.between(2_006_000, 3_004_000)).select("run")
    names = F.explode(F.from_json("partitions", ArrayType(StringType()))).alias("tp")
    claims = events.where(F.col("event") == "owned_partitions_ignored").select(
        "run", F.col("group_id").alias("t_group"), F.col("generation_id").alias("t_generation"), F.col("owner").alias("t_member"), names
    )
    return claims.join(F.broadcast(runs), "run").withColumn("thrown_away", F.lit(True)).distinct()
