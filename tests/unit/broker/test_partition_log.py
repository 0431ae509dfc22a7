"""A replica's log: offsets, epochs, truncation, and what survives each kind of crash."""

from __future__ import annotations

from actors.broker.epoch_cache import EpochCache, EpochEntry
from actors.broker.partition_log import PartitionLog, epoch_file, hw_file, log_file
from actors.core import Append, Flush, Out
from protocols.replication import Record
from protocols.types import TopicPartition
from sim.disk import CrashKind, Disk

TP = TopicPartition("T", 0)


def _apply(disk: Disk, out: Out) -> None:
    for command in out:
        disk.apply(command)  # type: ignore[arg-type]


def test_leader_append_assigns_offsets_epoch_and_producer_sequence() -> None:
    log, out = PartitionLog(TP), Out()
    records = log.append_as_leader(out, ("p1:0", "p1:1"), 3, (4000, 0, 0))
    assert records == (Record(0, 3, "p1:0", 4000, 0, 0), Record(1, 3, "p1:1", 4000, 0, 1))
    assert log.log_end_offset == 2
    assert log.epochs == EpochCache((EpochEntry(3, 0),))
    assert out[0] == Append(log_file(TP), records)
    assert out[1].file == epoch_file(TP)


def test_follower_append_takes_new_epochs_from_the_records() -> None:
    """`ReplicaFetcherThread.processPartitionData`: a batch with a newer epoch adds (epoch, baseOffset) to the cache."""
    log, out = PartitionLog(TP), Out()
    log.append_as_follower(out, (Record(0, 0, "a"), Record(1, 0, "b"), Record(2, 1, "c")))
    assert log.epochs.entries == (EpochEntry(0, 0), EpochEntry(1, 2))


def test_truncation_lowers_hw_and_drops_later_epochs() -> None:
    log, out = PartitionLog(TP), Out()
    log.append_as_follower(out, (Record(0, 0, "a"), Record(1, 1, "b"), Record(2, 1, "c")))
    log.update_high_watermark(3)
    assert log.truncate_to(out, 1)
    assert (log.log_end_offset, log.high_watermark) == (1, 1)
    assert log.epochs.entries == (EpochEntry(0, 0),)
    assert not log.truncate_to(out, 5)


def test_follower_hw_is_clamped_to_its_leo() -> None:
    """`UnifiedLog.updateHighWatermark`: follower HW = min(leader HW in the response, own LEO)."""
    log = PartitionLog(TP)
    log.append_as_follower(Out(), (Record(0, 0, "a"),))
    assert log.update_high_watermark(2) == 1


def test_kip_279_epoch_start_is_cached_before_any_write() -> None:
    log, out = PartitionLog(TP), Out()
    log.append_as_follower(out, (Record(0, 0, "a"),))
    log.assign_epoch_start(out, 1)
    assert log.epochs.entries == (EpochEntry(0, 0), EpochEntry(1, 1))
    assert log.epoch_start_offset() == 1


def _crashed(kind: CrashKind) -> PartitionLog:
    """m0 flushed, m1 in the page cache, HW 2 in memory but checkpointed at 1."""
    disk, log, out = Disk(), PartitionLog(TP), Out()
    log.append_as_follower(out, (Record(0, 0, "m0"),))
    out.append(Flush(log_file(TP)))
    log.update_high_watermark(1)
    log.checkpoint_high_watermark(out)
    log.append_as_follower(out, (Record(1, 0, "m1"),))
    log.update_high_watermark(2)
    _apply(disk, out)
    disk.crash(kind)
    return PartitionLog.recover(TP, disk.view())


def test_recovery_after_each_kind_of_crash() -> None:
    process = _crashed(CrashKind.PROCESS)
    assert [r.value for r in process.records] == ["m0", "m1"]
    assert process.high_watermark == 1  # the checkpoint, not the HW in memory
    power = _crashed(CrashKind.POWER_LOSS)
    assert [r.value for r in power.records] == ["m0"]
    assert (power.high_watermark, power.epochs.entries) == (1, (EpochEntry(0, 0),))
    gone = _crashed(CrashKind.DISK_LOSS)
    assert (gone.records, gone.high_watermark, gone.epochs) == ([], 0, EpochCache())
    assert hw_file(TP) == "T-0/replication-offset-checkpoint"
