"""What a leader reads from its local log for a fetch, and the checks before it.

Models `ReplicaManager.readFromLocalLog` with `Partition.fetchRecords`: leadership,
`checkCurrentLeaderEpoch` (KIP-320), the diverging epoch (KAFKA-10554), the offset range, then
the read, to the LEO for a follower and to the HW for a consumer. Also the simulator's fast
path for a follower's idle partition (`idle`, `caught_up`), which skips what these checks would
find to be nothing. `leader.py` serves the fetches; `offsets.py` uses the epoch check.
"""

from __future__ import annotations

from typing import NamedTuple

from actors.broker.context import ReplicasContext
from actors.broker.partition import Partition, Role
from actors.broker.partition_log import PartitionLog
from actors.broker.replica_state import ReplicaState
from protocols.errors import ErrorCode
from protocols.replication import EpochEndOffset, FetchPartition, RecordBatch

__all__ = ["RESTING", "Read", "caught_up", "check_leader_epoch", "diverging_epoch", "idle", "read_partition"]


class Read(NamedTuple):
    """What reading one partition found: a `FetchedPartition`'s fields, made into one only if
    the answer carries it (an incremental session leaves out most, a parked fetch all)."""

    error_code: ErrorCode
    high_watermark: int
    records: tuple[RecordBatch, ...] = ()
    diverging_epoch: EpochEndOffset | None = None
    partition: Partition | None = None
    """Where it was read from; None after an error or a diverging epoch."""
    log_start_offset: int = 0


RESTING = Read(ErrorCode.NONE, -1)
"""The read of a resting partition (`LeaderFetchSession.resting`): skipped, and left out."""


def read_partition(b: ReplicasContext, fp: FetchPartition, replica_id: int) -> Read:
    """`readFromLocalLog` for one partition. Called for every partition of every fetch, so the
    common case (the leader, the current epoch, the follower on the leader's last epoch) is
    tested inline, in the order of the checks it stands for."""
    # A TopicPartition is a tuple: the plain tuple finds it without building one per partition.
    partition = b.state.partitions.get((fp.topic, fp.partition))  # type: ignore[call-overload]
    if partition is None:
        return Read(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)
    if partition.role is not Role.LEADER:
        return Read(ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)
    log = partition.log
    end = log.log_end_offset
    offset = fp.fetch_offset
    if replica_id >= 0 and caught_up(partition, fp):
        return Read(ErrorCode.NONE, log.high_watermark, (), None, partition, log.log_start_offset)
    if fp.current_leader_epoch >= 0 and fp.current_leader_epoch != partition.leader_epoch:
        fenced = check_leader_epoch(b, partition, fp.current_leader_epoch)
        if fenced is not ErrorCode.NONE:
            return Read(fenced, -1)
    hw = log.high_watermark
    if replica_id >= 0 and fp.last_fetched_epoch >= 0 and b.config.profile.truncate_on_fetch:
        diverging = diverging_epoch(log, fp)
        if diverging is not None:
            return Read(ErrorCode.NONE, hw, (), diverging)
    if offset > end or offset < log.log_start_offset:
        return Read(ErrorCode.OFFSET_OUT_OF_RANGE, hw)
    # Followers read to the LEO; consumers (read_uncommitted) to the HW.
    bound = end if replica_id >= 0 else hw
    batches = log.read(offset, bound, fp.partition_max_bytes) if offset < bound else ()
    return Read(ErrorCode.NONE, hw, batches, None, partition, log.log_start_offset)


def idle(partition: Partition, state: ReplicaState, replica: int, fp: FetchPartition) -> bool:
    """A follower's partition with nothing to read or update but its fetch times: the follower
    is in the ISR and the replicas, the leader knows it at its fetch offset, and it is caught
    up (`caught_up`)."""
    return (
        state.log_end_offset == fp.fetch_offset
        and replica in partition.isr
        and replica in partition.replicas
        and caught_up(partition, fp)
    )


def caught_up(partition: Partition, fp: FetchPartition) -> bool:
    """Most partitions of a follower's fetch: it asks from the leader's LEO, on the leader's
    current epoch, with no divergence; so no fencing and nothing to read (the general checks of
    `read_partition` would say so). An idle partition's last fetched epoch stays the one before
    the last leader change."""
    log = partition.log
    return (
        fp.fetch_offset == log.log_end_offset
        and fp.current_leader_epoch == partition.leader_epoch
        and (fp.last_fetched_epoch == log.epochs.latest_epoch or diverging_epoch(log, fp) is None)
    )


def diverging_epoch(log: PartitionLog, fp: FetchPartition) -> EpochEndOffset | None:
    """KAFKA-10554: where the follower's log leaves the leader's, if it does: the follower's
    last epoch ends, on the leader, before its fetch offset (or the leader lacks the epoch)."""
    if fp.last_fetched_epoch < 0:
        return None
    if fp.last_fetched_epoch == log.latest_epoch and fp.fetch_offset <= log.log_end_offset:
        return None  # the common case: the leader's own epoch, which ends at its LEO
    epoch, end = log.epochs.end_offset_for(fp.last_fetched_epoch, log.log_end_offset)
    if epoch < fp.last_fetched_epoch or end < fp.fetch_offset:
        return EpochEndOffset(epoch, end)
    return None


def check_leader_epoch(b: ReplicasContext, partition: Partition, current_leader_epoch: int) -> ErrorCode:
    """KIP-320 (2.1+): `checkCurrentLeaderEpoch`."""
    if not b.config.profile.fetch_epoch_fencing or current_leader_epoch < 0:
        return ErrorCode.NONE
    if current_leader_epoch < partition.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if current_leader_epoch > partition.leader_epoch:
        return ErrorCode.UNKNOWN_LEADER_EPOCH
    return ErrorCode.NONE
