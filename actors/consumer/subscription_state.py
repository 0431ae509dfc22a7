"""The consumer's assigned partitions and their positions: Kafka's `SubscriptionState`.

What it models of the Java consumer:
- each assigned partition has a position (the offset of the next record to return) and the
  leader epoch of the record before it, unknown until the committed offset is fetched or
  `auto.offset.reset` applies (`updateFetchPositions`);
- a partition pending revocation (KAFKA-14196) is not fetched and its records are not returned;
- a partition the application paused (`KafkaConsumer.pause`) is not fetched and its records are
  not returned until it resumes it; a new assignment does not keep the pause of a partition
  revoked meanwhile (`assignFromSubscribed` keeps the state of partitions it keeps);
- each partition's leader and leader epoch as Metadata last gave them (`FetchPosition`'s
  `currentLeader`): after a leader change, a position read in an older epoch awaits validation
  (KIP-320);
- the records fetched from the position on and not yet returned (Kafka keeps them in the
  fetcher's `FetchBuffer`; here with the partition, so that a seek or a leader change drops
  them with the position they were fetched for).

Left out: `assign()` and pattern subscriptions (the topics are fixed and the group assigns
their partitions).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocols.group import TopicPartitions
from protocols.types import TopicPartition

__all__ = ["Offsets", "PartitionState", "SubscriptionState", "by_topic"]

Offsets = dict[TopicPartition, tuple[int, int]]
"""Partition -> (offset, leader epoch): positions, as a commit sends them."""


@dataclass(slots=True)
class PartitionState:
    """`TopicPartitionState`: one assigned partition."""

    position: int | None = None
    position_epoch: int = -1
    pending_revocation: bool = False
    paused: bool = False
    """The application paused it (`KafkaConsumer.pause`): not fetched, nothing returned."""
    retry_at_ms: int = 0
    """A reset waits until then: its ListOffsets in flight (`setNextAllowedRetry`, the request
    timeout), or refused with a retriable error (`requestFailed`, `retry.backoff.ms`)."""
    awaiting_reset: str | None = None
    """`AWAIT_RESET`: the position is to come from `auto.offset.reset`, not from a committed
    offset (no OffsetFetch is sent for it); why, for the log: `no_committed_offset`,
    `out_of_range` or `truncation`. None otherwise."""
    awaiting_validation: bool = False
    """The leader changed: the position is checked for a truncation before it is fetched
    (`AWAIT_VALIDATION`)."""
    buffered: list[tuple[int, int]] = field(default_factory=list)
    """Fetched records from the position on, not yet returned: (offset, the leader epoch of
    its batch). The epoch tells a record from one written later at the same offset after a
    truncation (one leader writes each offset once in an epoch, KIP-101)."""


class SubscriptionState:
    def __init__(self) -> None:
        self.assigned: dict[TopicPartition, PartitionState] = {}
        self.leaders: dict[TopicPartition, tuple[int, int]] = {}
        """Partition -> (leader broker, leader epoch), from Metadata."""

    # ------------------------------------------------------------------ assignment

    def assign(self, partitions: list[TopicPartition]) -> None:
        """Add partitions with no position (`assignFromSubscribed` keeps the others)."""
        for tp in partitions:
            self.assigned.setdefault(tp, PartitionState())

    def remove(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self.assigned.pop(tp, None)

    def owned(self) -> list[TopicPartition]:
        return sorted(self.assigned)

    def mark_pending_revocation(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self.assigned[tp].pending_revocation = True

    def pause(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self.assigned[tp].paused = True

    def resume(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self.assigned[tp].paused = False

    def paused(self) -> list[TopicPartition]:
        return [tp for tp in sorted(self.assigned) if self.assigned[tp].paused]

    # ------------------------------------------------------------------ positions

    def needing_position(self, now_ms: int) -> list[TopicPartition]:
        """`initializingPartitions`: no position and none awaited from a reset, so the
        committed offset is asked for."""
        return [
            tp
            for tp in sorted(self.assigned)
            if (s := self.assigned[tp]).position is None and s.awaiting_reset is None and s.retry_at_ms <= now_ms
        ]

    def request_offset_reset(self, tp: TopicPartition, reason: str) -> None:
        """`requestOffsetReset`: the position goes, and `auto.offset.reset` gives the next."""
        state = self.assigned.get(tp)
        if state is not None:
            state.position, state.buffered, state.awaiting_validation = None, [], False
            state.awaiting_reset, state.retry_at_ms = reason, 0

    def needing_reset(self, now_ms: int) -> list[TopicPartition]:
        """`partitionsNeedingReset`: awaiting a reset and not backing off."""
        return [
            tp
            for tp in sorted(self.assigned)
            if (s := self.assigned[tp]).awaiting_reset is not None and s.retry_at_ms <= now_ms
        ]

    def seek(self, tp: TopicPartition, offset: int, epoch: int = -1) -> None:
        state = self.assigned.get(tp)
        if state is not None:
            state.position, state.position_epoch, state.buffered = offset, epoch, []
            state.awaiting_validation, state.awaiting_reset = False, None

    def new_leaders(self, leaders: dict[TopicPartition, tuple[int, int]], *, validate: bool) -> None:
        """Metadata's leaders. A position read in an older leader epoch than the new leader's
        waits for validation (`maybeValidatePositionForCurrentLeader`); its buffered records
        are dropped."""
        for tp, (leader, epoch) in leaders.items():
            _, before = self.leaders.get(tp, (-1, -1))
            self.leaders[tp] = (leader, epoch)
            state = self.assigned.get(tp)
            if validate and state is not None and state.position is not None and state.position_epoch >= 0 and epoch > before >= 0:
                state.awaiting_validation, state.buffered = True, []

    def needing_validation(self) -> list[TopicPartition]:
        return [tp for tp in sorted(self.assigned) if self.assigned[tp].awaiting_validation]

    def all_consumed(self) -> Offsets:
        """`SubscriptionState.allConsumed`: every assigned partition with a position."""
        return {
            tp: (s.position, s.position_epoch)
            for tp, s in sorted(self.assigned.items())
            if s.position is not None
        }

    def consumed_of(self, partitions: list[TopicPartition]) -> Offsets:
        consumed = self.all_consumed()
        return {tp: consumed[tp] for tp in partitions if tp in consumed}


def by_topic(partitions: list[TopicPartition]) -> tuple[TopicPartitions, ...]:
    """Partitions grouped by topic, sorted, as the group requests carry them."""
    grouped: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        grouped.setdefault(tp.topic, []).append(tp.partition)
    return tuple(TopicPartitions(topic, tuple(ps)) for topic, ps in grouped.items())
