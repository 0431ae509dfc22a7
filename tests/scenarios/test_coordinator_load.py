"""`offsets.load.ms`: how long a new leader of a `__consumer_offsets` partition takes to load its
groups, and what the coordinator answers meanwhile (`GroupMetadataManager.loadingPartitions`,
`GroupCoordinator.validateGroupStatus`). Latency is exactly 1 ms, so every time is exact.

`my-group` hashes to `__consumer_offsets-0` of 3, led by broker 1 from 21 ms; the coordinator
hears of the election at 22 ms, so a load of 1000 ms ends at 1022.
"""

from __future__ import annotations

from typing import Any

import pytest

from protocols.errors import ErrorCode
from protocols.group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupProtocol,
    JoinGroupRequest,
    JoinGroupResponse,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitTopic,
    OffsetFetchRequest,
    OffsetFetchResponse,
    Subscription,
    SyncGroupRequest,
    SyncGroupResponse,
    TopicPartitions,
)
from sim.cluster.harness import Cluster
from sim.cluster.scenario import ScenarioError, parse_scenario
from sim.engine.kernel import HostKind

E = ErrorCode
GROUP = "my-group"
SCENARIO = """
[network]
"latency.min.ms" = 1
"latency.max.ms" = 1
[cluster]
brokers = 3
[broker]
"offsets.topic.num.partitions" = 3
{load}
[[topics]]
name = "T"
partitions = 3
"replication.factor" = 3
[[consumers]]
"group.id" = "my-group"
topics = ["T"]
"start.ms" = 100000000
"""
JOIN = JoinGroupRequest(GROUP, 10000, 60000, "", protocols=(JoinGroupProtocol("range", Subscription(("T",))),))
FETCH = OffsetFetchRequest(GROUP, (TopicPartitions("T", (0,)),))
COMMIT = OffsetCommitRequest(GROUP, topics=(OffsetCommitTopic("T", (OffsetCommitPartition(0, 5),)),))


def _run(load: str) -> tuple[dict[int, tuple[int, Any]], list[dict[str, Any]]]:
    """Requests to broker 1 around the load's end; each answer by correlation id, and the events."""
    scenario = parse_scenario(SCENARIO.format(load=load), "load.toml", [])
    with Cluster(scenario, host=HostKind.DIRECT) as cluster:
        events: list[dict[str, Any]] = []
        cluster.kernel.observe(events.append)
        c1 = cluster.client("c1")
        ids = [
            c1.send(1000, 1, JOIN),
            c1.send(1000, 1, FETCH),
            c1.send(1000, 1, COMMIT),
            c1.send(1000, 1, HeartbeatRequest(GROUP, 1, "m")),
            c1.send(1000, 1, SyncGroupRequest(GROUP, 1, "m")),
            c1.send(1020, 1, JOIN),
            c1.send(1021, 1, JOIN),
        ]
        cluster.run(until_ms=1100)
        answers = {cid: c1.answer(cid) for cid in ids}
    return answers, events


def _error(message: Any) -> ErrorCode:
    if isinstance(message, OffsetCommitResponse):
        return message.partitions[0].error_code
    return message.error_code


def test_requests_get_coordinator_load_in_progress_until_the_load_ends() -> None:
    """With `offsets.load.ms` = 1000 the partition loads from 22 to 1022 ms. A JoinGroup, an
    OffsetFetch or an OffsetCommit handled before 1022 gets COORDINATOR_LOAD_IN_PROGRESS, a
    SyncGroup REBALANCE_IN_PROGRESS and a Heartbeat NONE, as Kafka's coordinator answers them;
    the JoinGroup handled at 1022 itself comes after the load (timers first) and is served."""
    answers, events = _run('"offsets.load.ms" = 1000')
    [loaded] = [e for e in events if e["event"] == "group_coordinator_loaded" and e["node"] == "broker-1"]
    assert (loaded["ts_ms"], loaded["partition"], loaded["leader_epoch"]) == (1022, 0, 0)
    got = {cid: (t, type(m).__name__, _error(m).name) for cid, (t, m) in answers.items()}
    assert got == {
        1: (1002, "JoinGroupResponse", "COORDINATOR_LOAD_IN_PROGRESS"),
        2: (1002, "OffsetFetchResponse", "COORDINATOR_LOAD_IN_PROGRESS"),
        3: (1002, "OffsetCommitResponse", "COORDINATOR_LOAD_IN_PROGRESS"),
        4: (1002, "HeartbeatResponse", "NONE"),
        5: (1002, "SyncGroupResponse", "REBALANCE_IN_PROGRESS"),
        6: (1022, "JoinGroupResponse", "COORDINATOR_LOAD_IN_PROGRESS"),
        7: (1023, "JoinGroupResponse", "MEMBER_ID_REQUIRED"),
    }


def test_by_default_the_load_takes_no_time() -> None:
    """The default, 0, loads at the election (22 ms): the same requests are served at once."""
    answers, events = _run("")
    [loaded] = [e for e in events if e["event"] == "group_coordinator_loaded" and e["node"] == "broker-1"]
    assert loaded["ts_ms"] == 22
    assert _error(answers[1][1]) is E.MEMBER_ID_REQUIRED
    assert isinstance(answers[2][1], OffsetFetchResponse) and _error(answers[2][1]) is E.NONE
    assert isinstance(answers[4][1], HeartbeatResponse) and _error(answers[4][1]) is E.UNKNOWN_MEMBER_ID
    assert isinstance(answers[5][1], SyncGroupResponse) and _error(answers[5][1]) is E.UNKNOWN_MEMBER_ID
    assert isinstance(answers[6][1], JoinGroupResponse)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("-1", "load.toml: [broker]: offsets.load.ms: must be at least 0, got -1"),
        ('"1s"', "load.toml: [broker]: offsets.load.ms: expected an integer, got '1s' (a string)"),
    ],
)
def test_a_bad_load_time_is_one_line_naming_the_key(value: str, expected: str) -> None:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(SCENARIO.format(load=f'"offsets.load.ms" = {value}'), "load.toml", [])
    assert str(info.value) == expected
