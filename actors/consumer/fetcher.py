"""The consumer's fetches: Kafka's `Fetcher` (with its `FetchCollector`).

What it models of the Java consumer:
- a fetch goes to each partition's leader, one request in flight per broker, for the partitions
  with a position, nothing buffered, no validation pending and not paused, with the leader epoch the
  consumer knows (KIP-320); a broker whose connection failed is not fetched from until its
  back-off has passed (`NetworkClient.ready`);
- fetched data is kept only if the partition is still assigned and fetchable and the data starts
  at the current position (`FetchCollector`); `poll()` returns at most `max.poll.records`,
  taking partitions in the order their data arrived (`completedFetches` is a queue, and the
  partition it is reading, `nextInLineFetch`, is read to its end first), so a partition that
  is fetched again while another's data waits does not go before it;
- a paused partition's records are not returned: from 2.4 they stay buffered until it is
  resumed (KAFKA-7548), before they were dropped, answers in flight included, and fetched
  again after the resume;
- an answer's partition errors: one that means stale metadata asks for it again, and
  OFFSET_OUT_OF_RANGE at the current position clears the position for `auto.offset.reset`.

The positions and the buffered records are the subscription state's (`subscription_state.py`).
Left out: fetch sessions (KIP-227), the isolation level (read_uncommitted only), compressed
batches and record headers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from actors.consumer.metadata import METADATA_ERRORS
from actors.consumer.network import InFlight, NetworkClient
from actors.consumer.subscription_state import Offsets, PartitionState, SubscriptionState
from actors.core import Out
from protocols.errors import ErrorCode
from protocols.replication import (
    FetchedPartition,
    FetchPartition,
    FetchRequest,
    FetchResponse,
    RecordBatch,
)
from protocols.types import TopicPartition

__all__ = ["Fetcher", "Returned"]


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
    def __init__(
        self,
        max_partition_fetch_bytes: int,
        fetch_min_bytes: int,
        fetch_max_wait_ms: int,
        subscriptions: SubscriptionState | None = None,
        *,
        keep_paused: bool = True,
    ) -> None:
        self.max_partition_fetch_bytes = max_partition_fetch_bytes
        self.fetch_min_bytes = fetch_min_bytes
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self.subscriptions = SubscriptionState() if subscriptions is None else subscriptions
        self.keep_paused = keep_paused
        """KAFKA-7548 (2.4): a paused partition's fetched records are kept, not dropped."""
        self.in_flight: dict[int, int] = {}
        """Broker -> the correlation id of its fetch in flight."""
        self.completed: list[TopicPartition] = []
        """The partitions whose fetched data waits, in the order it arrived (`completedFetches`)."""

    # Shortcuts to the subscription state, kept from when the fetcher held it (its unit tests
    # drive both through the fetcher).

    @property
    def assigned(self) -> dict[TopicPartition, PartitionState]:
        return self.subscriptions.assigned

    @property
    def leaders(self) -> dict[TopicPartition, tuple[int, int]]:
        return self.subscriptions.leaders

    @leaders.setter
    def leaders(self, leaders: dict[TopicPartition, tuple[int, int]]) -> None:
        self.subscriptions.leaders = leaders

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.subscriptions.assign(partitions)

    def seek(self, tp: TopicPartition, offset: int, epoch: int = -1) -> None:
        self.subscriptions.seek(tp, offset, epoch)

    def needing_position(self, now_ms: int) -> list[TopicPartition]:
        return self.subscriptions.needing_position(now_ms)

    def all_consumed(self) -> Offsets:
        return self.subscriptions.all_consumed()

    # ------------------------------------------------------------------ fetching

    def fetch_requests(self, ready: Callable[[int], bool] | None = None) -> list[tuple[int, FetchRequest]]:
        """One request per leader without a fetch in flight and `ready` (not backing off from
        a failed connection), for its fetchable partitions that have a position and nothing
        buffered."""
        by_leader: dict[int, list[FetchPartition]] = {}
        for tp in sorted(self.subscriptions.assigned):
            state = self.subscriptions.assigned[tp]
            if state.position is None or state.pending_revocation or state.paused or state.buffered or state.awaiting_validation:
                continue
            leader, epoch = self.subscriptions.leaders.get(tp, (-1, -1))
            if leader < 0 or leader in self.in_flight or (ready is not None and not ready(leader)):
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

    def send_fetches(self, out: Out, network: NetworkClient) -> None:
        """`sendFetches`: the request to each leader that `fetch_requests` names."""
        for leader, request in self.fetch_requests(network.ready):
            offsets = {TopicPartition(p.topic, p.partition): p.fetch_offset for p in request.partitions}
            cid = network.send(
                out,
                leader,
                "fetch",
                request,
                on_failure=self._fetch_failed,
                detail=offsets,
                timeout_ms=network.config.request_timeout_ms + request.max_wait_ms,
            )
            self.in_flight[leader] = cid

    def _fetch_failed(self, out: Out, correlation_id: int, request: InFlight, error: str) -> None:
        self.in_flight.pop(request.broker, None)

    def on_fetch_response(
        self, broker: int, offsets: dict[TopicPartition, int], resp: FetchResponse
    ) -> tuple[bool, list[TopicPartition]]:
        """Keep the answer's records; returns whether metadata is stale, and the partitions
        whose position was out of range (now without one, for `auto.offset.reset`)."""
        self.in_flight.pop(broker, None)
        stale = False
        out_of_range: list[TopicPartition] = []
        for answer in resp.partitions:
            error = self.on_fetched(offsets, answer)
            tp = TopicPartition(answer.topic, answer.partition)
            if error in METADATA_ERRORS:
                stale = True
            elif error is ErrorCode.OFFSET_OUT_OF_RANGE and tp in self.subscriptions.assigned:
                if self.subscriptions.assigned[tp].position == offsets.get(tp):
                    self.subscriptions.assigned[tp].position = None
                    out_of_range.append(tp)
        return stale, out_of_range

    def on_fetched(self, fetch_offsets: dict[TopicPartition, int], answer: FetchedPartition) -> ErrorCode:
        """Keep an answer's records if they still fit (`FetchCollector`); return its error."""
        tp = TopicPartition(answer.topic, answer.partition)
        state = self.subscriptions.assigned.get(tp)
        if answer.error_code is not ErrorCode.NONE:
            return answer.error_code
        if state is None or state.pending_revocation or state.position != fetch_offsets.get(tp):
            return ErrorCode.NONE  # no longer wanted: discarded
        if state.paused and not self.keep_paused:
            return ErrorCode.NONE  # before 2.4 a paused partition is not fetchable: discarded
        state.buffered = list(_records_from(answer.records, state.position))
        if state.buffered and tp not in self.completed:
            self.completed.append(tp)
        return ErrorCode.NONE

    def collect(self, max_records: int) -> list[Returned]:
        """What `poll()` returns: buffered records of fetchable partitions, from each position,
        at most `max_records` in all; the positions move past them."""
        returned: list[Returned] = []
        room = max_records
        assigned = self.subscriptions.assigned
        # Data dropped since it arrived (a seek, a revocation, a reset) leaves the queue.
        self.completed = [tp for tp in self.completed if tp in assigned and assigned[tp].buffered]
        for tp in list(self.completed):
            state = assigned[tp]
            if room == 0:
                break
            if state.paused and not self.keep_paused:
                state.buffered = []  # before 2.4 poll() drops them (`fetchRecords`)
                self.completed.remove(tp)
            if state.pending_revocation or state.paused or not state.buffered or state.position is None:
                continue
            taken = state.buffered[:room]
            state.buffered = state.buffered[room:]
            room -= len(taken)
            # The position carries the leader epoch of the last record returned.
            state.position, state.position_epoch = taken[-1][0] + 1, taken[-1][1]
            returned += _by_epoch(tp, taken)
            if not state.buffered:
                self.completed.remove(tp)
        return returned

    def has_buffered(self) -> bool:
        return any(s.buffered and not s.pending_revocation and not s.paused for s in self.subscriptions.assigned.values())


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
