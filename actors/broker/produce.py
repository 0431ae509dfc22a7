"""The produce path on the leader, and InitProducerId.

Models `ReplicaManager.appendRecords`, `Partition.appendRecordsToLeader` and `DelayedProduce`:
- each partition of the request is checked in Kafka's order: acks, the partition, leadership,
  then for acks=all the ISR against min ISR (NOT_ENOUGH_REPLICAS, before any append and before
  the duplicate check), then the idempotent producer's state (`producer_state.py`);
- a duplicate batch is not appended and is answered with the offsets it was first written at;
- acks=0 gets no answer, acks=1 the append, and acks=all waits in the purgatory until the HW
  reaches the batch's end (NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR is then below min ISR,
  NOT_LEADER_OR_FOLLOWER if leadership went, REQUEST_TIMED_OUT after the request's timeout).

A client connection whose produce waits in the purgatory is muted, as Kafka's socket server
mutes a channel until its answer is sent: requests that arrive on it meanwhile are handled, in
order, once the answer has gone (`Broker` handles them again). The group coordinator's appends are never held back
(`Broker.on_message`): Kafka's coordinator calls `appendRecords` in-process, not over a socket,
so one commit waiting for its replicas holds back neither the next commit nor a group record.

Producer ids: a broker hands out ids from a block of `PRODUCER_ID_BLOCK_SIZE`, taking a new
block when one runs out and after each restart. Kafka takes the blocks in turn from ZooKeeper's
`/latest_producer_id_block`; here broker N takes them from its own range (its k-th block starts
at (N * 1000 + k) * 1000), which keeps ids distinct without the round trip (a simplification:
the ids differ from Kafka's, their uniqueness does not).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from actors.broker.context import DelayedProduceContext, ProduceContext
from actors.broker.state import DelayedProduce, PendingProduce
from actors.core import Ctx, Inbound, Out
from protocols.connection import Disconnected
from protocols.errors import ErrorCode
from protocols.metadata import MetadataRequest
from protocols.producer import InitProducerIdRequest, InitProducerIdResponse
from protocols.records import producer_records
from protocols.replication import (
    ProducePartitionData,
    ProducePartitionResponse,
    ProduceRequest,
    ProduceResponse,
)
from protocols.types import TopicPartition

__all__ = ["answer", "expire_produce", "on_init_producer_id", "on_produce", "try_complete"]

ACKS = (0, 1, -1)
CLIENT_REQUESTS = (ProduceRequest, MetadataRequest, InitProducerIdRequest)
"""What a producer sends on its connection to a broker: the requests muting holds back.
Brokers and the controller use connections of their own (other actors here)."""
PRODUCER_ID_BLOCK_SIZE = 1000
PRODUCER_ID_BLOCKS_PER_BROKER = 1000
PRODUCER_ID_BLOCK_FILE = "producer-id-blocks"


def on_produce(b: ProduceContext, ctx: Ctx, out: Out, inbound: Inbound, req: ProduceRequest) -> None:
    """`appendRecords`: append to each partition this broker leads, then answer by `acks`."""
    # From 2.7 (KAFKA-8334) the purgatory checks of the appends wait until the request is
    # handled: a follower's parked fetch then carries every partition of the Produce, where
    # before it completed at the first append and the rest waited for its next fetch.
    deferred: list[tuple[TopicPartition, bool]] | None = [] if b.config.profile.complete_after_whole_append else None
    _append_all(b, ctx, out, inbound, req, deferred)
    if deferred:
        b.complete_deferred(out, deferred)


def _append_all(
    b: ProduceContext,
    ctx: Ctx,
    out: Out,
    inbound: Inbound,
    req: ProduceRequest,
    deferred: list[tuple[TopicPartition, bool]] | None,
) -> None:
    """Append each partition, then answer by `acks` (or park the answer)."""
    results: dict[TopicPartition, ProducePartitionResponse] = {}
    pending: dict[TopicPartition, PendingProduce] = {}
    order = tuple(TopicPartition(p.topic, p.partition) for p in req.partitions)
    for data in req.partitions:
        tp = TopicPartition(data.topic, data.partition)
        error = _produce_error(b, tp, req.acks)
        if error is ErrorCode.NONE:
            error = _append(b, ctx, out, tp, data, req.acks, pending, deferred)
        if error is not ErrorCode.NONE:
            results[tp] = ProducePartitionResponse(tp.topic, tp.partition, error)
            out.emit("produce_rejected", topic=tp.topic, partition=tp.partition, error=error.name)
    if req.acks == 0:
        # Kafka sends no response; a failed append closes the connection instead
        # (`KafkaApis.handleProduceRequest`), the producer's only sign of it: it asks for
        # metadata again and finds the partition's new leader.
        if results:
            out.send(inbound.src, Disconnected(ctx.node))
        return
    if req.acks == 1:
        for tp, p in pending.items():
            results[tp] = ProducePartitionResponse(tp.topic, tp.partition, ErrorCode.NONE, p.base_offset)
        out.reply(inbound, ProduceResponse(tuple(results[tp] for tp in order)))
        return
    op = DelayedProduce(b.state.new_id(), inbound, pending, results, order, ctx.now_ms + req.timeout_ms)
    if not try_complete(b, op):
        b.state.delayed_produces.add(op.id, op, op.pending)
        b.state.muted[inbound.src] = deque()
        out.set_timer(f"produce:{op.id}", req.timeout_ms)
        return
    out.reply(inbound, ProduceResponse(tuple(op.done[tp] for tp in order)))


def _append(
    b: ProduceContext,
    ctx: Ctx,
    out: Out,
    tp: TopicPartition,
    data: ProducePartitionData,
    acks: int,
    pending: dict[TopicPartition, PendingProduce],
    deferred: list[tuple[TopicPartition, bool]] | None,
) -> ErrorCode:
    """Check the producer's state, then append (or find the duplicate); the error, if any."""
    partition = b.state.partitions[tp]
    log = partition.log
    verdict = log.producers.check(
        data.producer_id,
        data.producer_epoch,
        data.base_sequence,
        len(data.values),
        accept_unknown=b.config.profile.accept_unknown_producer,
    )
    if verdict.error is not ErrorCode.NONE:
        return verdict.error
    original = verdict.duplicate_of
    if original is not None:
        out.emit(
            "batch_deduplicated",
            topic=tp.topic,
            partition=tp.partition,
            producer_id=data.producer_id,
            producer_epoch=data.producer_epoch,
            base_sequence=data.base_sequence,
            base_offset=original.first_offset,
        )
        pending[tp] = PendingProduce(original.last_offset + 1, original.first_offset)
        return ErrorCode.NONE
    batch = log.append_as_leader(
        out,
        data.values,
        partition.leader_epoch,
        (data.producer_id, data.producer_epoch, data.base_sequence),
        data.size_bytes,
        now_ms=ctx.now_ms,
    )
    out.emit(
        "records_appended",
        topic=tp.topic,
        partition=tp.partition,
        base_offset=batch.base_offset,
        count=batch.count,
        leader_epoch=partition.leader_epoch,
        producer_id=data.producer_id,
        producer_epoch=data.producer_epoch,
        base_sequence=data.base_sequence,
        acks=acks,
        # The records' producer and numbers, as the producer's own events name them: what lets
        # the analytics tell which record each offset of a final log holds.
        **_named(batch.values),
    )
    pending[tp] = PendingProduce(log.log_end_offset, batch.base_offset)
    b.after_leader_change(ctx, out, partition, leo_changed=True, deferred=deferred)
    return ErrorCode.NONE


def _named(values: Sequence[str]) -> dict[str, Any]:
    named = producer_records(values)
    return {} if named is None else {"producer": named[0], "records": named[1]}


def _produce_error(b: ProduceContext, tp: TopicPartition, acks: int) -> ErrorCode:
    partition = b.state.partitions.get(tp)
    if acks not in ACKS:
        return ErrorCode.INVALID_REQUIRED_ACKS
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if not partition.is_leader:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    min_isr = min(b.config.min_insync_replicas_for(tp.topic), len(partition.replicas))
    if acks == -1 and len(partition.isr) < min_isr:
        return ErrorCode.NOT_ENOUGH_REPLICAS
    return ErrorCode.NONE


def try_complete(b: DelayedProduceContext, op: DelayedProduce) -> bool:
    """`checkEnoughReplicasReachOffset` for every waiting partition; True when all are done."""
    for tp in sorted(op.pending):
        wait = op.pending[tp]
        partition = b.state.partitions.get(tp)
        if partition is None or not partition.is_leader:
            # Only leadership counts (checkEnoughReplicasReachOffset): a new epoch with the same
            # leader, e.g. the controller removing a dead broker from the ISR, changes nothing.
            error = ErrorCode.NOT_LEADER_OR_FOLLOWER
        elif partition.log.high_watermark >= wait.required_offset:
            min_isr = min(b.config.min_insync_replicas_for(tp.topic), len(partition.replicas))
            enough = min_isr <= len(partition.maximal_isr)
            error = ErrorCode.NONE if enough else ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        else:
            continue
        offset = wait.base_offset if error is not ErrorCode.NOT_LEADER_OR_FOLLOWER else -1
        op.done[tp] = ProducePartitionResponse(tp.topic, tp.partition, error, offset)
        del op.pending[tp]
    return not op.pending


def answer(b: DelayedProduceContext, out: Out, op: DelayedProduce) -> None:
    """Send a completed produce's answer; its connection is read again."""
    out.reply(op.inbound, ProduceResponse(tuple(op.done[tp] for tp in op.order)))
    src = op.inbound.src
    if b.state.muted.get(src):
        out.set_timer(f"unmute:{src}", 0)  # the requests that waited, after the answer
    else:
        b.state.muted.pop(src, None)


def expire_produce(b: DelayedProduceContext, out: Out, op_id: int) -> None:
    op = b.state.delayed_produces.pop(op_id)
    if op is None:
        return
    for tp in sorted(op.pending):
        op.done[tp] = ProducePartitionResponse(tp.topic, tp.partition, ErrorCode.REQUEST_TIMED_OUT, -1)
    answer(b, out, op)


def on_init_producer_id(b: ProduceContext, out: Out, inbound: Inbound, req: InitProducerIdRequest) -> None:
    """A new producer id for an idempotent producer without a transactional id, epoch 0."""
    state = b.state
    if state.next_producer_id < 0 or state.next_producer_id % PRODUCER_ID_BLOCK_SIZE == 0:
        # Take a new block; the count of blocks taken survives restarts (ZooKeeper keeps it
        # in Kafka), so a restarted broker never hands out an id again.
        block = state.producer_id_blocks = state.producer_id_blocks + 1
        out.write_file(PRODUCER_ID_BLOCK_FILE, block)
        state.next_producer_id = (b.config.broker_id * PRODUCER_ID_BLOCKS_PER_BROKER + block) * PRODUCER_ID_BLOCK_SIZE
    producer_id = state.next_producer_id
    state.next_producer_id += 1
    out.emit("producer_id_allocated", producer_id=producer_id, client=str(inbound.src))
    out.reply(inbound, InitProducerIdResponse(ErrorCode.NONE, producer_id, 0))
