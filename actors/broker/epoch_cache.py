"""The leader-epoch cache (KIP-101) and the follower's truncation rule (KIP-279).

Models `storage/.../epoch/LeaderEpochFileCache.java` (`assign`, `endOffsetFor`,
`truncateFromEnd`, `truncateFromStart`) and `AbstractFetcherThread.getOffsetTruncationState`. Pure values: every
operation returns a new cache, which the replica persists as its `leader-epoch-checkpoint`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from protocols.types import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET

__all__ = ["EpochCache", "EpochEntry", "TruncationState", "truncation_state"]


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


@dataclass(frozen=True, slots=True)
class EpochCache:
    """Entries `(epoch, start_offset)`, both strictly increasing."""

    entries: tuple[EpochEntry, ...] = ()
    _ends: dict[int, EpochEntry] = field(default_factory=dict, compare=False, repr=False)
    """`end_offset_for` of epochs before the latest, which the LEO does not move: a follower
    that fetches an idle partition asks the same after every leader change, at every fetch."""
    latest_epoch: int = field(init=False, compare=False, repr=False)
    """The last entry's epoch (UNDEFINED if none): read for every partition of every fetch."""

    def __post_init__(self) -> None:
        latest = self.entries[-1].epoch if self.entries else UNDEFINED_EPOCH
        object.__setattr__(self, "latest_epoch", latest)  # frozen: set once, here

    def assign(self, epoch: int, start_offset: int) -> EpochCache:
        """Record that `epoch` starts at `start_offset`.

        Like Kafka's `assign`: nothing changes if the latest entry already has this epoch and an
        offset no later; otherwise every entry with an epoch or a start offset at or beyond the
        new one is replaced.
        """
        assert epoch >= 0 and start_offset >= 0, (epoch, start_offset)
        if self.entries:
            latest = self.entries[-1]
            if latest.epoch == epoch and latest.start_offset <= start_offset:
                return self
        kept = tuple(
            e for e in self.entries if e.epoch < epoch and e.start_offset < start_offset
        )
        return EpochCache((*kept, EpochEntry(epoch, start_offset)))

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> EpochEntry:
        """`LeaderEpochFileCache.endOffsetFor`: (epoch, end offset) answering OffsetsForLeaderEpoch.

        - the latest epoch: (it, LEO);
        - an epoch with a later one cached: (the largest cached epoch <= requested, the start of
          the next higher epoch), or (requested, that start) if none is <= requested;
        - an epoch beyond every cached one, or UNDEFINED: (UNDEFINED, UNDEFINED).
        """
        if self.entries and self.entries[-1].epoch == requested_epoch:
            return EpochEntry(requested_epoch, log_end_offset)
        found = self._ends.get(requested_epoch)
        if found is None:  # the cache never changes (every operation makes a new one)
            found = self._ends[requested_epoch] = self._end_offset_before_latest(requested_epoch)
        return found

    def _end_offset_before_latest(self, requested_epoch: int) -> EpochEntry:
        undefined = EpochEntry(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
        if requested_epoch == UNDEFINED_EPOCH or not self.entries:
            return undefined
        higher = next((e for e in self.entries if e.epoch > requested_epoch), None)
        if higher is None:
            return undefined
        floor = [e for e in self.entries if e.epoch <= requested_epoch]
        if not floor:
            return EpochEntry(requested_epoch, higher.start_offset)
        return EpochEntry(floor[-1].epoch, higher.start_offset)

    def truncate_from_end(self, end_offset: int) -> EpochCache:
        """The log was truncated to `end_offset`: drop epochs that start at or after it."""
        return EpochCache(tuple(e for e in self.entries if e.start_offset < end_offset))

    def truncate_from_start(self, start_offset: int) -> EpochCache:
        """The log start offset moved to `start_offset`: epochs that start at or before it give
        way to the latest of them, which now starts there."""
        before = [e for e in self.entries if e.start_offset <= start_offset]
        if not before:
            return self
        kept = tuple(e for e in self.entries if e.start_offset > start_offset)
        return EpochCache((EpochEntry(before[-1].epoch, start_offset), *kept))


class TruncationState(NamedTuple):
    offset: int
    """Truncate the log to this offset (keep records below it)."""
    complete: bool
    """False: ask the leader again with the new latest epoch (the KIP-279 loop)."""


def truncation_state(
    leader_answer: EpochEntry, follower: EpochCache, follower_leo: int, fetch_offset: int
) -> TruncationState:
    """`getOffsetTruncationState`: where a follower truncates, given the leader's
    `(epoch, end offset)` for the follower's latest epoch.

    `fetch_offset` is where the follower would fetch from (its HW), used only when the leader
    cannot answer (UNDEFINED end offset).
    """
    leader_epoch, leader_end = leader_answer
    if leader_end == UNDEFINED_EPOCH_OFFSET:
        return TruncationState(min(fetch_offset, follower_leo), complete=True)
    if leader_epoch == UNDEFINED_EPOCH:
        return TruncationState(min(leader_end, follower_leo), complete=True)
    own_epoch, own_end = follower.end_offset_for(leader_epoch, follower_leo)
    if own_end == UNDEFINED_EPOCH_OFFSET:
        # The follower tracked no epoch up to this one: the leader's end offset is safe.
        return TruncationState(min(leader_end, follower_leo), complete=True)
    if own_epoch != leader_epoch:
        # The follower does not know the leader's epoch: truncate to the end of its own largest
        # epoch below it, then ask again.
        return TruncationState(min(own_end, follower_leo), complete=False)
    return TruncationState(min(own_end, leader_end, follower_leo), complete=True)
