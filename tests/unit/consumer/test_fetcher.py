"""The consumer's fetcher and member state as plain objects: positions, what `poll()` returns,
what a fetch asks for, and the version rules of the pre-rebalance commit."""

from __future__ import annotations

import pytest

from actors.consumer.config import JoinPrepareCommit
from actors.consumer.fetcher import Fetcher, Returned
from actors.consumer.membership import Membership, MemberState
from protocols.errors import ErrorCode
from protocols.replication import FetchedPartition, RecordBatch
from protocols.types import TopicPartition

T0, T1 = TopicPartition("T", 0), TopicPartition("T", 1)


def _fetcher() -> Fetcher:
    f = Fetcher(1048576, 1, 500)
    f.assign([T0, T1])
    f.leaders = {T0: (1, 3), T1: (2, 4)}
    return f


def _answer(tp: TopicPartition, base: int, count: int) -> FetchedPartition:
    batch = RecordBatch(base, 3, tuple(f"producer-1:{base + i}" for i in range(count)))
    return FetchedPartition(tp.topic, tp.partition, ErrorCode.NONE, base + count, (batch,))


def test_a_partition_without_a_position_is_not_fetched() -> None:
    """`updateFetchPositions` must give a partition a position before it is fetched."""
    f = _fetcher()
    assert f.fetch_requests() == []
    assert f.needing_position(0) == [T0, T1]


def test_a_fetch_goes_to_each_leader_with_its_epoch() -> None:
    """One request per leader, carrying the position and the leader epoch (KIP-320)."""
    f = _fetcher()
    f.seek(T0, 10)
    f.seek(T1, 20)
    requests = f.fetch_requests()
    assert [(leader, [(p.partition, p.fetch_offset, p.current_leader_epoch) for p in r.partitions]) for leader, r in requests] == [
        (1, [(0, 10, 3)]),
        (2, [(1, 20, 4)]),
    ]
    assert all(r.replica_id == -1 for _, r in requests)


def test_poll_returns_at_most_max_poll_records_and_moves_the_positions() -> None:
    """Records come from each position on; the rest stay buffered for the next poll. A
    position carries the leader epoch of the last record returned (what a commit sends)."""
    f = _fetcher()
    f.seek(T0, 10)
    f.seek(T1, 20)
    f.on_fetched({T0: 10}, _answer(T0, 10, 4))
    f.on_fetched({T1: 20}, _answer(T1, 20, 4))
    assert f.collect(6) == [Returned(T0, 10, 14, 3), Returned(T1, 20, 22, 3)]
    assert f.all_consumed() == {T0: (14, 3), T1: (22, 3)}
    assert f.collect(6) == [Returned(T1, 22, 24, 3)]


def test_a_poll_returns_one_range_per_leader_epoch() -> None:
    """Records of one partition written in two leader epochs come back as two ranges, so the
    log tells a record from one written at the same offset after a truncation."""
    f = _fetcher()
    f.seek(T0, 10)
    batches = (RecordBatch(8, 3, ("producer-1:8", "producer-1:9", "producer-1:10")), RecordBatch(11, 5, ("producer-1:30", "producer-1:31")))
    f.on_fetched({T0: 10}, FetchedPartition("T", 0, ErrorCode.NONE, 13, batches))
    assert f.collect(10) == [Returned(T0, 10, 11, 3), Returned(T0, 11, 13, 5)]


def test_data_for_an_old_position_or_a_partition_pending_revocation_is_dropped() -> None:
    """`FetchCollector` keeps data only if the partition is fetchable and at that position."""
    f = _fetcher()
    f.seek(T0, 10)
    f.on_fetched({T0: 5}, _answer(T0, 5, 4))
    assert f.collect(10) == []
    f.assigned[T0].pending_revocation = True
    f.on_fetched({T0: 10}, _answer(T0, 10, 4))
    assert f.collect(10) == []


@pytest.mark.parametrize(
    ("version", "mode"),
    [
        ((3, 1, 2), JoinPrepareCommit.SYNC),
        ((3, 2, 0), JoinPrepareCommit.ASYNC_NOT_AWAITED),
        ((3, 2, 1), JoinPrepareCommit.ASYNC_AWAITED),
        ((3, 2, 2), JoinPrepareCommit.ASYNC_AWAITED),
        ((3, 2, 3), JoinPrepareCommit.PENDING_REVOCATION),
        ((3, 9, 0), JoinPrepareCommit.PENDING_REVOCATION),
    ],
)
def test_the_pre_rebalance_commit_by_version(version: tuple[int, int, int], mode: JoinPrepareCommit) -> None:
    """KAFKA-13310 (3.2.0), KAFKA-14024 (3.2.1) and KAFKA-14196 (3.2.3) change how
    `onJoinPrepare` commits."""
    assert JoinPrepareCommit.for_version(version) is mode


def test_heartbeats_stop_while_unjoined_or_preparing() -> None:
    """`hasNotJoinedGroup`: the heartbeat thread disables itself in those two states."""
    assert [s for s in MemberState if s.has_not_joined] == [MemberState.UNJOINED, MemberState.PREPARING_REBALANCE]


def test_a_reset_keeps_the_member_id_only_when_asked() -> None:
    """ILLEGAL_GENERATION keeps the member id from 3.2 (KAFKA-13419); other resets clear it."""
    m = Membership(state=MemberState.STABLE, member_id="c1", generation_id=4, rejoin_needed=False)
    m.reset_generation(keep_member_id=True)
    assert (m.state, m.member_id, m.generation_id, m.rejoin_needed) == (MemberState.UNJOINED, "c1", -1, True)
    m.reset_generation()
    assert m.member_id == ""
