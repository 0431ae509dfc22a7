"""The consumer's partitions and fetches: `SubscriptionState` and `Fetcher`.

What it models of the Java consumer:
- each assigned partition has a position (the offset of the next record to return), unknown
  until the committed offset is fetched or `auto.offset.reset` applies (§ `updateFetchPositions`);
- a partition pending revocation (KAFKA-14196) is not fetched and its records are not returned;
- a fetch goes to each partition's leader, one request in flight per broker, for the partitions
  with a position and nothing buffered, with the leader epoch the consumer knows (KIP-320);
- fetched data is kept only if the partition is still assigned and fetchable and the data starts
  at the current position (`FetchCollector`); `poll()` returns at most `max.poll.records`.

Left out: fetch sessions (KIP-227), the isolation level (read_uncommitted only), compressed
batches and record headers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocols.errors import ErrorCode
from protocols.replication import FetchedPartition, FetchPartition, FetchRequest, RecordBatch
from protocols.types import TopicPartition

__all__ = ["Fetcher", "PartitionState", "Returned"]


@dataclass(slots=True)
class PartitionState:
    """`TopicPartitionState`: one assigned partition."""

    position: int | None = None
    position_epoch: int = -1
    pending_revocation: bool = False
    retry_at_ms: int = 0
    """A reset refused with a retriable error waits until then (`requestFailed`)."""
    awaiting_validation: bool = False
    """The leader changed: the position is checked for a truncation before it is fetched
    (`AWAIT_VALIDATION`)."""
    buffered: list[tuple[int, int]] = field(default_factory=list)
    """Fetched records from the position on, not yet returned: (offset, the leader epoch of
    its batch). The epoch tells a record from one written later at the same offset after a
    truncation (one leader writes each offset once in an epoch, KIP-101)."""


@dataclass(frozen=True, slots=True)
class Returned:
    """Records one `poll()` returned from one partition: offsets `first` to `end` (exclusive),
    all written in leader epoch `leader_epoch` (a poll's records of one partition written in
    two epochs are two of these)."""

    tp: TopicPartition
    first: int
    end: int
    leader_epoch: int


class Fetcher:
    def __init__(self, max_partition_fetch_bytes: int, fetch_min_bytes: int, fetch_max_wait_ms: int) -> None:
        self.max_partition_fetch_bytes = max_partition_fetch_bytes
        self.fetch_min_bytes = fetch_min_bytes
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self.assigned: dict[TopicPartition, PartitionState] = {}
        self.leaders: dict[TopicPartition, tuple[int, int]] = {}
        """Partition -> (leader broker, leader epoch), from Metadata."""
        self.in_flight: dict[int, int] = {}
        """Broker -> the correlation id of its fetch in flight."""
        self.not_ready_until: dict[int, int] = {}
        """Broker -> when a fetch to it may be tried again, after its connection failed
        (`reconnect.backoff.ms`: `NetworkClient.ready` is false meanwhile)."""

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

    def needing_position(self, now_ms: int) -> list[TopicPartition]:
        return [tp for tp in sorted(self.assigned) if self.assigned[tp].position is None and self.assigned[tp].retry_at_ms <= now_ms]

    def seek(self, tp: TopicPartition, offset: int, epoch: int = -1) -> None:
        state = self.assigned.get(tp)
        if state is not None:
            state.position, state.position_epoch, state.buffered = offset, epoch, []
            state.awaiting_validation = False

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

    def all_consumed(self) -> dict[TopicPartition, tuple[int, int]]:
        """`SubscriptionState.allConsumed`: every assigned partition with a position."""
        return {
            tp: (s.position, s.position_epoch)
            for tp, s in sorted(self.assigned.items())
            if s.position is not None
        }

    # ------------------------------------------------------------------ fetching

    def fetch_requests(self, now_ms: int = 0) -> list[tuple[int, FetchRequest]]:
        """One request per leader without a fetch in flight and not backing off from a failed
        connection, for its fetchable partitions that have a position and nothing buffered."""
        by_leader: dict[int, list[FetchPartition]] = {}
        for tp in sorted(self.assigned):
            state = self.assigned[tp]
            if state.position is None or state.pending_revocation or state.buffered or state.awaiting_validation:
                continue
            leader, epoch = self.leaders.get(tp, (-1, -1))
            if leader < 0 or leader in self.in_flight or now_ms < self.not_ready_until.get(leader, 0):
                continue
            by_leader.setdefault(leader, []).append(
                FetchPartition(
                    tp.topic,
                    tp.partition,
                    state.position,
                    current_leader_epoch=epoch,
                    partition_max_bytes=self.max_partition_fetch_bytes,
                )
            )
        return [
            (leader, FetchRequest(-1, self.fetch_max_wait_ms, self.fetch_min_bytes, tuple(parts)))
            for leader, parts in sorted(by_leader.items())
        ]

    def on_fetched(self, fetch_offsets: dict[TopicPartition, int], answer: FetchedPartition) -> ErrorCode:
        """Keep an answer's records if they still fit (`FetchCollector`); return its error."""
        tp = TopicPartition(answer.topic, answer.partition)
        state = self.assigned.get(tp)
        if answer.error_code is not ErrorCode.NONE:
            return answer.error_code
        if state is None or state.pending_revocation or state.position != fetch_offsets.get(tp):
            return ErrorCode.NONE  # no longer wanted: discarded
        state.buffered = list(_records_from(answer.records, state.position))
        return ErrorCode.NONE

    def collect(self, max_records: int) -> list[Returned]:
        """What `poll()` returns: buffered records of fetchable partitions, from each position,
        at most `max_records` in all; the positions move past them."""
        returned: list[Returned] = []
        room = max_records
        for tp in sorted(self.assigned):
            state = self.assigned[tp]
            if room == 0:
                break
            if state.pending_revocation or not state.buffered or state.position is None:
                continue
            taken = state.buffered[:room]
            state.buffered = state.buffered[room:]
            room -= len(taken)
            # The position carries the leader epoch of the last record returned.
            state.position, state.position_epoch = taken[-1][0] + 1, taken[-1][1]
            returned += _by_epoch(tp, taken)
        return returned

    def has_buffered(self) -> bool:
        return any(s.buffered and not s.pending_revocation for s in self.assigned.values())


def _records_from(batches: tuple[RecordBatch, ...], position: int) -> list[tuple[int, int]]:
    """(offset, leader epoch) of the records at `position` and after, in offset order."""
    records: list[tuple[int, int]] = []
    for batch in batches:
        records += [(offset, batch.leader_epoch) for offset in range(max(batch.base_offset, position), batch.end_offset)]
    return records


def _by_epoch(tp: TopicPartition, records: list[tuple[int, int]]) -> list[Returned]:
    """Consecutive records as ranges, one per leader epoch."""
    ranges: list[Returned] = []
    first = records[0][0]
    for i, (offset, epoch) in enumerate(records):
        if i + 1 == len(records) or records[i + 1][1] != epoch:
            ranges.append(Returned(tp, first, offset + 1, epoch))
            first = offset + 1
    return ranges
