"""The `__consumer_offsets` records and their replay (`doLoadGroupsAndOffsets`)."""

from __future__ import annotations

import json

from actors.group.records import (
    group_record,
    group_tombstone,
    offset_record,
    offset_tombstone,
    replay,
)
from actors.group.state import ClassicGroup, CommittedOffset, GroupState, MemberMetadata
from protocols.group import Assignment, JoinGroupProtocol, Subscription, TopicPartitions
from protocols.replication import RecordBatch
from protocols.types import TopicPartition

T0, T1, T2 = TopicPartition("T", 0), TopicPartition("T", 1), TopicPartition("T", 2)
OWNING = Subscription(("T",), (TopicPartitions("T", (0, 1)),), generation_id=6)


def _stable_group() -> ClassicGroup:
    group = ClassicGroup("g", state=GroupState.COMPLETING_REBALANCE, state_timestamp_ms=1200, generation_id=7)
    group.protocol_type, group.protocol_name = "consumer", "range"
    for member_id, instance, subscription in (("m-1", None, OWNING), ("m-2", "i-2", Subscription(("T", "U")))):
        protocols = (JoinGroupProtocol("range", subscription), JoinGroupProtocol("sticky", subscription))
        group.add(MemberMetadata(member_id, instance, "consumer-g-1", 60000, 10000, "consumer", protocols))
    return group


ASSIGNMENT = {
    "m-1": Assignment((TopicPartitions("T", (0, 1)),)),
    "m-2": Assignment((TopicPartitions("T", (2,)), TopicPartitions("U", (0,)))),
}


def test_records_are_compact_json_with_sorted_keys() -> None:
    """One record is the same string on every run."""
    assert offset_record("g", T1, 42, 3, 1500) == (
        '{"commit_ms":1500,"group":"g","leader_epoch":3,"offset":42,"partition":1,"topic":"T","type":"offset"}'
    )
    assert json.loads(group_tombstone("g")) == {"type": "group_tombstone", "group": "g"}


def test_a_group_record_replays_to_the_stable_group_it_stored() -> None:
    """Generation, protocol, leader, state time, and each member with the chosen protocol's
    subscription (owned partitions and generation included) and its assignment."""
    group = _stable_group()
    [loaded] = replay([RecordBatch(0, 0, (group_record(group, ASSIGNMENT),))]).values()
    assert (loaded.state, loaded.generation_id, loaded.protocol_type, loaded.protocol_name) == (
        GroupState.STABLE, 7, "consumer", "range",
    )
    assert (loaded.leader_id, loaded.state_timestamp_ms, loaded.static_members) == ("m-1", 1200, {"i-2": "m-2"})
    m1, m2 = loaded.members["m-1"], loaded.members["m-2"]
    assert m1.protocols == (JoinGroupProtocol("range", OWNING),)
    assert (m1.assignment, m2.assignment) == (ASSIGNMENT["m-1"], ASSIGNMENT["m-2"])
    assert (m2.group_instance_id, m2.session_timeout_ms, m2.rebalance_timeout_ms, m2.client_id) == (
        "i-2", 10000, 60000, "consumer-g-1",
    )
    assert loaded.subscribed_topics == {"T", "U"}


def test_an_empty_group_record_replays_to_empty() -> None:
    """A generation that completed with no members comes back Empty at that generation."""
    group = ClassicGroup("g", state=GroupState.EMPTY, state_timestamp_ms=900, generation_id=8, protocol_type="consumer")
    [loaded] = replay([RecordBatch(0, 0, (group_record(group, {}),))]).values()
    assert (loaded.state, loaded.generation_id, loaded.members, loaded.state_timestamp_ms) == (GroupState.EMPTY, 8, {}, 900)


def test_the_last_record_wins_and_tombstones_delete() -> None:
    """Offsets: the last commit of each partition (with its batch's offset), none after a
    tombstone; groups: the last group record, none after a group tombstone; a group with
    offsets but no group record is a standalone group, Empty with no protocol type."""
    group = _stable_group()
    log = [
        RecordBatch(0, 0, (offset_record("g", T0, 5, 2, 100), offset_record("g", T1, 6, 2, 100))),
        RecordBatch(2, 0, (group_record(group, ASSIGNMENT),)),
        RecordBatch(3, 1, (offset_record("g", T0, 9, 2, 200), offset_tombstone("g", T1))),
        RecordBatch(5, 1, (offset_record("solo", T2, 3, -1, 250),)),
        RecordBatch(6, 1, (group_record(ClassicGroup("gone", generation_id=2), {}), group_tombstone("gone"))),
    ]
    loaded = replay(log)
    assert sorted(loaded) == ["g", "solo"]
    assert loaded["g"].offsets == {T0: CommittedOffset(9, 2, 200, 3)}
    solo = loaded["solo"]
    assert (solo.state, solo.protocol_type, solo.generation_id, solo.offsets) == (
        GroupState.EMPTY, None, 0, {T2: CommittedOffset(3, -1, 250, 5)},
    )
