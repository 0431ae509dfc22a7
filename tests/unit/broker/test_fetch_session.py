"""The follower's fetch session, on the behaviour's handlers directly (no kernel, no threads)."""

from __future__ import annotations

import random

import pytest

from actors.addresses import broker_address
from actors.broker.behavior import Broker
from actors.broker.config import BrokerConfig
from actors.broker.partition import Partition
from actors.broker.partition_log import PartitionLog
from actors.core import Address, Ctx, Inbound, Out, Send
from actors.profiles import Profile
from protocols.errors import ErrorCode
from protocols.replication import (
    FetchedPartition,
    FetchRequest,
    FetchResponse,
    LeaderAndIsrPartition,
    LeaderAndIsrRequest,
    OffsetForLeaderEpochRequest,
    RecordBatch,
)
from protocols.types import TopicPartition

CONTROLLER = Address("harness", "script")


def _lai(*partitions: tuple[str, int, int]) -> LeaderAndIsrRequest:
    """(topic, partition, leader) with LE 0, replicas and ISR [1, 2, 3]."""
    return LeaderAndIsrRequest(
        0, 1, tuple(LeaderAndIsrPartition(t, p, 1, leader, 0, (1, 2, 3), 0, (1, 2, 3)) for t, p, leader in partitions)
    )


def _sends(out: Out, kind: type) -> list[Send]:
    return [c for c in out if isinstance(c, Send) and isinstance(c.message, kind)]


def _broker(version: str = "3.9") -> tuple[Broker, Ctx]:
    broker = Broker(BrokerConfig.for_profile(2, Profile.for_version(version)))
    ctx = Ctx(broker_address(2), 0, random.Random(1))
    broker.on_start(ctx)
    return broker, ctx


def test_one_fetch_carries_every_partition_followed_from_that_leader() -> None:
    broker, ctx = _broker()
    out = broker.on_message(ctx, Inbound(CONTROLLER, _lai(("A", 0, 1), ("A", 1, 1), ("B", 0, 3)), 1, 0))
    fetches = _sends(out, FetchRequest)
    assert [(f.dst, [(p.topic, p.partition) for p in f.message.partitions]) for f in fetches] == [
        (broker_address(1), [("A", 0)]),  # the session to broker 1 starts with the first partition
        (broker_address(3), [("B", 0)]),
    ]
    # A-1 joined the session while its first request was in flight: the next fetch has both.
    first = fetches[0]
    answer = FetchResponse(
        (
            FetchedPartition("A", 0, ErrorCode.NONE, 0, (RecordBatch(0, 0, ("x",)),)),
        )
    )
    out = broker.on_message(ctx, Inbound(broker_address(1), answer, first.correlation_id, 0))
    [again] = _sends(out, FetchRequest)
    assert [(p.topic, p.partition, p.fetch_offset) for p in again.message.partitions] == [("A", 0, 1), ("A", 1, 0)]
    assert again.message.replica_id == 2
    assert again.message.max_wait_ms == 500


def test_a_response_to_an_abandoned_request_is_ignored() -> None:
    broker, ctx = _broker()
    out = broker.on_message(ctx, Inbound(CONTROLLER, _lai(("A", 0, 1)), 1, 0))
    [fetch] = _sends(out, FetchRequest)
    broker.on_timer(ctx, "fetcher-timeout:1")  # replica.socket.timeout.ms passed: sent again
    stale = FetchResponse((FetchedPartition("A", 0, ErrorCode.NONE, 0, (RecordBatch(0, 0, ("x",)),)),))
    out = broker.on_message(ctx, Inbound(broker_address(1), stale, fetch.correlation_id, 0))
    assert list(out) == []
    assert broker.snapshot()["partitions"]["A-0"]["log_end_offset"] == 0


def test_eras_pick_their_truncation_request() -> None:
    """0.11 to 2.7 ask OffsetsForLeaderEpoch first; 2.8+ fetch with last_fetched_epoch."""
    for version, kind in (("2.7", OffsetForLeaderEpochRequest), ("2.8", FetchRequest)):
        broker, ctx = _broker(version)
        tp = TopicPartition("A", 0)
        broker.state.partitions[tp] = Partition(tp, PartitionLog(tp))
        broker.state.partitions[tp].log.append_as_follower(Out(), (RecordBatch(0, 0, ("x",)),))
        out = broker.on_message(ctx, Inbound(CONTROLLER, _lai(("A", 0, 1)), 1, 0))
        [request] = _sends(out, kind)
        if kind is FetchRequest:
            assert request.message.partitions[0].last_fetched_epoch == 0


# ------------------------------------------------------------------ KIP-227 on the leader


def _leader_of_two(version: str) -> tuple[Broker, Ctx]:
    """Broker 1 leads T-0 and T-1 (LE 0, replicas and ISR [1, 2]); T-0 holds two records."""
    broker = Broker(BrokerConfig.for_profile(1, Profile.for_version(version)))
    ctx = Ctx(broker_address(1), 0, random.Random(1))
    broker.on_start(ctx)
    lai = LeaderAndIsrRequest(
        0, 1, tuple(LeaderAndIsrPartition("T", p, 1, 1, 0, (1, 2), 0, (1, 2)) for p in (0, 1))
    )
    broker.on_message(ctx, Inbound(CONTROLLER, lai, 1, 0))
    broker.state.partitions[TopicPartition("T", 0)].log.append_as_leader(Out(), ("a", "b"), 0, (-1, -1, -1))
    return broker, ctx


def _fetch(broker: Broker, ctx: Ctx, offsets: tuple[int, int], session_epoch: int) -> list[tuple[int, int, int]]:
    """Broker 2 fetches T-0 and T-1 from `offsets`: the answered (partition, HW, records)."""
    from protocols.replication import FetchPartition  # noqa: PLC0415

    partitions = tuple(FetchPartition("T", p, offsets[p]) for p in (0, 1))
    request = FetchRequest(2, 0, 1, partitions, session_epoch=session_epoch)
    [send] = _sends(broker.on_message(ctx, Inbound(broker_address(2), request, 9, 1)), FetchResponse)
    return [(a.partition, a.high_watermark, sum(b.count for b in a.records)) for a in send.message.partitions]


def test_an_incremental_fetch_answers_only_the_partitions_with_something_new() -> None:
    """KIP-227 (1.1+): epoch 0 opens a session and gets every partition; a later epoch gets
    only a partition with records or a HW other than the one last sent in the session."""
    broker, ctx = _leader_of_two("3.9")
    assert _fetch(broker, ctx, (0, 0), 0) == [(0, 0, 2), (1, 0, 0)]  # full: both partitions
    # The follower now has T-0's two records: its fetch moves the HW to 2, read after the
    # answer (an immediate answer carries the HW from before the fetch), so T-0 is answered
    # with HW 0 and no records: nothing new, and it is left out. T-1 is idle: left out too.
    assert _fetch(broker, ctx, (2, 0), 1) == []
    # The next fetch sees the HW of 2, which the session has not sent yet.
    assert _fetch(broker, ctx, (2, 0), 2) == [(0, 2, 0)]
    assert _fetch(broker, ctx, (2, 0), 3) == []
    # A new session (epoch 0, after a lost answer) gets everything again.
    assert _fetch(broker, ctx, (2, 0), 0) == [(0, 2, 0), (1, 0, 0)]


@pytest.mark.parametrize(("version", "epochs"), [("3.9", [0, 1, 2, 0]), ("1.0", [0, 0, 0, 0])])
def test_the_follower_moves_its_session_epoch_on_each_answer_and_restarts_after_a_timeout(
    version: str, epochs: list[int]
) -> None:
    """`FetchSessionHandler`: each answered Fetch moves the session on; a request that timed out
    may have lost its answer, so the next one opens a new session. Before 1.1 there are no
    sessions: every request is a full one (epoch 0)."""
    broker, ctx = _broker(version)
    out = broker.on_message(ctx, Inbound(CONTROLLER, _lai(("A", 0, 1)), 1, 0))
    sent = [_sends(out, FetchRequest)[0]]
    for _ in range(2):
        empty = FetchResponse((FetchedPartition("A", 0, ErrorCode.NONE, 0),))
        out = broker.on_message(ctx, Inbound(broker_address(1), empty, sent[-1].correlation_id, 1))
        sent.append(_sends(out, FetchRequest)[0])
    out = broker.on_timer(ctx, "fetcher-timeout:1")
    sent.append(_sends(out, FetchRequest)[0])
    assert [s.message.session_epoch for s in sent] == epochs


# ------------------------------------------------------------------ KIP-227 requests


def _listed(send: Send) -> tuple[int, list[tuple[str, int, int]], list[tuple[str, int]]]:
    """A follower's Fetch: (session epoch, partitions listed with their offsets, forgotten)."""
    request = send.message
    return (
        request.session_epoch,
        [(p.topic, p.partition, p.fetch_offset) for p in request.partitions],
        [(f.topic, f.partition) for f in request.forgotten],
    )


def _answered(broker: Broker, ctx: Ctx, fetch: Send, *answers: FetchedPartition, error: ErrorCode = ErrorCode.NONE) -> Send:
    """Answer the follower's fetch; its next Fetch."""
    response = FetchResponse(tuple(answers), error)
    [again] = _sends(broker.on_message(ctx, Inbound(broker_address(1), response, fetch.correlation_id, 2)), FetchRequest)
    return again


def test_an_incremental_fetch_lists_only_the_partitions_that_moved_joined_or_left() -> None:
    """`FetchSessionHandler.build`: after the full request, a Fetch lists a partition only if
    its fetch position changed or it joined the session, and names those that left it."""
    broker, ctx = _broker()
    out = broker.on_message(ctx, Inbound(CONTROLLER, _lai(("A", 0, 1), ("A", 1, 1)), 1, 0))
    [first] = _sends(out, FetchRequest)
    assert _listed(first) == (0, [("A", 0, 0)], [])  # A-1 joined while this was in flight
    second = _answered(broker, ctx, first, FetchedPartition("A", 0, ErrorCode.NONE, 0, (RecordBatch(0, 0, ("x",)),)))
    assert _listed(second) == (1, [("A", 0, 1), ("A", 1, 0)], [])  # moved, and joined
    third = _answered(broker, ctx, second)  # nothing new
    assert _listed(third) == (2, [], [])  # both still fetched, from the same offsets
    # A-1's answer is an error: it backs off, and leaves the session until it is ready again.
    fourth = _answered(broker, ctx, third, FetchedPartition("A", 1, ErrorCode.NOT_LEADER_OR_FOLLOWER, -1))
    assert _listed(fourth) == (3, [], [("A", 1)])


@pytest.mark.parametrize("error", [ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH])
def test_a_session_error_starts_a_new_session_with_a_full_fetch(error: ErrorCode) -> None:
    """The leader restarted (it holds no session) or the epoch is not the one it expects:
    nothing was read, and the next Fetch, sent at once, opens a new session listing everything."""
    broker, ctx = _broker()
    out = broker.on_message(ctx, Inbound(CONTROLLER, _lai(("A", 0, 1), ("A", 1, 1)), 1, 0))
    [first] = _sends(out, FetchRequest)
    second = _answered(broker, ctx, first)
    third = _answered(broker, ctx, second, error=error)
    assert _listed(third) == (0, [("A", 0, 0), ("A", 1, 0)], [])


def _session_fetch(
    broker: Broker,
    ctx: Ctx,
    epoch: int,
    offsets: dict[int, int],
    forgotten: tuple[int, ...] = (),
    leader_epoch: int = -1,
) -> tuple[ErrorCode, list[tuple[int, int, int]]]:
    """Broker 2 fetches, listing `offsets` (partition: fetch offset) of topic T, with
    `leader_epoch` as the current leader epoch (-1: unchecked), and forgetting `forgotten`:
    the answer's error and its (partition, HW, records)."""
    from protocols.replication import FetchPartition, ForgottenPartition  # noqa: PLC0415

    request = FetchRequest(
        2, 0, 1,
        tuple(
            FetchPartition("T", p, offset, current_leader_epoch=leader_epoch) for p, offset in offsets.items()
        ),
        session_epoch=epoch,
        forgotten=tuple(ForgottenPartition("T", p) for p in forgotten),
    )
    [send] = _sends(broker.on_message(ctx, Inbound(broker_address(2), request, 9, 2)), FetchResponse)
    answer = send.message
    return answer.error_code, [(a.partition, a.high_watermark, sum(b.count for b in a.records)) for a in answer.partitions]


def test_the_leader_reads_its_whole_session_and_refuses_an_unknown_session_or_a_stale_epoch() -> None:
    """`FetchManager.newContext`: an incremental request updates the session, which is read
    whole; one for a session the leader does not hold, or with another epoch than the next,
    is refused without reading (and leaves the session as it was)."""
    broker, ctx = _leader_of_two("3.9")
    assert _session_fetch(broker, ctx, 1, {}) == (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, [])
    assert _session_fetch(broker, ctx, 0, {0: 0, 1: 0}) == (ErrorCode.NONE, [(0, 0, 2), (1, 0, 0)])
    # T-0 moved to 2 (its HW moves after the read); T-1 is read from the session, as it was.
    assert _session_fetch(broker, ctx, 1, {0: 2}) == (ErrorCode.NONE, [])
    assert _session_fetch(broker, ctx, 1, {0: 0}) == (ErrorCode.INVALID_FETCH_SESSION_EPOCH, [])
    # Nothing listed: T-0 is read at 2 still (the refused request changed nothing), with HW 2.
    assert _session_fetch(broker, ctx, 2, {}) == (ErrorCode.NONE, [(0, 2, 0)])
    # T-1 gets a record: answered while in the session, not once it has left it.
    broker.state.partitions[TopicPartition("T", 1)].log.append_as_leader(Out(), ("c",), 0, (-1, -1, -1))
    assert _session_fetch(broker, ctx, 3, {}, forgotten=(1,)) == (ErrorCode.NONE, [])
    assert _session_fetch(broker, ctx, 4, {1: 0}) == (ErrorCode.NONE, [(1, 0, 1)])


def test_an_idle_partition_rests_and_its_follower_times_are_brought_up_to_date_when_read() -> None:
    """A leader skips a partition of a session that was idle when last answered (the follower
    in the ISR, caught up on the leader's epoch, its HW sent) and has not changed since: it builds no follower state
    for it. That state is what fetching it would have made it, and is brought up to date when
    the partition changes or something reads the times: 45 s of fetches that skip T-1, then
    the ISR check before the follower's next fetch keeps follower 2 in T-1's ISR (caught up at
    the last fetch, 1.5 s before), as reading T-1 at every fetch would. A record then wakes
    T-1 where it is appended, and the next fetch reads it."""
    broker, ctx = _leader_of_two("3.9")
    t1 = broker.state.partitions[TopicPartition("T", 1)]
    assert _session_fetch(broker, ctx, 0, {0: 0, 1: 0}, leader_epoch=0) == (ErrorCode.NONE, [(0, 0, 2), (1, 0, 0)])
    assert _session_fetch(broker, ctx, 1, {0: 2}, leader_epoch=0) == (ErrorCode.NONE, [])
    state = t1.followers[2]
    assert list(t1.resting) == [2]
    for epoch, now in enumerate(range(1000, 46000, 1000), start=2):
        ctx.now_ms = now
        assert _session_fetch(broker, ctx, epoch, {})[0] is ErrorCode.NONE
    assert t1.followers[2] is state  # never read: no follower state built for it
    ctx.now_ms = 46_500
    broker.on_timer(ctx, "isr-expiration")
    assert t1.followers[2].last_caught_up_time_ms == 45_000
    assert t1.isr == frozenset({1, 2})
    assert t1.resting == {}
    _session_fetch(broker, ctx, 47, {})  # idle: it rests again
    assert 2 in t1.resting
    t1.log.append_as_leader(Out(), ("c",), 0, (-1, -1, -1))
    assert t1.resting == {}
    # Awake, T-1 is read again at the next fetch, which answers its record.
    assert _session_fetch(broker, ctx, 48, {}) == (ErrorCode.NONE, [(1, 0, 1)])


def test_a_resting_partition_that_changed_is_read_at_the_next_fetch() -> None:
    """A change nobody announced (a record appended under the session) is found at the next
    fetch: the partition is no longer as it came to rest, so it is read, and answered."""
    broker, ctx = _leader_of_two("3.9")
    t1 = broker.state.partitions[TopicPartition("T", 1)]
    _session_fetch(broker, ctx, 0, {0: 0, 1: 0}, leader_epoch=0)
    assert _session_fetch(broker, ctx, 1, {0: 2}, leader_epoch=0) == (ErrorCode.NONE, [])
    assert 2 in t1.resting
    t1.log.append_as_leader(Out(), ("c", "d"), 0, (-1, -1, -1))
    assert _session_fetch(broker, ctx, 2, {}) == (ErrorCode.NONE, [(0, 2, 0), (1, 0, 2)])


def test_a_parked_fetch_skips_a_resting_partition_until_it_wakes_and_then_answers_it() -> None:
    """A follower's fetch that waits in the purgatory neither reads nor watches a resting
    partition, but one that wakes while it waits joins it, in the session's order: a record on
    T-1 completes the fetch and is answered, as if the fetch had read and watched every
    partition of its session."""
    from actors.broker import leader  # noqa: PLC0415

    broker, ctx = _leader_of_two("3.9")
    t1 = TopicPartition("T", 1)
    _session_fetch(broker, ctx, 0, {0: 0, 1: 0}, leader_epoch=0)
    # T-0 is read at 2 (its HW moves to 2 after the read, so it is not idle yet); T-1 rests.
    assert _session_fetch(broker, ctx, 1, {0: 2}, leader_epoch=0) == (ErrorCode.NONE, [])
    session = broker.state.fetch_sessions[2]
    assert list(session.resting) == [("T", 1)]
    # The next fetch has nothing to read on T-0 and waits (up to 500 ms) without T-1.
    request = FetchRequest(2, 500, 1, (), session_epoch=2)
    assert not _sends(broker.on_message(ctx, Inbound(broker_address(2), request, 10, 2)), FetchResponse)
    [op] = session.parked
    assert [(p.topic, p.partition) for p in op.partitions] == [("T", 0)]
    broker.state.partitions[t1].log.append_as_leader(Out(), ("c",), 0, (-1, -1, -1))
    assert [(p.topic, p.partition) for p in op.partitions] == [("T", 0), ("T", 1)]
    out = Out()
    leader.check_purgatory(broker, out, (t1,))
    [send] = _sends(out, FetchResponse)
    assert send.correlation_id == 10
    answered = [(a.partition, a.high_watermark, sum(b.count for b in a.records)) for a in send.message.partitions]
    assert answered == [(0, 2, 0), (1, 0, 1)]  # T-0's new HW, T-1's record
    assert session.parked == []
    assert len(broker.state.delayed_fetches) == 0


def test_a_fetch_left_from_a_replaced_session_puts_nothing_to_rest_in_the_new_one() -> None:
    """A follower that gave up on a parked fetch opens a new session (epoch 0) while the old
    fetch still waits at the leader. When the old fetch completes, it reads every partition it
    holds and rests none of them in the new session, whose full answer then lists every
    partition, as it would with no partition ever resting."""
    from protocols.replication import FetchPartition  # noqa: PLC0415

    broker, ctx = _leader_of_two("3.9")
    _session_fetch(broker, ctx, 0, {0: 0, 1: 0}, leader_epoch=0)
    assert _session_fetch(broker, ctx, 1, {0: 2}, leader_epoch=0) == (ErrorCode.NONE, [])
    old = FetchRequest(2, 500, 1, (), session_epoch=2)
    assert not _sends(broker.on_message(ctx, Inbound(broker_address(2), old, 10, 2)), FetchResponse)
    [stale] = broker.state.fetch_sessions[2].parked
    full = FetchRequest(
        2, 500, 1, tuple(FetchPartition("T", p, offset, current_leader_epoch=0) for p, offset in ((0, 2), (1, 0))), session_epoch=0
    )
    assert not _sends(broker.on_message(ctx, Inbound(broker_address(2), full, 11, 2)), FetchResponse)
    new = broker.state.fetch_sessions[2]
    ctx.now_ms = 500
    [answer] = _sends(broker.on_timer(ctx, f"fetch:{stale.id}"), FetchResponse)
    assert answer.correlation_id == 10
    assert new.resting == {}
    [fresh] = [op for op, _ in broker.state.delayed_fetches._ops.values()]  # noqa: SLF001
    [answer] = _sends(broker.on_timer(ctx, f"fetch:{fresh.id}"), FetchResponse)
    assert answer.correlation_id == 11
    assert [(a.partition, a.high_watermark) for a in answer.message.partitions] == [(0, 2), (1, 0)]


def test_a_fetch_left_from_a_replaced_session_records_what_it_sends_in_its_own_session() -> None:
    """Kafka's delayed fetch answers through its own fetch context: a fetch completed after its
    session was replaced records the HWs it sends in that session, not in the new one."""
    from protocols.replication import FetchPartition  # noqa: PLC0415

    broker, ctx = _leader_of_two("3.9")
    _session_fetch(broker, ctx, 0, {0: 0, 1: 0}, leader_epoch=0)
    _session_fetch(broker, ctx, 1, {0: 2}, leader_epoch=0)
    old_session = broker.state.fetch_sessions[2]
    stale_request = FetchRequest(2, 500, 1, (), session_epoch=2)
    assert not _sends(broker.on_message(ctx, Inbound(broker_address(2), stale_request, 10, 2)), FetchResponse)
    [stale] = old_session.parked
    full = FetchRequest(2, 0, 1, tuple(FetchPartition("T", p, o, current_leader_epoch=0) for p, o in ((0, 2), (1, 0))))
    [answer] = _sends(broker.on_message(ctx, Inbound(broker_address(2), full, 11, 2)), FetchResponse)
    new_session = broker.state.fetch_sessions[2]
    assert new_session is not old_session
    new_session.sent_high_watermarks[("T", 0)] = 99  # as if a later answer had sent another HW
    ctx.now_ms = 500
    [answer] = _sends(broker.on_timer(ctx, f"fetch:{stale.id}"), FetchResponse)
    assert answer.correlation_id == 10
    assert new_session.sent_high_watermarks[("T", 0)] == 99
    assert old_session.sent_high_watermarks[("T", 0)] == 2
