"""A consumer group's records (`consumer_records`): what one change writes, and that a replay
of them rebuilds the group; and the heartbeat checks made before the group is looked at."""

from __future__ import annotations

import json

from actors.group.consumer_group import ConsumerGroupMember, Membership
from actors.group.consumer_protocol.states import MemberState
from actors.group.consumer_protocol.validation import heartbeat_request_error
from actors.group.consumer_records import ConsumerReplay, changes
from protocols.errors import ErrorCode
from protocols.group import ConsumerGroupHeartbeatRequest, TopicPartitions

E = ErrorCode


def _membership() -> Membership:
    a = ConsumerGroupMember("A", None, None, 30000, ("T",), None, MemberState.STABLE, 2, 1, {"T": frozenset({0, 1})})
    s = ConsumerGroupMember(
        "S", "i", None, 30000, ("T",), "range", MemberState.UNREVOKED_PARTITIONS, 1, 1, {}, {"T": frozenset({2})}
    )
    return Membership(2, 2, {"A": {"T": frozenset({0, 1})}, "S": {"T": frozenset({2})}}, {"A": a, "S": s}, {"i": "S"})


def test_a_replay_of_the_changes_rebuilds_the_membership() -> None:
    after = _membership()
    records = changes("g", Membership(), after)
    assert [json.loads(r)["type"] for r in records] == [
        "cg_member", "cg_member", "cg_epoch", "cg_target", "cg_target", "cg_target_epoch", "cg_current", "cg_current",
    ]
    replay = ConsumerReplay()
    for r in records:
        replay.apply(json.loads(r))
    [(group_id, group)] = replay.build().items()
    assert group_id == "g"
    assert group.m == after


def test_a_removed_member_writes_its_three_tombstones_and_nothing_else_changes() -> None:
    before = _membership()
    after = before.copy()
    del after.members["A"], after.target["A"]
    after.group_epoch = 3
    types = [json.loads(r)["type"] for r in changes("g", before, after)]
    assert types == ["cg_current_tombstone", "cg_target_tombstone", "cg_member_tombstone", "cg_epoch"]
    assert changes("g", before, before.copy()) == ()


def test_a_group_tombstone_drops_the_group() -> None:
    replay = ConsumerReplay()
    for r in changes("g", Membership(), _membership()):
        replay.apply(json.loads(r))
    replay.apply({"type": "cg_tombstone", "group": "g"})
    assert replay.build() == {}


def _req(epoch: int, member: str = "A", **kw: object) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest("g", member, epoch, **kw)  # type: ignore[arg-type]


def test_heartbeat_request_checks() -> None:
    full = {"rebalance_timeout_ms": 1000, "subscribed_topic_names": ("T",), "topic_partitions": ()}
    assert heartbeat_request_error(_req(0, **full), ("uniform",), member_id_required=True) is E.NONE
    assert heartbeat_request_error(_req(0, "", **full), ("uniform",), member_id_required=False) is E.NONE
    assert heartbeat_request_error(_req(0, "", **full), ("uniform",), member_id_required=True) is E.INVALID_REQUEST
    assert heartbeat_request_error(_req(0, **{**full, "rebalance_timeout_ms": -1}), ("uniform",), member_id_required=True) is E.INVALID_REQUEST
    owning = {**full, "topic_partitions": (TopicPartitions("T", (0,)),)}
    assert heartbeat_request_error(_req(0, **owning), ("uniform",), member_id_required=True) is E.INVALID_REQUEST
    assert heartbeat_request_error(_req(0, **{**full, "subscribed_topic_names": ()}), ("uniform",), member_id_required=True) is E.INVALID_REQUEST
    assert heartbeat_request_error(_req(-2), ("uniform",), member_id_required=True) is E.INVALID_REQUEST  # no instance id
    assert heartbeat_request_error(_req(-2, instance_id="i"), ("uniform",), member_id_required=True) is E.NONE
    assert heartbeat_request_error(_req(-3), ("uniform",), member_id_required=True) is E.INVALID_REQUEST
    assert heartbeat_request_error(_req(3, ""), ("uniform",), member_id_required=False) is E.INVALID_REQUEST
    assert heartbeat_request_error(_req(3, server_assignor="x"), ("uniform",), member_id_required=True) is E.UNSUPPORTED_ASSIGNOR
