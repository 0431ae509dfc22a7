"""As leader, a follower's fetch session and the fetches it parks in the purgatory.

Models KIP-227's `FetchSession` in the leader's `FetchSessionCache` (the partitions a follower's
session holds and the HW last sent for each, `CachedPartition`) and the state of a
`DelayedFetch`. A session's parked fetches and a parked fetch's session refer to each other, so
both live here. What the leader does with them is in `leader.py`.

A partition that rests (`LeaderFetchSession.resting`) is known here only as something to wake
(`RestingPartition`): `Partition` holds its resting sessions and imports this module, so this
one does not import `Partition`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from actors.broker.purgatory import Purgatory
from actors.broker.replica_state import ReplicaState
from actors.core import Inbound
from protocols.replication import FetchPartition, FetchRequest
from protocols.types import TopicPartition

__all__ = ["DelayedFetch", "LeaderFetchSession", "Rest", "RestingPartition"]


@dataclass(slots=True)
class DelayedFetch:
    """A fetch parked in purgatory (`DelayedFetch.scala`) until data, an error or its wait."""

    id: int
    inbound: Inbound
    request: FetchRequest
    partitions: tuple[FetchPartition, ...]
    """What it reads: the request's partitions, or for an incremental request the session's
    that are awake (a resting partition has nothing to read or to wait for)."""
    expires_ms: int
    held: dict[TopicPartition, FetchPartition] | None = None
    """A follower's fetch that skipped resting partitions: every partition of its session, so
    that one waking while it waits joins `partitions` (`LeaderFetchSession.woke`)."""
    session: LeaderFetchSession | None = None
    """A follower's fetch: the session it was made in (the follower may replace it meanwhile)."""

    @property
    def is_follower(self) -> bool:
        return self.request.replica_id >= 0


@dataclass(slots=True)
class LeaderFetchSession:
    """As leader, one follower broker's fetch session (`FetchSession` in `FetchSessionCache`)."""

    partitions: dict[TopicPartition, FetchPartition]
    """Every partition of the session, in the follower's order (topic, then partition)."""
    epoch: int = 1
    """The epoch the next incremental request must carry."""
    sent_high_watermarks: dict[TopicPartition, int] = field(default_factory=dict)
    """The HW last sent for each partition, -1 after an error, so that a partition is sent
    again once it has something new or its error clears."""
    last_fetch_ms: int = 0
    """When the follower's last Fetch in this session arrived."""
    resting: dict[TopicPartition, Rest] = field(default_factory=dict)
    """Partitions that were idle when last answered (the follower in the ISR, caught up, its
    HW sent) and have not changed since: a Fetch skips them, and their follower state is
    `fetched_at_end` at `last_fetch_ms`, brought up to date when they change (`Partition.wake`)
    or something reads it."""
    parked: list[DelayedFetch] = field(default_factory=list)
    """This session's fetches in the purgatory that skipped resting partitions (one, unless the
    follower gave up on one and fetched again)."""
    purgatory: Purgatory[DelayedFetch] | None = None
    """Where they wait: the broker's fetch purgatory."""

    def woke(self, tp: TopicPartition) -> None:
        """`tp` stopped resting: every parked fetch that skipped it reads and watches it from
        now on, in the session's order, as it would had it read every partition."""
        for op in self.parked:  # each skipped resting partitions, so holds its session's
            assert op.held is not None
            fp = op.held.get(tp)
            if fp is None:
                continue
            reading = {(p.topic, p.partition) for p in op.partitions}
            if tp in reading:
                continue
            reading.add(tp)
            op.partitions = tuple(p for key, p in op.held.items() if key in reading)
            assert self.purgatory is not None
            self.purgatory.watch(op.id, tp)


class RestingPartition(Protocol):
    """What a session needs of a partition resting in it: ending the rest (`Partition.wake`)."""

    def wake(self) -> None: ...


class Rest(NamedTuple):
    """A resting partition, with its follower's state and the LEO it came to rest at."""

    partition: RestingPartition
    state: ReplicaState
    log_end_offset: int
