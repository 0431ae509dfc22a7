"""The follower's fetch session, on the behaviour's handlers directly (no kernel, no threads)."""

from __future__ import annotations

import random

from actors.broker.behavior import Broker
from actors.broker.config import BrokerConfig, broker_address
from actors.broker.partition import Partition
from actors.broker.partition_log import PartitionLog
from actors.core import Address, Ctx, Inbound, Out, Send
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
from sim.profiles import Profile

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
