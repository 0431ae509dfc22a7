"""The explicit schema the analytics read event logs with (docs/log-schema.md).

Only documented fields are read. A field name has one type across every event, so one schema
reads the whole log; lines are read with `mode=FAILFAST`, so a malformed line or a type that does
not match stops the job instead of becoming a silent null. Two fields have one type per event
and differ between events, so they are read as their JSON text and parsed where a job needs
them: `partitions` (a list of partition names in the consumers' events, a count in
`controller_request_sent`) and `records` (a list of record numbers in the producer's events, a
count in `records_processed`); so is `offsets`, whose `[topic, partition, offset]` triples mix
strings and numbers.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    LongType,
    StringType,
    StructField,
    StructType,
)

__all__ = ["EVENT_SCHEMA"]

_LONG = (
    "ts_ms",
    "seed",
    "incarnation",
    "bytes",
    "rtt_ms",
    "total",
    "until_ms",
    "pings_answered",
    "partition",
    "leader_epoch",
    "log_end_offset",
    "high_watermark",
    "base_offset",
    "count",
    "batch",
    "attempt",
    "created_ms",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "acks",
    "partition_epoch",
    "from_offset",
    "to_offset",
    "generation_id",
    "first_offset",
    "end_offset",
    "broker_id",
    "log_start_offset",
    "offset",
    "correlation_id",
)
_STRING = (
    "run_id",
    "node",
    "actor",
    "event",
    "target",
    "kind",
    "reason",
    "src",
    "dst",
    "peer",
    "scenario",
    "kafka_version",
    "topic",
    "role",
    "error",
    "producer",
    "invariant",
    "group_id",
    "member_id",
    "partitions",
    "records",
    "source",
    "commit",
    "offsets",
    "api",
    "owner",
)

EVENT_SCHEMA = StructType(
    [StructField(name, LongType()) for name in _LONG[:2]]
    + [StructField(name, StringType()) for name in _STRING]
    + [StructField(name, LongType()) for name in _LONG[2:]]
    + [
        StructField("one_way", BooleanType()),
        StructField("static", BooleanType()),
        StructField("enable_auto_commit", BooleanType()),
        StructField("isr", ArrayType(LongType())),
        StructField("members", ArrayType(StringType())),
    ]
)
