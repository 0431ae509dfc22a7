"""What the replica manager does for groups: FindCoordinator, telling the coordinator of its
node about `__consumer_offsets` leadership, and never muting the coordinator's appends."""

from __future__ import annotations

import random

from actors.addresses import broker_address, group_coordinator_address
from actors.broker.behavior import Broker
from actors.broker.config import BrokerConfig
from actors.core import Address, Ctx, Emit, Inbound, Out, Send
from actors.group.placement import OFFSETS_TOPIC
from actors.profiles import Profile
from protocols.errors import ErrorCode
from protocols.group import (
    CoordinatorElected,
    CoordinatorResigned,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from protocols.metadata import (
    StopReplicaPartition,
    StopReplicaRequest,
    UpdateMetadataPartition,
    UpdateMetadataRequest,
)
from protocols.replication import ProducePartitionData, ProduceRequest, ProduceResponse
from tests.harness import leader_and_isr

CONTROLLER = Address("harness", "script")
CLIENT = Address("client-1", "client")
COORDINATOR = group_coordinator_address(1)


def _broker(**settings: object) -> tuple[Broker, Ctx]:
    config = BrokerConfig.for_profile(1, Profile.for_version("3.9"), group_coordinator=COORDINATOR, **settings)
    broker = Broker(config)
    ctx = Ctx(broker_address(1), 0, random.Random(1))
    broker.on_start(ctx)
    return broker, ctx


def _sent(out: Out, kind: type) -> list[Send]:
    return [c for c in out if isinstance(c, Send) and isinstance(c.message, kind)]


def _find(broker: Broker, ctx: Ctx, group_id: str) -> FindCoordinatorResponse:
    out = broker.on_message(ctx, Inbound(CLIENT, FindCoordinatorRequest(group_id), 7, 0))
    [reply] = _sent(out, FindCoordinatorResponse)
    assert (reply.dst, reply.correlation_id) == (CLIENT, 7)
    return reply.message


def _metadata(leader: int, live: tuple[int, ...]) -> UpdateMetadataRequest:
    partition = UpdateMetadataPartition(OFFSETS_TOPIC, 12, 1, leader, 3, (1, 2, 3), 0, (1, 2, 3))
    return UpdateMetadataRequest(0, 1, -1, (partition,), live)


def test_find_coordinator_answers_the_cached_leader_of_the_groups_partition() -> None:
    """"my-group" is `__consumer_offsets-12` of 50; its leader in the metadata cache is 2."""
    broker, ctx = _broker()
    broker.on_message(ctx, Inbound(CONTROLLER, _metadata(2, (1, 2, 3)), 1, 0))
    assert _find(broker, ctx, "my-group") == FindCoordinatorResponse(ErrorCode.NONE, 2)


def test_find_coordinator_without_a_live_leader_is_not_available() -> None:
    """An unknown partition, a leader of -1, or a leader that is not a live broker."""
    broker, ctx = _broker()
    assert _find(broker, ctx, "my-group").error_code is ErrorCode.COORDINATOR_NOT_AVAILABLE
    broker.on_message(ctx, Inbound(CONTROLLER, _metadata(-1, (1, 2, 3)), 1, 0))
    assert _find(broker, ctx, "my-group").error_code is ErrorCode.COORDINATOR_NOT_AVAILABLE
    broker.on_message(ctx, Inbound(CONTROLLER, _metadata(2, (1, 3)), 2, 0))
    assert _find(broker, ctx, "my-group").error_code is ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_without_a_controller_find_coordinator_answers_the_fixed_leader() -> None:
    """`metadata.mode = "static"`: the partition's first replica leads for good."""
    broker, ctx = _broker(offsets_topic_num_partitions=3, offsets_topic_leaders=(1, 2, 3))
    assert _find(broker, ctx, "my-group") == FindCoordinatorResponse(ErrorCode.NONE, 1)  # partition 0 of 3


def test_leadership_of_an_offsets_partition_is_handed_to_the_coordinator_with_its_epoch() -> None:
    """Leader at epoch 5: CoordinatorElected with the log; follower at epoch 6: Resigned at 6;
    StopReplica: Resigned with its epoch. A topic other than `__consumer_offsets` sends nothing."""
    broker, ctx = _broker()
    become = leader_and_isr(1, 5, (1, 2), topic=OFFSETS_TOPIC, partition=3)
    out = broker.on_message(ctx, Inbound(CONTROLLER, become, 1, 0))
    assert [(s.dst, s.message) for s in _sent(out, CoordinatorElected)] == [(COORDINATOR, CoordinatorElected(3, 5, ()))]
    follow = leader_and_isr(2, 6, (1, 2), topic=OFFSETS_TOPIC, partition=3)
    out = broker.on_message(ctx, Inbound(CONTROLLER, follow, 2, 0))
    assert [s.message for s in _sent(out, CoordinatorResigned)] == [CoordinatorResigned(3, 6)]
    stop = StopReplicaRequest(0, 1, -1, (StopReplicaPartition(OFFSETS_TOPIC, 3, 7),))
    out = broker.on_message(ctx, Inbound(CONTROLLER, stop, 3, 0))
    assert [s.message for s in _sent(out, CoordinatorResigned)] == [CoordinatorResigned(3, 7)]
    out = broker.on_message(ctx, Inbound(CONTROLLER, leader_and_isr(1, 1, (1, 2)), 4, 0))
    assert _sent(out, CoordinatorElected) == []


def test_the_coordinators_appends_are_never_muted() -> None:
    """Kafka's coordinator appends in-process: while one of its acks=-1 appends waits for the
    follower, its next append is handled at once (a producer's would wait behind the first)."""
    broker, ctx = _broker()
    broker.on_message(ctx, Inbound(CONTROLLER, leader_and_isr(1, 1, (1, 2), topic=OFFSETS_TOPIC, partition=0), 1, 0))

    def append(value: str, correlation_id: int) -> Out:
        data = ProducePartitionData(OFFSETS_TOPIC, 0, (value,), size_bytes=80)
        return broker.on_message(ctx, Inbound(COORDINATOR, ProduceRequest(-1, 5000, (data,)), correlation_id, 0))

    assert _sent(append("a", 1), ProduceResponse) == []  # waits for broker 2
    out = append("b", 2)
    appended = [c.fields["base_offset"] for c in out if isinstance(c, Emit) and c.event == "records_appended"]
    assert appended == [1]
    assert broker.snapshot()["partitions"][f"{OFFSETS_TOPIC}-0"]["log_end_offset"] == 2
