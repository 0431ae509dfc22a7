"""The follower's side: fetch sessions, truncation, and applying what the leader sends.

Models `ReplicaFetcherThread`/`AbstractFetcherThread`: one session per source broker with one
request in flight, for every partition it follows from that broker. Since 1.1 (KIP-227) the
session is incremental, as `FetchSessionHandler` builds it: a request lists only the partitions
whose fetch position changed or that joined, and those that left; a session error or a lost
request starts a new session with a full request. Truncation follows the
version profile (KIP-101, KIP-279, KAFKA-10554):
- before 0.11: truncate to the local HW on becoming follower (the cause of S2 and S4);
- 0.11 to 2.7: OffsetsForLeaderEpoch first, with the KIP-279 loop from 2.0;
- 2.8 and later: fetch at once with `last_fetched_epoch`; a `diverging_epoch` answer truncates.
After OFFSET_OUT_OF_RANGE (`fetchOffsetAndTruncate`) the follower asks the leader's end offset
(ListOffsets latest) and truncates to it if it is ahead; otherwise it asks the leader's log
start offset (earliest) and, if its own log ends before it (retention deleted what it lacks),
truncates fully and starts there. A fetch answer carries the leader's log start offset, which
the follower's own follows (KIP-107, 0.11+); its retention check then deletes the segments below.

One module, as Kafka's fetcher is one class (`AbstractFetcherThread`): building the requests,
applying the answers and truncating all read and move the same per-partition fetch state.
"""

from __future__ import annotations

from typing import Any

from actors.addresses import broker_address
from actors.broker.context import FetcherContext
from actors.broker.epoch_cache import EpochEntry, truncation_state
from actors.broker.partition import Partition
from actors.broker.state import FetchPhase, FetchSession, FollowedPartition
from actors.core import Ctx, Out
from protocols.errors import ErrorCode
from protocols.replication import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    FetchedPartition,
    FetchPartition,
    FetchRequest,
    FetchResponse,
    ForgottenPartition,
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderEpochPartition,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)
from protocols.types import TopicPartition

__all__ = [
    "disconnected",
    "maybe_send",
    "on_fetch_response",
    "on_list_offsets_response",
    "on_offset_for_leader_epoch_response",
    "request_timed_out",
    "start_following",
    "stop_following",
]


def stop_following(b: FetcherContext, tp: TopicPartition) -> None:
    for leader in sorted(b.state.sessions):
        session = b.state.sessions[leader]
        if session.partitions.pop(tp, None) is not None:
            session.steady = False


def start_following(b: FetcherContext, ctx: Ctx, out: Out, partition: Partition) -> None:
    """`makeFollower` with a new epoch: truncate as the era does, then fetch from the leader."""
    stop_following(b, partition.tp)
    profile = b.config.profile
    if not profile.leader_epochs:
        _truncate(b, out, partition, partition.log.high_watermark, "high_watermark")
        phase = FetchPhase.FETCHING
    elif profile.truncate_on_fetch and partition.log.latest_epoch >= 0:
        phase = FetchPhase.FETCHING
    elif partition.log.latest_epoch >= 0:
        phase = FetchPhase.TRUNCATING
    else:
        phase = FetchPhase.FETCHING  # an empty log has nothing to truncate
    session = b.state.sessions.setdefault(partition.leader, FetchSession(partition.leader))
    followed = session.partitions
    followed[partition.tp] = FollowedPartition(partition.tp, partition.leader_epoch, phase, partition.log)
    session.steady = False
    if any(tp > partition.tp for tp in followed):  # kept in order: a fetch lists them so
        session.partitions = dict(sorted(followed.items()))
    maybe_send(b, ctx, out, session)


def maybe_send(b: FetcherContext, ctx: Ctx, out: Out, session: FetchSession) -> None:
    """Send the session's next request if none is in flight: truncation first, then offsets
    out of range, then one Fetch for every fetching partition (in a steady session, built from
    the partitions touched since the last one: `_next_steady_fetch`)."""
    if session.in_flight is not None:
        return
    now = ctx.now_ms
    request = _next_steady_fetch(b, session, now)
    if request is not None:
        sent = session.sent
    else:
        ready = [f for f in session.partitions.values() if f.backoff_until_ms <= now]
        request, sent = _next_request(b, ready, session)
        session.steady = isinstance(request, FetchRequest) and len(sent) == len(session.partitions)
    session.touched.clear()
    if request is None:
        waiting = [f.backoff_until_ms for f in session.partitions.values() if f.backoff_until_ms > now]
        if waiting:
            out.set_timer(f"fetcher-backoff:{session.leader}", min(waiting) - now)
        return
    session.sent = sent
    session.in_flight = b.state.new_id()
    out.send(broker_address(session.leader), request, session.in_flight)
    out.set_timer(f"fetcher-timeout:{session.leader}", b.config.replica_socket_timeout_ms)


Request = OffsetForLeaderEpochRequest | ListOffsetsRequest | FetchRequest
_LIST_OFFSETS = {FetchPhase.OUT_OF_RANGE: LATEST_TIMESTAMP, FetchPhase.OUT_OF_RANGE_START: EARLIEST_TIMESTAMP}
"""What a partition out of range asks the leader: its end offset, then its log start offset."""


def _next_request(
    b: FetcherContext, ready: list[FollowedPartition], session: FetchSession
) -> tuple[Request | None, dict[TopicPartition, tuple[int, int]]]:
    """The request for the ready partitions and, for each it asks about, (leader epoch, LEO) as
    sent (`FetchSession.sent`). Called after every answer, so the phases are sorted in one pass.
    A Fetch also becomes the session's partitions (`FetchSession.session_partitions`)."""
    truncating: list[FollowedPartition] = []
    out_of_range: list[FollowedPartition] = []
    fetching: list[FollowedPartition] = []
    for f in ready:
        phase = f.phase
        if phase is FetchPhase.FETCHING:
            fetching.append(f)
        elif phase is FetchPhase.TRUNCATING:
            truncating.append(f)
        else:
            out_of_range.append(f)
    partitions = b.state.partitions
    me = b.config.broker_id
    fencing = b.config.profile.fetch_epoch_fencing
    if truncating:
        return OffsetForLeaderEpochRequest(
            me,
            tuple(
                OffsetForLeaderEpochPartition(
                    f.tp.topic, f.tp.partition, partitions[f.tp].log.latest_epoch, f.leader_epoch if fencing else -1
                )
                for f in truncating
            ),
        ), _as_sent(b, truncating)
    if out_of_range:
        return ListOffsetsRequest(
            me,
            tuple(
                ListOffsetsPartition(
                    f.tp.topic, f.tp.partition, _LIST_OFFSETS[f.phase], f.leader_epoch if fencing else -1
                )
                for f in out_of_range
            ),
        ), _as_sent(b, out_of_range)
    if not fetching:
        return None, {}
    on_fetch_epoch = b.config.profile.truncate_on_fetch
    max_bytes = b.config.replica_fetch_max_bytes
    epoch = session.session_epoch if b.config.profile.incremental_fetch_sessions else 0
    held = session.session_partitions
    wanted: dict[TopicPartition, FetchPartition] = {}
    listed = []
    sent = {}
    for f in fetching:  # every partition of the session; most ask what they last asked
        last, end = _position(f, on_fetch_epoch, fencing, max_bytes)
        wanted[f.tp] = last
        sent[f.tp] = (f.leader_epoch, end)
        before = held.get(f.tp)
        if epoch == 0 or (before is not last and before != last):
            listed.append(last)
    forgotten = () if epoch == 0 else tuple(ForgottenPartition(tp.topic, tp.partition) for tp in held if tp not in wanted)
    session.session_partitions = wanted
    return _fetch_request(b, listed, epoch, forgotten), sent


def _fetch_request(
    b: FetcherContext, listed: list[FetchPartition], epoch: int, forgotten: tuple[ForgottenPartition, ...]
) -> FetchRequest:
    return FetchRequest(
        replica_id=b.config.broker_id,
        max_wait_ms=b.config.replica_fetch_wait_max_ms,
        min_bytes=b.config.replica_fetch_min_bytes,
        partitions=tuple(listed),
        session_epoch=epoch,
        forgotten=forgotten,
    )


def _next_steady_fetch(b: FetcherContext, session: FetchSession, now: int) -> FetchRequest | None:
    """`_next_request` for a steady session (`FetchSession.steady`), looking only at the
    partitions touched since: the same incremental Fetch, with `sent` and the session's
    partitions brought up to date in place. None where it does not apply (a new session, or a
    touched partition no longer fetching or backing off): then every partition is looked at."""
    if not session.steady or session.session_epoch <= 0 or not b.config.profile.incremental_fetch_sessions:
        return None
    followed = session.partitions
    touched = sorted(session.touched)  # in the session's order, as a full pass lists them
    for tp in touched:
        f = followed[tp]
        if f.phase is not FetchPhase.FETCHING or f.backoff_until_ms > now:
            return None
    on_fetch_epoch = b.config.profile.truncate_on_fetch
    fencing = b.config.profile.fetch_epoch_fencing
    max_bytes = b.config.replica_fetch_max_bytes
    held, sent = session.session_partitions, session.sent
    listed = []
    for tp in touched:
        f = followed[tp]
        last, end = _position(f, on_fetch_epoch, fencing, max_bytes)
        sent[tp] = (f.leader_epoch, end)
        before = held.get(tp)
        if before is not last and before != last:
            listed.append(last)
        held[tp] = last
    return _fetch_request(b, listed, session.session_epoch, ())


def _position(f: FollowedPartition, on_fetch_epoch: bool, fencing: bool, max_bytes: int) -> tuple[FetchPartition, int]:
    """What a fetching partition asks now, and its LEO: the FetchPartition it last sent while
    its offset and last epoch stay, else a new one."""
    log = f.log
    last = f.last_fetch
    end, last_epoch = log.log_end_offset, log.epochs.latest_epoch if on_fetch_epoch else -1
    if last is None or last.fetch_offset != end or last.last_fetched_epoch != last_epoch:
        last = f.last_fetch = FetchPartition(
            f.tp.topic, f.tp.partition, end, last_epoch, f.leader_epoch if fencing else -1, max_bytes
        )
    return last, end


def _as_sent(b: FetcherContext, included: list[FollowedPartition]) -> dict[TopicPartition, tuple[int, int]]:
    return {f.tp: (f.leader_epoch, b.state.partitions[f.tp].log.log_end_offset) for f in included}


def _match_response(
    b: FetcherContext, out: Out, leader: int, correlation_id: int, answers: tuple[Any, ...], *phases: FetchPhase
) -> tuple[FetchSession | None, list[tuple[FollowedPartition, Any]]]:
    """What every fetcher response shares: match it to the request in flight (a response to a
    request the fetcher gave up on is ignored), stop that request's timeout, and pair each answer
    with its partition if the partition is still in one of `phases`."""
    session = b.state.sessions.get(leader)
    if session is None or session.in_flight != correlation_id:
        return None, []
    session.in_flight = None
    out.cancel_timer(f"fetcher-timeout:{leader}")
    pairs = []
    for answer in answers:
        tp = TopicPartition(answer.topic, answer.partition)
        followed = session.partitions.get(tp)
        if followed is None or followed.phase not in phases:
            continue
        now = (followed.leader_epoch, b.state.partitions[tp].log.log_end_offset)
        if session.sent.get(tp) == now:  # else asked under an older epoch or offset: stale
            pairs.append((followed, answer))
    return session, pairs


def _back_off(b: FetcherContext, ctx: Ctx, followed: FollowedPartition) -> None:
    """After an error: wait `replica.fetch.backoff.ms` (or the controller's next LeaderAndIsr)."""
    followed.backoff_until_ms = ctx.now_ms + b.config.replica_fetch_backoff_ms


def on_fetch_response(
    b: FetcherContext, ctx: Ctx, out: Out, leader: int, correlation_id: int, resp: FetchResponse
) -> None:
    session, pairs = _match_response(b, out, leader, correlation_id, resp.partitions, FetchPhase.FETCHING)
    for followed, answer in pairs:
        _apply_fetched(b, ctx, out, followed, answer)
    if session is None:
        return
    session.touched.update(followed.tp for followed, _ in pairs)
    if resp.error_code is ErrorCode.NONE:
        session.session_epoch += 1  # the leader holds the session: the next answer is incremental
    else:
        # FETCH_SESSION_ID_NOT_FOUND (the leader restarted) or INVALID_FETCH_SESSION_EPOCH:
        # nothing was read; a new session starts at once with a full request.
        session.session_epoch = 0
    maybe_send(b, ctx, out, session)


def _apply_fetched(b: FetcherContext, ctx: Ctx, out: Out, followed: FollowedPartition, answer: FetchedPartition) -> None:
    """`processPartitionData`: append, then HW = min(leader HW, own LEO); or handle the error."""
    partition = b.state.partitions[followed.tp]
    log = partition.log
    if answer.error_code is ErrorCode.OFFSET_OUT_OF_RANGE:
        followed.phase = FetchPhase.OUT_OF_RANGE
        return
    if answer.error_code is not ErrorCode.NONE:
        # NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH...
        _back_off(b, ctx, followed)
        return
    if answer.diverging_epoch is not None:
        diverging = EpochEntry(answer.diverging_epoch.epoch, answer.diverging_epoch.end_offset)
        state = truncation_state(diverging, log.epochs, log.log_end_offset, log.high_watermark)
        _truncate(b, out, partition, state.offset, "diverging_epoch")
        return
    before = (log.log_end_offset, log.high_watermark)
    log.append_as_follower(out, answer.records, ctx.now_ms)
    log.update_high_watermark(answer.high_watermark)
    if (log.log_end_offset, log.high_watermark) != before:
        partition.emit_offsets(out)
    if b.config.profile.log_start_offset_in_fetch:
        log.maybe_increment_log_start_offset(out, answer.log_start_offset, "leader_offset_incremented")


def on_offset_for_leader_epoch_response(
    b: FetcherContext, ctx: Ctx, out: Out, leader: int, correlation_id: int, resp: OffsetForLeaderEpochResponse
) -> None:
    """Truncate by the leader's answer; loop again (KIP-279) until truncation is complete."""
    session, pairs = _match_response(
        b, out, leader, correlation_id, resp.partitions, FetchPhase.TRUNCATING
    )
    for followed, answer in pairs:
        if answer.error_code is not ErrorCode.NONE:
            _back_off(b, ctx, followed)
            continue
        partition = b.state.partitions[followed.tp]
        log = partition.log
        if b.config.profile.epoch_start_on_become_leader:
            offset, complete = truncation_state(
                EpochEntry(answer.leader_epoch, answer.end_offset),
                log.epochs,
                log.log_end_offset,
                log.high_watermark,
            )
        elif answer.end_offset < 0:
            offset, complete = log.high_watermark, True
        else:
            # KIP-101 as shipped in 0.11: the answer had no epoch; truncate to its end offset once.
            offset, complete = min(answer.end_offset, log.log_end_offset), True
        _truncate(b, out, partition, offset, "leader_epoch")
        if complete:
            followed.phase = FetchPhase.FETCHING
    if session is not None:
        maybe_send(b, ctx, out, session)


def on_list_offsets_response(
    b: FetcherContext, ctx: Ctx, out: Out, leader: int, correlation_id: int, resp: ListOffsetsResponse
) -> None:
    """After OFFSET_OUT_OF_RANGE (`fetchOffsetAndTruncate`): the leader's end offset, to which a
    replica ahead of it truncates; else the leader's log start offset, at which a replica that
    ends before it starts again, empty."""
    session, pairs = _match_response(
        b, out, leader, correlation_id, resp.partitions, FetchPhase.OUT_OF_RANGE, FetchPhase.OUT_OF_RANGE_START
    )
    for followed, answer in pairs:
        if answer.error_code is not ErrorCode.NONE:
            _back_off(b, ctx, followed)
            continue
        partition = b.state.partitions[followed.tp]
        log = partition.log
        if followed.phase is FetchPhase.OUT_OF_RANGE_START:
            if answer.offset > log.log_end_offset:
                log.truncate_fully_and_start_at(out, answer.offset)
                partition.emit_offsets(out)
            followed.phase = FetchPhase.FETCHING
        elif answer.offset < log.log_end_offset:
            _truncate(b, out, partition, answer.offset, "offset_out_of_range")
            followed.phase = FetchPhase.FETCHING
        else:
            followed.phase = FetchPhase.OUT_OF_RANGE_START
    if session is not None:
        maybe_send(b, ctx, out, session)


def disconnected(b: FetcherContext, ctx: Ctx, out: Out, leader: int) -> None:
    """The connection to `leader`'s broker closed or was refused (its process died): the request
    in flight is lost now, not after `replica.socket.timeout.ms`, and the session's partitions
    back off `replica.fetch.backoff.ms` before the next attempt, as after a failed fetch."""
    session = b.state.sessions.get(leader)
    if session is None or session.in_flight is None:
        return
    session.in_flight = None
    session.session_epoch = 0
    out.cancel_timer(f"fetcher-timeout:{leader}")
    for tp in sorted(session.partitions):
        _back_off(b, ctx, session.partitions[tp])
    maybe_send(b, ctx, out, session)


def request_timed_out(b: FetcherContext, ctx: Ctx, out: Out, leader: int) -> None:
    """`replica.socket.timeout.ms` passed without an answer: the request is lost; send again."""
    session = b.state.sessions.get(leader)
    if session is None or session.in_flight is None:
        return
    session.in_flight = None
    session.session_epoch = 0  # the answer may have been lost: ask for everything again
    out.disconnect(broker_address(leader))  # as `NetworkClient` does after a request timeout
    maybe_send(b, ctx, out, session)


def _truncate(b: FetcherContext, out: Out, partition: Partition, offset: int, reason: str) -> None:
    log = partition.log
    before = log.log_end_offset
    if log.truncate_to(out, offset):
        out.emit(
            "log_truncated",
            topic=partition.tp.topic,
            partition=partition.tp.partition,
            from_offset=before,
            to_offset=log.log_end_offset,
            reason=reason,
        )
        partition.emit_offsets(out)
