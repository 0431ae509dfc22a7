"""The record accumulator (`RecordAccumulator`, `ProducerBatch`): a queue of batches per
partition, the rules that make a node ready to send, and the drain into one request per node.

- A record goes into the last batch of its partition's queue if it fits in `batch.size` (a
  batch always takes its first record, however large); otherwise a new batch is created.
- A partition is sendable when its first batch is full, or more than one batch is queued, or
  `linger.ms` has passed since the batch was created; a retried batch waits its back-off after
  its last attempt instead: `retry.backoff.ms`, or from 3.7 `retry.backoff.ms * 2^(retries
  before)` with 20% jitter, up to `retry.backoff.max.ms` (KIP-580).
- A ready node is drained: from each partition it leads, in a rotating order for fairness, the
  first batch, until the request would pass `max.request.size` (the first batch always goes).
- A batch expires after `delivery.timeout.ms` from its creation (KIP-91), in the queue or in
  flight; before KIP-91 a queued batch expires after `request.timeout.ms` of waiting once it
  could have been sent (`maybeExpire`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from actors.backoff import RetryBackoff
from protocols.replication import RECORD_BATCH_OVERHEAD, RECORD_OVERHEAD

__all__ = ["ProducerBatch", "RecordAccumulator"]


@dataclass(slots=True, eq=False)
class ProducerBatch:
    """A batch of records for one partition, from creation to its final outcome."""

    id: int
    partition: int
    created_ms: int
    numbers: list[int] = field(default_factory=list)
    """The records' numbers (their values are `producer:number`)."""
    size_bytes: int = RECORD_BATCH_OVERHEAD
    attempts: int = 0
    """Sends so far; a batch is retried with attempts > 0."""
    last_attempt_ms: int = 0
    """When it was last sent or put back to be retried (the retry back-off counts from it)."""
    backoff_ms: int = 0
    """The back-off of its retry: `retry.backoff.ms`, or from 3.7 its exponential back-off
    for this attempt, drawn once when it was put back (KIP-580)."""
    closed: bool = False
    """Drained at least once: it takes no more records."""
    base_sequence: int = -1
    producer_id: int = -1
    producer_epoch: int = -1
    broker: int = -1
    """Where its last request went."""
    correlation_id: int = -1
    """Its request in flight, or -1."""
    sequence_reset: bool = False
    """Renumbered after an epoch bump (`sequenceHasBeenReset`)."""
    done: bool = False

    @property
    def count(self) -> int:
        return len(self.numbers)

    @property
    def last_sequence(self) -> int:
        return self.base_sequence + len(self.numbers) - 1 if self.base_sequence >= 0 else -1

    def expired(self, now_ms: int, delivery_timeout_ms: int | None) -> bool:
        return delivery_timeout_ms is not None and now_ms - self.created_ms >= delivery_timeout_ms


@dataclass(slots=True)
class Ready:
    """`ReadyCheckResult`: the nodes with something to send, how soon another partition may
    become sendable, and whether a queued partition has no known leader."""

    nodes: list[int]
    next_check_ms: int | None
    unknown_leader: bool


class RecordAccumulator:
    def __init__(self, batch_size: int, linger_ms: int, retry_backoff: RetryBackoff | int, record_bytes: int) -> None:
        self.batch_size = batch_size
        self.linger_ms = linger_ms
        if isinstance(retry_backoff, int):
            retry_backoff = RetryBackoff(retry_backoff, retry_backoff, exponential=False)
        self.retry_backoff = retry_backoff
        self.record_size = record_bytes + RECORD_OVERHEAD
        self.queues: dict[int, deque[ProducerBatch]] = {}
        """Partition -> its batches, oldest first; only partitions with batches are present."""
        self._next_id = 0
        self._drain_index: dict[int, int] = {}
        """Node -> where its next drain starts among its partitions (`nodesDrainIndex`)."""

    def __len__(self) -> int:
        return sum(len(q) for q in self.queues.values())

    def queued(self) -> Iterable[ProducerBatch]:
        for partition in sorted(self.queues):
            yield from self.queues[partition]

    def append(self, partition: int, number: int, now_ms: int, *, abort_on_new_batch: bool) -> ProducerBatch | None:
        """`RecordAccumulator.append`: into the last open batch if it has room, else a new
        batch, unless `abort_on_new_batch` (the sticky partitioner then picks again): None."""
        queue = self.queues.get(partition)
        if queue:
            last = queue[-1]
            if not last.closed and last.size_bytes + self.record_size <= self.batch_size:
                last.numbers.append(number)
                last.size_bytes += self.record_size
                return last
        if abort_on_new_batch:
            return None
        self._next_id += 1
        batch = ProducerBatch(self._next_id, partition, now_ms, [number], RECORD_BATCH_OVERHEAD + self.record_size)
        if queue is None:
            queue = self.queues[partition] = deque()
        queue.append(batch)
        return batch

    def ready(self, now_ms: int, leader_of: Callable[[int], int]) -> Ready:
        """`RecordAccumulator.ready`."""
        nodes: set[int] = set()
        next_check: int | None = None
        unknown_leader = False
        for partition in sorted(self.queues):
            queue = self.queues[partition]
            leader = leader_of(partition)
            if leader < 0:
                unknown_leader = True
                continue
            if leader in nodes:
                continue
            first = queue[0]
            backing_off = first.attempts > 0 and now_ms - first.last_attempt_ms < first.backoff_ms
            waited = now_ms - (first.last_attempt_ms if first.attempts > 0 else first.created_ms)
            wait = first.backoff_ms if backing_off else self.linger_ms
            full = len(queue) > 1 or first.size_bytes + self.record_size > self.batch_size
            if (full or waited >= wait) and not backing_off:
                nodes.add(leader)
            else:
                left = max(1, wait - waited)
                next_check = left if next_check is None else min(next_check, left)
        return Ready(sorted(nodes), next_check, unknown_leader)

    def drain(
        self,
        node: int,
        partitions: list[int],
        max_request_size: int,
        now_ms: int,
        may_send: Callable[[ProducerBatch], bool],
    ) -> list[ProducerBatch]:
        """`drainBatchesForOneNode`: the first batch of each of `node`'s partitions (those it
        leads, in order), from a rotating start, while the request stays under
        `max_request_size`. `may_send` holds back a partition (ordering, idempotence)."""
        if not partitions:
            return []
        start = self._drain_index.get(node, 0) % len(partitions)
        drained: list[ProducerBatch] = []
        size = 0
        for k in range(len(partitions)):
            partition = partitions[(start + k) % len(partitions)]
            queue = self.queues.get(partition)
            if not queue:
                continue
            first = queue[0]
            if first.attempts > 0 and now_ms - first.last_attempt_ms < first.backoff_ms:
                continue
            if drained and size + first.size_bytes > max_request_size:
                self._drain_index[node] = (start + k) % len(partitions)
                return drained
            if not may_send(first):
                continue
            queue.popleft()
            if not queue:
                del self.queues[partition]
            first.closed = True
            drained.append(first)
            size += first.size_bytes
        self._drain_index[node] = (start + 1) % len(partitions)
        return drained

    def reenqueue(self, batch: ProducerBatch, now_ms: int, *, in_sequence_order: bool) -> None:
        """Put a batch back to be retried: first in its queue, or (idempotent) among the
        retried batches at the head in sequence order (`insertInSequenceOrder`)."""
        batch.attempts += 1
        batch.last_attempt_ms = now_ms
        # `retryBackoff.backoff(attempts - 1)`: Kafka draws it again at each readiness check;
        # here once per retry, so that the batch's wait is one value the log can show.
        batch.backoff_ms = self.retry_backoff.backoff(batch.attempts - 1)
        batch.correlation_id = -1
        queue = self.queues.get(batch.partition)
        if queue is None:
            queue = self.queues[batch.partition] = deque()
        if not in_sequence_order or batch.base_sequence < 0:
            queue.appendleft(batch)
            return
        i = 0
        while i < len(queue) and 0 <= queue[i].base_sequence < batch.base_sequence:
            i += 1
        queue.insert(i, batch)

    def expired(self, now_ms: int, delivery_timeout_ms: int | None, request_timeout_ms: int) -> list[ProducerBatch]:
        """Queued batches past their delivery timeout (KIP-91), or, before it, queued batches
        that could have been sent `request.timeout.ms` ago (the pre-2.1 `maybeExpire`)."""
        found: list[ProducerBatch] = []
        for partition in sorted(self.queues):
            queue = self.queues[partition]
            kept: deque[ProducerBatch] = deque()
            for batch in queue:
                expired = now_ms >= self._expiry(batch, delivery_timeout_ms, request_timeout_ms)
                (found if expired else kept).append(batch)
            if len(kept) != len(queue):
                if kept:
                    self.queues[partition] = kept
                else:
                    del self.queues[partition]
        return found

    def next_expiry(self, delivery_timeout_ms: int | None, request_timeout_ms: int) -> int | None:
        """When the next queued batch expires, if any."""
        times = [
            self._expiry(queue[0], delivery_timeout_ms, request_timeout_ms) for queue in self.queues.values() if queue
        ]
        return min(times) if times else None

    def queue_sizes(self, partitions: Iterable[int]) -> list[int]:
        return [len(self.queues.get(p, ())) for p in partitions]

    def _expiry(self, batch: ProducerBatch, delivery_timeout_ms: int | None, request_timeout_ms: int) -> int:
        if delivery_timeout_ms is not None:
            return batch.created_ms + delivery_timeout_ms
        # ProducerBatch.maybeExpire before 2.1: from creation plus linger, or from the last
        # attempt plus the back-off for a retried batch.
        if batch.attempts > 0:
            return batch.last_attempt_ms + batch.backoff_ms + request_timeout_ms + 1
        return batch.created_ms + self.linger_ms + request_timeout_ms + 1
