"""The controller's pure parts: elections (`PartitionLeaderElectionAlgorithms`), state transitions, ZooKeeper data,
and the fenced-write invariant."""

from __future__ import annotations

import pytest

from actors.controller import zkdata as zk
from actors.controller.election import (
    Elected,
    imbalanced_partitions,
    offline_leader,
    preferred_leader,
    without_replica,
)
from actors.controller.states import IllegalStateChange, PartitionState, ReplicaState
from actors.zookeeper.behavior import ZooKeeper
from protocols.types import TopicPartition
from sim.cluster.invariants import Invariants


def test_offline_election_scans_the_assignment_order_not_the_isr_order() -> None:
    assert offline_leader((3, 1, 2), (1, 2, 3), {1, 2, 3}, unclean=False) == Elected(3, (1, 2, 3))
    assert offline_leader((1, 2, 3), (3, 2, 1), {2, 3}, unclean=False) == Elected(2, (3, 2))


def test_offline_election_outside_the_isr_only_when_unclean() -> None:
    assert offline_leader((1, 2), (1,), {2}, unclean=False) is None
    assert offline_leader((1, 2), (1,), {2}, unclean=True) == Elected(2, (2,), unclean=True)
    assert offline_leader((1, 2), (1,), set(), unclean=True) is None


def test_preferred_election_needs_the_first_replica_live_and_in_the_isr() -> None:
    assert preferred_leader((1, 2, 3), (2, 3, 1), {1, 2, 3}) == Elected(1, (2, 3, 1))
    assert preferred_leader((1, 2, 3), (2, 3), {1, 2, 3}) is None
    assert preferred_leader((1, 2, 3), (1, 2, 3), {2, 3}) is None


def test_removing_a_replica_bumps_the_leader_epoch_and_keeps_the_last_one_standing() -> None:
    current = zk.LeaderIsr(1, 5, (1, 2, 3), 7, 4)
    assert without_replica(current, 2, 8) == zk.LeaderIsr(1, 6, (1, 3), 8, 4)
    assert without_replica(current, 1, 8) == zk.LeaderIsr(-1, 6, (2, 3), 8, 4)
    alone = zk.LeaderIsr(1, 5, (1,), 7, 4)
    assert without_replica(alone, 1, 8) == zk.LeaderIsr(-1, 6, (1,), 8, 4)
    assert without_replica(current, 4, 8) is None


def test_auto_rebalance_acts_above_the_imbalance_percentage() -> None:
    tps = [TopicPartition("T", p) for p in range(10)]
    assignments = {tp: (1, 2) for tp in tps}
    led_by_1 = {tp: zk.LeaderIsr(1, 0, (1, 2), 1, 0) for tp in tps}
    one_moved = {**led_by_1, tps[0]: zk.LeaderIsr(2, 1, (1, 2), 1, 1)}
    two_moved = {**one_moved, tps[1]: zk.LeaderIsr(2, 1, (2,), 1, 1)}
    assert imbalanced_partitions(assignments, led_by_1, {1, 2}, 10) == []
    assert imbalanced_partitions(assignments, one_moved, {1, 2}, 10) == []  # 10% is not above 10%
    # 20%: the partition whose ISR holds broker 1 moves back; the other cannot.
    assert imbalanced_partitions(assignments, two_moved, {1, 2}, 10) == [tps[0]]
    assert imbalanced_partitions(assignments, two_moved, {2}, 10) == []


def test_state_machines_refuse_illegal_transitions() -> None:
    PartitionState.NON_EXISTENT.check(PartitionState.NEW)
    PartitionState.OFFLINE.check(PartitionState.ONLINE)
    with pytest.raises(IllegalStateChange):
        PartitionState.NON_EXISTENT.check(PartitionState.ONLINE)
    ReplicaState.OFFLINE.check(ReplicaState.ONLINE)
    with pytest.raises(IllegalStateChange):
        ReplicaState.NON_EXISTENT.check(ReplicaState.ONLINE)


def test_zookeeper_data_round_trips() -> None:
    state = zk.LeaderIsr(2, 5, (2, 3), 7, 4)
    assert zk.decode_state(zk.encode_state(state), 4) == state
    assert zk.decode_assignment("T", zk.encode_assignment([[1, 2], [2, 1]])) == {
        TopicPartition("T", 0): (1, 2),
        TopicPartition("T", 1): (2, 1),
    }
    tps = [TopicPartition("T", 1), TopicPartition("U", 0)]
    assert zk.decode_isr_change(zk.encode_isr_change(tps)) == tps


def test_a_seeded_zookeeper_holds_the_given_versions_and_parents() -> None:
    keeper = ZooKeeper(initial=(("/controller_epoch", "7", 6), ("/brokers/topics/T", "{}", 0)))
    nodes = keeper.snapshot()["znodes"]
    assert (nodes["/controller_epoch"]["data"], nodes["/controller_epoch"]["version"]) == ("7", 6)
    assert nodes["/brokers"]["children"] == ["topics"]
    assert nodes["/brokers/topics"]["children"] == ["T"]


def _written(path: str, leader: int, leader_epoch: int, controller_epoch: int, op: str = "set_data") -> dict:
    state = zk.encode_state(zk.LeaderIsr(leader, leader_epoch, (leader,), controller_epoch, 0))
    return {"event": "znode_changed", "ts_ms": 1, "node": "zookeeper", "op": op, "path": path, "data": state}


def test_fenced_controller_writes_flags_a_leader_written_under_an_old_epoch() -> None:
    check = Invariants()
    path = zk.state_path(TopicPartition("T", 0))
    epoch = {"event": "znode_changed", "ts_ms": 1, "node": "zookeeper", "op": "set_data", "path": zk.CONTROLLER_EPOCH}
    assert check({**epoch, "data": "7"}) == []
    assert check(_written(path, 1, 0, 7, op="create")) == []
    assert check(_written(path, 1, 0, 7)) == []  # no leadership change
    assert check({**epoch, "data": "8"}) == []
    [violation] = check(_written(path, 2, 1, 7))
    assert violation.invariant == "fenced_controller_writes"
    assert check(_written(path, 3, 2, 8)) == []


def test_before_2_1_a_stale_controllers_write_is_kafka_6082_not_a_violation() -> None:
    check = Invariants(stale_controller_writes=True)
    path = zk.state_path(TopicPartition("T", 0))
    epoch = {"event": "znode_changed", "ts_ms": 1, "node": "zookeeper", "op": "set_data", "path": zk.CONTROLLER_EPOCH}
    check({**epoch, "data": "7"})
    check(_written(path, 1, 0, 7, op="create"))
    check({**epoch, "data": "8"})
    assert check(_written(path, 2, 1, 7)) == []
    assert check.findings == [
        {
            "invariant": "fenced_controller_writes",
            "label": "kafka_6082",
            "ts_ms": 1,
            "node": "zookeeper",
            "detail": "/brokers/topics/T/partitions/0/state: leader 2 epoch 1 written with controller epoch 7, current 8",
        }
    ]
