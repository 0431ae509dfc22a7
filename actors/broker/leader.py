"""The leader's side: fetch, list offsets, offsets for leader epoch, the purgatory, and ISR
shrink and expand (the produce path is in `produce.py`).

Models `ReplicaManager.appendRecords`/`fetchMessages`, `Partition.appendRecordsToLeader`,
`Partition.fetchRecords` (read first, capturing the HW, then update the follower's fetch state:
an immediate response carries the HW from *before* the fetch), `DelayedFetch`,
`DelayedProduce`, and `maybeShrinkIsr`/`maybeExpandIsr` with AlterPartition (2.7+) or a ZooKeeper write (before).

Left out: transactions and the LSO.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

from actors.broker import produce
from actors.broker.config import controller_address
from actors.broker.partition import Partition, PendingIsr, Role
from actors.broker.partition_log import PartitionLog
from actors.broker.replica_state import ReplicaState, can_join_isr, fetched_at_end, out_of_sync_replicas
from actors.broker.fetch_session import DelayedFetch, LeaderFetchSession, Rest
from actors.core import Ctx, Inbound, Out
from protocols.errors import ErrorCode
from protocols.metadata import IsrUpdateRequest, IsrUpdateResponse
from protocols.replication import (
    EARLIEST_TIMESTAMP,
    AlterPartitionItem,
    AlterPartitionRequest,
    AlterPartitionResponse,
    EpochEndOffset,
    EpochEndOffsetResult,
    FetchedPartition,
    FetchPartition,
    FetchRequest,
    FetchResponse,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    RecordBatch,
)
from protocols.types import TopicPartition

if TYPE_CHECKING:
    from actors.broker.behavior import Broker

__all__ = [
    "alter_partition_timed_out",
    "check_purgatory",
    "maybe_shrink_isr",
    "on_alter_partition_response",
    "on_fetch",
    "on_isr_update_response",
    "on_list_offsets",
    "on_offset_for_leader_epoch",
]

# ----------------------------------------------------------------------------- fetch


def on_fetch(b: Broker, ctx: Ctx, out: Out, inbound: Inbound, req: FetchRequest) -> None:
    """`fetchMessages`: read (HW captured first), update follower state, answer or park."""
    fetched, error = _session_partitions(b, req)
    if error is not ErrorCode.NONE:
        out.reply(inbound, FetchResponse((), error))
        return
    readable = 0
    immediate = req.max_wait_ms <= 0 or not fetched
    replica = req.replica_id
    reads: list[_Read | None] = []
    partitions = b.state.partitions
    now = ctx.now_ms
    session = b.state.fetch_sessions.get(replica) if replica >= 0 else None
    held = None
    if session is not None and session.resting:
        # Resting partitions are neither read nor answered, nor waited on if the fetch parks.
        held, resting = session.partitions, session.resting
        fetched = tuple([fp for tp, fp in held.items() if tp not in resting])
    for fp in fetched:
        if replica >= 0:
            # Most partitions of a follower's fetch are idle: the follower is in the ISR, caught
            # up, and asks what it asked last time. Reading and the fetch-state update then
            # reduce to a new caught-up time, done inline (the general path below would do
            # the same through four calls).
            partition = partitions.get((fp.topic, fp.partition))  # type: ignore[call-overload]
            if partition is not None and partition.role is Role.LEADER:
                state = partition.followers.get(replica)
                if state is not None and _idle(partition, state, replica, fp):
                    end = fp.fetch_offset
                    partition.followers[replica] = fetched_at_end(state, end, now)
                    reads.append(None)  # read when answering, if this fetch is answered now
                    continue
        read = _read_partition(b, fp, replica)
        reads.append(read)
        if read.partition is None:  # an error or a diverging epoch
            immediate = True
            continue
        for batch in read.records:
            readable += batch.size_bytes
        if replica >= 0:
            _follower_fetched(b, ctx, out, read.partition, fp, replica)
    if session is not None:
        session.last_fetch_ms = now
    if immediate or readable >= req.min_bytes:
        out.reply(inbound, FetchResponse(_session_answers(b, req, fetched, reads)))
        return
    op = DelayedFetch(b.state.new_id(), inbound, req, fetched, ctx.now_ms + req.max_wait_ms, session=session)
    # Plain (topic, partition) tuples: equal to the TopicPartition keys, without building one each.
    b.state.delayed_fetches.add(op.id, op, [(fp.topic, fp.partition) for fp in fetched])  # type: ignore[misc]
    if held is not None and session is not None:
        op.held = dict(held)  # a resting partition that wakes joins it
        session.parked.append(op)
    out.set_timer(f"fetch:{op.id}", req.max_wait_ms)


def _session_partitions(b: Broker, req: FetchRequest) -> tuple[tuple[FetchPartition, ...], ErrorCode]:
    """KIP-227's `FetchManager.newContext`: the partitions a follower's request reads, or the
    session error that answers it. Epoch 0 opens a new session with the partitions it lists; a
    later epoch must be the session's next, and its partitions and forgotten partitions update
    the session, which is then read whole. A consumer's request reads what it lists."""
    if req.replica_id < 0:
        return req.partitions, ErrorCode.NONE
    sessions = b.state.fetch_sessions
    session = sessions.get(req.replica_id)
    # Keyed by plain (topic, partition) tuples, equal to the TopicPartition they stand for.
    if req.session_epoch <= 0:
        if session is not None:
            _wake_all(session)
        held = {(fp.topic, fp.partition): fp for fp in req.partitions}
        # The HWs last sent stay until this request's full answer replaces them.
        sent = session.sent_high_watermarks if session is not None else {}
        sessions[req.replica_id] = LeaderFetchSession(held, 1, sent, purgatory=b.state.delayed_fetches)  # type: ignore[arg-type]
        return req.partitions, ErrorCode.NONE
    if session is None:
        return (), ErrorCode.FETCH_SESSION_ID_NOT_FOUND  # this leader restarted since
    if req.session_epoch != session.epoch:
        return (), ErrorCode.INVALID_FETCH_SESSION_EPOCH  # a duplicate or a stale request
    held = session.partitions
    resting = session.resting
    for gone in req.forgotten:
        tp = (gone.topic, gone.partition)
        held.pop(tp, None)  # type: ignore[call-overload]
        session.sent_high_watermarks.pop(tp, None)  # type: ignore[call-overload]
        if tp in resting:
            resting[tp].partition.wake()  # type: ignore[index]
    joined = False
    for fp in req.partitions:
        tp = (fp.topic, fp.partition)
        joined = joined or tp not in held
        held[tp] = fp  # type: ignore[index]
        if tp in resting:  # the follower's position moved
            resting[tp].partition.wake()  # type: ignore[index]
    if joined:  # in the follower's order again, which is what it would have listed in full
        session.partitions = held = dict(sorted(held.items()))
    session.epoch += 1
    return tuple(held.values()), ErrorCode.NONE


def _wake_all(session: LeaderFetchSession) -> None:
    for rest in list(session.resting.values()):
        rest.partition.wake()


def _come_to_rest(session: LeaderFetchSession, tp: TopicPartition, partition: Partition, replica: int, fp: FetchPartition) -> None:
    """An idle partition just answered (or left out) with its HW: it rests from now on if the
    fetch handler's idle path would take it (`_idle`)."""
    state = partition.followers.get(replica)
    if state is None or not _idle(partition, state, replica, fp):
        return
    log = partition.log
    session.resting[tp] = Rest(partition, state, log.log_end_offset)
    partition.resting[replica] = session
    # It rests while its LEO and HW stay as they are: any change to either, by any path, wakes
    # it. Every other change that would make reading it find more than an idle partition (a
    # leadership or ISR change, a fetch of it by its follower) wakes it where it happens.
    log.on_change = partition.wake


class _Read(NamedTuple):
    """What reading one partition found: a `FetchedPartition`'s fields, made into one only if
    the answer carries it (an incremental session leaves out most, a parked fetch all)."""

    error_code: ErrorCode
    high_watermark: int
    records: tuple[RecordBatch, ...] = ()
    diverging_epoch: EpochEndOffset | None = None
    partition: Partition | None = None
    """Where it was read from; None after an error or a diverging epoch."""
    log_start_offset: int = 0


RESTING = _Read(ErrorCode.NONE, -1)
"""The read of a resting partition (`LeaderFetchSession.resting`): skipped, and left out."""


def _read_partition(b: Broker, fp: FetchPartition, replica_id: int) -> _Read:
    """`readFromLocalLog` for one partition. Called for every partition of every fetch, so the
    common case (the leader, the current epoch, the follower on the leader's last epoch) is
    tested inline, in the order of the checks it stands for."""
    # A TopicPartition is a tuple: the plain tuple finds it without building one per partition.
    partition = b.state.partitions.get((fp.topic, fp.partition))  # type: ignore[call-overload]
    if partition is None:
        return _Read(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)
    if partition.role is not Role.LEADER:
        return _Read(ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)
    log = partition.log
    end = log.log_end_offset
    offset = fp.fetch_offset
    if replica_id >= 0 and _caught_up(partition, fp):
        return _Read(ErrorCode.NONE, log.high_watermark, (), None, partition, log.log_start_offset)
    if fp.current_leader_epoch >= 0 and fp.current_leader_epoch != partition.leader_epoch:
        fenced = _check_leader_epoch(b, partition, fp.current_leader_epoch)
        if fenced is not ErrorCode.NONE:
            return _Read(fenced, -1)
    hw = log.high_watermark
    if replica_id >= 0 and fp.last_fetched_epoch >= 0 and b.config.profile.truncate_on_fetch:
        diverging = _diverging_epoch(log, fp)
        if diverging is not None:
            return _Read(ErrorCode.NONE, hw, (), diverging)
    if offset > end or offset < log.log_start_offset:
        return _Read(ErrorCode.OFFSET_OUT_OF_RANGE, hw)
    # Followers read to the LEO; consumers (read_uncommitted) to the HW.
    bound = end if replica_id >= 0 else hw
    batches = log.read(offset, bound, fp.partition_max_bytes) if offset < bound else ()
    return _Read(ErrorCode.NONE, hw, batches, None, partition, log.log_start_offset)


def _idle(partition: Partition, state: ReplicaState, replica: int, fp: FetchPartition) -> bool:
    """A follower's partition with nothing to read or update but its fetch times: the follower
    is in the ISR and the replicas, the leader knows it at its fetch offset, and it is caught
    up (`_caught_up`)."""
    return (
        state.log_end_offset == fp.fetch_offset
        and replica in partition.isr
        and replica in partition.replicas
        and _caught_up(partition, fp)
    )


def _caught_up(partition: Partition, fp: FetchPartition) -> bool:
    """Most partitions of a follower's fetch: it asks from the leader's LEO, on the leader's
    current epoch, with no divergence; so no fencing and nothing to read (the general checks of
    `_read_partition` would say so). An idle partition's last fetched epoch stays the one before
    the last leader change."""
    log = partition.log
    return (
        fp.fetch_offset == log.log_end_offset
        and fp.current_leader_epoch == partition.leader_epoch
        and (fp.last_fetched_epoch == log.epochs.latest_epoch or _diverging_epoch(log, fp) is None)
    )


def _diverging_epoch(log: PartitionLog, fp: FetchPartition) -> EpochEndOffset | None:
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


def _check_leader_epoch(b: Broker, partition: Partition, current_leader_epoch: int) -> ErrorCode:
    """KIP-320 (2.1+): `checkCurrentLeaderEpoch`."""
    if not b.config.profile.fetch_epoch_fencing or current_leader_epoch < 0:
        return ErrorCode.NONE
    if current_leader_epoch < partition.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if current_leader_epoch > partition.leader_epoch:
        return ErrorCode.UNKNOWN_LEADER_EPOCH
    return ErrorCode.NONE


def _follower_fetched(
    b: Broker, ctx: Ctx, out: Out, partition: Partition, fp: FetchPartition, replica: int
) -> None:
    """`updateFollowerFetchState`: remote LEO, then ISR expansion, then the HW, which Kafka
    recomputes only when the follower's LEO moved (a fetch from the same offset cannot raise
    it)."""
    if replica not in partition.replicas:
        return
    moved = partition.record_follower_fetch(replica, fp.fetch_offset, ctx.now_ms)
    if replica not in partition.isr:  # the test `_maybe_expand_isr` starts with, done here
        _maybe_expand_isr(b, ctx, out, partition, replica)
    if moved:
        b.after_leader_change(ctx, out, partition, leo_changed=False)


def check_purgatory(
    b: Broker, out: Out, changed: Iterable[TopicPartition], *, hw_or_role: bool = True
) -> None:
    """`checkAndComplete` for the partitions whose LEO, HW or role changed: complete every
    delayed operation watching them that can complete now. A delayed produce
    waits for the HW or for leadership to go, so when only the LEO moved (`hw_or_role` False)
    only fetches are checked (`ReplicaManager.addCompletePurgatoryAction`)."""
    produces, fetches = b.state.delayed_produces, b.state.delayed_fetches
    keys = tuple(changed)
    for op_id in produces.watching(keys) if hw_or_role else ():
        op = produces.get(op_id)
        if produce.try_complete(b, op):
            produces.pop(op_id)
            out.cancel_timer(f"produce:{op_id}")
            produce.answer(b, out, op)
    for op_id in fetches.watching(keys):
        if _fetch_can_complete(b, fetches.get(op_id)):
            complete_fetch(b, out, op_id)
            out.cancel_timer(f"fetch:{op_id}")


def _fetch_can_complete(b: Broker, op: DelayedFetch) -> bool:
    """`DelayedFetch.tryComplete`: not leader, unknown partition, fenced epoch, fetch offset past
    the end (truncation) or now below the log start (retention), a diverging epoch, or enough
    bytes."""
    readable = 0
    partitions = b.state.partitions
    follower = op.is_follower
    divergence = follower and b.config.profile.truncate_on_fetch
    for fp in op.partitions:  # every partition of every parked fetch, at every append
        partition = partitions.get((fp.topic, fp.partition))  # type: ignore[call-overload]
        if partition is None or partition.role is not Role.LEADER:
            return True
        epoch = fp.current_leader_epoch
        if epoch >= 0 and epoch != partition.leader_epoch and _check_leader_epoch(b, partition, epoch) is not ErrorCode.NONE:
            return True
        log = partition.log
        end = log.log_end_offset if follower else log.high_watermark
        if fp.fetch_offset > end or fp.fetch_offset < log.log_start_offset:
            return True
        if divergence and fp.last_fetched_epoch >= 0 and _diverging_epoch(log, fp) is not None:
            return True
        if fp.fetch_offset < end:
            readable += log.bytes_between(fp.fetch_offset, end)
            if readable >= op.request.min_bytes:
                return True  # Kafka sums every partition first; the answer is the same
    return readable >= op.request.min_bytes


def complete_fetch(b: Broker, out: Out, op_id: int) -> None:
    """`DelayedFetch.onComplete`: read again, without updating follower state, with the current HW."""
    op = b.state.delayed_fetches.pop(op_id)
    if op is None:
        return
    if op.held is not None and op.session is not None:
        op.session.parked.remove(op)
    replica = op.request.replica_id
    current = True
    if replica < 0:
        reads: list[_Read | None] = [_read_partition(b, fp, replica) for fp in op.partitions]
    else:
        session = b.state.fetch_sessions.get(replica)
        # A fetch parked in a session the follower has since replaced (it gave up on this one
        # and opened another) reads every partition it holds and is answered through its own
        # session: what rests in the new one, and what was sent there, is not its business.
        current = session is not None and session is op.session
        resting = session.resting if current and session is not None else {}
        reads = []
        for fp in op.partitions:
            tp = (fp.topic, fp.partition)
            reads.append(RESTING if tp in resting else _idle_or_read(b, fp, replica))
    answers = _session_answers(b, op.request, op.partitions, reads, session=op.session if not current else None)
    out.reply(op.inbound, FetchResponse(answers))


def _idle_or_read(b: Broker, fp: FetchPartition, replica_id: int) -> _Read | None:
    """A follower's partition read again: None (idle, see `_session_answers`) when it is caught
    up, as most of a session's partitions are when a parked fetch completes."""
    partition = b.state.partitions.get((fp.topic, fp.partition))  # type: ignore[call-overload]
    if partition is not None and partition.role is Role.LEADER and _caught_up(partition, fp):
        return None
    return _read_partition(b, fp, replica_id)


def _session_answers(
    b: Broker,
    req: FetchRequest,
    fetched: tuple[FetchPartition, ...],
    reads: list[_Read | None],
    *,
    session: LeaderFetchSession | None = None,
) -> tuple[FetchedPartition, ...]:
    """KIP-227's `IncrementalFetchContext`: a follower's request in a session it opened earlier
    is answered with only the partitions that carry records, an error, a diverging epoch or a
    HW other than the one last sent in the session (`CachedPartition.maybeUpdateResponseData`).
    Epoch 0 and a consumer get every partition.

    A read of None is a follower's idle partition (`on_fetch`): no records and no error, and the
    HW and log start it would have read, which nothing in the same handler changes, are read
    here, so a fetch that waits in the purgatory builds no read for it at all.

    `session`: a fetch parked in a session the follower has since replaced is answered through
    that session (Kafka's delayed fetch keeps its own fetch context): what it sends is recorded
    there, not in the current session, and nothing comes to rest."""
    pairs = zip(fetched, reads, strict=True)
    if req.replica_id < 0:
        return tuple(_answer(fp, read) for fp, read in pairs)
    replaced = session is not None
    if session is None:
        session = b.state.fetch_sessions.get(req.replica_id)
    previous = session.sent_high_watermarks if req.session_epoch > 0 and session is not None else None
    # Keyed by plain (topic, partition) tuples, equal to the TopicPartition they stand for. An
    # incremental answer updates the HWs sent in place (a resting partition's stays as sent);
    # a full one starts them again.
    sent: dict[TopicPartition, int] = {} if previous is None else previous
    kept = []
    none = ErrorCode.NONE
    partitions = b.state.partitions
    # Before 1.1 every Fetch is a new session; a fetch from a replaced session rests nothing.
    rests = not replaced and b.config.profile.incremental_fetch_sessions
    for fp, read in pairs:
        if read is RESTING:
            continue
        tp = (fp.topic, fp.partition)
        if read is None:
            partition = partitions[tp]  # type: ignore[index]
            log = partition.log
            hw = log.high_watermark
            if previous is None or previous.get(tp) != hw:  # type: ignore[call-overload]
                kept.append(FetchedPartition(fp.topic, fp.partition, none, hw, (), None, log.log_start_offset))
            sent[tp] = hw  # type: ignore[index]
            if session is not None and rests:
                _come_to_rest(session, tp, partition, req.replica_id, fp)  # type: ignore[arg-type]
            continue
        hw = read.high_watermark if read.error_code is none else -1
        if (
            previous is None
            or read.records
            or hw < 0
            or read.diverging_epoch is not None
            or previous.get(tp) != hw  # type: ignore[call-overload]
        ):
            kept.append(_answer(fp, read))
        sent[tp] = hw  # type: ignore[index]
    if session is not None:
        session.sent_high_watermarks = sent
    return tuple(kept)


def _answer(fp: FetchPartition, read: _Read) -> FetchedPartition:
    return FetchedPartition(
        fp.topic, fp.partition, read.error_code, read.high_watermark, read.records, read.diverging_epoch, read.log_start_offset
    )


# ----------------------------------------------------------------------------- offsets


def on_offset_for_leader_epoch(
    b: Broker, out: Out, inbound: Inbound, req: OffsetForLeaderEpochRequest
) -> None:
    answers = []
    for p in req.partitions:
        tp = TopicPartition(p.topic, p.partition)
        partition = b.state.partitions.get(tp)
        if partition is None or not partition.is_leader:
            error = ErrorCode.NOT_LEADER_OR_FOLLOWER
        else:
            error = _check_leader_epoch(b, partition, p.current_leader_epoch)
        if error is not ErrorCode.NONE or partition is None:
            answers.append(EpochEndOffsetResult(tp.topic, tp.partition, error, -1, -1))
            continue
        epoch, end = partition.log.end_offset_for(p.leader_epoch)
        answers.append(EpochEndOffsetResult(tp.topic, tp.partition, ErrorCode.NONE, epoch, end))
    out.reply(inbound, OffsetForLeaderEpochResponse(tuple(answers)))


def on_list_offsets(b: Broker, out: Out, inbound: Inbound, req: ListOffsetsRequest) -> None:
    """Latest (-1) is the LEO for a replica and the HW for a consumer; earliest (-2) is the log
    start offset (`Partition.fetchOffsetForTimestamp`). A consumer's latest is not available
    while the HW is below the start of the leader's epoch (KIP-207): the HW a new leader
    inherited may be behind what its predecessor exposed."""
    answers = []
    for p in req.partitions:
        tp = TopicPartition(p.topic, p.partition)
        partition = b.state.partitions.get(tp)
        if partition is None or not partition.is_leader:
            error = ErrorCode.NOT_LEADER_OR_FOLLOWER
        else:
            error = _check_leader_epoch(b, partition, p.current_leader_epoch)
            latest_for_a_client = p.timestamp != EARLIEST_TIMESTAMP and req.replica_id < 0
            lagging = partition.epoch_start_offset > partition.log.high_watermark
            if error is ErrorCode.NONE and latest_for_a_client and lagging and b.config.profile.offset_not_available:
                error = ErrorCode.OFFSET_NOT_AVAILABLE
        if error is not ErrorCode.NONE or partition is None:
            answers.append(ListOffsetsPartitionResponse(tp.topic, tp.partition, error))
            continue
        log = partition.log
        if p.timestamp == EARLIEST_TIMESTAMP:
            offset = log.log_start_offset
        else:
            offset = log.log_end_offset if req.replica_id >= 0 else log.high_watermark
        answers.append(
            ListOffsetsPartitionResponse(tp.topic, tp.partition, ErrorCode.NONE, offset, partition.leader_epoch)
        )
    out.reply(inbound, ListOffsetsResponse(tuple(answers)))


# ----------------------------------------------------------------------------- ISR changes


def maybe_shrink_isr(b: Broker, ctx: Ctx, out: Out) -> None:
    """The `isr-expiration` task: drop followers that are not caught up."""
    for tp in sorted(b.state.partitions):
        partition = b.state.partitions[tp]
        if not partition.is_leader or partition.pending_isr is not None:
            continue
        if partition.resting:
            partition.wake()  # the follower times are read now
        lagging = out_of_sync_replicas(
            partition.isr,
            b.config.broker_id,
            partition.followers,
            partition.log.log_end_offset,
            ctx.now_ms,
            b.config.replica_lag_time_max_ms,
        )
        if lagging:
            _propose_isr(b, ctx, out, partition, partition.isr - lagging)


def _maybe_expand_isr(b: Broker, ctx: Ctx, out: Out, partition: Partition, replica: int) -> None:
    if replica in partition.isr or partition.pending_isr is not None:
        return
    state = partition.followers[replica]
    epoch_start = partition.log.epoch_start_offset()
    if can_join_isr(state, partition.log.high_watermark, epoch_start, b.config.profile):
        _propose_isr(b, ctx, out, partition, partition.isr | {replica})


def _propose_isr(b: Broker, ctx: Ctx, out: Out, partition: Partition, new_isr: frozenset[int]) -> None:
    """Propose an ISR change, the way this version does it:
    - 2.7+ (KIP-497): AlterPartition to the controller, pending until it answers;
    - before 2.7: a conditional write of the partition-state znode through this node's
      ZooKeeper client (`Partition.updateIsr`), pending until it answers;
    - in a cluster without ZooKeeper: the leader commits the change itself, as that write would.
    """
    if b.config.profile.alter_partition:
        controller = b.config.controller
        if controller is None and b.state.controller_id >= 0:
            controller = controller_address(b.state.controller_id)
        if controller is None:
            if b.config.zk_client is None:
                _commit_isr(b, ctx, out, partition, new_isr, partition.partition_epoch + 1)
            return  # no controller known yet: the next check proposes again
        correlation_id = b.state.new_id()
        item = AlterPartitionItem(
            partition.tp.topic,
            partition.tp.partition,
            partition.leader_epoch,
            tuple(sorted(new_isr)),
            partition.partition_epoch,
        )
        out.send(controller, AlterPartitionRequest(b.config.broker_id, b.state.broker_epoch, (item,)), correlation_id)
    elif b.config.zk_client is not None:
        correlation_id = b.state.new_id()
        request = IsrUpdateRequest(
            partition.tp.topic,
            partition.tp.partition,
            b.config.broker_id,
            partition.leader_epoch,
            tuple(sorted(new_isr)),
            partition.controller_epoch,
            partition.partition_epoch,
        )
        out.send(b.config.zk_client, request, correlation_id)
    else:
        _commit_isr(b, ctx, out, partition, new_isr, partition.partition_epoch + 1)
        return
    partition.pending_isr = PendingIsr(new_isr, correlation_id)
    out.set_timer(f"alter-partition:{correlation_id}", b.config.replica_socket_timeout_ms)


def alter_partition_timed_out(b: Broker, ctx: Ctx, out: Out, correlation_id: int) -> None:
    """No answer came. `AlterPartitionManager` keeps the change until one does, and its channel
    to the controller sends it again: the same ISR and partition epoch, which the controller
    answers with its current state if it had already applied it. Before 2.7 the ZooKeeper
    write is dropped, and the next check or fetch proposes the change again."""
    for tp in sorted(b.state.partitions):
        partition = b.state.partitions[tp]
        pending = partition.pending_isr
        if pending is not None and pending.correlation_id == correlation_id:
            partition.pending_isr = None
            if b.config.profile.alter_partition and partition.is_leader:
                _propose_isr(b, ctx, out, partition, pending.isr)


def on_alter_partition_response(
    b: Broker, ctx: Ctx, out: Out, correlation_id: int, resp: AlterPartitionResponse
) -> None:
    for result in resp.partitions:
        partition = b.state.partitions.get(TopicPartition(result.topic, result.partition))
        pending = None if partition is None else partition.pending_isr
        if partition is None or pending is None or pending.correlation_id != correlation_id:
            continue  # an answer to a request this leader no longer waits for
        partition.pending_isr = None
        out.cancel_timer(f"alter-partition:{correlation_id}")
        if result.error_code is ErrorCode.NONE and result.leader_epoch == partition.leader_epoch:
            _commit_isr(b, ctx, out, partition, frozenset(result.isr), result.partition_epoch)
        else:
            out.emit(
                "isr_change_failed",
                topic=partition.tp.topic,
                partition=partition.tp.partition,
                error=result.error_code.name,
            )


def on_isr_update_response(
    b: Broker, ctx: Ctx, out: Out, correlation_id: int, resp: IsrUpdateResponse
) -> None:
    """Before 2.7: the ZooKeeper write of an ISR change came back. On a version conflict the
    leader keeps its ISR and waits for the controller ("cached zkVersion not equal")."""
    for tp in sorted(b.state.partitions):
        partition = b.state.partitions[tp]
        pending = partition.pending_isr
        if pending is None or pending.correlation_id != correlation_id:
            continue
        partition.pending_isr = None
        out.cancel_timer(f"alter-partition:{correlation_id}")
        if resp.error_code is ErrorCode.NONE:
            _commit_isr(b, ctx, out, partition, pending.isr, resp.zk_version)
        else:
            out.emit("isr_change_failed", topic=tp.topic, partition=tp.partition, error=resp.error_code.name)


def _commit_isr(
    b: Broker, ctx: Ctx, out: Out, partition: Partition, new_isr: frozenset[int], partition_epoch: int
) -> None:
    grew = new_isr > partition.isr
    partition.isr = new_isr
    partition.partition_epoch = partition_epoch
    out.emit(
        "isr_expanded" if grew else "isr_shrunk",
        topic=partition.tp.topic,
        partition=partition.tp.partition,
        isr=sorted(new_isr),
        leader_epoch=partition.leader_epoch,
        partition_epoch=partition_epoch,
    )
    b.after_leader_change(ctx, out, partition, leo_changed=False)
