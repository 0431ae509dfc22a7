"""KIP-320 (2.1+): the leader checks `current_leader_epoch` on Fetch and OffsetsForLeaderEpoch;
and LeaderAndIsr fencing by controller epoch and leader epoch (`ReplicaManager.becomeLeaderOrFollower`)."""

from __future__ import annotations

import random

import pytest

from actors.addresses import broker_address
from actors.broker.behavior import Broker
from actors.broker.config import BrokerConfig
from actors.core import Address, Ctx, Inbound, Send
from actors.profiles import Profile
from protocols.errors import ErrorCode
from protocols.replication import (
    FetchPartition,
    FetchRequest,
    FetchResponse,
    LeaderAndIsrResponse,
    OffsetForLeaderEpochPartition,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)
from tests.harness import leader_and_isr

CONTROLLER = Address("harness", "script")
FOLLOWER = broker_address(2)


def _leader(version: str) -> tuple[Broker, Ctx]:
    """Broker 1, leader of T-0 at leader epoch 5."""
    broker = Broker(BrokerConfig.for_profile(1, Profile.for_version(version)))
    ctx = Ctx(broker_address(1), 0, random.Random(1))
    broker.on_start(ctx)
    broker.on_message(ctx, Inbound(CONTROLLER, leader_and_isr(1, 5, (1, 2), controller_epoch=3), 1, 0))
    return broker, ctx


def _reply(out: list, kind: type) -> object:
    [send] = [c for c in out if isinstance(c, Send) and isinstance(c.message, kind)]
    return send.message


@pytest.mark.parametrize(
    ("version", "epoch", "expected"),
    [
        ("3.9", 4, ErrorCode.FENCED_LEADER_EPOCH),
        ("3.9", 6, ErrorCode.UNKNOWN_LEADER_EPOCH),
        ("3.9", 5, ErrorCode.NONE),
        ("3.9", -1, ErrorCode.NONE),  # no epoch given: not checked
        ("2.0", 4, ErrorCode.NONE),  # before KIP-320 nothing is checked
    ],
)
def test_fetch_is_fenced_by_current_leader_epoch(version: str, epoch: int, expected: ErrorCode) -> None:
    broker, ctx = _leader(version)
    request = FetchRequest(2, 0, 1, (FetchPartition("T", 0, 0, -1, epoch),))
    out = broker.on_message(ctx, Inbound(FOLLOWER, request, 7, 0))
    answer = _reply(out, FetchResponse)
    assert answer.partitions[0].error_code is expected


def test_offsets_for_leader_epoch_is_fenced_too() -> None:
    broker, ctx = _leader("3.9")
    request = OffsetForLeaderEpochRequest(2, (OffsetForLeaderEpochPartition("T", 0, 5, current_leader_epoch=4),))
    out = broker.on_message(ctx, Inbound(FOLLOWER, request, 7, 0))
    assert _reply(out, OffsetForLeaderEpochResponse).partitions[0].error_code is ErrorCode.FENCED_LEADER_EPOCH


def test_leader_and_isr_from_an_older_controller_is_rejected() -> None:
    """STALE_CONTROLLER_EPOCH for the whole request; nothing changes."""
    broker, ctx = _leader("3.9")
    out = broker.on_message(ctx, Inbound(CONTROLLER, leader_and_isr(2, 9, (2,), controller_epoch=2), 2, 0))
    assert _reply(out, LeaderAndIsrResponse).error_code is ErrorCode.STALE_CONTROLLER_EPOCH
    view = broker.snapshot()["partitions"]["T-0"]
    assert (view["role"], view["leader_epoch"]) == ("leader", 5)


def test_leader_and_isr_with_an_equal_leader_epoch_is_ignored() -> None:
    broker, ctx = _leader("3.9")
    out = broker.on_message(ctx, Inbound(CONTROLLER, leader_and_isr(2, 5, (2,), controller_epoch=3), 2, 0))
    answer = _reply(out, LeaderAndIsrResponse)
    assert answer.error_code is ErrorCode.NONE
    assert answer.partitions[0].error_code is ErrorCode.STALE_CONTROLLER_EPOCH
    assert broker.snapshot()["partitions"]["T-0"]["role"] == "leader"


def test_a_broker_processes_no_request_before_it_has_registered() -> None:
    """KafkaServer starts request processing only after `registerBroker`. A broker restarted
    from a power loss while its old registration still stands (its old session has not expired)
    keeps failing to register; the controller still counts the old registration as live and
    sends it LeaderAndIsr with the old broker epoch. The new process must not act on it: once
    it registers (a new, higher epoch), the held request is stale (KIP-380)."""
    from dataclasses import replace  # noqa: PLC0415

    from protocols.metadata import BrokerRegistered  # noqa: PLC0415

    config = replace(BrokerConfig.for_profile(1, Profile.for_version("3.9")), zk_client=Address("broker-1", "zk"))
    broker = Broker(config)
    ctx = Ctx(broker_address(1), 0, random.Random(1))
    broker.on_start(ctx)
    stale = replace(leader_and_isr(1, 5, (1, 2), controller_epoch=3), broker_epoch=12)
    assert _reply_or_none(broker.on_message(ctx, Inbound(CONTROLLER, stale, 1, 0))) is None
    assert broker.snapshot()["partitions"] == {}
    out = broker.on_message(ctx, Inbound(Address("broker-1", "controller"), BrokerRegistered(40), 0, 0))
    assert _reply(out, LeaderAndIsrResponse).error_code is ErrorCode.STALE_BROKER_EPOCH
    assert broker.snapshot()["partitions"] == {}


def _reply_or_none(out: list) -> object | None:
    sends = [c for c in out if isinstance(c, Send)]
    return sends[0].message if sends else None
