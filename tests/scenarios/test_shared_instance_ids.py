"""Two live consumer processes configured with one `group.instance.id`: an operator's mistake
Kafka lets happen, simulated end to end under both protocols and reported in summary.json's
`shared_instance_ids` and by `kafkasim run`.

- classic: the second process's JoinGroup replaces the static member (the coordinator removes
  the first member id, `reason` `replaced`); the first one's next heartbeat is answered
  FENCED_INSTANCE_ID, fatal to it (`consumer_failed`);
- consumer protocol (KIP-848): the second one's join is answered UNRELEASED_INSTANCE_ID, as the
  first member is still in the group, fatal to the second one.
"""

from __future__ import annotations

from typing import Any

from sim.cli.run import shared_instance_id_line
from tests.scenarios.test_consumer_groups import run, scenario, where

STATIC = """
[[consumers]]
"group.id" = "my-group"
topics = ["T"]
"group.instance.id" = "{instance}"
"auto.offset.reset" = "earliest"
"max.poll.records" = 20
"process.record.ms" = 1
"start.ms" = {start}
{protocol}
"""


def consumers(protocol: str) -> str:
    """consumer-1 and consumer-3 are static members `a` and `b`; consumer-2, started at 15 s, once the group is stable,
    claims `a` too."""
    line = '"group.protocol" = "consumer"' if protocol == "consumer" else ""
    return "".join(STATIC.format(instance=i, start=s, protocol=line) for i, s in (("a", 0), ("a", 15000), ("b", 0)))


def test_classic_the_second_process_replaces_the_first_which_is_fenced() -> None:
    """consumer-2's JoinGroup at 15 s replaces member `a` in the Stable group without a
    rebalance (it takes `a`'s partitions T-0 and T-1); consumer-1's next heartbeat is answered
    FENCED_INSTANCE_ID and it stops. consumer-2 starts from `a`'s last commit, so what consumer-1
    processed past it is processed again (`commit_failed_or_fenced`)."""
    events, checks = run(scenario(consumers("classic"), records=2000, duration=30_000, version="3.9"))
    removed = where(events, "group_member_removed", reason="replaced")
    added = where(events, "group_member_added", group_instance_id="a")
    assert [(e["ts_ms"], e["member_id"]) for e in removed] == [(15008, added[0]["member_id"])]
    assert [e["ts_ms"] for e in added] == [80, 15008]
    assigned = where(events, "partitions_assigned", node="consumer-2")
    assert [(e["ts_ms"], e["partitions"]) for e in assigned] == [(15032, ["T-0", "T-1"])]
    assert [(e["node"], e["ts_ms"], e["error"]) for e in where(events, "consumer_failed")] == [
        ("consumer-1", 15092, "Heartbeat: FENCED_INSTANCE_ID")
    ]
    assert checks["shared_instance_ids"] == [
        {"group_id": "my-group", "instance_id": "a", "consumers": ["consumer-1", "consumer-2"], "fenced": "consumer-1", "error": "FENCED_INSTANCE_ID"}
    ]
    spans = [(s["consumer"], s["partition"], s["first_offset"], s["end_offset"], s["cause"]) for s in checks["duplicate_spans"]]
    assert sorted(spans) == [("consumer-2", "T-0", 304, 456, "commit_failed_or_fenced"), ("consumer-2", "T-1", 45, 152, "commit_failed_or_fenced")]
    assert (checks["duplicates"], checks["consumed"], checks["acked"]) == (259, 2259, 2000)
    line = shared_instance_id_line(checks["shared_instance_ids"][0])
    assert line == "consumer-1, consumer-2 share group.instance.id 'a' in group 'my-group': the coordinator stopped consumer-1 (FENCED_INSTANCE_ID)"


def test_consumer_protocol_the_second_join_is_unreleased_instance_id() -> None:
    """consumer-2's join at 15 s names instance `a`, whose member is alive at a positive epoch:
    UNRELEASED_INSTANCE_ID, fatal to consumer-2; consumer-1 keeps its partitions and nothing is
    processed twice."""
    events, checks = run(scenario(consumers("consumer"), records=2000, duration=30_000, version="4.0"))
    assert [(e["node"], e["ts_ms"], e["error"]) for e in where(events, "consumer_failed")] == [
        ("consumer-2", 15014, "ConsumerGroupHeartbeat: UNRELEASED_INSTANCE_ID")
    ]
    assert not where(events, "consumer_member_removed")
    assert not where(events, "partitions_assigned", node="consumer-2")
    assert checks["shared_instance_ids"] == [
        {"group_id": "my-group", "instance_id": "a", "consumers": ["consumer-1", "consumer-2"], "fenced": "consumer-2", "error": "UNRELEASED_INSTANCE_ID"}
    ]
    assert (checks["duplicates"], checks["consumed"], checks["acked"]) == (0, 2000, 2000)
    line = shared_instance_id_line(checks["shared_instance_ids"][0])
    assert line == "consumer-1, consumer-2 share group.instance.id 'a' in group 'my-group': the coordinator stopped consumer-2 (UNRELEASED_INSTANCE_ID)"


def test_distinct_instance_ids_are_not_reported() -> None:
    one: dict[str, Any] = {"group_id": "g", "instance_id": "a", "consumers": ["consumer-1", "consumer-2"], "fenced": None, "error": None}
    assert shared_instance_id_line(one) == "consumer-1, consumer-2 share group.instance.id 'a' in group 'g': none was stopped"
    _, checks = run(scenario(STATIC.format(instance="a", start=0, protocol="") + STATIC.format(instance="b", start=0, protocol=""), records=100, duration=8_000))
    assert checks["shared_instance_ids"] == []
