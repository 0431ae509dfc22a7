"""Where a position comes from, other than a committed offset: Kafka's `OffsetFetcher`.

What it models of the Java consumer:
- `auto.offset.reset` (no committed offset, or OFFSET_OUT_OF_RANGE at the position) by a
  ListOffsets to each partition's leader for the earliest or latest offset; with `none` the
  application gets NoOffsetForPartitionException or OffsetOutOfRangeException. A reset refused
  with OFFSET_NOT_AVAILABLE (KIP-207) is tried again after `retry.backoff.ms`;
- position validation after a leader change (KIP-320's consumer side, 2.3+:
  `validatePositionsIfNeeded`): an OffsetsForLeaderEpoch asks where the epoch of the position's
  last record ends on the leader; a position past that end was truncated away, and the
  consumer seeks to the end, or throws LogTruncationException with `none`.

Every position set is logged (`fetch_position_set`, with where it came from).
Left out: `seek()` and `offsetsForTimes()`: the application never moves a position itself.
"""

from __future__ import annotations

from actors.consumer.application import ApplicationThread
from actors.consumer.config import ConsumerConfig
from actors.consumer.group_membership import GroupMembership
from actors.consumer.metadata import METADATA_ERRORS, ConsumerMetadata
from actors.consumer.network import Clock, InFlight, NetworkClient
from actors.consumer.subscription_state import SubscriptionState
from actors.core import Out
from protocols.errors import ErrorCode
from protocols.replication import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderEpochPartition,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)
from protocols.types import TopicPartition

__all__ = ["OffsetFetcher"]

_RESET_REASONS = {
    "NoOffsetForPartitionException": "no_committed_offset",
    "OffsetOutOfRangeException": "out_of_range",
    "LogTruncationException": "truncation",
}
"""Why `auto.offset.reset` ran, by the exception the application gets under `none`."""


class OffsetFetcher:
    def __init__(
        self,
        config: ConsumerConfig,
        clock: Clock,
        network: NetworkClient,
        subscriptions: SubscriptionState,
        metadata: ConsumerMetadata,
        membership: GroupMembership,
        app: ApplicationThread,
    ) -> None:
        self.config = config
        self.clock = clock
        self.network = network
        self.subscriptions = subscriptions
        self.metadata = metadata
        self.membership = membership
        """Who the member is, for the logs."""
        self.app = app
        self.validating: set[TopicPartition] = set()
        """Partitions whose OffsetsForLeaderEpoch is in flight."""

    def set_position(self, out: Out, tp: TopicPartition, offset: int, epoch: int, source: str, reason: str | None = None) -> None:
        """`reason` says why a position not from a committed offset was needed; it defaults to
        `source` (`committed`, `truncation`)."""
        self.subscriptions.seek(tp, offset, epoch)
        out.emit(
            "fetch_position_set",
            group_id=self.config.group_id,
            member_id=self.membership.member_id,
            generation_id=self.membership.generation_id,
            topic=tp.topic,
            partition=tp.partition,
            offset=offset,
            source=source,
            reason=reason or source,
        )

    # ------------------------------------------------------------------ auto.offset.reset

    def reset_positions(
        self, out: Out, partitions: list[TopicPartition], error: str = "NoOffsetForPartitionException"
    ) -> None:
        """`auto.offset.reset` for partitions whose position is to be reset
        (`requestOffsetReset`, then `resetPositionsIfNeeded` at once); with `none`, `error` (no
        committed offset, or `OffsetOutOfRangeException` after OFFSET_OUT_OF_RANGE) is thrown
        to the application. A partition awaiting its reset is not asked OffsetFetch again."""
        if not partitions:
            return
        if self.config.auto_offset_reset == "none":
            self.app.fail(out, f"{error}: {', '.join(str(tp) for tp in partitions)}")
            return
        for tp in partitions:
            self.subscriptions.request_offset_reset(tp, _RESET_REASONS[error])
        self.reset_positions_if_needed(out)

    def reset_positions_if_needed(self, out: Out) -> None:
        """`resetPositionsIfNeeded`: a ListOffsets to each leader for the earliest or latest
        offset of the partitions awaiting a reset; none is asked again before the request
        timeout while one is in flight (`setNextAllowedRetry`)."""
        subscriptions, now = self.subscriptions, self.clock.now_ms
        timestamp = EARLIEST_TIMESTAMP if self.config.auto_offset_reset == "earliest" else LATEST_TIMESTAMP
        by_leader: dict[int, list[ListOffsetsPartition]] = {}
        for tp in subscriptions.needing_reset(now):
            leader, epoch = subscriptions.leaders.get(tp, (-1, -1))
            if leader >= 0:
                by_leader.setdefault(leader, []).append(ListOffsetsPartition(tp.topic, tp.partition, timestamp, epoch))
        for leader, parts in sorted(by_leader.items()):
            tps = frozenset(TopicPartition(p.topic, p.partition) for p in parts)
            for tp in tps:
                subscriptions.assigned[tp].retry_at_ms = now + self.config.request_timeout_ms
            request = ListOffsetsRequest(-1, tuple(parts))
            self.network.send(out, leader, "list_offsets", request, on_failure=self._list_offsets_failed, detail=tps)

    def on_list_offsets_response(self, out: Out, correlation_id: int, resp: ListOffsetsResponse) -> None:
        for p in resp.partitions:
            tp = TopicPartition(p.topic, p.partition)
            state = self.subscriptions.assigned.get(tp)
            if state is None or state.awaiting_reset is None:
                continue  # revoked, or reset by another answer meanwhile
            if p.error_code is ErrorCode.NONE:
                self.set_position(out, tp, p.offset, p.leader_epoch, self.config.auto_offset_reset, state.awaiting_reset)
                continue
            if p.error_code in METADATA_ERRORS:
                self.metadata.request_update(out)
            # Tried again after `retry.backoff.ms` (`requestFailed`); OFFSET_NOT_AVAILABLE: the
            # new leader's HW has not reached its epoch's start yet (KIP-207).
            self._retry_later(out, [tp])

    def _list_offsets_failed(self, out: Out, correlation_id: int, request: InFlight, error: str) -> None:
        self._retry_later(out, sorted(request.detail))

    def _retry_later(self, out: Out, partitions: list[TopicPartition]) -> None:
        backoff = self.config.retry_backoff_ms
        for tp in partitions:
            state = self.subscriptions.assigned.get(tp)
            if state is not None and state.awaiting_reset is not None:
                state.retry_at_ms = self.clock.now_ms + backoff
        out.set_timer("reset-retry", backoff)

    # ------------------------------------------------------------------ validation (KIP-320)

    def validate_positions_if_needed(self, out: Out) -> None:
        """`validatePositionsIfNeeded`: OffsetsForLeaderEpoch to each leader for the positions
        awaiting validation, asking where the epoch of each position's last record ends."""
        subscriptions = self.subscriptions
        by_leader: dict[int, list[OffsetForLeaderEpochPartition]] = {}
        for tp in subscriptions.needing_validation():
            leader, epoch = subscriptions.leaders.get(tp, (-1, -1))
            if leader >= 0 and tp not in self.validating:
                asked = subscriptions.assigned[tp].position_epoch
                by_leader.setdefault(leader, []).append(OffsetForLeaderEpochPartition(tp.topic, tp.partition, asked, epoch))
        for leader, parts in sorted(by_leader.items()):
            tps = frozenset(TopicPartition(p.topic, p.partition) for p in parts)
            self.validating |= tps
            request = OffsetForLeaderEpochRequest(-1, tuple(parts))
            self.network.send(out, leader, "validate", request, on_failure=self._validation_failed, detail=tps)

    def on_epoch_end_offsets(self, out: Out, asked: frozenset[TopicPartition], resp: OffsetForLeaderEpochResponse) -> None:
        """`SubscriptionState.maybeCompleteValidation`: a position past the end of its epoch
        on the leader was truncated away. With a reset policy the consumer seeks to that end,
        the first offset known to diverge, and re-reads nothing that is unchanged; with
        `none` it throws LogTruncationException."""
        self.validating -= asked
        truncated: list[TopicPartition] = []
        for r in resp.partitions:
            tp = TopicPartition(r.topic, r.partition)
            state = self.subscriptions.assigned.get(tp)
            if state is None or not state.awaiting_validation or state.position is None:
                continue
            if r.error_code in METADATA_ERRORS:
                self.metadata.request_update(out)
            elif r.error_code is not ErrorCode.NONE:
                continue  # tried again at the next poll
            elif (undefined := r.end_offset < 0 or r.leader_epoch < 0) or r.end_offset < state.position:
                truncated.append(tp)
                if self.config.auto_offset_reset == "none":
                    continue
                if undefined:
                    self.reset_positions(out, [tp], "LogTruncationException")  # no epoch to go by
                else:
                    self.set_position(out, tp, r.end_offset, r.leader_epoch, "truncation")
            else:
                state.awaiting_validation = False
        if truncated and self.config.auto_offset_reset == "none":
            self.app.fail(out, f"LogTruncationException: {', '.join(str(tp) for tp in truncated)}")

    def _validation_failed(self, out: Out, correlation_id: int, request: InFlight, error: str) -> None:
        self.validating -= request.detail
