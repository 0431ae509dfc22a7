"""The controller end to end (`KafkaController`, the canonical scenarios): S10, S11 and S7 through the
ZooKeeper model, brokers and producers, each with the invariants checked after every event.

Each cluster starts from a history: znodes (a controller epoch, partition states) and, for S7,
broker disks. Which broker wins an election depends on network latencies, so each test names the
seed that gives the scenario's cast and asserts that it does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from actors.controller import zkdata as zk
from protocols.types import TopicPartition
from sim.cluster.harness import Cluster
from sim.cluster.scenario import parse_scenario
from tests.harness import seeded_disk

T0, T1 = TopicPartition("T", 0), TopicPartition("T", 1)


def _cluster(text: str, seed: int, znodes: tuple[tuple[str, str, int], ...], **kw: Any) -> tuple[Cluster, list[dict]]:
    cluster = Cluster(parse_scenario(text, "test", [f"run.seed={seed}"]), znodes=znodes, **kw)
    events: list[dict] = []
    cluster.kernel.observe(events.append)
    return cluster, events


def _where(events: list[dict], name: str, **match: Any) -> list[dict]:
    return [e for e in events if e["event"] == name and all(e.get(k) == v for k, v in match.items())]


def _znode(cluster: Cluster, path: str) -> dict[str, Any]:
    return cluster.state("zookeeper", "zookeeper")["znodes"][path]


def _partition(cluster: Cluster, broker: int, tp: str = "T-0") -> dict[str, Any]:
    return cluster.state(f"broker-{broker}", "broker")["partitions"][tp]


# ------------------------------------------------------------------------------------- S10

S10 = """
[kafka]
version = "VERSION"
[run]
"duration.ms" = 320000
[cluster]
brokers = 3
[[topics]]
name = "T"
replicas = [[1, 2, 3]]
"replication.factor" = 3
[[producers]]
topic = "T"
acks = "all"
records = 300
"interval.ms" = 100
"start.ms" = 1000
"""
S10_ZNODES = (
    (zk.CONTROLLER_EPOCH, "6", 6),  # the next controller is elected with epoch 7
    (zk.state_path(T0), zk.encode_state(zk.LeaderIsr(1, 4, (1, 2, 3), 6, 0)), 3),
)


def _s10(version: str) -> None:
    cluster, events = _cluster(S10.replace("VERSION", version), 1, S10_ZNODES)
    with cluster:
        cluster.run(until_ms=5000)
        [elected] = _where(events, "controller_elected")
        # Which broker wins the first election is a race of the start-up; S10 needs only that
        # the controller is not broker 1, the leader that hangs.
        assert elected["broker_id"] != 1 and elected["controller_epoch"] == 7
        assert (_partition(cluster, 1)["role"], _partition(cluster, 1)["leader_epoch"]) == ("leader", 4)
        old_epoch = cluster.state("broker-1", "controller")["broker_epoch"]

        cluster.pause("broker-1", 25000)  # 1. B1 hangs
        cluster.run_to_end()

        # 1-2. Its session expires; the offline election picks 2, the first live ISR member in
        # assignment order; ISR {2,3}, LE 5, written under controller epoch 7.
        [expired] = _where(events, "zk_session_expired")
        [change] = _where(events, "broker_change", dead=[1])
        [offline] = _where(events, "leader_elected", election="offline")
        assert expired["ephemerals"] == ["/brokers/ids/1"]
        assert offline["ts_ms"] >= change["ts_ms"] >= expired["ts_ms"]
        assert {k: offline[k] for k in ("leader", "leader_epoch", "isr", "partition_epoch", "controller_epoch", "unclean")} == {
            "leader": 2, "leader_epoch": 5, "isr": [2, 3], "partition_epoch": 4, "controller_epoch": 7, "unclean": False,
        }
        # 3. LeaderAndIsr(CE 7, LE 5) to 2 and 3 and UpdateMetadata to the live brokers at the
        # same instant; what was meant for broker 1 (StopReplica, its LeaderAndIsr) is dropped.
        at = offline["ts_ms"]
        sent = {(e["request"], e["broker_id"]) for e in _where(events, "controller_request_sent") if e["ts_ms"] == at}
        dropped = {(e["request"], e["broker_id"]) for e in _where(events, "controller_request_dropped") if e["ts_ms"] == at}
        assert sent == {("LeaderAndIsr", 2), ("LeaderAndIsr", 3), ("UpdateMetadata", 2), ("UpdateMetadata", 3)}
        assert dropped == {("LeaderAndIsr", 1), ("StopReplica", 1)}
        # 4. B2 leads at LE 5 from its LEO; B3 follows it.
        [b2] = _where(events, "became_leader", node="broker-2", leader_epoch=5)
        assert (4, 0) in [tuple(e) for e in _partition(cluster, 3)["epochs"]]
        assert [tuple(e) for e in _partition(cluster, 2)["epochs"]][:2] == [(4, 0), (5, b2["log_end_offset"])]
        # 5. B1 wakes, registers with a new broker epoch, follows at LE 5, truncates by epoch,
        # catches up and rejoins the ISR; the LE stays 5.
        registered = _where(events, "broker_registered", broker_id=1)
        assert registered[-1]["broker_epoch"] > old_epoch
        [follow] = _where(events, "became_follower", node="broker-1", leader_epoch=5)
        assert follow["leader"] == 2
        [rejoined] = _where(events, "isr_expanded", isr=[1, 2, 3])
        assert (rejoined["leader_epoch"], rejoined["partition_epoch"]) == (5, 5)
        # 6. The auto rebalance moves the leadership back to preferred replica 1 within 300 s: LE 6.
        [preferred] = _where(events, "leader_elected", election="preferred")
        assert (preferred["leader"], preferred["leader_epoch"]) == (1, 6)
        assert preferred["ts_ms"] - rejoined["ts_ms"] <= 300_000
        state = json.loads(_znode(cluster, zk.state_path(T0))["data"])
        assert (state["leader"], state["leader_epoch"], state["controller_epoch"]) == (1, 6, 7)
        checks = cluster.final_checks()
        assert (checks["lost_acked"], checks["diverged_replicas"]) == (0, [])
        assert cluster.invariants.violations == []


def test_s10_broker_failure_with_alter_partition() -> None:
    _s10("3.9")


def test_s10_broker_failure_before_2_7_the_leader_writes_the_isr_to_zookeeper() -> None:
    """Before 2.7 the rejoin is the leader's own conditional write of the state znode plus an
    /isr_change_notification the controller reads (and deletes)."""
    _s10("2.4")


# ------------------------------------------------------------------------------------- S11

S11 = """
[run]
"duration.ms" = 40000
[cluster]
brokers = 3
[[topics]]
name = "T"
partitions = 2
replicas = [[1, 2, 3], [2, 3, 1]]
"replication.factor" = 3
"""
S11_ZNODES = (
    (zk.CONTROLLER_EPOCH, "6", 5),  # B1 wins epoch 7, leaving /controller_epoch at zkVersion 6
    (zk.state_path(T0), zk.encode_state(zk.LeaderIsr(1, 4, (1, 2, 3), 6, 0)), 3),
    # T-1 is led by 3, not by its preferred replica 2: B1's stale view still holds this.
    (zk.state_path(T1), zk.encode_state(zk.LeaderIsr(3, 2, (3, 2, 1), 6, 0)), 2),
)


def _s11(version: str | None = None) -> tuple[Cluster, list[dict], Callable[[], None]]:
    text = S11 if version is None else S11.replace("[run]", f'[kafka]\nversion = "{version}"\n[run]\ninvariants = "report"')
    cluster, events = _cluster(text, 20, S11_ZNODES)

    def run_until_paused() -> None:
        # B1's failover has sent UpdateMetadata to B3 and queued LeaderAndIsr behind it (one
        # request in flight per broker): it pauses now, for 25 s.
        cluster.run(until=lambda: cluster.state("broker-1", "controller").get("queued_requests", {}).get(3, 0) >= 2, until_ms=1000)
        cluster.pause("broker-1", 25000)

    return cluster, events, run_until_paused


def test_s11_controller_failover_and_stale_controller_fencing() -> None:
    cluster, events, run_until_paused = _s11()
    with cluster:
        run_until_paused()
        [first] = _where(events, "controller_elected")
        assert (first["broker_id"], first["controller_epoch"], first["controller_epoch_zk_version"]) == (1, 7, 6)
        paused_at = cluster.now_ms
        old_epoch = cluster.state("broker-1", "controller")["broker_epoch"]
        cluster.run_to_end()

        # 1. /controller vanishes with B1's session, about 18 s later.
        [expired] = _where(events, "zk_session_expired")
        assert expired["ephemerals"] == ["/brokers/ids/1", zk.CONTROLLER]
        assert abs(expired["ts_ms"] - paused_at - 18000) < 100  # from its last ping, just before
        # 2. B2 wins epoch 8 with the multi (the set expected zkVersion 6); B3 gets NODEEXISTS.
        second = _where(events, "controller_elected")[1]
        assert (second["broker_id"], second["controller_epoch"], second["controller_epoch_zk_version"]) == (2, 8, 7)
        lost = [e for e in _where(events, "controller_election_lost", broker_id=3) if e["ts_ms"] > expired["ts_ms"]]
        assert [e["error"] for e in lost] == ["NODEEXISTS"]
        # 3. B2 sends with epoch 8 and bumps the leader epoch of B1's partition.
        bumped = [e for e in _where(events, "leader_elected", topic="T", partition=0) if e["controller_epoch"] == 8]
        assert bumped and bumped[0]["leader"] == 2 and bumped[0]["leader_epoch"] > 4
        # 4. B1 wakes and delivers its queued LeaderAndIsr(CE 7): B2 and B3 reject it.
        rejected = _where(events, "controller_request_rejected", request="LeaderAndIsr", controller_epoch=7)
        assert sorted(e["node"] for e in rejected) == ["broker-2", "broker-3"]
        assert {e["error"] for e in rejected} == {"STALE_CONTROLLER_EPOCH"}
        assert all(e["ts_ms"] >= paused_at + 25000 for e in rejected)
        # 5. Its next write fails the CheckOp(v6): BADVERSION, ControllerMovedException. It
        # resigns, registers with a new broker epoch, and B2 handles it as a new broker.
        [moved] = _where(events, "controller_moved")
        [resigned] = _where(events, "controller_resigned")
        assert (moved["broker_id"], moved["controller_epoch"], moved["error"]) == (1, 7, "BADVERSION")
        assert (resigned["broker_id"], resigned["reason"]) == (1, "controller moved")
        registered = _where(events, "broker_registered", broker_id=1)[-1]
        assert registered["broker_epoch"] > old_epoch and registered["ts_ms"] > moved["ts_ms"]
        [change] = _where(events, "broker_change", new=[1])
        assert change["controller_epoch"] == 8 and change["ts_ms"] > registered["ts_ms"]
        assert _znode(cluster, zk.CONTROLLER_EPOCH)["data"] == "8"
        assert cluster.state("broker-1", "controller")["state"] == "standby"
        assert _partition(cluster, 1)["role"] == "follower"
        assert cluster.invariants.violations == []


def test_s11_before_2_1_the_stale_controller_still_writes() -> None:
    """Before 2.1 (KAFKA-6082) the controller's ZooKeeper writes carry no check of the
    controller epoch znode: when B1 wakes after losing its place, its write lands, a partition
    state with controller epoch 7 under controller 8, and no ControllerMovedException stops
    it. The invariant that a stale controller's writes are fenced breaks, as Kafka 2.0 broke it:
    a finding of that version's known bug, not a violation."""
    cluster, events, run_until_paused = _s11("2.0")
    with cluster:
        run_until_paused()
        cluster.run_to_end()
        violations = [v["invariant"] for v in cluster.kernel.invariant_violations]
        findings = [(f["invariant"], f["label"]) for f in cluster.summary()["known_bug_findings"]]
    assert not _where(events, "controller_moved")
    assert "fenced_controller_writes" not in violations
    assert ("fenced_controller_writes", "kafka_6082") in findings


def test_a_paused_controller_that_resumes_changes_nothing() -> None:
    """After its session expired, nothing the old controller does reaches the cluster's state:
    its requests are rejected and its write fenced. The leaders, leader epochs and controller
    epochs at ZooKeeper and on the other brokers are the same after it wakes as before."""
    cluster, events, run_until_paused = _s11()
    with cluster:
        run_until_paused()
        wake = cluster.now_ms + 25000
        cluster.run(until_ms=wake - 1)

        def cluster_state() -> dict[str, Any]:
            states = {}
            for tp in (T0, T1):
                data = json.loads(_znode(cluster, zk.state_path(tp))["data"])
                states[str(tp)] = (data["leader"], data["leader_epoch"], data["controller_epoch"])
            for b in (2, 3):
                for tp, p in cluster.state(f"broker-{b}", "broker")["partitions"].items():
                    states[f"broker-{b}:{tp}"] = (p["role"], p["leader"], p["leader_epoch"])
                states[f"broker-{b}:controller_epoch"] = cluster.state(f"broker-{b}", "broker")["controller_epoch"]
            states["controller_epoch"] = _znode(cluster, zk.CONTROLLER_EPOCH)["data"]
            return states

        before = cluster_state()
        cluster.run(until_ms=wake + 5000)
        assert cluster_state() == before
        stale = [
            e for e in _where(events, "znode_changed")
            if e["ts_ms"] >= wake and "/state" in e["path"] and json.loads(e["data"])["controller_epoch"] == 7
        ]
        assert stale == []
        # What it had queued for brokers 2 and 3 behind the UpdateMetadata in flight at the
        # pause (its failover's LeaderAndIsr, then UpdateMetadata) leaves when it wakes, and
        # each of the four is rejected by its controller epoch, 7 < 8.
        rejected = [
            (e["node"], e["request"], e["controller_epoch"], e["error"])
            for e in _where(events, "controller_request_rejected")
        ]
        assert sorted(rejected) == [
            (f"broker-{b}", request, 7, "STALE_CONTROLLER_EPOCH")
            for b in (2, 3)
            for request in ("LeaderAndIsr", "UpdateMetadata")
        ]
        assert _where(events, "controller_moved")  # it did try, and was fenced
        assert cluster.invariants.violations == []


# ------------------------------------------------------------------------------------- S7

S7 = """
[run]
"duration.ms" = 30000
[cluster]
brokers = 3
[broker]
"replica.lag.time.max.ms" = 2000
"zookeeper.session.timeout.ms" = 6000
"unclean.leader.election.enable" = UNCLEAN
[[topics]]
name = "T"
replicas = [[1, 2]]
"replication.factor" = 2
[[producers]]  # offsets 5-9, acknowledged by B1 alone
topic = "T"
acks = "all"
"enable.idempotence" = false
records = 5
"start.ms" = 2000
"request.timeout.ms" = 5000
[[producers]]  # three records once B1 is gone
topic = "T"
acks = "all"
"enable.idempotence" = false
records = 3
"start.ms" = 14000
"request.timeout.ms" = 6000
"metadata.max.age.ms" = 1000
[[faults]]  # B2 stops fetching, so B1 drops it from the ISR
kind = "partition"
between = [["broker-1"], ["broker-2"]]
"at.ms" = 1000
"duration.ms" = 5000
[[faults]]
kind = "crash"
node = "broker-1"
"at.ms" = 6000
"restart.after.ms" = 10000
"""
S7_ZNODES = (
    (zk.CONTROLLER_EPOCH, "4", 4),
    (zk.state_path(T0), zk.encode_state(zk.LeaderIsr(1, 5, (1, 2), 4, 0)), 7),
)


def _s7(unclean: bool) -> tuple[Cluster, list[dict]]:
    """B1 leads at LE 5; both replicas hold offsets 0-4 of epoch 5; the controller is broker 3."""
    m = [(f"m{i}", 5) for i in range(5)]
    disks = {f"broker-{b}": seeded_disk(m, high_watermark=5) for b in (1, 2)}
    text = S7.replace("UNCLEAN", "true" if unclean else "false")
    cluster, events = _cluster(text, 3, S7_ZNODES, disks=disks)
    cluster.run_to_end()
    [elected] = _where(events, "controller_elected")
    assert elected["broker_id"] == 3
    [shrunk] = _where(events, "isr_shrunk")
    assert (shrunk["isr"], shrunk["leader_epoch"]) == ([1], 5)  # a leader's shrink keeps the LE
    acked = [e["base_offset"] for e in _where(events, "produce_completed", producer="producer-1", error="NONE")]
    assert acked == [5, 6, 7, 8, 9]
    return cluster, events


def test_s7_unclean_election_loses_acknowledged_records_and_reuses_offsets() -> None:
    cluster, events = _s7(unclean=True)
    with cluster:
        # 1. No live ISR member: B2 is elected from outside the ISR, LE 6, ISR {2}; its cache (6, 5).
        [elected] = _where(events, "leader_elected", election="offline")
        assert (elected["leader"], elected["leader_epoch"], elected["isr"], elected["unclean"]) == (2, 6, [2], True)
        # 2. Three records land at offsets 5-7.
        acked = [e["base_offset"] for e in _where(events, "produce_completed", producer="producer-2", error="NONE")]
        assert acked == [5, 6, 7]
        # 3. B1 returns, finds the divergence at (5, 5), truncates to 5 and copies 5-7.
        [truncated] = _where(events, "log_truncated", node="broker-1")
        assert (truncated["from_offset"], truncated["to_offset"], truncated["reason"]) == (10, 5, "diverging_epoch")
        assert [tuple(e) for e in _partition(cluster, 2)["epochs"]] == [(5, 0), (6, 5)]
        values = [v for _, _, v in _partition(cluster, 1)["log"]]
        assert values == [f"m{i}" for i in range(5)] + [f"producer-2:{i}" for i in range(3)]
        checks = cluster.final_checks()
        assert (checks["lost_acked"], checks["reused_offsets"]) == (5, 3)
        # Each lost record where it was acknowledged: producer-1's five, at offsets 5 to 9.
        assert checks["lost_records"] == [
            {"partition": "T-0", "offset": 5 + i, "value": f"producer-1:{i}"} for i in range(5)
        ]


def test_s7_without_unclean_election_the_partition_waits_for_its_isr_and_loses_nothing() -> None:
    cluster, events = _s7(unclean=False)
    with cluster:
        [failed] = _where(events, "leader_election_failed", election="offline")
        # The last replica standing keeps its place in the ISR; the partition has no leader.
        [removed] = _where(events, "replica_removed_from_isr", replica=1)
        assert (removed["leader"], removed["leader_epoch"], removed["isr"]) == (-1, 6, [1])
        leaderless = [e for e in events if e["ts_ms"] > failed["ts_ms"] and e["event"] == "became_leader"]
        restarted = _where(events, "node_started", target="broker-1", incarnation=1)[0]
        assert leaderless and all(e["ts_ms"] > restarted["ts_ms"] for e in leaderless)
        [elected] = _where(events, "leader_elected", election="offline")
        assert (elected["leader"], elected["leader_epoch"], elected["isr"], elected["unclean"]) == (1, 7, [1], False)
        assert _where(events, "log_truncated", node="broker-1") == []
        checks = cluster.final_checks()
        assert (checks["lost_acked"], checks["reused_offsets"], checks["diverged_replicas"]) == (0, 0, [])
        assert cluster.invariants.violations == []


LOST_ALTER_PARTITION_ANSWER = """
[run]
"duration.ms" = 150000
[cluster]
brokers = 3
[[topics]]
name = "T"
partitions = 1
"replication.factor" = 3
replicas = [[1, 2, 3]]
[[producers]]
topic = "T"
records = 1400
"interval.ms" = 100
acks = "1"
[[faults]]
kind = "partition"
between = [["broker-2"], ["broker-1"]]
"at.ms" = 10000
"duration.ms" = 45000
[[faults]]
kind = "drop"
probability = 1.0
src = ["broker-3"]
dst = ["broker-1"]
"at.ms" = 45003
"duration.ms" = 10
"""
"""Broker 1 leads T-0; broker 2 is cut from it from 10 s to 55 s, so at 45 s the leader asks
the controller (broker 3) to shrink the ISR to [1, 3], and the controller's answer is lost."""


def test_an_alter_partition_whose_answer_was_lost_is_sent_again_and_converges() -> None:
    """The controller wrote ISR [1, 3] at partition epoch 1, but the leader never heard. Its
    `AlterPartitionManager` keeps the change and sends it again when the request times out,
    naming the stale partition epoch 0; the controller, already in that state, answers with it
    (`equalsIgnoreZk`, later `equalsAllowStalePartitionEpoch`), and the leader, at epoch 1, can
    then add broker 2 back."""
    cluster, events = _cluster(LOST_ALTER_PARTITION_ANSWER, 1, ())
    with cluster:
        cluster.run_to_end()
        leader = _partition(cluster, 1)
    changes = [(e["event"], e["isr"], e["partition_epoch"]) for e in _where(events, "isr_shrunk") + _where(events, "isr_expanded")]
    assert changes == [("isr_shrunk", [1, 3], 1), ("isr_expanded", [1, 2, 3], 2)]
    [shrunk] = _where(events, "isr_shrunk")
    assert shrunk["ts_ms"] == 45_000 + 30_000 + 8  # sent again when the first request timed out
    assert not _where(events, "alter_partition_rejected") and not _where(events, "isr_change_failed")
    assert (leader["isr"], leader["partition_epoch"]) == ([1, 2, 3], 2)
