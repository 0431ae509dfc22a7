"""One replica's log of one partition, with the files Kafka keeps for it.

Models the parts of `UnifiedLog` the simulator needs: append as leader (offsets and the leader
epoch assigned here) or as follower (offsets from the leader), truncation, reads up to a bound,
the HW (`updateHighWatermark` clamps it to [log start, LEO]) and the leader-epoch cache.

The log is a list of record batches, as the producer built them: one object per batch, shared
by the log, the page cache and every fetch response that carries it (nothing is copied). Offsets
are found by bisecting the batches' end offsets. Kafka truncates and reads at batch boundaries,
and replicas that copy whole batches keep their boundaries aligned; where a bound falls inside a
batch anyway (a log prepared record by record, say), the batch is cut at it.

Memory per record is what bounds a long run, so a batch's values are held as a run
(`protocols.records.ValueRun`) where they are one, and a follower whose fetched batch equals the
one its leader appended in this process keeps the leader's object (`_SharedBatches`): the three
replicas of a batch cost one batch. The per-batch offsets are arrays of machine integers.

Durability follows Kafka, which does not fsync on acknowledge: records go to the page cache (`Append`, never
flushed on acknowledge), the leader-epoch checkpoint is rewritten and fsynced on every change,
and the HW reaches `replication-offset-checkpoint` only when the broker's periodic task calls
`checkpoint_high_watermark` (every `replica.high.watermark.checkpoint.interval.ms`), so after a
restart the HW can be stale. `recover` rebuilds the replica from whatever the crash left.

Left out: segments, the log start offset moving (retention), compaction, transactions.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections import OrderedDict
from itertools import accumulate
from dataclasses import dataclass, field, replace
from typing import Any

from actors.broker.epoch_cache import EpochCache, EpochEntry
from actors.broker.producer_state import ProducerStateManager
from actors.core import Append, Out, WriteFile
from protocols.records import LogEntries, compact_values
from protocols.replication import RecordBatch, batch_size_bytes
from protocols.types import TopicPartition

__all__ = ["PartitionLog", "epoch_file", "hw_file", "log_file", "partitions_on_disk"]


def log_file(tp: TopicPartition) -> str:
    return f"{tp}/log"


def partitions_on_disk(disk: dict[str, Any]) -> list[TopicPartition]:
    """The partitions whose log a disk holds (files named `T-0/log`), in order."""
    found = []
    for name in sorted(disk):
        if name.endswith("/log"):
            topic, _, partition = name.removesuffix("/log").rpartition("-")
            found.append(TopicPartition(topic, int(partition)))
    return found


def epoch_file(tp: TopicPartition) -> str:
    return f"{tp}/leader-epoch-checkpoint"


def hw_file(tp: TopicPartition) -> str:
    return f"{tp}/replication-offset-checkpoint"


class _SharedBatches:
    """The batches leaders appended last in this process, so that a follower keeps the leader's
    object instead of the copy it decoded from its fetch answer (they are equal and immutable:
    which one a replica holds changes nothing it does). Like `sys.intern`, it spans the
    process; a follower fetches a batch within milliseconds, so the newest few thousand do."""

    LIMIT = 8192

    def __init__(self) -> None:
        self._batches: OrderedDict[tuple[TopicPartition, int], RecordBatch] = OrderedDict()

    def add(self, tp: TopicPartition, batch: RecordBatch) -> None:
        self._batches[(tp, batch.base_offset)] = batch
        if len(self._batches) > self.LIMIT:
            self._batches.popitem(last=False)  # one call: atomic under the actor threads' GIL

    def share(self, tp: TopicPartition, batch: RecordBatch) -> RecordBatch:
        """The leader's equal batch, else `batch` with its values compact."""
        leader = self._batches.get((tp, batch.base_offset))
        if leader is not None and leader == batch:
            return leader
        return replace(batch, values=compact_values(batch.values))


_SHARED = _SharedBatches()


@dataclass(slots=True)
class PartitionLog:
    """A replica's batches, HW and epoch cache; every change returns the disk commands for it."""

    tp: TopicPartition
    batches: list[RecordBatch] = field(default_factory=list)
    high_watermark: int = 0
    epochs: EpochCache = field(default_factory=EpochCache)
    _ends: array[int] = field(default_factory=lambda: array("q"))
    """Each batch's end offset, for bisecting."""
    _positions: array[int] = field(default_factory=lambda: array("q"))
    """The log's size in bytes after each batch (a segment's file position)."""
    producers: ProducerStateManager = field(default_factory=ProducerStateManager)
    """The idempotent producers' last batches, kept from every append."""

    def __post_init__(self) -> None:
        self._ends = array("q", (batch.end_offset for batch in self.batches))
        self._positions = array("q", accumulate(batch.size_bytes for batch in self.batches))
        self.producers = ProducerStateManager.rebuilt(self.batches)

    @property
    def log_end_offset(self) -> int:
        return self._ends[-1] if self._ends else 0

    @property
    def latest_epoch(self) -> int:
        return self.epochs.latest_epoch

    def entries(self) -> LogEntries:
        """Every record as (offset, leader epoch, value), made as they are read: for checks and
        tests, not the hot path."""
        return LogEntries(self.batches)

    @classmethod
    def recover(cls, tp: TopicPartition, disk: dict[str, Any]) -> PartitionLog:
        """Rebuild from the files that survived: the log, the epoch checkpoint and the HW
        checkpoint (clamped to the recovered LEO, as `updateHighWatermark` does)."""
        batches = list(disk.get(log_file(tp), ()))
        end = batches[-1].end_offset if batches else 0
        entries = tuple(EpochEntry(*e) for e in disk.get(epoch_file(tp), ()))
        log = cls(tp, batches, 0, EpochCache(entries).truncate_from_end(end))
        log.high_watermark = min(disk.get(hw_file(tp), 0), log.log_end_offset)
        return log

    def append_as_leader(
        self,
        out: Out,
        values: tuple[str, ...],
        leader_epoch: int,
        producer: tuple[int, int, int],
        size_bytes: int = 0,
    ) -> RecordBatch:
        """Assign offsets and `leader_epoch` to `values`; `producer` is (id, epoch, base seq)."""
        producer_id, producer_epoch, base_sequence = producer
        size_bytes = size_bytes or batch_size_bytes(max(map(len, values), default=0), len(values))
        batch = RecordBatch(
            self.log_end_offset,
            leader_epoch,
            compact_values(values),
            producer_id,
            producer_epoch,
            base_sequence,
            size_bytes,
        )
        if values:
            self._append(out, (batch,))
            _SHARED.add(self.tp, batch)
        return batch

    def append_as_follower(self, out: Out, batches: tuple[RecordBatch, ...]) -> None:
        """Append what the leader sent from this replica's LEO on."""
        end = self.log_end_offset
        if batches and batches[0].base_offset < end:  # a batch cut at this log's end
            batches = tuple(b if b.base_offset >= end else b.slice(end, b.end_offset) for b in batches)
            batches = tuple(b for b in batches if b.values)
        if not batches:
            return
        assert batches[0].base_offset == end, (self.tp, batches[0].base_offset, end)
        self._append(out, tuple(_SHARED.share(self.tp, b) for b in batches))

    def truncate_to(self, out: Out, offset: int) -> bool:
        """Keep the records below `offset`; the HW and epoch cache follow. True if anything went."""
        if offset >= self.log_end_offset:
            # As UnifiedLog.truncateTo: trim the epoch cache anyway. A broker that became leader
            # cached (epoch, LEO) and wrote nothing; that entry must not outlive the truncation.
            self._set_epochs(out, self.epochs.truncate_from_end(self.log_end_offset))
            return False
        kept = bisect_right(self._ends, offset)  # batches wholly below `offset`
        cut = self.batches[kept] if self.batches[kept].base_offset < offset else None
        del self.batches[kept:]
        del self._ends[kept:]
        del self._positions[kept:]
        out.truncate(log_file(self.tp), kept)
        if cut is not None:
            self._append(out, (cut.slice(cut.base_offset, offset),))
        self.producers = ProducerStateManager.rebuilt(self.batches)
        self.high_watermark = min(self.high_watermark, offset)
        self._set_epochs(out, self.epochs.truncate_from_end(offset))
        return True

    def assign_epoch_start(self, out: Out, epoch: int) -> None:
        """KIP-279: a new leader caches (epoch, LEO) at once, before it writes anything."""
        self._set_epochs(out, self.epochs.assign(epoch, self.log_end_offset))

    def update_high_watermark(self, high_watermark: int) -> int:
        """Set the HW, clamped to [0, LEO] (a follower's HW may go backwards); return it."""
        self.high_watermark = max(0, min(high_watermark, self.log_end_offset))
        return self.high_watermark

    def read(self, from_offset: int, upper_bound: int, max_bytes: int) -> tuple[RecordBatch, ...]:
        """Batches from `from_offset` up to (not including) `upper_bound`, at most `max_bytes`
        of them but at least one batch (KIP-74), cut at both bounds."""
        upper_bound = min(upper_bound, self.log_end_offset)
        if from_offset >= upper_bound:
            return ()
        i = bisect_right(self._ends, from_offset)
        batches = self.batches
        read: list[RecordBatch] = []
        size = 0
        while i < len(batches) and batches[i].base_offset < upper_bound:
            batch = batches[i]
            if read and size + batch.size_bytes > max_bytes:
                break
            if batch.base_offset < from_offset or batch.end_offset > upper_bound:
                batch = batch.slice(from_offset, upper_bound)
            read.append(batch)
            size += batch.size_bytes
            i += 1
        return tuple(read)

    def end_offset_for(self, epoch: int) -> EpochEntry:
        return self.epochs.end_offset_for(epoch, self.log_end_offset)

    def epoch_start_offset(self) -> int:
        """The start offset of the latest epoch (the leader's epoch start, KAFKA-7128)."""
        entries = self.epochs.entries
        return entries[-1].start_offset if entries else 0

    def checkpoint_high_watermark(self, out: Out) -> None:
        out.write_file(hw_file(self.tp), self.high_watermark)

    def bytes_between(self, start: int, end: int) -> int:
        """The bytes of the batches holding offsets [start, end) (`DelayedFetch` counts them)."""
        if start >= end:
            return 0
        first, last = bisect_right(self._ends, start), bisect_right(self._ends, end - 1)
        before = self._positions[first - 1] if first else 0
        return self._positions[min(last, len(self._positions) - 1)] - before

    def _append(self, out: Out, batches: tuple[RecordBatch, ...]) -> None:
        self.batches.extend(batches)
        self._ends.extend(batch.end_offset for batch in batches)
        position = self._positions[-1] if self._positions else 0
        for batch in batches:
            position += batch.size_bytes
            self._positions.append(position)
            self.producers.update(batch)
        out.append(Append(log_file(self.tp), batches))
        epochs = self.epochs
        for batch in batches:
            if batch.leader_epoch > epochs.latest_epoch:
                epochs = epochs.assign(batch.leader_epoch, batch.base_offset)
        self._set_epochs(out, epochs)

    def _set_epochs(self, out: Out, epochs: EpochCache) -> None:
        if epochs != self.epochs:
            self.epochs = epochs
            out.append(WriteFile(epoch_file(self.tp), tuple(tuple(e) for e in epochs.entries)))
