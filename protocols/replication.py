"""Replication and produce messages: Produce, Fetch, LeaderAndIsr, OffsetForLeaderEpoch,
AlterPartition.

Field names are Kafka's (`fetch_offset`, `last_fetched_epoch`, `current_leader_epoch`,
`high_watermark`, `diverging_epoch`, `partition_epoch`). Partition maps travel as tuples of
structures, since msgpack map keys must be strings. Versions here are this registry's own: a
field added later says `since`.

Fetch sessions (KIP-227) between brokers: a request with `session_epoch` 0 lists every partition
and opens a new session; a request with a later epoch lists only the partitions whose fetch
position changed or that joined the session (`partitions`), and those that left it
(`forgotten`), and is answered with only the partitions that have something new. The leader reads
every partition of the session either way. There is no session id: a leader keeps one session per
follower broker, and a follower has one fetcher per leader. Consumers fetch without a session.

Left out: compression, record keys, headers and timestamps, topic ids.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocols.errors import ErrorCode
from protocols.keys import ApiKey
from protocols.registry import Kind, field, message, struct

RECORD_BATCH_OVERHEAD = 61
"""Bytes of a batch's header (`DefaultRecordBatch.RECORD_BATCH_OVERHEAD`)."""
RECORD_OVERHEAD = 8
"""Bytes a small record adds besides its key and value: its length, attributes, timestamp and
offset deltas, key and value lengths and header count, each a varint of one or two bytes."""


def batch_size_bytes(record_bytes: int, count: int) -> int:
    """The size of a batch of `count` records of `record_bytes` (key and value) each."""
    return RECORD_BATCH_OVERHEAD + count * (record_bytes + RECORD_OVERHEAD)


@struct
@dataclass(frozen=True, slots=True)
class RecordBatch:
    """A batch of records as the producer built it and every replica stores it: the unit of a
    partition log, of a produce and of a fetch. Each value names its producer and the record's
    number (`producer-1:17`), so a record written twice (a producer retry) is told apart from
    one consumed twice. Decoded, `values` is a tuple; a log holds it as a `ValueRun` where it
    is one (`protocols.records`), which encodes to the same list of strings."""

    base_offset: int
    leader_epoch: int
    """The leader epoch it was written in (KIP-101's partitionLeaderEpoch)."""
    values: tuple[str, ...]
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    """The idempotent producer's sequence of the first record; -1 without idempotence."""
    size_bytes: int = 0
    """Its size on the wire, which the fetch size limits count."""

    @property
    def count(self) -> int:
        return len(self.values)

    @property
    def end_offset(self) -> int:
        """The offset after its last record."""
        return self.base_offset + len(self.values)

    @property
    def last_offset(self) -> int:
        return self.base_offset + len(self.values) - 1

    @property
    def last_sequence(self) -> int:
        return self.base_sequence + len(self.values) - 1 if self.base_sequence >= 0 else -1

    def slice(self, start: int, end: int) -> RecordBatch:
        """The records of offsets [start, end) as a batch of their own (sizes prorated)."""
        lo, hi = max(start, self.base_offset) - self.base_offset, min(end, self.end_offset) - self.base_offset
        values = self.values[lo:hi]
        size = RECORD_BATCH_OVERHEAD + (self.size_bytes - RECORD_BATCH_OVERHEAD) * len(values) // max(1, self.count)
        sequence = self.base_sequence + lo if self.base_sequence >= 0 else -1
        return RecordBatch(
            self.base_offset + lo, self.leader_epoch, values, self.producer_id, self.producer_epoch, sequence, size
        )


# --------------------------------------------------------------------------- Produce (0)


@struct
@dataclass(frozen=True, slots=True)
class ProducePartitionData:
    topic: str
    partition: int
    values: tuple[str, ...]
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    size_bytes: int = 0


@struct
@dataclass(frozen=True, slots=True)
class ProducePartitionResponse:
    topic: str
    partition: int
    error_code: ErrorCode
    base_offset: int = -1


@message(ApiKey.PRODUCE, kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class ProduceResponse:
    partitions: tuple[ProducePartitionResponse, ...]


@message(ApiKey.PRODUCE, kind=Kind.REQUEST, response=ProduceResponse)
@dataclass(frozen=True, slots=True)
class ProduceRequest:
    acks: int
    """0, 1 or -1 (all)."""
    timeout_ms: int
    """How long a DelayedProduce may wait (the producer sends request.timeout.ms)."""
    partitions: tuple[ProducePartitionData, ...]


# --------------------------------------------------------------------------- Fetch (1)


@struct
@dataclass(frozen=True, slots=True)
class FetchPartition:
    topic: str
    partition: int
    fetch_offset: int
    last_fetched_epoch: int = -1
    """The epoch of the last record the follower has (KAFKA-10554 truncation on fetch)."""
    current_leader_epoch: int = -1
    """The epoch the fetcher believes current (KIP-320 fencing); -1: not checked."""
    partition_max_bytes: int = 1048576
    """At most this many bytes of this partition, but at least its first batch (KIP-74)."""


@struct
@dataclass(frozen=True, slots=True)
class EpochEndOffset:
    epoch: int
    end_offset: int


@struct
@dataclass(frozen=True, slots=True)
class FetchedPartition:
    topic: str
    partition: int
    error_code: ErrorCode
    high_watermark: int
    records: tuple[RecordBatch, ...] = ()
    diverging_epoch: EpochEndOffset | None = None
    log_start_offset: int = 0


@struct
@dataclass(frozen=True, slots=True)
class ForgottenPartition:
    """A partition that left an incremental fetch session (`forgotten_topics_data`)."""

    topic: str
    partition: int


@message(ApiKey.FETCH, kind=Kind.RESPONSE, versions=(0, 2))
@dataclass(frozen=True, slots=True)
class FetchResponse:
    partitions: tuple[FetchedPartition, ...]
    error_code: ErrorCode = field(default=ErrorCode.NONE, since=2)
    """A session's error (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH): no partitions
    were read, and the fetcher starts a new session."""


@message(ApiKey.FETCH, kind=Kind.REQUEST, versions=(0, 2), response=FetchResponse)
@dataclass(frozen=True, slots=True)
class FetchRequest:
    replica_id: int
    """The fetching broker's id; -1 for a consumer."""
    max_wait_ms: int
    min_bytes: int
    partitions: tuple[FetchPartition, ...]
    isolation_level: int = 0
    """0 read_uncommitted (up to the HW), 1 read_committed (up to the LSO); followers: LEO."""
    session_epoch: int = field(default=0, since=1)
    """KIP-227: 0 opens a new fetch session (a full request and a full answer); a later epoch
    must be the one the leader expects next, and both the request and its answer are
    incremental."""
    forgotten: tuple[ForgottenPartition, ...] = field(default=(), since=2)
    """The partitions that left the session since the last request (incremental requests)."""


# --------------------------------------------------------------------------- LeaderAndIsr (4)


@struct
@dataclass(frozen=True, slots=True)
class LeaderAndIsrPartition:
    topic: str
    partition: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    """The zkVersion of the partition-state znode."""
    replicas: tuple[int, ...]
    is_new: bool = False


@struct
@dataclass(frozen=True, slots=True)
class LeaderAndIsrPartitionError:
    topic: str
    partition: int
    error_code: ErrorCode


@message(ApiKey.LEADER_AND_ISR, kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class LeaderAndIsrResponse:
    error_code: ErrorCode
    partitions: tuple[LeaderAndIsrPartitionError, ...] = ()


@message(ApiKey.LEADER_AND_ISR, kind=Kind.REQUEST, response=LeaderAndIsrResponse)
@dataclass(frozen=True, slots=True)
class LeaderAndIsrRequest:
    controller_id: int
    controller_epoch: int
    partitions: tuple[LeaderAndIsrPartition, ...]
    broker_epoch: int = -1


# --------------------------------------------------------------------------- OffsetForLeaderEpoch (23)


@struct
@dataclass(frozen=True, slots=True)
class OffsetForLeaderEpochPartition:
    topic: str
    partition: int
    leader_epoch: int
    current_leader_epoch: int = -1


@struct
@dataclass(frozen=True, slots=True)
class EpochEndOffsetResult:
    topic: str
    partition: int
    error_code: ErrorCode
    leader_epoch: int
    end_offset: int


@message(ApiKey.OFFSET_FOR_LEADER_EPOCH, kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class OffsetForLeaderEpochResponse:
    partitions: tuple[EpochEndOffsetResult, ...]


@message(ApiKey.OFFSET_FOR_LEADER_EPOCH, kind=Kind.REQUEST, response=OffsetForLeaderEpochResponse)
@dataclass(frozen=True, slots=True)
class OffsetForLeaderEpochRequest:
    replica_id: int
    partitions: tuple[OffsetForLeaderEpochPartition, ...]


# --------------------------------------------------------------------------- AlterPartition (56)


@struct
@dataclass(frozen=True, slots=True)
class AlterPartitionItem:
    topic: str
    partition: int
    leader_epoch: int
    new_isr: tuple[int, ...]
    partition_epoch: int


@struct
@dataclass(frozen=True, slots=True)
class AlterPartitionResult:
    topic: str
    partition: int
    error_code: ErrorCode
    leader_id: int = -1
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()
    partition_epoch: int = -1


@message(ApiKey.ALTER_PARTITION, kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class AlterPartitionResponse:
    error_code: ErrorCode
    partitions: tuple[AlterPartitionResult, ...] = ()


@message(ApiKey.ALTER_PARTITION, kind=Kind.REQUEST, response=AlterPartitionResponse)
@dataclass(frozen=True, slots=True)
class AlterPartitionRequest:
    broker_id: int
    broker_epoch: int
    partitions: tuple[AlterPartitionItem, ...]


# --------------------------------------------------------------------------- ListOffsets (2)

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2


@struct
@dataclass(frozen=True, slots=True)
class ListOffsetsPartition:
    topic: str
    partition: int
    timestamp: int
    """-1 latest, -2 earliest; else a time in ms: the first offset whose record is that recent
    (-1 in the answer when there is none)."""
    current_leader_epoch: int = -1


@struct
@dataclass(frozen=True, slots=True)
class ListOffsetsPartitionResponse:
    topic: str
    partition: int
    error_code: ErrorCode
    offset: int = -1
    leader_epoch: int = -1


@message(ApiKey.LIST_OFFSETS, kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class ListOffsetsResponse:
    partitions: tuple[ListOffsetsPartitionResponse, ...]


@message(ApiKey.LIST_OFFSETS, kind=Kind.REQUEST, response=ListOffsetsResponse)
@dataclass(frozen=True, slots=True)
class ListOffsetsRequest:
    replica_id: int
    """A broker's id: latest is the LEO; -1 (a consumer): latest is the HW."""
    partitions: tuple[ListOffsetsPartition, ...]
