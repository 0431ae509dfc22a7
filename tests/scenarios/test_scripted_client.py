"""The Python API's scripted client (`Cluster.client`): raw requests at chosen times, the
answers with their times, requests added between runs, routing by API, and mistakes refused at
once. Latency is exactly 1 ms, so every time below is exact."""

from __future__ import annotations

from typing import Any

import pytest

from actors.core import Address
from protocols.errors import ErrorCode
from protocols.group import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    JoinGroupProtocol,
    JoinGroupRequest,
    JoinGroupResponse,
    Subscription,
)
from protocols.metadata import MetadataRequest, MetadataResponse
from sim.cluster.harness import Cluster
from sim.cluster.scenario import parse_scenario
from sim.engine.kernel import HostKind

E = ErrorCode
SCENARIO = """
[run]
"duration.ms" = 60000
[network]
"latency.min.ms" = 1
"latency.max.ms" = 1
[cluster]
brokers = 3
[broker]
"offsets.topic.num.partitions" = 3
[[topics]]
name = "T"
partitions = 3
"replication.factor" = 3
[[consumers]]
"group.id" = "my-group"
topics = ["T"]
"start.ms" = 100000000
"""
FIND = FindCoordinatorRequest("my-group")
JOIN = JoinGroupRequest("my-group", 10000, 60000, "", protocols=(JoinGroupProtocol("range", Subscription(("T",))),))


@pytest.fixture(params=[HostKind.DIRECT, HostKind.PYKKA])
def cluster(request: Any) -> Any:
    with Cluster(parse_scenario(SCENARIO, "client", []), host=request.param) as built:
        yield built


def test_requests_go_at_their_times_and_answers_are_kept_with_theirs(cluster: Cluster) -> None:
    """Each request leaves at its time with its number as correlation id and is answered one
    round trip later; a group request for a broker goes to that broker's group coordinator."""
    c1 = cluster.client("c1")
    assert c1.send(1000, 2, FIND) == 1
    assert c1.send(1000, "broker-1", MetadataRequest(("T",))) == 2
    assert c1.send(1100, lambda c: c.answer(1)[1].node_id, JOIN) == 3
    cluster.run(until_ms=1200)
    assert [(t, str(dst), cid, type(m).__name__) for t, dst, cid, m in c1.sent()] == [
        (1000, "broker-2/broker", 1, "FindCoordinatorRequest"),
        (1000, "broker-1/broker", 2, "MetadataRequest"),
        (1100, "broker-1/group-coordinator", 3, "JoinGroupRequest"),
    ]
    assert c1.answer(1) == (1002, FindCoordinatorResponse(E.NONE, 1))
    assert c1.answer(2)[0] == 1002 and isinstance(c1.answer(2)[1], MetadataResponse)
    [(t, joined)] = c1.answers(JoinGroupResponse)
    assert (t, joined.error_code) == (1102, E.MEMBER_ID_REQUIRED)
    assert [t for t, _ in c1.answers()] == [1002, 1002, 1102]


def test_a_request_added_between_runs_is_sent_at_its_time_without_a_log_line(cluster: Cluster) -> None:
    """After the client started, `send` wakes it (an application call left out of the log) and
    the request still leaves exactly at its time; one for the time it is now leaves now."""
    events: list[dict[str, Any]] = []
    cluster.kernel.observe(events.append)
    c1 = cluster.client("c1")
    cluster.run(until_ms=500)
    c1.send(700, 3, FIND)
    c1.send(500, 1, FIND)
    cluster.run(until_ms=1000)
    assert [(t, str(dst), cid) for t, dst, cid, _ in c1.sent()] == [(500, "broker-1/broker", 2), (700, "broker-3/broker", 1)]
    assert [t for t, _ in c1.answers(FindCoordinatorResponse)] == [502, 702]
    assert not [e for e in events if e["event"] == "application_called"]


def test_mistakes_are_refused_when_sent() -> None:
    """A time already past, a message that is not a request and a destination that is not a
    broker are errors at the call, each naming what is wrong."""
    with Cluster(parse_scenario(SCENARIO, "client", []), host=HostKind.DIRECT) as cluster:
        c1 = cluster.client("c1")
        cluster.run(until_ms=100)
        with pytest.raises(ValueError, match=r"c1: cannot send at 50 ms: it is already 100 ms"):
            c1.send(50, 1, FIND)
        with pytest.raises(TypeError, match=r"FindCoordinatorResponse is not a request of protocols/"):
            c1.send(200, 1, FindCoordinatorResponse(E.NONE, 1))
        with pytest.raises(ValueError, match=r"'zookeeper' is not a broker"):
            c1.send(200, "zookeeper", FIND)
        with pytest.raises(ValueError, match=r"node 'c1' already exists"):
            cluster.client("c1")
        assert c1.send(200, Address("broker-1", "broker"), FIND) == 1
