"""A classic member of a consumer group is written with its `ClassicMemberMetadata` (session
timeout, client id, every protocol with its subscription) and replayed as it was, so a
coordinator that loads the group keeps serving it the classic protocol."""

from __future__ import annotations

import json

from actors.group.consumer_group import ClassicMemberMetadata, ConsumerGroupMember, Membership
from actors.group.consumer_records import ConsumerReplay, changes
from protocols.group import JoinGroupProtocol, Subscription, TopicPartitions


def test_a_classic_member_survives_its_records() -> None:
    meta = ClassicMemberMetadata(
        10000,
        (
            JoinGroupProtocol("range", Subscription(("T",), (TopicPartitions("T", (1, 3)),), 2)),
            JoinGroupProtocol("cooperative-sticky", Subscription(("T",), (), -1)),
        ),
        "classic",
    )
    member = ConsumerGroupMember(
        "m", subscribed_topics=("T",), member_epoch=2, previous_member_epoch=1, assigned={"T": frozenset({1})}, classic=meta
    )
    after = Membership(2, 2, {"m": {"T": frozenset({1})}}, {"m": member})
    records = [json.loads(r) for r in changes("g", Membership(), after)]
    [written] = [r for r in records if r["type"] == "cg_member"]
    assert written["classic"] == {
        "client_id": "classic",
        "protocols": [["range", ["T"], [["T", 1], ["T", 3]], 2], ["cooperative-sticky", ["T"], [], -1]],
        "session_timeout_ms": 10000,
    }
    replay = ConsumerReplay()
    for record in records:
        replay.apply(record)
    assert replay.build()["g"].member("m") == member
    # A member of the consumer protocol writes no classic field.
    plain = Membership(1, 1, {}, {"p": ConsumerGroupMember("p", subscribed_topics=("T",))})
    assert all("classic" not in json.loads(r) for r in changes("g", Membership(), plain))
