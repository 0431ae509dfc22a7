"""`[run] "log.requests" = true`: every request an actor sends (`request_sent`) and every answer
it receives (`response_received`), with the API, the addresses, the correlation id and the
answer's error; off by default, and then the log is what it was. Latency is exactly 1 ms, so
every time below is exact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from actors.request_log import answer_error, api_name
from protocols.errors import ErrorCode
from protocols.group import (
    FindCoordinatorRequest,
    JoinGroupProtocol,
    JoinGroupRequest,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitTopic,
    PartitionError,
    Subscription,
)
from protocols.replication import FetchedPartition, FetchResponse
from protocols.zookeeper import GetDataRequest, MultiResponse, OpResult, ZkError
from sim.cluster.harness import Cluster
from sim.cluster.scenario import ScenarioError, parse_scenario
from sim.engine.kernel import HostKind

E = ErrorCode
REQUEST_EVENTS = ("request_sent", "response_received")
ONE_CONSUMER = """
[run]
"duration.ms" = 12000
{log}
[network]
"latency.min.ms" = 1
"latency.max.ms" = 1
[cluster]
brokers = 1
[broker]
"offsets.topic.num.partitions" = 1
"offsets.topic.replication.factor" = 1
"group.initial.rebalance.delay.ms" = 0
[[topics]]
name = "T"
partitions = 1
[[producers]]
topic = "T"
records = 100
"interval.ms" = 50
[[consumers]]
"group.id" = "g"
topics = ["T"]
"heartbeat.interval.ms" = 2000
"start.ms" = 1000
"""
"""One broker, a producer and one consumer that starts at 1 s, once the coordinator is loaded."""


def _requests(events: list[dict[str, Any]], node: str, *apis: str) -> list[tuple[Any, ...]]:
    return [
        (e["ts_ms"], e["event"], e["api"], e["correlation_id"], e["src"], e["dst"], e.get("error"))
        for e in events
        if e["event"] in REQUEST_EVENTS and e["node"] == node and (not apis or e["api"] in apis)
    ]


@pytest.fixture(scope="module")
def logged() -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    scenario = parse_scenario(ONE_CONSUMER.format(log='"log.requests" = true'), "requests", [])
    with Cluster(scenario, host=HostKind.DIRECT) as cluster:
        cluster.kernel.observe(events.append)
        cluster.run_to_end()
    return events


def test_a_consumers_join_is_its_requests_and_answers_in_order(logged: list[dict[str, Any]]) -> None:
    """The consumer's first poll at 1000: Metadata and FindCoordinator to the broker, then
    JoinGroup twice (KIP-394's MEMBER_ID_REQUIRED first) and SyncGroup to the coordinator, each
    answer one round trip (2 ms) after its request, SyncGroup's after the group record's
    append (4 ms); the correlation ids pair them."""
    c, b, g = "consumer-1/consumer", "broker-1/broker", "broker-1/group-coordinator"
    assert _requests(logged, "consumer-1", "Metadata", "FindCoordinator", "JoinGroup", "SyncGroup") == [
        (1000, "request_sent", "Metadata", 1, c, b, None),
        (1000, "request_sent", "FindCoordinator", 2, c, b, None),
        (1002, "response_received", "Metadata", 1, b, c, "NONE"),
        (1002, "response_received", "FindCoordinator", 2, b, c, "NONE"),
        (1002, "request_sent", "JoinGroup", 3, c, g, None),
        (1004, "response_received", "JoinGroup", 3, g, c, "MEMBER_ID_REQUIRED"),
        (1004, "request_sent", "JoinGroup", 4, c, g, None),
        (1006, "response_received", "JoinGroup", 4, g, c, "NONE"),
        (1006, "request_sent", "SyncGroup", 5, c, g, None),
        (1010, "response_received", "SyncGroup", 5, g, c, "NONE"),
    ]


def test_heartbeats_are_timed_from_the_log(logged: list[dict[str, Any]]) -> None:
    """The heartbeat thread starts with the join (1006) and sends every `heartbeat.interval.ms`
    (2000); each answer comes 2 ms later. The coordinator's appends are requests too: the
    group record of generation 1 goes to its own broker at 1007 and is answered at 1009."""
    beats = _requests(logged, "consumer-1", "Heartbeat")
    sent = [(t, cid) for t, event, _, cid, *_ in beats if event == "request_sent"]
    answered = [(t, cid, error) for t, event, _, cid, _, _, error in beats if event == "response_received"]
    assert [t for t, _ in sent] == [3006, 5006, 7006, 9006, 11006]
    assert answered == [(t + 2, cid, "NONE") for t, cid in sent]
    appends = [a for a in _requests(logged, "broker-1", "Produce") if "broker-1/group-coordinator" in a]
    assert appends[:2] == [
        (1007, "request_sent", "Produce", 1, "broker-1/group-coordinator", "broker-1/broker", None),
        (1009, "response_received", "Produce", 1, "broker-1/broker", "broker-1/group-coordinator", "NONE"),
    ]


def test_an_answers_error_is_its_own_or_its_first_partitions(tmp_path: Path) -> None:
    """A JoinGroup to a broker that does not coordinate the group is answered NOT_COORDINATOR at
    its top level; an OffsetCommit carries it per partition, and the log names it all the same."""
    scenario = parse_scenario(
        ONE_CONSUMER.format(log='"log.requests" = true').replace("brokers = 1", "brokers = 2"), "requests", []
    )
    join = JoinGroupRequest("g", 10000, 60000, "", protocols=(JoinGroupProtocol("range", Subscription(("T",))),))
    commit = OffsetCommitRequest("g", topics=(OffsetCommitTopic("T", (OffsetCommitPartition(0, 1),)),))
    events: list[dict[str, Any]] = []
    with Cluster(scenario, host=HostKind.DIRECT) as cluster:
        cluster.kernel.observe(events.append)
        c1 = cluster.client("c1")
        c1.send(500, 1, FindCoordinatorRequest("g"))
        c1.send(500, 2, join)
        c1.send(500, 2, commit)
        cluster.run(until_ms=600)
    assert _requests(events, "c1") == [
        (500, "request_sent", "FindCoordinator", 1, "c1/client", "broker-1/broker", None),
        (500, "request_sent", "JoinGroup", 2, "c1/client", "broker-2/group-coordinator", None),
        (500, "request_sent", "OffsetCommit", 3, "c1/client", "broker-2/group-coordinator", None),
        (502, "response_received", "FindCoordinator", 1, "broker-1/broker", "c1/client", "NONE"),
        (502, "response_received", "JoinGroup", 2, "broker-2/group-coordinator", "c1/client", "NOT_COORDINATOR"),
        (502, "response_received", "OffsetCommit", 3, "broker-2/group-coordinator", "c1/client", "NOT_COORDINATOR"),
    ]


def test_answer_error_reads_every_shape_of_answer() -> None:
    """The top-level error first, then the first part's in order; ZooKeeper's OK is NONE."""
    fetch = FetchResponse((FetchedPartition("T", 0, E.NONE, 5), FetchedPartition("T", 1, E.NOT_LEADER_OR_FOLLOWER, 5)))
    assert answer_error(fetch) == "NOT_LEADER_OR_FOLLOWER"
    assert answer_error(FetchResponse((), E.FETCH_SESSION_ID_NOT_FOUND)) == "FETCH_SESSION_ID_NOT_FOUND"
    assert answer_error(OffsetCommitResponse((PartitionError("T", 0, E.NONE),))) == "NONE"
    assert answer_error(MultiResponse(ZkError.OK, (OpResult(ZkError.OK),))) == "NONE"
    assert answer_error(MultiResponse(ZkError.OK, (OpResult(ZkError.OK), OpResult(ZkError.NONODE)))) == "NONODE"
    assert (api_name(GetDataRequest(1, "/controller")), api_name(fetch)) == ("GetData", "Fetch")


def test_off_the_log_is_the_same_without_the_request_events(tmp_path: Path) -> None:
    """Logging requests adds its events and changes nothing else: with them taken out, the log
    is byte for byte the log of the run without them (the default)."""
    lines = {}
    for name, log in (("on", '"log.requests" = true'), ("off", "")):
        path = tmp_path / f"{name}.jsonl"
        with Cluster(parse_scenario(ONE_CONSUMER.format(log=log), "requests", []), events_path=path) as cluster:
            cluster.run_to_end()
        lines[name] = path.read_bytes().splitlines()
    kept = [line for line in lines["on"] if orjson.loads(line)["event"] not in REQUEST_EVENTS]
    assert len(kept) < len(lines["on"])
    assert kept == lines["off"]


def test_a_bad_value_is_one_line_naming_the_key() -> None:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(ONE_CONSUMER.format(log='"log.requests" = "yes"'), "requests.toml", [])
    assert str(info.value) == "requests.toml: [run]: log.requests: expected true or false, got 'yes' (a string)"
