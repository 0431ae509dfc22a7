"""The registry and the msgpack codec: round trips, validation, golden bytes."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocols import FrameError, Kind, decode_frame, encode_frame, registered
from protocols import admin as a
from protocols import group as g
from protocols import metadata as m
from protocols import producer as pr
from protocols import replication as r
from protocols import zookeeper as z
from protocols.application import ApplicationCall
from protocols.connection import Disconnected
from protocols.errors import ErrorCode
from protocols.registry import field, message
from protocols.workload import Gossip, PingRequest, PingResponse

GOLDEN = Path(__file__).with_name("golden_frames.json")

E = ErrorCode
_STAT = z.Stat(czxid=12, mzxid=15, version=3, cversion=1, ephemeral_owner=257, num_children=0)
_LEADER, _FOLLOWER = "consumer-my-group-1-3f2a", "consumer-my-group-2-9c1d"
_OWNING = g.Subscription(("T",), (g.TopicPartitions("T", (0, 1, 2)),), generation_id=7)
SAMPLES: dict[type, Any] = {
    z.ConnectRequest: z.ConnectRequest(18000),
    z.ConnectResponse: z.ConnectResponse(257, 18000),
    z.ZkPingRequest: z.ZkPingRequest(257),
    z.ZkPingResponse: z.ZkPingResponse(z.ZkError.OK),
    z.CloseSessionRequest: z.CloseSessionRequest(257),
    z.CloseSessionResponse: z.CloseSessionResponse(z.ZkError.SESSIONEXPIRED),
    z.ExistsRequest: z.ExistsRequest(257, "/controller", watch=True),
    z.ExistsResponse: z.ExistsResponse(z.ZkError.OK, _STAT),
    z.GetDataRequest: z.GetDataRequest(257, "/controller_epoch"),
    z.GetDataResponse: z.GetDataResponse(z.ZkError.OK, "7", _STAT),
    z.GetChildrenRequest: z.GetChildrenRequest(257, "/brokers/ids", watch=True),
    z.GetChildrenResponse: z.GetChildrenResponse(z.ZkError.OK, ("1", "2", "3")),
    z.MultiRequest: z.MultiRequest(
        257,
        (
            z.Op(z.OpCode.CREATE, "/controller", '{"brokerid":2}', ephemeral=True),
            z.Op(z.OpCode.SET_DATA, "/controller_epoch", "8", version=6),
        ),
    ),
    z.MultiResponse: z.MultiResponse(
        z.ZkError.NODEEXISTS, (z.OpResult(z.ZkError.NODEEXISTS), z.OpResult(z.ZkError.RUNTIMEINCONSISTENCY))
    ),
    z.WatchedEvent: z.WatchedEvent(z.EventType.NODE_DELETED, "/controller"),
    Gossip: Gossip(token=123456789, hops=7, origin="node-1/gossip-0"),
    PingRequest: PingRequest(sent_ms=1500),
    PingResponse: PingResponse(sent_ms=1500),
    pr.InitProducerIdRequest: pr.InitProducerIdRequest(60000, 4000, 2),
    pr.InitProducerIdResponse: pr.InitProducerIdResponse(E.NONE, 4000, 3),
    r.ProduceRequest: r.ProduceRequest(
        acks=-1,
        timeout_ms=30000,
        partitions=(r.ProducePartitionData("T", 0, ("p1:0", "p1:1"), 4000, 0, 0),),
    ),
    r.ProduceResponse: r.ProduceResponse((r.ProducePartitionResponse("T", 0, E.NONE, 10),)),
    r.FetchRequest: r.FetchRequest(
        replica_id=2, max_wait_ms=500, min_bytes=1, partitions=(r.FetchPartition("T", 0, 2, 0, 1),)
    ),
    r.FetchResponse: r.FetchResponse(
        (
            r.FetchedPartition("T", 0, E.NONE, 1, (r.RecordBatch(0, 0, ("p1:0", "p1:1"), 4000, 0, 0, 86),)),
            r.FetchedPartition("T", 1, E.NONE, 5, (), r.EpochEndOffset(0, 1)),
        )
    ),
    r.LeaderAndIsrRequest: r.LeaderAndIsrRequest(
        controller_id=1,
        controller_epoch=7,
        partitions=(r.LeaderAndIsrPartition("T", 0, 7, 2, 5, (2, 3), 3, (1, 2, 3)),),
        broker_epoch=25,
    ),
    r.LeaderAndIsrResponse: r.LeaderAndIsrResponse(
        E.NONE, (r.LeaderAndIsrPartitionError("T", 0, E.STALE_CONTROLLER_EPOCH),)
    ),
    r.OffsetForLeaderEpochRequest: r.OffsetForLeaderEpochRequest(
        2, (r.OffsetForLeaderEpochPartition("T", 0, 0, 1),)
    ),
    r.OffsetForLeaderEpochResponse: r.OffsetForLeaderEpochResponse(
        (r.EpochEndOffsetResult("T", 0, E.NONE, 0, 2),)
    ),
    r.ListOffsetsRequest: r.ListOffsetsRequest(1, (r.ListOffsetsPartition("T", 0, r.LATEST_TIMESTAMP, 6),)),
    r.ListOffsetsResponse: r.ListOffsetsResponse(
        (r.ListOffsetsPartitionResponse("T", 0, E.NONE, 5, 6),)
    ),
    r.AlterPartitionRequest: r.AlterPartitionRequest(1, 25, (r.AlterPartitionItem("T", 0, 5, (1,), 3),)),
    r.AlterPartitionResponse: r.AlterPartitionResponse(
        E.NONE, (r.AlterPartitionResult("T", 0, E.NONE, 1, 5, (1,), 4),)
    ),
    m.UpdateMetadataRequest: m.UpdateMetadataRequest(
        2, 8, 25, (m.UpdateMetadataPartition("T", 0, 8, 2, 5, (2, 3), 4, (1, 2, 3), (1,)),), (2, 3)
    ),
    m.UpdateMetadataResponse: m.UpdateMetadataResponse(E.STALE_CONTROLLER_EPOCH),
    m.StopReplicaRequest: m.StopReplicaRequest(2, 8, 25, (m.StopReplicaPartition("T", 0, 5),)),
    m.StopReplicaResponse: m.StopReplicaResponse(E.NONE),
    m.MetadataRequest: m.MetadataRequest(("T",)),
    m.MetadataResponse: m.MetadataResponse(
        (1, 2, 3), 2, (m.MetadataPartition("T", 0, E.NONE, 2, 5, (1, 2, 3), (2, 3)),)
    ),
    m.BrokerRegistered: m.BrokerRegistered(25),
    m.ControlledShutdownRequest: m.ControlledShutdownRequest(1, 25),
    m.ControlledShutdownResponse: m.ControlledShutdownResponse(E.NONE, (m.RemainingPartition("T", 0),)),
    m.ShutdownSignal: m.ShutdownSignal(3000),
    m.IsrUpdateRequest: m.IsrUpdateRequest("T", 0, 1, 5, (1, 2), 7, 3),
    m.IsrUpdateResponse: m.IsrUpdateResponse(E.NONE, 4),
    Disconnected: Disconnected("broker-2"),
    ApplicationCall: ApplicationCall("stall", 15000),
    g.FindCoordinatorRequest: g.FindCoordinatorRequest("my-group"),
    g.FindCoordinatorResponse: g.FindCoordinatorResponse(E.NONE, 2),
    g.JoinGroupRequest: g.JoinGroupRequest(
        "my-group",
        45000,
        300000,
        _LEADER,
        protocols=(g.JoinGroupProtocol("range", _OWNING), g.JoinGroupProtocol("cooperative-sticky", _OWNING)),
    ),
    g.JoinGroupResponse: g.JoinGroupResponse(
        E.NONE,
        7,
        "range",
        _LEADER,
        member_id=_LEADER,
        members=(
            g.JoinGroupMember(_LEADER, None, _OWNING),
            g.JoinGroupMember(_FOLLOWER, "instance-2", g.Subscription(("T",))),
        ),
    ),
    g.SyncGroupRequest: g.SyncGroupRequest(
        "my-group",
        7,
        _LEADER,
        protocol_name="range",
        assignments=(
            g.SyncGroupAssignment(_LEADER, g.Assignment((g.TopicPartitions("T", (0, 1)),))),
            g.SyncGroupAssignment(_FOLLOWER, g.Assignment((g.TopicPartitions("T", (2,)),))),
        ),
    ),
    g.SyncGroupResponse: g.SyncGroupResponse(E.NONE, "range", g.Assignment((g.TopicPartitions("T", (2,)),))),
    g.HeartbeatRequest: g.HeartbeatRequest("my-group", 7, _FOLLOWER, "instance-2"),
    g.HeartbeatResponse: g.HeartbeatResponse(E.REBALANCE_IN_PROGRESS),
    g.ConsumerGroupHeartbeatRequest: g.ConsumerGroupHeartbeatRequest(
        "my-group",
        _FOLLOWER,
        0,
        instance_id="instance-2",
        rebalance_timeout_ms=300000,
        subscribed_topic_names=("T",),
        server_assignor="uniform",
        topic_partitions=(),
    ),
    g.ConsumerGroupHeartbeatResponse: g.ConsumerGroupHeartbeatResponse(
        E.NONE, _FOLLOWER, 3, 5000, g.ConsumerGroupHeartbeatAssignment((g.TopicPartitions("T", (1, 2)),))
    ),
    g.LeaveGroupRequest: g.LeaveGroupRequest("my-group", (g.MemberIdentity(_LEADER),)),
    g.LeaveGroupResponse: g.LeaveGroupResponse(E.UNKNOWN_MEMBER_ID),
    g.OffsetCommitRequest: g.OffsetCommitRequest(
        "my-group",
        7,
        _LEADER,
        topics=(g.OffsetCommitTopic("T", (g.OffsetCommitPartition(0, 105, 3), g.OffsetCommitPartition(1, 98, 3))),),
    ),
    g.OffsetCommitResponse: g.OffsetCommitResponse(
        (g.PartitionError("T", 0, E.ILLEGAL_GENERATION), g.PartitionError("T", 1, E.ILLEGAL_GENERATION))
    ),
    g.OffsetFetchRequest: g.OffsetFetchRequest("my-group", (g.TopicPartitions("T", (0, 1)),)),
    g.OffsetFetchResponse: g.OffsetFetchResponse(
        E.NONE, (g.OffsetFetchTopic("T", (g.OffsetFetchPartition(0, 105, 3), g.OffsetFetchPartition(1))),)
    ),
    g.CoordinatorElected: g.CoordinatorElected(
        12, 4, (r.RecordBatch(40, 4, ("offset:my-group:T-0=105", "offset:my-group:T-1=98"), size_bytes=96),)
    ),
    g.CoordinatorResigned: g.CoordinatorResigned(12, 5),
    a.DescribeGroupsRequest: a.DescribeGroupsRequest(("my-group",)),
    a.DescribeGroupsResponse: a.DescribeGroupsResponse(
        (
            a.DescribedGroup(
                E.NONE,
                "my-group",
                "Stable",
                "consumer",
                "range",
                (a.DescribedGroupMember(_LEADER, None, "consumer-my-group-1", "consumer-1", g.Assignment((g.TopicPartitions("T", (0, 1)),))),),
            ),
        )
    ),
    a.ListGroupsRequest: a.ListGroupsRequest(("Empty",)),
    a.ListGroupsResponse: a.ListGroupsResponse(E.NONE, (a.ListedGroup("my-group", "consumer", "Empty"),)),
    a.DeleteGroupsRequest: a.DeleteGroupsRequest(("my-group",)),
    a.DeleteGroupsResponse: a.DeleteGroupsResponse((a.DeletableGroupResult("my-group", E.NON_EMPTY_GROUP),)),
    a.OffsetDeleteRequest: a.OffsetDeleteRequest("my-group", (g.TopicPartitions("T", (0, 1)),)),
    a.OffsetDeleteResponse: a.OffsetDeleteResponse(
        E.NONE, (g.PartitionError("T", 0, E.GROUP_SUBSCRIBED_TO_TOPIC), g.PartitionError("T", 1, E.NONE))
    ),
    a.AdminCommand: a.AdminCommand("reset_offsets", 1, "my-group", "T", (0, 1), "shift-by", 0, -10),
}


def _sample(cls: type) -> Any:
    """A fixed, representative instance of a registered message (for golden bytes)."""
    return SAMPLES[cls]


def _strategy(tp: Any) -> st.SearchStrategy[Any]:
    """Values of any field type the registry supports, within msgpack's integer range."""
    import dataclasses
    import types
    import typing
    from enum import IntEnum

    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        (inner,) = [a for a in typing.get_args(tp) if a is not type(None)]
        return st.none() | _strategy(inner)
    if origin is tuple:
        return st.lists(_strategy(typing.get_args(tp)[0]), max_size=3).map(tuple)
    if isinstance(tp, type) and issubclass(tp, IntEnum):
        return st.sampled_from(list(tp))
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        return st.builds(tp, **{f.name: _strategy(hints[f.name]) for f in dataclasses.fields(tp)})
    simple = {
        int: st.integers(-(2**63), 2**63 - 1),
        bool: st.booleans(),
        str: st.text(max_size=12),
        bytes: st.binary(max_size=12),
    }
    return simple[tp]


def test_every_registered_message_has_a_sample() -> None:
    assert {m.cls for m in registered()} == set(SAMPLES)


@pytest.mark.parametrize("mtype", registered(), ids=lambda m: m.name)
@given(data=st.data())
def test_every_registered_message_round_trips(mtype: Any, data: st.DataObject) -> None:
    msg = data.draw(_strategy(mtype.cls))
    assert decode_frame(encode_frame(msg, 3)).message == msg


def test_every_registered_message_has_a_golden_frame_per_version() -> None:
    """Bytes on the wire are pinned: a change to a schema or to the codec shows up here."""
    frames = {
        f"{m.name}/v{v}": encode_frame(_sample(m.cls), 42, v).hex()
        for m in registered()
        for v in range(m.min_version, m.max_version + 1)
    }
    if os.environ.get("KAFKASIM_UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps(frames, indent=2, sort_keys=True) + "\n")
    assert frames == json.loads(GOLDEN.read_text())


def test_older_version_omits_newer_fields_and_decodes_them_as_defaults() -> None:
    """Gossip.origin exists from version 1: a version-0 peer never sees it."""
    frame = encode_frame(Gossip(token=1, hops=2, origin="x"), version=0)
    body = msgpack.unpackb(frame[:-4])[4]
    assert body == {"token": 1, "hops": 2}
    assert decode_frame(frame).message == Gossip(token=1, hops=2, origin="")


@given(
    st.one_of(
        st.builds(Gossip, token=st.integers(0, 2**63 - 1), hops=st.integers(0, 2**31)),
        st.builds(PingRequest, sent_ms=st.integers(0, 2**62)),
        st.builds(PingResponse, sent_ms=st.integers(0, 2**62)),
    ),
    st.integers(0, 2**31 - 1),
)
def test_round_trip(msg: Any, correlation_id: int) -> None:
    frame = decode_frame(encode_frame(msg, correlation_id))
    assert frame.message == msg
    assert frame.correlation_id == correlation_id


def _frame(raw: Any) -> bytes:
    import zlib

    payload = msgpack.packb(raw)
    return payload + zlib.crc32(payload).to_bytes(4, "big")


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ([2, 2001, 1, 0, {"token": "1", "hops": 2}], "Gossip.token: expected int, got str"),
        ([2, 2001, 1, 0, {"token": 1}], "Gossip.hops: missing"),
        ([2, 2001, 1, 0, {"token": 1, "hops": 2, "x": 3}], "unknown field 'x'"),
        ([2, 2001, 9, 0, {"token": 1, "hops": 2}], "unsupported version 9"),
        ([2, 9999, 0, 0, {}], "unknown message: kind 2, key 9999"),
        ([2, 2001, 1, 0], "not a frame"),
        ([2, 2001, 1, "c", {}], "correlation_id must be an integer"),
        ([2, 2001, 1, 0, [1, 2]], "expected a map"),
        ([2, 2001, 1, 0, {"token": True, "hops": 2}], "expected int, got bool"),
    ],
)
def test_decode_rejects_malformed_frames(raw: Any, reason: str) -> None:
    with pytest.raises(FrameError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        decode_frame(_frame(raw))


def test_decode_rejects_damaged_bytes() -> None:
    frame = bytearray(encode_frame(PingRequest(sent_ms=5)))
    frame[3] ^= 0x40
    with pytest.raises(FrameError, match="checksum mismatch"):
        decode_frame(bytes(frame))
    with pytest.raises(FrameError, match="checksum mismatch"):
        decode_frame(b"\x01")


def test_registry_refuses_a_second_message_under_the_same_key() -> None:
    with pytest.raises(TypeError, match="already taken by Gossip"):

        @message(2001, kind=Kind.ONE_WAY)
        @dataclass(frozen=True, slots=True)
        class Other:
            x: int


def test_registry_refuses_a_request_without_its_response() -> None:
    with pytest.raises(TypeError, match="must name its response"):

        @message(2900, kind=Kind.REQUEST)
        @dataclass(frozen=True, slots=True)
        class Lonely:
            x: int


def test_registry_refuses_a_versioned_field_without_default() -> None:
    with pytest.raises(TypeError, match="versioned field needs a default"):

        @message(2901, kind=Kind.ONE_WAY, versions=(0, 1))
        @dataclass(frozen=True, slots=True)
        class Late:
            x: int = field(since=1)


def test_error_codes_carry_kafkas_numbers() -> None:
    """Spot checks against org.apache.kafka.common.protocol.Errors."""
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER == 6
    assert ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND == 20
    assert ErrorCode.ILLEGAL_GENERATION == 22
    assert ErrorCode.REBALANCE_IN_PROGRESS == 27
    assert ErrorCode.FENCED_LEADER_EPOCH == 74
    assert ErrorCode.MEMBER_ID_REQUIRED == 79
    assert ErrorCode.NOT_COORDINATOR.retriable
    assert not ErrorCode.ILLEGAL_GENERATION.retriable


def test_decode_names_a_bad_item_deep_in_a_message_and_an_unknown_error_code() -> None:
    """The fast decoders (a list of a plain type checked in one pass, an enum by lookup) still
    name the field at fault, down to the item."""
    from protocols.errors import ErrorCode
    from protocols.replication import FetchedPartition, FetchResponse, RecordBatch

    good = FetchResponse((FetchedPartition("t", 0, ErrorCode.NONE, 5, (RecordBatch(0, 1, ("a", "b")),)),))
    raw = msgpack.unpackb(encode_frame(good)[:-4])
    assert decode_frame(_frame(raw)).message == good
    raw[4]["partitions"][0]["records"][0]["values"][1] = 7
    with pytest.raises(FrameError, match=r"^FetchResponse\.partitions\[0\]\.records\[0\]\.values\[1\]: expected str, got int$"):
        decode_frame(_frame(raw))
    raw[4]["partitions"][0]["records"][0]["values"][1] = True
    with pytest.raises(FrameError, match=r"values\[1\]: expected str, got bool$"):
        decode_frame(_frame(raw))
    raw[4]["partitions"][0]["records"][0]["values"][1] = "b"
    raw[4]["partitions"][0]["error_code"] = 9999
    with pytest.raises(FrameError, match=r"^FetchResponse\.partitions\[0\]\.error_code: 9999 is not a valid ErrorCode$"):
        decode_frame(_frame(raw))
