"""Broker faults aimed at a role: `node = "controller"` is the broker that holds ZooKeeper's
`/controller` when the fault starts, whichever broker won the election before it."""

from __future__ import annotations

import pytest

from sim.cluster.faults import FaultError
from sim.cluster.harness import Cluster, check_scenario
from sim.cluster.scenario import parse_scenario
from tests.scenarios.test_consumer_groups import run, where

BASE = """
[run]
name = "role"
seed = {seed}
"duration.ms" = 16000

[kafka]
version = "3.9"

[network]
"latency.min.ms" = 1
"latency.max.ms" = 5

[cluster]
brokers = 3

[broker]
"zookeeper.session.timeout.ms" = 3000

[[topics]]
name = "T"
partitions = 2
"replication.factor" = 3

[[producers]]
topic = "T"
records = 1000
"interval.ms" = 10
"""

CRASH_THEN_PAUSE = """
[[faults]]
kind = "crash"
"at.ms" = 4000
node = "controller"
"restart.after.ms" = 4000

[[faults]]
kind = "pause"
"at.ms" = 11000
node = "controller"
"duration.ms" = 4000
"""


def _controller_before(events: list[dict], ts_ms: int) -> int:
    return [e["broker_id"] for e in where(events, "controller_elected") if e["ts_ms"] < ts_ms][-1]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_controller_fault_hits_the_broker_elected_before_it(seed: int) -> None:
    """The crash at 4 s stops the first controller, restarted at 8 s; once its ZooKeeper
    session (3 s) has expired a second broker wins epoch 2, and the pause at 11 s, past the
    session, stops that one: a third election follows. The seeds' latencies decide who wins
    each time; the faults follow them."""
    events, _ = run(parse_scenario(BASE.format(seed=seed) + CRASH_THEN_PAUSE, "role.toml"))
    first, second = _controller_before(events, 4000), _controller_before(events, 11000)
    crash = where(events, "node_crashed")[0]
    pause = where(events, "node_paused")[0]
    assert (crash["ts_ms"], crash["target"]) == (4000, f"broker-{first}")
    assert (pause["ts_ms"], pause["target"], pause["until_ms"]) == (11000, f"broker-{second}", 15000)
    assert second != first
    epochs = [e["controller_epoch"] for e in where(events, "controller_elected")]
    assert epochs == [1, 2, 3]
    assert where(events, "node_started", target=f"broker-{first}")[-1]["ts_ms"] == 8000


def test_a_controller_fault_with_no_controller_is_skipped_and_logged() -> None:
    """At 0 ms no broker has registered yet: the fault cannot act, says why, and the run goes on."""
    fault = '\n[[faults]]\nkind = "shutdown"\n"at.ms" = 0\nnode = "controller"\n'
    events, _ = run(parse_scenario(BASE.format(seed=1) + fault, "role.toml"))
    [skipped] = where(events, "fault_skipped")
    assert (skipped["ts_ms"], skipped["kind"], skipped["target"]) == (0, "shutdown", "controller")
    assert skipped["reason"] == "no broker holds /controller"
    assert where(events, "node_stopped") == []


def test_the_controller_role_needs_zookeeper() -> None:
    text = BASE.format(seed=1).replace("brokers = 3", 'brokers = 3\n"metadata.mode" = "static"')
    text = text.replace('"replication.factor" = 3', '"replication.factor" = 1')
    scn = parse_scenario(text + '\n[[faults]]\nkind = "crash"\n"at.ms" = 100\nnode = "controller"\n', "static.toml")
    with pytest.raises(FaultError, match=r"static.toml: \[\[faults\]\] #1: node: 'controller' names ZooKeeper's controller"):
        check_scenario(scn)


def test_controller_is_not_a_node_for_other_faults() -> None:
    scn = parse_scenario(BASE.format(seed=1) + '\n[[faults]]\nkind = "restart"\n"at.ms" = 100\nnode = "controller"\n', "r.toml")
    with pytest.raises(FaultError, match=r"node: no node named 'controller'"):
        check_scenario(scn)


def test_cluster_controller_reads_the_znode() -> None:
    """Before the first election no broker is named; after it, the one every candidate calls
    the active controller."""
    with Cluster(parse_scenario(BASE.format(seed=2), "role.toml")) as cluster:
        assert cluster.controller() is None
        cluster.run(for_ms=1000)
        actives = {cluster.state(f"broker-{b}", "controller")["active_controller"] for b in (1, 2, 3)}
        assert len(actives) == 1
        assert cluster.controller() == f"broker-{actives.pop()}"
