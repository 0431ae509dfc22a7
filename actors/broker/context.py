"""What each part of the replica manager reaches of its broker: the seams between `Broker` and
the rules it dispatches to.

Kafka hands each collaborator of `ReplicaManager` only what it uses: `Partition` gets its
`DelayedOperations` and the `AlterPartitionManager`, a fetcher thread the partitions it follows,
`KafkaApis` the `MetadataCache`. Here the rule modules (`leader`, `read`, `offsets`, `isr`,
`produce`, `follower`, `groups`) take the broker as a protocol of this module that lists only
the configuration, the state and the callback they use. `Broker` satisfies each of them, and no
rule module imports it, so the modules form no import cycle.

Each context has the broker's `config` and a view of its `state` (`BrokerState` satisfies every
view); the only callback is `after_leader_change`, which completes the purgatory and so reaches
back into both the fetch and the produce paths.
"""

from __future__ import annotations

from collections import deque
from typing import Protocol

from actors.broker.config import BrokerConfig
from actors.broker.fetch_session import DelayedFetch, LeaderFetchSession
from actors.broker.partition import Partition
from actors.broker.purgatory import Purgatory
from actors.broker.state import DelayedProduce, FetchSession
from actors.core import Address, Ctx, Inbound, Out
from protocols.metadata import UpdateMetadataPartition
from protocols.types import TopicPartition

__all__ = [
    "DelayedOperations",
    "DelayedProduceContext",
    "DelayedProduceState",
    "FetcherContext",
    "FetcherState",
    "IsrContext",
    "IsrState",
    "LeaderContext",
    "LeaderState",
    "MetadataCache",
    "MetadataContext",
    "ProduceContext",
    "ProduceState",
    "Replicas",
    "ReplicasContext",
]

# ----------------------------------------------------------------------------- views of the state


class Replicas(Protocol):
    """`ReplicaManager.allPartitions`: this broker's partitions."""

    partitions: dict[TopicPartition, Partition]


class FetcherState(Replicas, Protocol):
    """The follower's fetcher threads: one session per leader, and request ids."""

    sessions: dict[int, FetchSession]

    def new_id(self) -> int: ...


class IsrState(Replicas, Protocol):
    """What an ISR change is sent with: the controller heard last, this broker's epoch, ids;
    and the live brokers of the metadata cache, which a new ISR member must be one of (3.3+)."""

    controller_id: int
    controller_epoch: int
    broker_epoch: int
    live_brokers: tuple[int, ...]

    def new_id(self) -> int: ...


class DelayedProduceState(Replicas, Protocol):
    """The produce purgatory, and the client connections muted while their produce waits."""

    delayed_produces: Purgatory[DelayedProduce]
    muted: dict[Address, deque[Inbound]]


class ProduceState(DelayedProduceState, Protocol):
    """The produce path: the purgatory, and the block of producer ids handed out."""

    next_producer_id: int
    producer_id_blocks: int

    def new_id(self) -> int: ...


class LeaderState(IsrState, DelayedProduceState, Protocol):
    """The leader serving fetches: its followers' sessions and both purgatories (completing a
    fetch's partitions completes produces too), and the ISR changes a follower's fetch starts."""

    fetch_sessions: dict[int, LeaderFetchSession]
    delayed_fetches: Purgatory[DelayedFetch]


class MetadataCache(Protocol):
    """`MetadataCache`: the partitions' leaders and the live brokers, from UpdateMetadata."""

    metadata: dict[TopicPartition, UpdateMetadataPartition]
    live_brokers: tuple[int, ...]


# ----------------------------------------------------------------------------- contexts


class DelayedOperations(Protocol):
    """`Partition`'s `DelayedOperations`: after a leader's LEO, HW or ISR changed, move the HW
    (`maybeIncrementLeaderHW`) and complete what waits on the partition (`checkAndCompleteAll`)."""

    def after_leader_change(
        self,
        ctx: Ctx,
        out: Out,
        partition: Partition,
        *,
        leo_changed: bool,
        deferred: list[tuple[TopicPartition, bool]] | None = None,
    ) -> None: ...


class ProduceActions(DelayedOperations, Protocol):
    """`ActionQueue` (2.7+, KAFKA-8334): the purgatory checks of a Produce's appends, run once
    the whole request is handled."""

    def complete_deferred(self, out: Out, deferred: list[tuple[TopicPartition, bool]]) -> None: ...


class ReplicasContext(Protocol):
    """Reading a leader's partitions (`read`, `offsets`)."""

    @property
    def config(self) -> BrokerConfig: ...
    @property
    def state(self) -> Replicas: ...


class FetcherContext(Protocol):
    """The follower's side (`follower`): `ReplicaFetcherThread`."""

    @property
    def config(self) -> BrokerConfig: ...
    @property
    def state(self) -> FetcherState: ...


class IsrContext(DelayedOperations, Protocol):
    """ISR expansion and shrinking (`isr`): `Partition` with its `AlterPartitionManager`."""

    @property
    def config(self) -> BrokerConfig: ...
    @property
    def state(self) -> IsrState: ...


class DelayedProduceContext(Protocol):
    """Completing a produce in the purgatory (`DelayedProduce`)."""

    @property
    def config(self) -> BrokerConfig: ...
    @property
    def state(self) -> DelayedProduceState: ...


class ProduceContext(ProduceActions, Protocol):
    """The produce path and InitProducerId (`produce`): `ReplicaManager.appendRecords`."""

    @property
    def config(self) -> BrokerConfig: ...
    @property
    def state(self) -> ProduceState: ...


class LeaderContext(IsrContext, DelayedProduceContext, ReplicasContext, Protocol):
    """Serving fetches and completing the purgatory (`leader`): `ReplicaManager.fetchMessages`."""

    @property
    def config(self) -> BrokerConfig: ...
    @property
    def state(self) -> LeaderState: ...


class MetadataContext(Protocol):
    """FindCoordinator and the group coordinator's hand-overs (`groups`)."""

    @property
    def config(self) -> BrokerConfig: ...
    @property
    def state(self) -> MetadataCache: ...
