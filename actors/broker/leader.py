"""The leader serving fetches: KIP-227 fetch sessions, the follower's fetch state, and the
fetch purgatory (the produce path is in `produce.py`, ISR changes in `isr.py`).

Models `ReplicaManager.fetchMessages` and `Partition.fetchRecords` (read first, capturing the
HW, then update the follower's fetch state: an immediate response carries the HW from *before*
the fetch; the reads are in `read.py`), `FetchManager.newContext` and `IncrementalFetchContext`
(which partitions a session's request reads and its answer carries), `DelayedFetch` and
`ReplicaManager`'s `checkAndComplete` of both purgatories.

Left out: transactions and the LSO.
"""

from __future__ import annotations

from collections.abc import Iterable

from actors.broker import produce
from actors.broker.context import LeaderContext
from actors.broker.fetch_session import DelayedFetch, LeaderFetchSession, Rest
from actors.broker.isr import maybe_expand_isr
from actors.broker.partition import Partition, Role
from actors.broker.read import (
    RESTING,
    Read,
    caught_up,
    check_leader_epoch,
    diverging_epoch,
    idle,
    read_partition,
)
from actors.broker.replica_state import fetched_at_end
from actors.core import Ctx, Inbound, Out
from protocols.errors import ErrorCode
from protocols.replication import FetchedPartition, FetchPartition, FetchRequest, FetchResponse
from protocols.types import TopicPartition

__all__ = ["check_purgatory", "complete_fetch", "on_fetch"]


def on_fetch(b: LeaderContext, ctx: Ctx, out: Out, inbound: Inbound, req: FetchRequest) -> None:
    """`fetchMessages`: read (HW captured first), update follower state, answer or park."""
    fetched, error = _session_partitions(b, req)
    if error is not ErrorCode.NONE:
        out.reply(inbound, FetchResponse((), error))
        return
    readable = 0
    immediate = req.max_wait_ms <= 0 or not fetched
    replica = req.replica_id
    reads: list[Read | None] = []
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
                if state is not None and idle(partition, state, replica, fp):
                    end = fp.fetch_offset
                    partition.followers[replica] = fetched_at_end(state, end, now)
                    reads.append(None)  # read when answering, if this fetch is answered now
                    continue
        read = read_partition(b, fp, replica)
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


def _session_partitions(b: LeaderContext, req: FetchRequest) -> tuple[tuple[FetchPartition, ...], ErrorCode]:
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
    fetch handler's idle path would take it (`idle`)."""
    state = partition.followers.get(replica)
    if state is None or not idle(partition, state, replica, fp):
        return
    log = partition.log
    session.resting[tp] = Rest(partition, state, log.log_end_offset)
    partition.resting[replica] = session
    # It rests while its LEO and HW stay as they are: any change to either, by any path, wakes
    # it. Every other change that would make reading it find more than an idle partition (a
    # leadership or ISR change, a fetch of it by its follower) wakes it where it happens.
    log.on_change = partition.wake


def _follower_fetched(
    b: LeaderContext, ctx: Ctx, out: Out, partition: Partition, fp: FetchPartition, replica: int
) -> None:
    """`updateFollowerFetchState`: remote LEO, then ISR expansion, then the HW, which Kafka
    recomputes only when the follower's LEO moved (a fetch from the same offset cannot raise
    it)."""
    if replica not in partition.replicas:
        return
    moved = partition.record_follower_fetch(replica, fp.fetch_offset, ctx.now_ms)
    if replica not in partition.isr:  # the test `maybe_expand_isr` starts with, done here
        maybe_expand_isr(b, ctx, out, partition, replica)
    if moved:
        b.after_leader_change(ctx, out, partition, leo_changed=False)


def check_purgatory(
    b: LeaderContext, out: Out, changed: Iterable[TopicPartition], *, hw_or_role: bool = True
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


def _fetch_can_complete(b: LeaderContext, op: DelayedFetch) -> bool:
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
        if epoch >= 0 and epoch != partition.leader_epoch and check_leader_epoch(b, partition, epoch) is not ErrorCode.NONE:
            return True
        log = partition.log
        end = log.log_end_offset if follower else log.high_watermark
        if fp.fetch_offset > end or fp.fetch_offset < log.log_start_offset:
            return True
        if divergence and fp.last_fetched_epoch >= 0 and diverging_epoch(log, fp) is not None:
            return True
        if fp.fetch_offset < end:
            readable += log.bytes_between(fp.fetch_offset, end)
            if readable >= op.request.min_bytes:
                return True  # Kafka sums every partition first; the answer is the same
    return readable >= op.request.min_bytes


def complete_fetch(b: LeaderContext, out: Out, op_id: int) -> None:
    """`DelayedFetch.onComplete`: read again, without updating follower state, with the current HW."""
    op = b.state.delayed_fetches.pop(op_id)
    if op is None:
        return
    if op.held is not None and op.session is not None:
        op.session.parked.remove(op)
    replica = op.request.replica_id
    current = True
    if replica < 0:
        reads: list[Read | None] = [read_partition(b, fp, replica) for fp in op.partitions]
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


def _idle_or_read(b: LeaderContext, fp: FetchPartition, replica_id: int) -> Read | None:
    """A follower's partition read again: None (idle, see `_session_answers`) when it is caught
    up, as most of a session's partitions are when a parked fetch completes."""
    partition = b.state.partitions.get((fp.topic, fp.partition))  # type: ignore[call-overload]
    if partition is not None and partition.role is Role.LEADER and caught_up(partition, fp):
        return None
    return read_partition(b, fp, replica_id)


def _session_answers(
    b: LeaderContext,
    req: FetchRequest,
    fetched: tuple[FetchPartition, ...],
    reads: list[Read | None],
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


def _answer(fp: FetchPartition, read: Read) -> FetchedPartition:
    return FetchedPartition(
        fp.topic, fp.partition, read.error_code, read.high_watermark, read.records, read.diverging_epoch, read.log_start_offset
    )
