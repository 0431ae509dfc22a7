"""One replica's log of one partition, with the files Kafka keeps for it.

Models the parts of `UnifiedLog` the simulator needs: append as leader (offsets and the leader
epoch assigned here) or as follower (offsets from the leader), truncation, reads up to a bound,
the HW (`updateHighWatermark` clamps it to [log start, LEO]) and the leader-epoch cache; and
segments with retention (`maybeRoll`, `deleteOldSegments`, `maybeIncrementLogStartOffset`,
`truncateFullyAndStartAt`; the rules are in `retention`).

Segments are base offsets over the one list of batches (a roll happens before an append, so a
segment boundary is a batch boundary); a segment's size is the sum of its batches' sizes, and
its timestamps are the times its batches were appended here: records carry no timestamp, so
each replica stamps what it appends (as LogAppendTime would, per replica). Deleting segments
drops their batches from the log and from the disk (`DeleteHead`), so memory is freed, and
moves the log start offset to the next segment's base; reads below it are out of range.

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
restart the HW can be stale. `recover` rebuilds the replica from whatever the crash left: the
log start offset is kept in `log-start-offset-checkpoint`, written at once when it moves (Kafka
writes it every minute and keeps each segment in its own file); the segments are cut again by
`segment.bytes`, and the recovered batches are stamped with the restart time, so their
retention clock restarts (Kafka reads the timestamps back from the batches).

Left out: compaction, transactions, DeleteRecords (KIP-107's admin call).

One module, as Kafka's `UnifiedLog` is one class (several times this size): every change keeps
the batches and their offset, position, time and segment columns in step.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from itertools import accumulate
from typing import Any

from actors.broker.epoch_cache import EpochCache, EpochEntry
from actors.broker.producer_state import ProducerStateManager
from actors.broker.retention import (
    LogConfig,
    SegmentView,
    deletable_segments,
    log_start_breached,
    retention_size_breached,
    retention_time_breached,
    should_roll,
)
from actors.core import Append, DeleteHead, Out, WriteFile
from protocols.records import LogEntries, compact_values
from protocols.replication import RecordBatch, batch_size_bytes
from protocols.types import TopicPartition

__all__ = [
    "PartitionLog",
    "epoch_file",
    "hw_file",
    "log_file",
    "log_start_file",
    "partitions_on_disk",
]


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


def log_start_file(tp: TopicPartition) -> str:
    return f"{tp}/log-start-offset-checkpoint"


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
    """A replica's batches, segments, HW and epoch cache; every change returns the disk commands
    for it."""

    tp: TopicPartition
    batches: list[RecordBatch] = field(default_factory=list)
    high_watermark: int = 0
    epochs: EpochCache = field(default_factory=EpochCache)
    config: LogConfig = field(default_factory=LogConfig)
    log_start_offset: int = 0
    """The first offset readable; offsets below it were deleted."""
    _ends: array[int] = field(default_factory=lambda: array("q"))
    """Each batch's end offset, for bisecting."""
    _positions: array[int] = field(default_factory=lambda: array("q"))
    """The bytes appended to the log up to the end of each batch (a segment's file position)."""
    _start_position: int = 0
    """The bytes appended before the first batch held (those of deleted segments)."""
    _times: array[int] = field(default_factory=lambda: array("q"))
    """The simulated time each batch was appended here: its timestamp."""
    _segments: array[int] = field(default_factory=lambda: array("q"))
    """The segments' base offsets, oldest first; the last is the active segment."""
    producers: ProducerStateManager = field(default_factory=ProducerStateManager)
    """The idempotent producers' last batches, kept from every append."""
    log_end_offset: int = field(init=False, default=0)
    """The offset the next record gets: the last batch's end, or the active segment's base in
    a log without batches. A plain attribute, set by every change of the batches or segments:
    it is read for every partition of every fetch."""
    on_change: Callable[[], None] | None = field(init=False, default=None)
    """Called whenever the LEO or the HW is set, by any path. While a leader's fetch sessions
    skip this partition (it rests), this is `Partition.wake`: they skip it only while both stay
    as they were."""

    def __post_init__(self) -> None:
        self._ends = array("q", (batch.end_offset for batch in self.batches))
        self._positions = array("q", accumulate(batch.size_bytes for batch in self.batches))
        self._times = array("q", bytes(8 * len(self.batches)))
        self._segments = array("q", _segment_bases(self.batches, self.config, self.log_start_offset))
        if self.batches:
            self.log_start_offset = max(self.log_start_offset, self.batches[0].base_offset)
        self.producers = ProducerStateManager.rebuilt(self.batches)
        self._update_log_end_offset()

    def _update_log_end_offset(self) -> None:
        self.log_end_offset = self._ends[-1] if self._ends else self._segments[-1]
        if self.on_change is not None:
            self.on_change()

    @property
    def latest_epoch(self) -> int:
        return self.epochs.latest_epoch

    @property
    def size_bytes(self) -> int:
        """The bytes of every segment (`UnifiedLog.size`)."""
        return self._position_before(len(self.batches)) - self._start_position

    def entries(self) -> LogEntries:
        """Every record from the log start offset as (offset, leader epoch, value), made as they
        are read: for checks and tests, not the hot path."""
        first = bisect_right(self._ends, self.log_start_offset)
        held = self.batches[first:]
        if held and held[0].base_offset < self.log_start_offset:
            held[0] = held[0].slice(self.log_start_offset, held[0].end_offset)
        return LogEntries(held, self.log_end_offset)

    def segments(self) -> list[SegmentView]:
        """Each segment: base offset, bytes, largest timestamp, and where the next one starts."""
        views = []
        bases = self._segments
        for k, base in enumerate(bases):
            following = bases[k + 1] if k + 1 < len(bases) else self.log_end_offset
            first, end = bisect_right(self._ends, base), bisect_right(self._ends, following)
            size = self._position_before(end) - self._position_before(first)
            largest = self._times[end - 1] if end > first else -1
            views.append(SegmentView(base, size, largest, following))
        return views

    @classmethod
    def recover(
        cls, tp: TopicPartition, disk: dict[str, Any], config: LogConfig | None = None, now_ms: int = 0
    ) -> PartitionLog:
        """Rebuild from the files that survived: the log, the log start, epoch and HW checkpoints
        (the HW clamped to the recovered LEO, as `updateHighWatermark` does). A log start beyond
        what survived of the log (a power loss took the tail) leaves an empty log there."""
        batches = list(disk.get(log_file(tp), ()))
        log_start = disk.get(log_start_file(tp), 0)
        if batches and batches[-1].end_offset < log_start:
            batches = []
        end = batches[-1].end_offset if batches else log_start
        entries = tuple(EpochEntry(*e) for e in disk.get(epoch_file(tp), ()))
        epochs = EpochCache(entries).truncate_from_end(end)
        log = cls(tp, batches, 0, epochs, config or LogConfig(), log_start)
        log._times = array("q", [now_ms]) * len(batches)
        log.high_watermark = max(log.log_start_offset, min(disk.get(hw_file(tp), 0), log.log_end_offset))
        return log

    def append_as_leader(  # noqa: PLR0913 - a produce's fields
        self,
        out: Out,
        values: tuple[str, ...],
        leader_epoch: int,
        producer: tuple[int, int, int],
        size_bytes: int = 0,
        *,
        now_ms: int = 0,
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
            self._maybe_roll(out, size_bytes, now_ms)
            self._append(out, (batch,), now_ms)
            _SHARED.add(self.tp, batch)
        return batch

    def append_as_follower(self, out: Out, batches: tuple[RecordBatch, ...], now_ms: int = 0) -> None:
        """Append what the leader sent from this replica's LEO on (one roll check for all of it,
        as `appendAsFollower` does)."""
        end = self.log_end_offset
        if batches and batches[0].base_offset < end:  # a batch cut at this log's end
            batches = tuple(b if b.base_offset >= end else b.slice(end, b.end_offset) for b in batches)
            batches = tuple(b for b in batches if b.values)
        if not batches:
            return
        assert batches[0].base_offset == end, (self.tp, batches[0].base_offset, end)
        self._maybe_roll(out, sum(b.size_bytes for b in batches), now_ms)
        self._append(out, tuple(_SHARED.share(self.tp, b) for b in batches), now_ms)

    def truncate_to(self, out: Out, offset: int) -> bool:
        """Keep the records below `offset`; the HW and epoch cache follow, and segments that
        start above it go. True if anything went."""
        if offset >= self.log_end_offset:
            # As UnifiedLog.truncateTo: trim the epoch cache anyway. A broker that became leader
            # cached (epoch, LEO) and wrote nothing; that entry must not outlive the truncation.
            self._set_epochs(out, self.epochs.truncate_from_end(self.log_end_offset))
            return False
        if offset < self._segments[0]:
            self.truncate_fully_and_start_at(out, offset)
            return True
        kept = bisect_right(self._ends, offset)  # batches wholly below `offset`
        cut = self.batches[kept] if self.batches[kept].base_offset < offset else None
        time = self._times[kept] if cut is not None else 0
        del self.batches[kept:]
        del self._ends[kept:]
        del self._positions[kept:]
        del self._times[kept:]
        del self._segments[bisect_right(self._segments, offset) :]
        self._update_log_end_offset()
        out.truncate(log_file(self.tp), kept)
        if cut is not None:
            self._append(out, (cut.slice(cut.base_offset, offset),), time)
        self.producers = ProducerStateManager.rebuilt(self.batches)
        self.high_watermark = min(self.high_watermark, offset)
        self._set_epochs(out, self.epochs.truncate_from_end(offset))
        if offset < self.log_start_offset:
            self._set_log_start_offset(out, offset, "truncation")
        return True

    def truncate_fully_and_start_at(self, out: Out, offset: int) -> None:
        """`truncateFullyAndStartAt`: delete every record; the log starts, empty, at `offset`."""
        self._start_position = self._position_before(len(self.batches))
        self.batches.clear()
        for column in (self._ends, self._positions, self._times):
            del column[:]
        self._segments = array("q", (offset,))
        self._update_log_end_offset()
        out.truncate(log_file(self.tp), 0)
        self.producers = ProducerStateManager()
        self.high_watermark = offset
        self._set_epochs(out, EpochCache())
        self._set_log_start_offset(out, offset, "truncated_fully")

    def maybe_increment_log_start_offset(self, out: Out, offset: int, reason: str) -> bool:
        """`maybeIncrementLogStartOffset`: move the log start forward, never past the HW (Kafka
        refuses that); the epoch cache drops what starts before it. True if it moved."""
        if offset <= self.log_start_offset or offset > self.high_watermark:
            return False
        self._set_epochs(out, self.epochs.truncate_from_start(offset))
        self._set_log_start_offset(out, offset, reason)
        return True

    def delete_old_segments(self, out: Out, now_ms: int) -> None:
        """`deleteOldSegments`, at the retention check: segments below the log start offset,
        then by `retention.bytes`, then by `retention.ms` (a compacted topic: the first only)."""
        rules = [("log_start_offset", lambda: log_start_breached(self.log_start_offset))]
        if self.config.delete:
            rules.append(("retention.bytes", lambda: retention_size_breached(self.config, self.size_bytes)))
            rules.append(("retention.ms", lambda: retention_time_breached(self.config, now_ms)))
        for reason, rule in rules:
            segments = self.segments()
            count = deletable_segments(segments, self.high_watermark, rule())
            if count:
                self._delete_segments(out, segments[:count], reason)

    def assign_epoch_start(self, out: Out, epoch: int) -> None:
        """KIP-279: a new leader caches (epoch, LEO) at once, before it writes anything."""
        self._set_epochs(out, self.epochs.assign(epoch, self.log_end_offset))

    def update_high_watermark(self, high_watermark: int) -> int:
        """Set the HW, clamped to [log start, LEO] (a follower's HW may go backwards); return it."""
        self.high_watermark = max(self.log_start_offset, min(high_watermark, self.log_end_offset))
        if self.on_change is not None:
            self.on_change()
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

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """`fetchOffsetByTimestamp`: the first offset (from the log start) whose record's
        timestamp is at or after `timestamp_ms`, with the epoch it was written in; None if
        every record is older. A batch's records share its append time, so this is the first
        batch appended then or later (the times only grow along the log)."""
        first = bisect_right(self._ends, self.log_start_offset)
        i = bisect_left(self._times, timestamp_ms, first)
        if i >= len(self.batches):
            return None
        batch = self.batches[i]
        return max(batch.base_offset, self.log_start_offset), batch.leader_epoch

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
        return self._positions[min(last, len(self._positions) - 1)] - self._position_before(first)

    def _position_before(self, index: int) -> int:
        """The log's size in bytes before batch `index` (of those held)."""
        return self._positions[index - 1] if index else self._start_position

    def _maybe_roll(self, out: Out, messages_bytes: int, now_ms: int) -> None:
        """`maybeRoll` before an append of `messages_bytes`: a new active segment at the LEO if
        the active one is full or its first batch is older than `segment.ms`."""
        first = bisect_right(self._ends, self._segments[-1])
        size = self._position_before(len(self.batches)) - self._position_before(first)
        waited = now_ms - self._times[first] if first < len(self.batches) else 0
        if should_roll(self.config, size, messages_bytes, waited):
            reason = "segment.bytes" if size > self.config.segment_bytes - messages_bytes else "segment.ms"
            self._roll(out, reason, size)

    def _roll(self, out: Out, reason: str, closed_bytes: int) -> None:
        """`roll`: a new active segment at the LEO; an empty active segment is already one."""
        if self._segments[-1] == self.log_end_offset:
            return
        self._segments.append(self.log_end_offset)
        out.emit(
            "log_segment_rolled",
            topic=self.tp.topic,
            partition=self.tp.partition,
            base_offset=self.log_end_offset,
            bytes=closed_bytes,
            reason=reason,
        )

    def _delete_segments(self, out: Out, deletable: list[SegmentView], reason: str) -> None:
        """`deleteSegments`: the log start moves to the next segment's base, then the segments'
        batches go. Deleting every segment rolls a new one first: a log keeps one (the last
        segment is deletable only if it holds records, so the new one is another)."""
        if len(deletable) == len(self._segments):
            self._roll(out, "retention", deletable[-1].size_bytes)
        next_base = self._segments[len(deletable)]
        self.maybe_increment_log_start_offset(out, next_base, "segment_deletion")
        count = bisect_right(self._ends, next_base)  # the batches below the next segment
        self._start_position = self._position_before(count)
        del self.batches[:count]
        for column in (self._ends, self._positions, self._times):
            del column[:count]
        del self._segments[: len(deletable)]
        self._update_log_end_offset()
        out.append(DeleteHead(log_file(self.tp), count))
        out.emit(
            "log_segments_deleted",
            topic=self.tp.topic,
            partition=self.tp.partition,
            count=len(deletable),
            from_offset=deletable[0].base_offset,
            to_offset=next_base,
            bytes=sum(segment.size_bytes for segment in deletable),
            reason=reason,
        )

    def _set_log_start_offset(self, out: Out, offset: int, reason: str) -> None:
        self.log_start_offset = offset
        out.write_file(log_start_file(self.tp), offset)
        out.emit(
            "log_start_offset_changed",
            topic=self.tp.topic,
            partition=self.tp.partition,
            log_start_offset=offset,
            reason=reason,
        )

    def _append(self, out: Out, batches: tuple[RecordBatch, ...], now_ms: int) -> None:
        self.batches.extend(batches)
        self._ends.extend(batch.end_offset for batch in batches)
        self._update_log_end_offset()
        position = self._position_before(len(self._positions))
        for batch in batches:
            position += batch.size_bytes
            self._positions.append(position)
            self._times.append(now_ms)
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


def _segment_bases(batches: list[RecordBatch], config: LogConfig, log_start_offset: int) -> list[int]:
    """The segments a recovered log is cut into: a new one wherever a batch would take the
    one before past `segment.bytes`, as the appends rolled them (time-based rolls are not
    known again). An empty log is one empty segment at its log start."""
    if not batches:
        return [log_start_offset]
    bases, size = [batches[0].base_offset], 0
    for batch in batches:
        if should_roll(config, size, batch.size_bytes, 0):
            bases.append(batch.base_offset)
            size = 0
        size += batch.size_bytes
    return bases
