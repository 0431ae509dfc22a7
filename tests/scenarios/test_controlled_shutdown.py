"""A broker stopped by its operator (`KafkaServer.shutdown`): with `controlled.shutdown.enable`
it first asks the controller to move its leaderships (`KafkaController.doControlledShutdown`),
retrying while some cannot move, then closes its ZooKeeper session and exits. Without it, the
leaderships move only once its registration is gone. Either way the registration goes when the
process exits, not a session timeout later as after a crash."""

from __future__ import annotations

from typing import Any

from actors.controller.election import Elected, controlled_shutdown_leader
from sim.cluster.harness import Cluster
from sim.cluster.scenario import parse_scenario

SCENARIO = """
[run]
name = "controlled-shutdown"
"duration.ms" = 20000
[network]
"latency.min.ms" = 2
"latency.max.ms" = 4
[cluster]
brokers = 3
[broker]
"min.insync.replicas" = 2
BROKER
[[topics]]
name = "T"
partitions = 3
"replication.factor" = 3
TOPICS
[[producers]]
topic = "T"
acks = "all"
records = 1000
"interval.ms" = 10
[[faults]]
kind = "shutdown"
node = "broker-1"
"at.ms" = 5000
"restart.after.ms" = 3000
"""


def run(broker: str = "", topics: str = "") -> tuple[list[dict[str, Any]], dict[str, Any]]:
    events: list[dict[str, Any]] = []
    text = SCENARIO.replace("BROKER", broker).replace("TOPICS", topics)
    with Cluster(parse_scenario(text, "shutdown.toml")) as cluster:
        cluster.kernel.observe(events.append)
        cluster.run_to_end()
        checks = cluster.final_checks()
        assert cluster.kernel.invariant_violations == []
    return events, checks


def where(events: list[dict[str, Any]], name: str, **match: Any) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == name and all(e.get(k) == v for k, v in match.items())]


def test_the_controlled_shutdown_election_skips_shutting_down_brokers_in_assignment_order() -> None:
    """The first assigned replica that is live, in the ISR and not shutting down; the ISR
    loses every shutting-down broker."""
    assert controlled_shutdown_leader((1, 2, 3), (1, 2, 3), {1, 2, 3}, {1}) == Elected(2, (2, 3))
    assert controlled_shutdown_leader((1, 3, 2), (2, 1, 3), {1, 2, 3}, {1}) == Elected(3, (2, 3))
    assert controlled_shutdown_leader((1, 2, 3), (1, 3), {1, 2, 3}, {1, 3}) is None  # 2 is not in the ISR
    assert controlled_shutdown_leader((1, 2, 3), (1, 2), {1, 3}, {1}) is None  # 2 is not live
    assert controlled_shutdown_leader((1,), (1,), {1}, {1}) is None


def test_a_controlled_shutdown_moves_the_leaderships_before_the_broker_exits() -> None:
    """Broker 1 leads T-0 (replicas [1, 2, 3]). At 5000 its operator stops it: the controller
    (broker 2) elects broker 2 for T-0 by the controlled-shutdown rule (leader epoch 1, ISR
    without broker 1), takes broker 1 out of the ISRs of T-1 and T-2, and answers with nothing
    left to move. Broker 1 checkpoints, closes its session and exits; the controller sees its
    registration go 9 ms later, not a session timeout later. It comes back 3 s after it
    exited. Every acknowledged record is kept."""
    events, checks = run()
    [started] = where(events, "broker_shutdown_started")
    assert (started["ts_ms"], started["node"], started["controlled"]) == (5000, "broker-1", True)
    [moved] = where(events, "leader_elected", election="controlled_shutdown")
    assert (moved["ts_ms"], moved["partition"], moved["leader"], moved["leader_epoch"], moved["isr"]) == (5009, 0, 2, 1, [2, 3])
    removed = where(events, "replica_removed_from_isr", replica=1)
    assert [(e["ts_ms"], e["partition"], e["isr"]) for e in removed[:2]] == [(5016, 1, [2, 3]), (5016, 2, [3, 2])]
    [handled] = where(events, "controlled_shutdown_handled")
    assert (handled["ts_ms"], handled["node"], handled["moved"], handled["remaining"]) == (5016, "broker-2", 1, [])
    [completed] = where(events, "controlled_shutdown_completed")
    assert (completed["ts_ms"], completed["succeeded"], completed["attempts"]) == (5018, True, 1)
    [stopped] = where(events, "node_stopped")
    assert (stopped["ts_ms"], stopped["target"]) == (5028, "broker-1")
    assert not where(events, "node_crashed")
    [gone] = where(events, "broker_change", dead=[1])
    assert gone["ts_ms"] == 5037
    [back] = where(events, "node_started", target="broker-1", incarnation=1)
    assert back["ts_ms"] == 5028 + 3000
    assert (checks["acked"], checks["lost_acked"], checks["log_duplicates"]) == (1000, 0, 0)


def test_a_partition_that_cannot_move_makes_the_broker_retry_then_stop_anyway() -> None:
    """U has one replica, on broker 1: no other replica can lead it, so each answer lists it
    as remaining. The broker tries `controlled.shutdown.max.retries` (3) times,
    `controlled.shutdown.retry.backoff.ms` (5000) apart, then shuts down anyway; U goes
    offline once the registration is gone."""
    events, _ = run(topics='[[topics]]\nname = "U"\nreplicas = [[1]]\n')
    failed = where(events, "controlled_shutdown_attempt_failed")
    assert [(e["attempt"], e["error"], e["remaining"]) for e in failed] == [(1, "NONE", ["U-0"]), (2, "NONE", ["U-0"]), (3, "NONE", ["U-0"])]
    # Each answer comes a round trip (and the controller's ZooKeeper reads) after its request,
    # which leaves 5000 ms after the previous answer.
    assert [e["ts_ms"] for e in failed] == [5018, 10024, 15029]
    [completed] = where(events, "controlled_shutdown_completed")
    assert (completed["succeeded"], completed["attempts"]) == (False, 3)
    [stopped] = where(events, "node_stopped")
    assert stopped["ts_ms"] == 15038
    # T-0 moved at the first attempt; U-0 could not, and goes offline when broker 1 is gone.
    assert [e["partition"] for e in where(events, "leader_elected", election="controlled_shutdown")] == [0]
    [offline] = where(events, "leader_election_failed", topic="U", election="offline")
    assert offline["ts_ms"] == 15047


def test_without_controlled_shutdown_the_leaderships_move_when_the_registration_goes() -> None:
    """`controlled.shutdown.enable = false`: the broker exits at once, its closed session
    removes its registration, and the controller's offline election moves T-0."""
    events, checks = run(broker='"controlled.shutdown.enable" = false')
    assert not where(events, "controlled_shutdown_handled")
    [stopped] = where(events, "node_stopped")
    [moved] = where(events, "leader_elected", partition=0, election="offline")
    assert stopped["ts_ms"] < moved["ts_ms"] < stopped["ts_ms"] + 100
    assert (moved["leader"], moved["leader_epoch"]) == (2, 1)
    assert checks["lost_acked"] == 0


def test_a_rolling_restart_of_the_brokers_stops_each_after_moving_its_leaderships() -> None:
    """An operator's rolling restart: each broker in turn is shut down (a controlled shutdown,
    then its exit), restarted 2 s after it exited, and the next one is stopped 5 s after that.
    Every broker's leaderships move before it goes, so the idempotent acks=all producer loses
    nothing and writes nothing twice."""
    text = SCENARIO.replace("BROKER", "").replace("TOPICS", "")
    text = text[: text.index("[[faults]]")] + (
        '[[faults]]\nkind = "rolling_restart"\nnodes = ["broker-1", "broker-2", "broker-3"]\n'
        '"at.ms" = 3000\n"interval.ms" = 5000\n"down.ms" = 2000\n'
    )
    events: list[dict[str, Any]] = []
    with Cluster(parse_scenario(text, "rolling.toml")) as cluster:
        cluster.kernel.observe(events.append)
        cluster.run_to_end()
        checks = cluster.final_checks()
        assert cluster.kernel.invariant_violations == []
    stops = [(e["ts_ms"], e["target"]) for e in where(events, "node_stopped")]
    starts = [(e["ts_ms"], e["target"]) for e in where(events, "node_started") if e["incarnation"] == 1]
    signals = [(e["ts_ms"], e["target"]) for e in where(events, "application_called", action="shutdown")]
    assert [n for _, n in stops] == [n for _, n in starts] == ["broker-1", "broker-2", "broker-3"]
    assert signals[0] == (3000, "broker-1/controller")
    for (stopped, node), (started, again) in zip(stops, starts, strict=True):
        assert (node, started) == (again, stopped + 2000)
    assert [t for t, _ in signals[1:]] == [started + 5000 for started, _ in starts[:2]]
    moved = where(events, "leader_elected", election="controlled_shutdown")
    for (signalled, _), (stopped, node) in zip(signals, stops, strict=True):
        during = [e["leader"] for e in moved if signalled <= e["ts_ms"] <= stopped]
        assert during and int(node.split("-")[1]) not in during, (node, during)
    assert [e["succeeded"] for e in where(events, "controlled_shutdown_completed")] == [True, True, True]
    assert (checks["acked"], checks["lost_acked"], checks["log_duplicates"]) == (1000, 0, 0)
