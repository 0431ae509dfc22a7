"""A partition's idempotent-producer state (`ProducerStateManager`, `ProducerStateEntry`,
`ProducerAppendInfo`): per producer id, its epoch and the last five batches written.

A batch from an idempotent producer is checked before it is appended:
- a lower epoch than the one known is fenced (INVALID_PRODUCER_EPOCH);
- a batch whose epoch and sequence range match one of the five cached batches is a duplicate:
  it is not appended, and the answer is success with the offsets it was first written at;
- otherwise its first sequence must follow the last one written (wrapping at Int.MAX to 0), or
  be 0 for a new epoch; else OUT_OF_ORDER_SEQUENCE_NUMBER;
- a producer id with no state is accepted with any sequence (the state may have been removed)
  from 2.5 (KIP-360); before, only from sequence 0, else UNKNOWN_PRODUCER_ID.

Every replica keeps this state from the batches it appends, leader or follower, so a new leader
knows it at once; after a truncation or a restart it is rebuilt from the log (Kafka reloads a
snapshot, then reads the log after it: the same result).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from protocols.errors import ErrorCode
from protocols.replication import RecordBatch

__all__ = ["NUM_BATCHES_TO_RETAIN", "ProducerStateManager"]

NUM_BATCHES_TO_RETAIN = 5
INT_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int


@dataclass(slots=True)
class ProducerStateEntry:
    epoch: int
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_sequence if self.batches else -1


@dataclass(frozen=True, slots=True)
class Verdict:
    """The check of one incoming batch: its error, or the batch it duplicates."""

    error: ErrorCode = ErrorCode.NONE
    duplicate_of: BatchMetadata | None = None


def in_sequence(last_sequence: int, next_sequence: int) -> bool:
    """`ProducerStateEntry.inSequence`: the next sequence follows, wrapping at Int.MAX."""
    return next_sequence == last_sequence + 1 or (next_sequence == 0 and last_sequence == INT_MAX)


class ProducerStateManager:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerStateEntry] = {}

    def check(
        self, producer_id: int, producer_epoch: int, first_sequence: int, count: int, *, accept_unknown: bool = True
    ) -> Verdict:
        """`analyzeAndValidateProducerState` for a batch the leader is about to append.
        `accept_unknown`: KIP-360 (2.5) accepts any sequence from a producer id with no state;
        before, only sequence 0 was, and another got UNKNOWN_PRODUCER_ID."""
        if producer_id < 0:
            return Verdict()
        entry = self.producers.get(producer_id)
        if entry is None:
            if accept_unknown or first_sequence == 0:
                return Verdict()
            return Verdict(ErrorCode.UNKNOWN_PRODUCER_ID)
        if producer_epoch < entry.epoch:
            return Verdict(ErrorCode.INVALID_PRODUCER_EPOCH)
        last_sequence = first_sequence + count - 1
        if producer_epoch == entry.epoch:
            for cached in entry.batches:
                if (cached.first_sequence, cached.last_sequence) == (first_sequence, last_sequence):
                    return Verdict(duplicate_of=cached)
            if entry.batches and not in_sequence(entry.last_sequence, first_sequence):
                return Verdict(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
        elif first_sequence != 0:
            return Verdict(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)  # a new epoch starts at 0
        return Verdict()

    def update(self, batch: RecordBatch) -> None:
        """Record a batch the log now holds (leader or follower append)."""
        if batch.producer_id < 0:
            return
        entry = self.producers.get(batch.producer_id)
        if entry is None or batch.producer_epoch > entry.epoch:
            entry = self.producers[batch.producer_id] = ProducerStateEntry(batch.producer_epoch)
        entry.batches.append(
            BatchMetadata(batch.base_sequence, batch.last_sequence, batch.base_offset, batch.last_offset)
        )

    @classmethod
    def rebuilt(cls, batches: Iterable[RecordBatch]) -> ProducerStateManager:
        """The state a log implies (`rebuildProducerState`)."""
        manager = cls()
        for batch in batches:
            manager.update(batch)
        return manager
