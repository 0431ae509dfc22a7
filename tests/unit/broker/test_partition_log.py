"""A replica's log: offsets, epochs, batches, truncation, and what survives each kind of crash."""

from __future__ import annotations

from actors.broker.epoch_cache import EpochCache, EpochEntry
from actors.broker.partition_log import PartitionLog, epoch_file, hw_file, log_file
from actors.broker.retention import LogConfig
from actors.core import Append, Flush, Out, Truncate
from protocols.replication import RecordBatch, batch_size_bytes
from protocols.types import TopicPartition
from sim.engine.disk import CrashKind, Disk

TP = TopicPartition("T", 0)


def _apply(disk: Disk, out: Out) -> None:
    for command in out:
        disk.apply(command)  # type: ignore[arg-type]


def _batch(base: int, epoch: int, *values: str, size: int = 100) -> RecordBatch:
    return RecordBatch(base, epoch, values, size_bytes=size)


def test_leader_append_assigns_offsets_epoch_and_producer_sequence() -> None:
    log, out = PartitionLog(TP), Out()
    batch = log.append_as_leader(out, ("p1:0", "p1:1"), 3, (4000, 0, 0), 150)
    assert batch == RecordBatch(0, 3, ("p1:0", "p1:1"), 4000, 0, 0, 150)
    assert (batch.last_offset, batch.last_sequence, batch.end_offset) == (1, 1, 2)
    assert log.log_end_offset == 2
    assert log.epochs == EpochCache((EpochEntry(3, 0),))
    assert out[0] == Append(log_file(TP), (batch,))
    assert out[1].file == epoch_file(TP)
    # The next batch follows; a batch sent without a size gets Kafka's size for its records.
    second = log.append_as_leader(Out(), ("p1:2",), 3, (4000, 0, 2))
    assert (second.base_offset, second.size_bytes) == (2, batch_size_bytes(4, 1))
    assert log.entries() == [(0, 3, "p1:0"), (1, 3, "p1:1"), (2, 3, "p1:2")]


def test_follower_append_takes_new_epochs_from_the_batches() -> None:
    """`ReplicaFetcherThread.processPartitionData`: a batch with a newer epoch adds (epoch, baseOffset) to the cache."""
    log, out = PartitionLog(TP), Out()
    log.append_as_follower(out, (_batch(0, 0, "a", "b"), _batch(2, 1, "c")))
    assert log.epochs.entries == (EpochEntry(0, 0), EpochEntry(1, 2))
    assert log.log_end_offset == 3


def test_truncation_lowers_hw_and_drops_later_epochs() -> None:
    log, out = PartitionLog(TP), Out()
    log.append_as_follower(out, (_batch(0, 0, "a"), _batch(1, 1, "b", "c")))
    log.update_high_watermark(3)
    assert log.truncate_to(out, 1)
    assert (log.log_end_offset, log.high_watermark) == (1, 1)
    assert log.epochs.entries == (EpochEntry(0, 0),)
    assert not log.truncate_to(out, 5)


def test_truncation_inside_a_batch_keeps_its_head() -> None:
    log, out = PartitionLog(TP), Out()
    log.append_as_follower(out, (_batch(0, 0, "a"), _batch(1, 0, "b", "c", "d", size=160)))
    out.clear()
    assert log.truncate_to(out, 3)
    assert log.entries() == [(0, 0, "a"), (1, 0, "b"), (2, 0, "c")]
    head = RecordBatch(1, 0, ("b", "c"), size_bytes=61 + (160 - 61) * 2 // 3)
    assert list(out) == [Truncate(log_file(TP), 1), Append(log_file(TP), (head,))]
    disk = Disk()
    log2, out2 = PartitionLog(TP), Out()
    log2.append_as_follower(out2, (_batch(0, 0, "a"), _batch(1, 0, "b", "c", "d")))
    log2.truncate_to(out2, 3)
    _apply(disk, out2)
    assert PartitionLog.recover(TP, disk.view()).entries() == log.entries()


def test_reads_stop_at_the_bound_and_the_byte_limit_but_return_one_batch() -> None:
    log = PartitionLog(TP)
    log.append_as_follower(Out(), (_batch(0, 0, "a", "b"), _batch(2, 0, "c"), _batch(3, 0, "d", "e")))
    assert log.read(0, 5, 250) == log.read(0, 5, 299) == tuple(log.batches[:2])
    assert log.read(0, 5, 10) == (log.batches[0],)  # KIP-74: the first batch even if larger
    assert log.read(0, 2, 1000) == (log.batches[0],)  # the bound (a HW) at a batch boundary
    assert [b.values for b in log.read(1, 4, 1000)] == [("b",), ("c",), ("d",)]  # cut at both ends
    assert log.read(5, 5, 1000) == log.read(2, 2, 1000) == ()
    assert log.bytes_between(0, 2) == 100 and log.bytes_between(2, 5) == 200 and log.bytes_between(4, 4) == 0


def test_a_follower_skips_what_it_already_has_of_a_batch() -> None:
    """After a cut inside a batch the leader may send the whole batch again."""
    log = PartitionLog(TP)
    log.append_as_follower(Out(), (_batch(0, 0, "a"),))
    log.append_as_follower(Out(), (_batch(0, 0, "a", "b"), _batch(2, 0, "c")))
    assert log.entries() == [(0, 0, "a"), (1, 0, "b"), (2, 0, "c")]


def test_follower_hw_is_clamped_to_its_leo() -> None:
    """`UnifiedLog.updateHighWatermark`: follower HW = min(leader HW in the response, own LEO)."""
    log = PartitionLog(TP)
    log.append_as_follower(Out(), (_batch(0, 0, "a"),))
    assert log.update_high_watermark(2) == 1


def test_kip_279_epoch_start_is_cached_before_any_write() -> None:
    log, out = PartitionLog(TP), Out()
    log.append_as_follower(out, (_batch(0, 0, "a"),))
    log.assign_epoch_start(out, 1)
    assert log.epochs.entries == (EpochEntry(0, 0), EpochEntry(1, 1))
    assert log.epoch_start_offset() == 1


def _crashed(kind: CrashKind) -> PartitionLog:
    """m0 flushed, m1 in the page cache, HW 2 in memory but checkpointed at 1."""
    disk, log, out = Disk(), PartitionLog(TP), Out()
    log.append_as_follower(out, (_batch(0, 0, "m0"),))
    out.append(Flush(log_file(TP)))
    log.update_high_watermark(1)
    log.checkpoint_high_watermark(out)
    log.append_as_follower(out, (_batch(1, 0, "m1"),))
    log.update_high_watermark(2)
    _apply(disk, out)
    disk.crash(kind)
    return PartitionLog.recover(TP, disk.view())


def test_recovery_after_each_kind_of_crash() -> None:
    process = _crashed(CrashKind.PROCESS)
    assert [v for _, _, v in process.entries()] == ["m0", "m1"]
    assert process.high_watermark == 1  # the checkpoint, not the HW in memory
    power = _crashed(CrashKind.POWER_LOSS)
    assert [v for _, _, v in power.entries()] == ["m0"]
    assert (power.high_watermark, power.epochs.entries) == (1, (EpochEntry(0, 0),))
    gone = _crashed(CrashKind.DISK_LOSS)
    assert (gone.batches, gone.high_watermark, gone.epochs) == ([], 0, EpochCache())
    assert hw_file(TP) == "T-0/replication-offset-checkpoint"


def test_the_producers_state_is_rebuilt_from_the_log_after_a_restart_or_a_truncation() -> None:
    """Kafka reloads a snapshot and reads the log after it; here the whole log is read: either
    way a restarted replica knows the last five batches of each producer, and a truncation
    forgets the batches it removed."""
    disk, log, out = Disk(), PartitionLog(TP), Out()
    for sequence in range(3):
        log.append_as_leader(out, (f"p:{sequence}",), 0, (4000, 0, sequence), 70)
    _apply(disk, out)
    disk.crash(CrashKind.PROCESS)
    recovered = PartitionLog.recover(TP, disk.view())
    duplicate = recovered.producers.check(4000, 0, 2, 1).duplicate_of
    assert duplicate is not None and (duplicate.first_offset, duplicate.last_offset) == (2, 2)
    assert recovered.producers.check(4000, 0, 3, 1).error.name == "NONE"  # the next in line
    recovered.truncate_to(Out(), 2)
    assert recovered.producers.check(4000, 0, 2, 1).duplicate_of is None  # sequence 2 is gone
    assert recovered.producers.check(4000, 0, 3, 1).error.name == "OUT_OF_ORDER_SEQUENCE_NUMBER"


def _segmented(retention_bytes: int = -1) -> tuple[PartitionLog, Disk]:
    """Six batches of 100 bytes appended 10 ms apart into segments of two (`segment.bytes` 250)."""
    log, disk = PartitionLog(TP, config=LogConfig(segment_bytes=250, retention_ms=100, retention_bytes=retention_bytes)), Disk()
    for i in range(6):
        out = Out()
        log.append_as_follower(out, (_batch(i, 0, f"v{i}"),), now_ms=10 * i)
        _apply(disk, out)
    log.update_high_watermark(6)
    return log, disk


def test_retention_deletes_whole_segments_from_the_log_and_the_disk() -> None:
    """`retention.bytes` 200 of 600: the two oldest segments go (400 bytes; with 250 only one
    would, the log keeping at least that much), the last stays; the log start moves to 4, the
    epoch cache starts there, and the disk keeps two batches."""
    log, disk = _segmented(retention_bytes=200)
    assert [s.base_offset for s in log.segments()] == [0, 2, 4]
    out = Out()
    log.delete_old_segments(out, now_ms=60)
    _apply(disk, out)
    assert (log.log_start_offset, log.log_end_offset, log.size_bytes) == (4, 6, 200)
    assert log.epochs.entries == (EpochEntry(0, 4),)
    assert disk.view()[log_file(TP)] == tuple(log.batches) and len(log.batches) == 2
    assert log.entries() == [(4, 0, "v4"), (5, 0, "v5")]
    recovered = PartitionLog.recover(TP, disk.view(), log.config, now_ms=70)
    # No HW checkpoint was written: the HW recovers clamped up to the log start.
    assert (recovered.log_start_offset, recovered.log_end_offset, recovered.high_watermark) == (4, 6, 4)


def test_retention_ms_keeps_the_segments_newer_than_it_and_never_passes_the_hw() -> None:
    """At 145 ms, `retention.ms` 100: the segment whose newest batch is from 10 ms goes; the
    next (newest at 30 ms) would too, but the HW (3) is inside it."""
    log, _ = _segmented()
    log.update_high_watermark(3)
    log.delete_old_segments(Out(), now_ms=145)
    assert (log.log_start_offset, [s.base_offset for s in log.segments()]) == (2, [2, 4])


def test_a_log_deleted_whole_starts_empty_at_its_end_and_recovers_there() -> None:
    """Every segment past `retention.ms`: a new empty segment is rolled at the LEO first."""
    log, disk = _segmented()
    out = Out()
    log.delete_old_segments(out, now_ms=1000)
    _apply(disk, out)
    assert (log.log_start_offset, log.log_end_offset, log.batches, log.size_bytes) == (6, 6, [], 0)
    assert disk.view()[log_file(TP)] == ()
    assert PartitionLog.recover(TP, disk.view()).log_end_offset == 6


def test_a_truncation_below_the_first_segment_starts_the_log_over() -> None:
    """`truncateTo` below the first segment: `truncateFullyAndStartAt` the target."""
    log, _ = _segmented(retention_bytes=200)
    log.delete_old_segments(Out(), now_ms=60)
    assert log.truncate_to(Out(), 1)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark, log.batches) == (1, 1, 1, [])


def test_epoch_cache_truncated_from_the_start_keeps_the_epoch_of_the_new_start() -> None:
    """`LeaderEpochFileCache.truncateFromStart`."""
    cache = EpochCache((EpochEntry(0, 0), EpochEntry(2, 5), EpochEntry(3, 9)))
    assert cache.truncate_from_start(7).entries == (EpochEntry(2, 7), EpochEntry(3, 9))
    assert cache.truncate_from_start(9).entries == (EpochEntry(3, 9),)
