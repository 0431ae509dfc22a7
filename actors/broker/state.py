"""The broker's mutable state: partitions, purgatory entries and fetch sessions.

The state of `ReplicaManager` and of its fetcher threads (`AbstractFetcherThread`'s
`PartitionFetchState`). A leader's fetch sessions and parked fetches are in `fetch_session`.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from enum import Enum

from actors.broker.fetch_session import DelayedFetch, LeaderFetchSession
from actors.broker.partition import Partition
from actors.broker.partition_log import PartitionLog
from actors.broker.purgatory import Purgatory
from actors.core import Address, Inbound
from protocols.metadata import UpdateMetadataPartition
from protocols.replication import FetchPartition, ProducePartitionResponse
from protocols.types import TopicPartition

__all__ = [
    "BrokerState",
    "DelayedProduce",
    "FetchPhase",
    "FetchSession",
    "FollowedPartition",
    "PendingProduce",
]


@dataclass(frozen=True, slots=True)
class PendingProduce:
    required_offset: int
    base_offset: int


@dataclass(slots=True)
class DelayedProduce:
    """An acks=all produce waiting for HW >= required offset (`DelayedProduce.scala`)."""

    id: int
    inbound: Inbound
    pending: dict[TopicPartition, PendingProduce]
    done: dict[TopicPartition, ProducePartitionResponse]
    order: tuple[TopicPartition, ...]
    expires_ms: int


class FetchPhase(Enum):
    """Where a followed partition is in the fetcher (`PartitionFetchState`).

    - TRUNCATING: waiting for OffsetsForLeaderEpoch (0.11 to 2.7). Transition: FETCHING once
      truncation is complete.
    - FETCHING: included in every Fetch to the leader. Transition: OUT_OF_RANGE on
      OFFSET_OUT_OF_RANGE; TRUNCATING never (2.8+ truncates on the fetch response).
    - OUT_OF_RANGE: asking the leader's end offset (ListOffsets latest). Transition: FETCHING
      after truncating to it if this replica is ahead; else OUT_OF_RANGE_START.
    - OUT_OF_RANGE_START: asking the leader's log start offset (ListOffsets earliest).
      Transition: FETCHING, after truncating fully to start there if this replica ends before it.
    """

    TRUNCATING = "truncating"
    FETCHING = "fetching"
    OUT_OF_RANGE = "out_of_range"
    OUT_OF_RANGE_START = "out_of_range_start"


@dataclass(slots=True)
class FollowedPartition:
    tp: TopicPartition
    leader_epoch: int
    phase: FetchPhase
    log: PartitionLog
    """The follower's log of it (a partition keeps its log object for the broker's life)."""
    backoff_until_ms: int = 0
    last_fetch: FetchPartition | None = None
    """What the last Fetch asked for it, sent again while its offset and epoch stay (the leader
    epoch and the settings it carries are fixed while it is followed)."""


@dataclass(slots=True)
class FetchSession:
    """One fetcher per source broker: one request in flight, carrying all its partitions."""

    leader: int
    partitions: dict[TopicPartition, FollowedPartition] = field(default_factory=dict)
    """The partitions followed from this leader, in (topic, partition) order."""
    in_flight: int | None = None
    """The correlation id of the request in flight."""
    sent: dict[TopicPartition, tuple[int, int]] = field(default_factory=dict)
    """For each partition in that request: (leader epoch, log end offset) when it was sent. An
    answer counts only if both still hold (`processFetchRequest` checks the same)."""
    session_epoch: int = 0
    """KIP-227's `FetchSessionHandler`: 0 asks the leader for a new session and a full answer;
    each answered Fetch moves it on, and a lost one starts again from 0."""
    session_partitions: dict[TopicPartition, FetchPartition] = field(default_factory=dict)
    """What the leader's session holds after the last Fetch sent (`sessionPartitions`): the next
    incremental Fetch lists only what differs from it."""
    steady: bool = False
    """The last request built was a Fetch of every partition (each fetching, none backing off),
    and no partition joined or left since: an incremental Fetch then need only look again at
    the partitions in `touched`, as every other one asks what it asked last time."""
    touched: set[TopicPartition] = field(default_factory=set)
    """Partitions whose answer was applied since the last request was built (their offset,
    phase or back-off may have changed)."""


@dataclass(slots=True)
class BrokerState:
    partitions: dict[TopicPartition, Partition] = field(default_factory=dict)
    controller_epoch: int = -1
    controller_id: int = -1
    """The controller that sent the newest accepted request; AlterPartition goes there."""
    broker_epoch: int = -1
    """The czxid of this broker's registration, told by its ZooKeeper client (KIP-380)."""
    unprocessed: list[Inbound] = field(default_factory=list)
    """The controller's requests that arrived before this broker first registered (with
    ZooKeeper): handled, in order, once it has."""
    metadata: dict[TopicPartition, UpdateMetadataPartition] = field(default_factory=dict)
    """The metadata cache (`MetadataCache`), filled by UpdateMetadata; clients read it."""
    live_brokers: tuple[int, ...] = ()
    delayed_fetches: Purgatory[DelayedFetch] = field(default_factory=Purgatory)
    delayed_produces: Purgatory[DelayedProduce] = field(default_factory=Purgatory)
    sessions: dict[int, FetchSession] = field(default_factory=dict)
    fetch_sessions: dict[int, LeaderFetchSession] = field(default_factory=dict)
    """As leader, each follower broker's fetch session (KIP-227's `FetchSessionCache`)."""
    muted: dict[Address, deque[Inbound]] = field(default_factory=dict)
    """Client connections with a produce awaiting its answer, and the requests that came on
    them meanwhile: a connection is read again only once its answer is sent (`SocketServer`
    mutes it), so one connection's requests are handled strictly in order."""
    next_producer_id: int = -1
    """The next producer id of this broker's block; -1: no block yet."""
    producer_id_blocks: int = -1
    """The last block of producer ids taken (kept on disk across restarts)."""
    next_id: int = 0
    """Purgatory ids and correlation ids, from one counter."""

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id
