"""What the elected controller's parts share: its cache of the cluster (`ControllerContext`)
and where the running step's commands go."""

from __future__ import annotations

from dataclasses import dataclass, field

from actors.controller.states import PartitionState, ReplicaState
from actors.controller.zkdata import LeaderIsr
from actors.core import Out
from protocols.types import TopicPartition

__all__ = ["ControllerContext", "StepOutput"]


@dataclass(slots=True)
class ControllerContext:
    """The controller's cache of the cluster (`ControllerContext`)."""

    epoch: int
    epoch_zk_version: int
    live_brokers: dict[int, int] = field(default_factory=dict)
    """Broker id -> broker epoch (the czxid of its registration)."""
    assignments: dict[TopicPartition, tuple[int, ...]] = field(default_factory=dict)
    leadership: dict[TopicPartition, LeaderIsr] = field(default_factory=dict)
    partition_states: dict[TopicPartition, PartitionState] = field(default_factory=dict)
    replica_states: dict[tuple[TopicPartition, int], ReplicaState] = field(default_factory=dict)
    shutting_down: set[int] = field(default_factory=set)
    """Brokers in a controlled shutdown (`shuttingDownBrokerIds`): still registered, but no
    candidate in any election, until they are gone or register again."""

    def electable(self) -> dict[int, int]:
        """`liveBrokerIds`: the live brokers that are not shutting down."""
        return {b: e for b, e in self.live_brokers.items() if b not in self.shutting_down}


@dataclass(slots=True)
class StepOutput:
    """The command list of the handler call running the current step. A step outlives handler
    calls (it waits for ZooKeeper), so the actor points `out` at each new list before it resumes
    the step, and the step's parts look `out` up here at each use rather than keep one."""

    out: Out = field(default_factory=Out)
