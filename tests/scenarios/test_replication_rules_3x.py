"""Replication rules of the AlterPartition era (2.7+), through the real brokers and controller:
KIP-841's ineligible replicas (3.3), an AlterPartition sent again to the next controller
(`BrokerToControllerRequestThread`), and KAFKA-8334's completion of delayed fetches once a
whole Produce is appended (2.7).

The cluster tests run the controller and ZooKeeper model with latencies of 2 to 4 ms (seed 1);
the scripted tests play the controller with latency exactly 1 ms (tests/harness.py). Every
time below is exact, and the invariants run after every event."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from actors.addresses import broker_address
from actors.core import Address
from protocols.metadata import BrokerRegistered, UpdateMetadataRequest
from protocols.replication import AlterPartitionRequest, ProducePartitionData, ProduceRequest, ProduceResponse
from sim.cluster.harness import Cluster
from sim.cluster.scenario import parse_scenario
from tests.harness import Script, build, leader_and_isr, produce

B1, B2 = broker_address(1), broker_address(2)

STOPPING_FOLLOWER = """
[run]
name = "ineligible-replica"
"duration.ms" = 8000
[kafka]
version = "VERSION"
[network]
"latency.min.ms" = 2
"latency.max.ms" = 4
[cluster]
brokers = 3
[broker]
"min.insync.replicas" = 2
[[topics]]
name = "T"
replicas = [[1, 2, 3]]
"replication.factor" = 3
[[producers]]
topic = "T"
acks = "all"
records = 2000
"interval.ms" = 10
[[faults]]
kind = "shutdown"
node = "broker-1"
"at.ms" = AT
"""


def run_cluster(text: str, viewer: Address = B2) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """The run's events, `viewer`'s view of T-0 at the end, and the end-of-run checks."""
    events: list[dict[str, Any]] = []
    with Cluster(parse_scenario(text, "scenario.toml")) as cluster:
        cluster.kernel.observe(events.append)
        cluster.run_to_end()
        view = cluster.kernel.snapshot(viewer)["partitions"]["T-0"]
        checks = cluster.final_checks()
        assert cluster.kernel.invariant_violations == []
    return events, view, checks


def isr_story(events: list[dict[str, Any]], after_ms: int) -> list[tuple[int, str, Any]]:
    names = ("isr_expanded", "alter_partition_rejected", "isr_change_failed", "replica_removed_from_isr")
    return [
        (e["ts_ms"], e["event"], e.get("isr", e.get("error")))
        for e in events
        if e["event"] in names and e["ts_ms"] > after_ms
    ]


# ------------------------------------------------------------------ KIP-841: ineligible replicas


@pytest.mark.parametrize("version", ["3.2", "3.3", "3.9"])
def test_kip_841_a_stopped_follower_is_not_written_into_the_isr(version: str) -> None:
    """Broker 1 leads T-0 and is stopped at 5012: the controller (broker 2) moves the leadership
    to broker 2 (ISR [2, 3]), broker 1 follows it until it exits at 5035, and its first fetch
    makes broker 2 propose ISR [1, 2, 3]. That AlterPartition waits in the controller's queue
    behind the broker change that sees broker 1 gone (5045).
    - 3.2: the controller writes it (5055). Broker 1 is in the ISR but dead, and nothing takes
      it out before the leader's ISR check finds it lagging 30 s later: the HW stays at 502
      to the end of the run (8000), and the acks=all producer is stuck behind it.
    - 3.3: broker 1 is not live: INELIGIBLE_REPLICA (5045); the leader keeps ISR [2, 3]
      (5049), and the HW follows the producer to 800.
    - 3.9: the same; and from 3.6 a caught-up replica outside the ISR holds the HW back
      (KAFKA-15021) only while it is eligible (`isReplicaIsrEligible`): broker 1 was caught up
      when it exited, but the metadata cache no longer lists it, so it holds nothing (else the
      HW would stay at 502 for `replica.lag.time.max.ms`). The HW follows the producer to 799
      of LEO 800: the last record, appended at 7993, is fetched by broker 3 at 7996, and the
      fetch that would tell the leader so comes after the run's end (8000); KIP-580's jittered
      back-off of the batch retried at 5027 moved the network's draws."""
    events, view, checks = run_cluster(STOPPING_FOLLOWER.replace("VERSION", version).replace("AT", "5012"))
    if version == "3.2":
        assert isr_story(events, 5012) == [(5055, "isr_expanded", [1, 2, 3])]
        assert (view["isr"], view["high_watermark"], view["log_end_offset"]) == ([1, 2, 3], 502, 503)
        assert checks["acked"] == 502
    else:
        assert isr_story(events, 5012) == [
            (5045, "alter_partition_rejected", "INELIGIBLE_REPLICA"),
            (5049, "isr_change_failed", "INELIGIBLE_REPLICA"),
        ]
        [rejected] = [e for e in events if e["event"] == "alter_partition_rejected"]
        assert (rejected["node"], rejected["broker_id"], rejected["partition"]) == ("broker-2", 2, 0)
        high_watermark = 799 if version == "3.9" else 800
        assert (view["isr"], view["high_watermark"], view["log_end_offset"]) == ([2, 3], high_watermark, 800)
        assert checks["acked"] == 799
    assert checks["lost_acked"] == 0


def test_kip_841_a_follower_in_controlled_shutdown_is_ineligible_while_still_alive() -> None:
    """Stopped at 5000, broker 1 is in controlled shutdown (handled at 5010) and still alive
    until 5021 when broker 2's AlterPartition for ISR [1, 2, 3] arrives: `liveBrokerIds` leaves
    out shutting-down brokers, so it is refused at 5017, before broker 1 is gone."""
    events, view, _ = run_cluster(STOPPING_FOLLOWER.replace("VERSION", "3.3").replace("AT", "5000"))
    [handled] = [e for e in events if e["event"] == "controlled_shutdown_handled"]
    [stopped] = [e for e in events if e["event"] == "node_stopped"]
    assert (handled["ts_ms"], stopped["ts_ms"]) == (5010, 5021)
    assert isr_story(events, 5000) == [
        (5017, "alter_partition_rejected", "INELIGIBLE_REPLICA"),
        (5020, "isr_change_failed", "INELIGIBLE_REPLICA"),
    ]
    assert (view["isr"], view["high_watermark"]) == ([2, 3], 800)


def _update_metadata(live: tuple[int, ...]) -> UpdateMetadataRequest:
    return UpdateMetadataRequest(controller_id=0, controller_epoch=1, broker_epoch=-1, partitions=(), live_brokers=live)


@pytest.mark.parametrize(("version", "proposed_ms"), [("3.2", 5), ("3.3", 1018)])
def test_kip_841_a_leader_proposes_only_followers_its_metadata_lists_as_live(version: str, proposed_ms: int) -> None:
    """Broker 2 leads T-0 (ISR [2]) in a ZooKeeper cluster whose UpdateMetadata lists only
    broker 2 as live; broker 1 follows and is caught up from its first fetch (t=4).
    - 3.2: broker 2 proposes ISR [1, 2] at once (t=5).
    - 3.3 (`isReplicaIsrEligible`): not while its metadata cache leaves broker 1 out; the
      UpdateMetadata of t=1000 lists it, and the next fetch (t=1017) proposes it."""
    script = Script(
        [
            (0, B1, BrokerRegistered(10), 1),
            (0, B2, BrokerRegistered(20), 2),
            (1, B2, _update_metadata((2,)), 3),
            (2, B2, leader_and_isr(2, 1, (2,)), 4),
            (2, B1, leader_and_isr(2, 1, (2,)), 5),
            (10, B2, produce(("m0",), acks=1), 6),
            (1000, B2, _update_metadata((1, 2)), 7),
        ]
    )
    kernel = build(version, (1, 2), script, zk_client=Address("harness", "zookeeper"))
    kernel.run(2500)
    proposals = [(t, m.partitions[0].new_isr) for t, _, m in script.received if isinstance(m, AlterPartitionRequest)]
    assert proposals == [(proposed_ms, (1, 2))]
    kernel.shutdown()


# ------------------------------------------------------------------ AlterPartition and a failover

CONTROLLER_CRASH = """
[run]
name = "alter-partition-failover"
"duration.ms" = 12000
[network]
"latency.min.ms" = 2
"latency.max.ms" = 4
[cluster]
brokers = 3
[broker]
"replica.lag.time.max.ms" = 2000
"zookeeper.session.timeout.ms" = 6000
[[topics]]
name = "T"
replicas = [[1, 3]]
"replication.factor" = 2
[[producers]]
topic = "T"
acks = "1"
records = 1200
"interval.ms" = 10
[[faults]]
kind = "pause"
node = "broker-3"
"at.ms" = 1000
"duration.ms" = 4000
[[faults]]
kind = "crash"
node = "broker-2"
"at.ms" = CRASH
"""


@pytest.mark.parametrize(
    ("crash_ms", "controller", "elected_ms", "shrunk_ms"),
    [(3003, 1, 8022, 8073), (3007, 1, 9018, 9057)],
)
def test_an_alter_partition_in_flight_goes_to_the_next_controller_when_its_connection_closes(
    crash_ms: int, controller: int, elected_ms: int, shrunk_ms: int
) -> None:
    """Broker 2 is the controller; broker 1 leads T-0 (replicas [1, 3]). Broker 3 is paused from
    1000, and at 3001 broker 1 asks to shrink the ISR to [1]. Broker 2's process crashes while
    that AlterPartition is unanswered: its connections close, and broker 1 puts the request
    back (`BrokerToControllerRequestThread`). Broker 2's ZooKeeper session expires 6 s later
    and broker 1's controller is elected; its UpdateMetadata names it, and the request goes to
    it at once:
    - crash at 3003: broker 2's ZooKeeper write of ISR [1] is lost with its connection; the
      new controller (8022) writes it;
    - crash at 3007: ZooKeeper applied that write but its answer is lost; the new controller
      (9018) reads ISR [1] and answers the request with it (the same ISR, partition epoch 1).
    Before, the request waited out its 30 s timeout: with the crash at 3003 the ISR shrank at
    33012."""
    events, view, checks = run_cluster(CONTROLLER_CRASH.replace("CRASH", str(crash_ms)), viewer=B1)
    [elected] = [e for e in events if e["event"] == "controller_elected" and e["controller_epoch"] == 2]
    assert (elected["ts_ms"], elected["broker_id"]) == (elected_ms, controller)
    shrunk = [(e["ts_ms"], e["isr"], e["partition_epoch"]) for e in events if e["event"] == "isr_shrunk"]
    assert shrunk == [(shrunk_ms, [1], 1)]
    assert view["isr"] == [1, 3]  # broker 3 caught up again after the shrink
    assert checks["lost_acked"] == 0


# ------------------------------------------------------------------ KAFKA-8334: whole-request completion


@pytest.mark.parametrize(
    ("version", "follower_leos", "leader_hws", "answered_ms"),
    [
        ("2.6", [(1002, 0), (1004, 1)], [(1003, 0), (1005, 1)], 1006),
        ("2.7", [(1002, 0), (1002, 1)], [(1003, 0), (1003, 1)], 1004),
    ],
)
def test_kafka_8334_a_produce_completes_parked_fetches_once_all_its_partitions_are_appended(
    version: str, follower_leos: list[tuple[int, int]], leader_hws: list[tuple[int, int]], answered_ms: int
) -> None:
    """Broker 2 leads T-0 and T-1 (ISR [1, 2]); broker 1's fetch of both waits in the
    purgatory. At 1001 an acks=all Produce appends one record to each.
    - 2.6: T-0's append completes the parked fetch at once (`Partition.appendRecordsToLeader`
      checks the purgatory), before T-1's: the answer carries T-0 only (broker 1 has it at
      1002), and T-1 comes with the next fetch (1004). The HWs move at 1003 and 1005 and the
      Produce is answered at 1006.
    - 2.7: the checks run once the request is handled (`ActionQueue`), so the fetch carries
      both (1002), both HWs move at 1003, and the Produce is answered at 1004."""
    both = leader_and_isr(2, 1, (1, 2))
    both = replace(both, partitions=both.partitions + leader_and_isr(2, 1, (1, 2), partition=1).partitions)
    two = ProduceRequest(-1, 30000, (ProducePartitionData("T", 0, ("a0",)), ProducePartitionData("T", 1, ("b0",))))
    script = Script([(0, B2, both, 1), (0, B1, both, 2), (1000, B2, two, 3)])
    kernel = build(version, (1, 2), script)
    events: list[dict[str, Any]] = []
    kernel.observe(events.append)
    kernel.run(1200)
    moved = [e for e in events if e["event"] == "replica_offsets_changed" and 1000 <= e["ts_ms"] < 1100]
    assert [(e["ts_ms"], e["partition"]) for e in moved if e["node"] == "broker-1"] == follower_leos
    assert [(e["ts_ms"], e["partition"]) for e in moved if e["node"] == "broker-2" and e["high_watermark"] == 1] == leader_hws
    [(at, answer)] = [(t, m) for t, _, m in script.received if isinstance(m, ProduceResponse)]
    assert (at, [(p.partition, p.error_code.name, p.base_offset) for p in answer.partitions]) == (
        answered_ms, [(0, "NONE", 0), (1, "NONE", 0)]
    )
    kernel.shutdown()
