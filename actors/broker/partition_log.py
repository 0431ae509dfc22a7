"""One replica's log of one partition, with the files Kafka keeps for it.

Models the parts of `UnifiedLog` the simulator needs: append as leader (offsets and the leader
epoch assigned here) or as follower (offsets from the leader), truncation, reads up to a bound,
the HW (`updateHighWatermark` clamps it to [log start, LEO]) and the leader-epoch cache.

Durability follows Kafka, which does not fsync on acknowledge: records go to the page cache (`Append`, never
flushed on acknowledge), the leader-epoch checkpoint is rewritten and fsynced on every change,
and the HW reaches `replication-offset-checkpoint` only when the broker's periodic task calls
`checkpoint_high_watermark` (every `replica.high.watermark.checkpoint.interval.ms`), so after a
restart the HW can be stale. `recover` rebuilds the replica from whatever the crash left.

Left out: segments, the log start offset moving (retention), compaction, transactions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from actors.broker.epoch_cache import EpochCache, EpochEntry
from actors.core import Append, Out, WriteFile
from protocols.replication import Record
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


@dataclass(slots=True)
class PartitionLog:
    """A replica's records, HW and epoch cache; every change returns the disk commands for it."""

    tp: TopicPartition
    records: list[Record] = field(default_factory=list)
    high_watermark: int = 0
    epochs: EpochCache = field(default_factory=EpochCache)

    @property
    def log_end_offset(self) -> int:
        return len(self.records)

    @property
    def latest_epoch(self) -> int:
        return self.epochs.latest_epoch

    @classmethod
    def recover(cls, tp: TopicPartition, disk: dict[str, Any]) -> PartitionLog:
        """Rebuild from the files that survived: the log, the epoch checkpoint and the HW
        checkpoint (clamped to the recovered LEO, as `updateHighWatermark` does)."""
        records = list(disk.get(log_file(tp), ()))
        entries = tuple(EpochEntry(*e) for e in disk.get(epoch_file(tp), ()))
        log = cls(tp, records, 0, EpochCache(entries).truncate_from_end(len(records)))
        log.high_watermark = min(disk.get(hw_file(tp), 0), log.log_end_offset)
        return log

    def append_as_leader(
        self, out: Out, values: tuple[str, ...], leader_epoch: int, producer: tuple[int, int, int]
    ) -> tuple[Record, ...]:
        """Assign offsets and `leader_epoch` to `values`; `producer` is (id, epoch, base seq)."""
        producer_id, producer_epoch, base_sequence = producer
        start = self.log_end_offset
        appended = tuple(
            Record(
                offset=start + i,
                leader_epoch=leader_epoch,
                value=value,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                sequence=base_sequence + i if base_sequence >= 0 else -1,
            )
            for i, value in enumerate(values)
        )
        self._append(out, appended)
        return appended

    def append_as_follower(self, out: Out, records: tuple[Record, ...]) -> None:
        """Append what the leader sent; it must start at this replica's LEO."""
        if not records:
            return
        assert records[0].offset == self.log_end_offset, (self.tp, records[0].offset, self.log_end_offset)
        self._append(out, records)

    def truncate_to(self, out: Out, offset: int) -> bool:
        """Keep the records below `offset`; the HW and epoch cache follow. True if anything went."""
        if offset >= self.log_end_offset:
            # As UnifiedLog.truncateTo: trim the epoch cache anyway. A broker that became leader
            # cached (epoch, LEO) and wrote nothing; that entry must not outlive the truncation.
            self._set_epochs(out, self.epochs.truncate_from_end(self.log_end_offset))
            return False
        del self.records[offset:]
        out.truncate(log_file(self.tp), offset)
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

    def read(self, from_offset: int, upper_bound: int, max_records: int = 500) -> tuple[Record, ...]:
        """Records from `from_offset` up to (not including) `upper_bound`."""
        end = min(upper_bound, from_offset + max_records, self.log_end_offset)
        return tuple(self.records[from_offset:end]) if from_offset < end else ()

    def end_offset_for(self, epoch: int) -> EpochEntry:
        return self.epochs.end_offset_for(epoch, self.log_end_offset)

    def epoch_start_offset(self) -> int:
        """The start offset of the latest epoch (the leader's epoch start, KAFKA-7128)."""
        entries = self.epochs.entries
        return entries[-1].start_offset if entries else 0

    def checkpoint_high_watermark(self, out: Out) -> None:
        out.write_file(hw_file(self.tp), self.high_watermark)

    def _append(self, out: Out, records: tuple[Record, ...]) -> None:
        self.records.extend(records)
        out.append(Append(log_file(self.tp), records))
        epochs = self.epochs
        for record in records:
            if record.leader_epoch > epochs.latest_epoch:
                epochs = epochs.assign(record.leader_epoch, record.offset)
        self._set_epochs(out, epochs)

    def _set_epochs(self, out: Out, epochs: EpochCache) -> None:
        if epochs != self.epochs:
            self.epochs = epochs
            out.append(WriteFile(epoch_file(self.tp), tuple(tuple(e) for e in epochs.entries)))

