"""The controller's partition and replica state machines: the states and their legal
transitions (`PartitionStateMachine.scala`, `ReplicaStateMachine.scala`, `validPreviousStates`).

The controller moves a partition or a replica only along these edges; `check` raises on any
other, as Kafka logs an illegal state change and refuses it. Topic deletion and reassignment
are not modelled, so the deletion states are here for completeness and reached by nothing.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["IllegalStateChange", "PartitionState", "ReplicaState"]


class IllegalStateChange(RuntimeError):
    pass


class PartitionState(Enum):
    """- NON_EXISTENT: no such partition. Transition: NEW when its topic is created.
    - NEW: assigned replicas, no leader yet. Transition: ONLINE once elected; OFFLINE.
    - ONLINE: a live leader. Transition: OFFLINE when the leader dies; ONLINE on a new election.
    - OFFLINE: the leader died. Transition: ONLINE once a leader is elected."""

    NON_EXISTENT = "NonExistentPartition"
    NEW = "NewPartition"
    ONLINE = "OnlinePartition"
    OFFLINE = "OfflinePartition"

    def check(self, to: PartitionState) -> None:
        if self not in _PARTITION_FROM[to]:
            msg = f"illegal partition state change {self.value} -> {to.value}"
            raise IllegalStateChange(msg)


_PARTITION_FROM: dict[PartitionState, frozenset[PartitionState]] = {
    PartitionState.NEW: frozenset({PartitionState.NON_EXISTENT}),
    PartitionState.ONLINE: frozenset({PartitionState.NEW, PartitionState.ONLINE, PartitionState.OFFLINE}),
    PartitionState.OFFLINE: frozenset({PartitionState.NEW, PartitionState.ONLINE, PartitionState.OFFLINE}),
    PartitionState.NON_EXISTENT: frozenset({PartitionState.OFFLINE}),
}


class ReplicaState(Enum):
    """- NEW: created with its partition. Transition: ONLINE.
    - ONLINE: on a live broker, told its leader. Transition: OFFLINE when the broker dies.
    - OFFLINE: its broker is down; removed from the ISR. Transition: ONLINE when it returns."""

    NON_EXISTENT = "NonExistentReplica"
    NEW = "NewReplica"
    ONLINE = "OnlineReplica"
    OFFLINE = "OfflineReplica"
    DELETION_STARTED = "ReplicaDeletionStarted"
    DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    DELETION_INELIGIBLE = "ReplicaDeletionIneligible"

    def check(self, to: ReplicaState) -> None:
        if self not in _REPLICA_FROM[to]:
            msg = f"illegal replica state change {self.value} -> {to.value}"
            raise IllegalStateChange(msg)


_R = ReplicaState
_REPLICA_FROM: dict[ReplicaState, frozenset[ReplicaState]] = {
    _R.NEW: frozenset({_R.NON_EXISTENT}),
    _R.ONLINE: frozenset({_R.NEW, _R.ONLINE, _R.OFFLINE, _R.DELETION_INELIGIBLE}),
    _R.OFFLINE: frozenset({_R.NEW, _R.ONLINE, _R.OFFLINE, _R.DELETION_INELIGIBLE}),
    _R.DELETION_STARTED: frozenset({_R.OFFLINE}),
    _R.DELETION_SUCCESSFUL: frozenset({_R.DELETION_STARTED}),
    _R.DELETION_INELIGIBLE: frozenset({_R.OFFLINE, _R.DELETION_STARTED}),
    _R.NON_EXISTENT: frozenset({_R.DELETION_SUCCESSFUL}),
}
