"""The leader's answers about offsets: OffsetsForLeaderEpoch and ListOffsets.

Models `KafkaApis.handleOffsetForLeaderEpochRequest` with `Partition.lastOffsetForLeaderEpoch`
(KIP-101, KIP-279: where the asked epoch ends on the leader) and
`KafkaApis.handleListOffsetRequest` with `Partition.fetchOffsetForTimestamp` (latest, earliest,
and a timestamp: KIP-79's offsets for times, which `kafka-consumer-groups --to-datetime` asks),
each checking leadership and the current leader epoch (KIP-320) first.
"""

from __future__ import annotations

from actors.broker.context import ReplicasContext
from actors.broker.read import check_leader_epoch
from actors.core import Inbound, Out
from protocols.errors import ErrorCode
from protocols.replication import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    EpochEndOffsetResult,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)
from protocols.types import TopicPartition

__all__ = ["UNKNOWN_OFFSET", "on_list_offsets", "on_offset_for_leader_epoch"]

UNKNOWN_OFFSET = -1
"""`ListOffsetsResponse.UNKNOWN_OFFSET`: no record at or after the time asked."""


def on_offset_for_leader_epoch(
    b: ReplicasContext, out: Out, inbound: Inbound, req: OffsetForLeaderEpochRequest
) -> None:
    answers = []
    for p in req.partitions:
        tp = TopicPartition(p.topic, p.partition)
        partition = b.state.partitions.get(tp)
        if partition is None or not partition.is_leader:
            error = ErrorCode.NOT_LEADER_OR_FOLLOWER
        else:
            error = check_leader_epoch(b, partition, p.current_leader_epoch)
        if error is not ErrorCode.NONE or partition is None:
            answers.append(EpochEndOffsetResult(tp.topic, tp.partition, error, -1, -1))
            continue
        epoch, end = partition.log.end_offset_for(p.leader_epoch)
        answers.append(EpochEndOffsetResult(tp.topic, tp.partition, ErrorCode.NONE, epoch, end))
    out.reply(inbound, OffsetForLeaderEpochResponse(tuple(answers)))


def on_list_offsets(b: ReplicasContext, out: Out, inbound: Inbound, req: ListOffsetsRequest) -> None:
    """Latest (-1) is the LEO for a replica and the HW for a consumer; earliest (-2) is the log
    start offset (`Partition.fetchOffsetForTimestamp`); a timestamp is the first offset whose
    record is that recent, below the HW for a client, or UNKNOWN_OFFSET. A consumer's latest is
    not available while the HW is below the start of the leader's epoch (KIP-207): the HW a new
    leader inherited may be behind what its predecessor exposed."""
    answers = []
    for p in req.partitions:
        tp = TopicPartition(p.topic, p.partition)
        partition = b.state.partitions.get(tp)
        if partition is None or not partition.is_leader:
            error = ErrorCode.NOT_LEADER_OR_FOLLOWER
        else:
            error = check_leader_epoch(b, partition, p.current_leader_epoch)
        if error is not ErrorCode.NONE or partition is None:
            answers.append(ListOffsetsPartitionResponse(tp.topic, tp.partition, error))
            continue
        log = partition.log
        client = req.replica_id < 0
        lagging = client and partition.epoch_start_offset > log.high_watermark and b.config.profile.offset_not_available
        epoch = partition.leader_epoch
        if p.timestamp == EARLIEST_TIMESTAMP:
            offset = log.log_start_offset
        elif p.timestamp == LATEST_TIMESTAMP:
            offset = log.high_watermark if client else log.log_end_offset
            error = ErrorCode.OFFSET_NOT_AVAILABLE if lagging else ErrorCode.NONE
        else:
            found = log.offset_for_timestamp(p.timestamp)
            if found is not None and (not client or found[0] < log.high_watermark):
                offset, epoch = found
            else:
                offset, epoch = UNKNOWN_OFFSET, -1
                error = ErrorCode.OFFSET_NOT_AVAILABLE if lagging else ErrorCode.NONE
        if error is not ErrorCode.NONE:
            answers.append(ListOffsetsPartitionResponse(tp.topic, tp.partition, error))
            continue
        answers.append(ListOffsetsPartitionResponse(tp.topic, tp.partition, ErrorCode.NONE, offset, epoch))
    out.reply(inbound, ListOffsetsResponse(tuple(answers)))
