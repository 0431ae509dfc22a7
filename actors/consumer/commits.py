"""Offsets and commits: the commit handling of Kafka's `ConsumerCoordinator` (from 3.7 the
async consumer's `CommitRequestManager`).

What it models of the Java consumer:
- auto-commit (`maybeAutoCommitOffsetsAsync`): every `auto.commit.interval.ms`, from the
  coordinator's poll, the positions (the *previous* polls' records); after a retriable
  failure the next one is due after `retry.backoff.ms`;
- commitSync, commitAsync (never retried), the commit in `onPartitionsRevoked`, the
  pre-rebalance commit and `close()`'s synchronous auto-commit. Whoever makes a synchronous
  commit blocks the application first (`ApplicationThread`), since one that fails in the client
  is answered at once;
- a synchronous commit's timer (`commitOffsetsSync` with a `Timer` of `default.api.timeout.ms`,
  or the rebalance timeout for the pre-rebalance commit before 3.2): a retriable failure is
  sent again after `retry.backoff.ms` (from 3.7 `retryBackoff.backoff(attempts)`, KIP-580),
  the sleep cut short at the deadline (`Timer.sleep`); no attempt is sent from the deadline on,
  and at the deadline the call returns whatever is in flight (KafkaConsumer's `commitSync`
  throws TimeoutException; the application goes on as after a failed commit). An attempt still
  in flight then is answered later, and logged, but nobody waits for it;
- a commit carries the generation only when the member is STABLE (`generationIfStable`);
  otherwise it fails without being sent;
- an answer's error acts on the membership: a moved coordinator is marked unknown,
  REBALANCE_IN_PROGRESS asks for a rejoin, a fencing error in the commit's own generation
  resets the member or is fatal (FENCED_INSTANCE_ID);
- OffsetFetch (`refreshCommittedOffsetsIfNeeded`): the committed offsets of the partitions
  without a position; a partition with none is reset by `auto.offset.reset`.

Every commit sent and answered is logged, with why it was made (`CommitKind`).
Left out: the application's own commit callbacks (only a fencing error reaches it) and the
offsets' metadata strings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from actors.consumer.application import ApplicationThread
from actors.consumer.config import ConsumerConfig
from actors.consumer.group_membership import COORDINATOR_ERRORS, GroupMembership
from actors.consumer.network import DISCONNECTED, TIMEOUT, Clock, InFlight, NetworkClient
from actors.consumer.offset_fetcher import OffsetFetcher
from actors.consumer.subscription_state import Offsets, SubscriptionState, by_topic
from actors.core import Out
from protocols.errors import ErrorCode
from protocols.group import (
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitTopic,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from protocols.types import TopicPartition

__all__ = ["COMMIT_FAILED", "Commit", "CommitKind", "CommitRequestManager", "is_retriable"]

COMMIT_FAILED = "COMMIT_FAILED"
"""`CommitFailedException` raised by the client without sending (the member is not in an
active generation)."""
_RETRIABLE_COMMIT = frozenset(
    {
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.REQUEST_TIMED_OUT,
    }
)
_RETRIABLE_OUTCOMES = frozenset({DISCONNECTED, TIMEOUT, *(e.name for e in _RETRIABLE_COMMIT)})


def is_retriable(outcome: str) -> bool:
    return outcome in _RETRIABLE_OUTCOMES


class CommitKind(Enum):
    """Why a commit was sent: the analytics tell auto-commits from the application's."""

    AUTO = "auto"
    JOIN_PREPARE = "join_prepare"
    SYNC = "sync"
    ASYNC = "async"
    REVOKE = "revoke"
    CLOSE = "close"


@dataclass(slots=True)
class Commit:
    """An OffsetCommit in flight, and its outcome once answered."""

    commit_id: int
    kind: CommitKind
    offsets: Offsets
    generation_id: int
    error: str | None = None
    """None while in flight; "NONE" on success; else the error (a broker error code's name, or
    the client's: DISCONNECTED, TIMEOUT)."""
    started_ms: int = 0


class CommitRequestManager:
    def __init__(
        self,
        config: ConsumerConfig,
        clock: Clock,
        network: NetworkClient,
        subscriptions: SubscriptionState,
        membership: GroupMembership,
        positions: OffsetFetcher,
        app: ApplicationThread,
    ) -> None:
        self.config = config
        self.clock = clock
        self.network = network
        self.subscriptions = subscriptions
        self.membership = membership
        self.positions = positions
        self.app = app
        self.commits: dict[int, Commit] = {}
        """Commit id -> every commit sent this incarnation, answered or not (kept small: pruned)."""
        self.sync_commit: int | None = None
        """The synchronous commit the application waits for (its latest attempt)."""
        self.sync_deadline_ms = 0
        """When the synchronous commit's timer expires."""
        self.sync_attempts = 0
        """Its failed attempts so far (`attempts` in `commitOffsetsSync`, for KIP-580)."""
        self.async_in_flight: set[int] = set()
        """Asynchronous commits sent and not yet answered (`inFlightAsyncCommits`)."""
        self.empty_sync_sleeping = False
        """A synchronous commit of nothing sleeps its back-off between two looks at the
        asynchronous commits it waits for."""
        self.join_prepare_commit: int | None = None
        self.revoke_commit: int | None = None
        self.async_commit_fenced = False
        """An asynchronous commit was answered FENCED_INSTANCE_ID in its own generation
        (`asyncCommitFenced`): the next drain of commit callbacks, in `poll()`, throws."""
        self.next_auto_commit_ms = 0
        self.offset_fetch_in_flight: int | None = None
        self.on_answered: Callable[[Out, Commit], None] | None = None
        """Told of every commit's outcome once handled: the consumer protocol's membership,
        whose reconciliation and background auto-commit wait for their commits."""

    def get(self, commit_id: int | None) -> Commit | None:
        """A commit still remembered (every one in flight is)."""
        return None if commit_id is None else self.commits.get(commit_id)

    # ------------------------------------------------------------------ making commits

    def maybe_auto_commit_offsets_async(self, out: Out) -> None:
        """`maybeAutoCommitOffsetsAsync`: the positions, once the interval has passed."""
        cfg, now = self.config, self.clock.now_ms
        if not cfg.enable_auto_commit or now < self.next_auto_commit_ms:
            return
        self.next_auto_commit_ms = now + cfg.auto_commit_interval_ms
        offsets = self.subscriptions.all_consumed()
        if offsets:
            self.commit_offsets_async(out, CommitKind.AUTO, offsets)

    def reset_auto_commit_timer(self) -> None:
        """A new assignment: the next auto-commit is a whole interval away."""
        self.next_auto_commit_ms = self.clock.now_ms + self.config.auto_commit_interval_ms

    def commit_offsets_async(self, out: Out, kind: CommitKind, offsets: Offsets) -> int:
        """Send an OffsetCommit (or fail it at once, as `sendOffsetCommitRequest` does when
        the member is not STABLE); returns its commit id."""
        commit = self._new_commit(out, kind, offsets, self.clock.now_ms)
        if not offsets:
            # `sendOffsetCommitRequest` completes a commit of nothing locally, member or not.
            self._commit_answered(out, commit.commit_id, "NONE", ErrorCode.NONE)
            return commit.commit_id
        self.async_in_flight.add(commit.commit_id)
        self._send_commit(out, commit)
        return commit.commit_id

    def commit_offsets_sync(self, out: Out, kind: CommitKind, offsets: Offsets) -> None:
        """A commit the application waits for (it is blocked already): retried until its
        timer expires, then `ApplicationThread.commit_completed`. Its timer: the rebalance
        timeout for the pre-rebalance commit before 3.2 (`maybeAutoCommitOffsetsSync`), else
        `default.api.timeout.ms`."""
        now = self.clock.now_ms
        commit = self._new_commit(out, kind, offsets, now)
        self.sync_commit = commit.commit_id
        timeout = self.config.max_poll_interval_ms if kind is CommitKind.JOIN_PREPARE else self.config.default_api_timeout_ms
        self.sync_deadline_ms, self.sync_attempts = now + timeout, 0
        out.set_timer("commit-deadline", timeout)
        if kind is CommitKind.JOIN_PREPARE:
            self.join_prepare_commit = commit.commit_id
        elif kind is CommitKind.REVOKE:
            self.revoke_commit = commit.commit_id
        if not offsets and self.config.group_protocol == "classic":
            self._empty_sync_look(out, commit.commit_id)
            return
        self._send_commit(out, commit)

    def _empty_sync_look(self, out: Out, commit_id: int) -> None:
        """The classic `commitOffsetsSync` of nothing sends no request: it succeeds at once, or
        from 3.6 (KAFKA-10337, `invokePendingAsyncCommits`) once the asynchronous commits in
        flight are answered. It looks again after each answer, sleeping its back-off first if
        some are still in flight; its timer bounds the wait."""
        if self.async_in_flight and self.config.empty_commit_sync_awaits_async:
            return  # the next asynchronous commit's answer looks again
        self._commit_answered(out, commit_id, "NONE", ErrorCode.NONE)

    def _empty_sync_woken(self, out: Out) -> None:
        """An asynchronous commit was answered while a synchronous commit of nothing waits."""
        commit = self.commits.get(self.sync_commit)
        if commit is None or commit.offsets or commit.error is not None or self.empty_sync_sleeping:
            return
        if not self.async_in_flight:
            self._commit_answered(out, commit.commit_id, "NONE", ErrorCode.NONE)
            return
        remaining = self.sync_deadline_ms - self.clock.now_ms
        backoff = self.membership.retry_backoff.backoff(self.sync_attempts)
        self.sync_attempts += 1
        self.empty_sync_sleeping = True
        out.set_timer(f"commit-retry:{commit.commit_id}", min(backoff, remaining))

    def retry_commit(self, out: Out, commit_id: int) -> None:
        """commitSync sends the same offsets again after its back-off, while its timer runs
        (`while (timer.notExpired())`)."""
        commit = self.commits.get(commit_id)
        if commit is None or self.sync_commit != commit_id:
            return
        if self.clock.now_ms >= self.sync_deadline_ms:
            self.sync_deadline_passed(out)
            return
        if not commit.offsets:
            self.empty_sync_sleeping = False
            self._empty_sync_look(out, commit_id)
            return
        retry = self._new_commit(out, commit.kind, commit.offsets, commit.started_ms)
        self.sync_commit = retry.commit_id
        if self.join_prepare_commit == commit_id:
            self.join_prepare_commit = retry.commit_id
        if self.revoke_commit == commit_id:
            self.revoke_commit = retry.commit_id
        self._send_commit(out, retry)

    def abandon_sync_commit(self, out: Out) -> None:
        """close()'s timer expired: its commit is no longer retried nor waited for."""
        self._end_sync(out)

    def sync_deadline_passed(self, out: Out) -> None:
        """The synchronous commit's timer expired: no attempt is sent any more, and the call
        returns (TimeoutException to the application, which goes on)."""
        if self.sync_commit is None:
            return
        self._end_sync(out)
        self.app.commit_completed(out)

    def waiting_for(self, commit_id: int | None) -> bool:
        """Whether the application still waits for this synchronous commit."""
        return commit_id is not None and self.sync_commit == commit_id

    def _end_sync(self, out: Out) -> None:
        out.cancel_timer(f"commit-retry:{self.sync_commit}")
        out.cancel_timer("commit-deadline")
        commit = self.commits.get(self.sync_commit)
        self.sync_commit = None
        self.empty_sync_sleeping = False
        if commit is not None and not commit.offsets and commit.error is None:
            # A commit of nothing whose wait for the asynchronous commits ended unanswered:
            # no request of it is in flight to answer it later.
            self._commit_answered(out, commit.commit_id, TIMEOUT, None)

    def _new_commit(self, out: Out, kind: CommitKind, offsets: Offsets, started_ms: int) -> Commit:
        """Number and log a commit; `_send_commit` sends it. Apart, so that whoever waits for
        it knows its id before an answer given at once (a failure in the client) arrives."""
        m = self.membership
        # Commit ids and correlation ids are one sequence, as the logs have always numbered them.
        commit = Commit(self.network.next_id(), kind, dict(offsets), m.generation_id, started_ms=started_ms)
        self.commits[commit.commit_id] = commit
        out.emit(
            "offset_commit_sent",
            group_id=self.config.group_id,
            member_id=m.member_id,
            generation_id=m.generation_id,
            commit_id=commit.commit_id,
            kind=kind.value,
            offsets=_offsets(offsets),
        )
        return commit

    def _send_commit(self, out: Out, commit: Commit) -> None:
        m, cfg = self.membership, self.config
        commit_id, offsets = commit.commit_id, commit.offsets
        generation = m.generation_if_stable()
        coordinator = m.coordinator
        if generation is None:
            # RebalanceInProgressException while a rebalance is under way, CommitFailedException
            # once the member is out of its generation.
            local = "REBALANCE_IN_PROGRESS" if m.rebalance_in_progress() else COMMIT_FAILED
            self._commit_answered(out, commit_id, local, None)
        elif coordinator is None:
            # The commit fails as retriable; the lookup starts, as `commitOffsetsSync` and
            # `commitOffsetsAsync` look the coordinator up before sending.
            m.lookup_coordinator(out)
            self._commit_answered(out, commit_id, "COORDINATOR_NOT_AVAILABLE", ErrorCode.COORDINATOR_NOT_AVAILABLE)
        else:
            topics = tuple(
                OffsetCommitTopic(t.topic, tuple(OffsetCommitPartition(p, *offsets[TopicPartition(t.topic, p)]) for p in t.partitions))
                for t in by_topic(sorted(offsets))
            )
            request = OffsetCommitRequest(cfg.group_id, generation.generation_id, generation.member_id, cfg.group_instance_id, topics)
            self.network.send_to_coordinator(out, coordinator, "commit", request, on_failure=self._commit_failed, detail=commit_id)

    # ------------------------------------------------------------------ answers

    def on_commit_response(self, out: Out, commit_id: int, resp: OffsetCommitResponse) -> None:
        error = next((p.error_code for p in resp.partitions), ErrorCode.NONE)
        self._commit_answered(out, commit_id, error.name, error)

    def _commit_failed(self, out: Out, correlation_id: int, request: InFlight, error: str) -> None:
        self._commit_answered(out, request.detail, error, None)

    def _commit_answered(self, out: Out, commit_id: int, outcome: str, error: ErrorCode | None) -> None:
        """`OffsetCommitResponseHandler`: log the outcome, react to the error, and wake what
        waits for it (commitSync retries retriable errors until `default.api.timeout.ms`)."""
        m, cfg = self.membership, self.config
        commit = self.commits.get(commit_id)
        if commit is None or commit.error is not None:
            return
        commit.error = outcome
        self.async_in_flight.discard(commit_id)
        out.emit(
            "offset_commit_answered",
            group_id=cfg.group_id,
            member_id=m.member_id,
            commit_id=commit_id,
            kind=commit.kind.value,
            error=outcome,
        )
        if error in COORDINATOR_ERRORS or error is ErrorCode.REQUEST_TIMED_OUT:
            m.mark_coordinator_unknown(out, error.name, "OffsetCommit")
        elif error is ErrorCode.REBALANCE_IN_PROGRESS:
            m.request_rejoin()
        elif error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION) and m.generation_id == commit.generation_id:
            keep = error is ErrorCode.ILLEGAL_GENERATION and cfg.keep_member_id_on_illegal_generation
            m.reset_generation(out, error.name, keep_member_id=keep)
        elif error is ErrorCode.FENCED_INSTANCE_ID and m.generation_id == commit.generation_id:
            # FencedInstanceIdException, fatal. The application's commitSync throws it at
            # once (from `onPartitionsRevoked`, out of `poll()`); an asynchronous commit's
            # failure is thrown by the next `poll()`; a synchronous auto-commit (`close()`,
            # the pre-rebalance commit before 3.2) only logs it.
            if commit.kind in (CommitKind.SYNC, CommitKind.REVOKE):
                if self.sync_commit == commit_id:
                    self._end_sync(out)
                self.app.fail(out, "OffsetCommit: FENCED_INSTANCE_ID")
                return
            if self.sync_commit != commit_id:
                self.async_commit_fenced = True
        if commit.kind is CommitKind.AUTO and is_retriable(outcome):
            self.next_auto_commit_ms = self.clock.now_ms + cfg.retry_backoff_ms
        if self.sync_commit == commit_id:
            # A retriable failure sleeps its back-off, cut short at the timer's deadline
            # (`Timer.sleep`): a retry is sent only before the deadline (`retry_commit`).
            remaining = self.sync_deadline_ms - self.clock.now_ms
            if is_retriable(outcome) and remaining > 0:
                backoff = self.membership.retry_backoff.backoff(self.sync_attempts)
                self.sync_attempts += 1
                out.set_timer(f"commit-retry:{commit_id}", min(backoff, remaining))
                return
            self._end_sync(out)
            self.app.commit_completed(out)
        if self.on_answered is not None:
            self.on_answered(out, commit)
        if self.sync_commit is not None and commit_id != self.sync_commit:
            self._empty_sync_woken(out)
        self._prune_commits()

    def _prune_commits(self) -> None:
        """Keep the answered commits only while something may still look them up."""
        keep = {self.join_prepare_commit, self.revoke_commit, self.sync_commit}
        for commit_id in [c for c, commit in self.commits.items() if commit.error is not None and c not in keep]:
            del self.commits[commit_id]

    # ------------------------------------------------------------------ committed offsets

    def refresh_committed_offsets_if_needed(self, out: Out) -> None:
        """`updateFetchPositions`: committed offsets for partitions without a position."""
        missing = self.subscriptions.needing_position(self.clock.now_ms)
        coordinator = self.membership.coordinator
        if not missing or self.offset_fetch_in_flight is not None or coordinator is None:
            return
        member_id, member_epoch = self.membership.offset_fetch_member()
        request = OffsetFetchRequest(self.config.group_id, by_topic(missing), member_id=member_id, member_epoch=member_epoch)
        self.offset_fetch_in_flight = self.network.send_to_coordinator(
            out, coordinator, "offset_fetch", request, on_failure=self._offset_fetch_failed
        )

    def on_offset_fetch_response(self, out: Out, correlation_id: int, resp: OffsetFetchResponse) -> None:
        if correlation_id != self.offset_fetch_in_flight:
            return
        self.offset_fetch_in_flight = None
        if resp.error_code in COORDINATOR_ERRORS:
            self.membership.mark_coordinator_unknown(out, resp.error_code.name, "OffsetFetch")
            return
        if resp.error_code in OFFSET_FETCH_MEMBER_ERRORS:
            # 3.9's AsyncKafkaConsumer throws these out of poll(); the application here catches
            # them and polls again, which asks again with the member's epoch of then.
            member_id = self.membership.member_id
            out.emit("offset_fetch_failed", group_id=self.config.group_id, member_id=member_id, error=resp.error_code.name)
            return
        if resp.error_code is not ErrorCode.NONE:
            return  # retried in the next poll
        reset: list[TopicPartition] = []
        for topic in resp.topics:
            for p in topic.partitions:
                tp = TopicPartition(topic.name, p.partition)
                state = self.subscriptions.assigned.get(tp)
                if state is None or state.position is not None or state.awaiting_reset is not None:
                    continue
                if p.committed_offset >= 0:
                    self.positions.set_position(out, tp, p.committed_offset, p.committed_leader_epoch, "committed")
                else:
                    reset.append(tp)
        self.positions.reset_positions(out, reset)

    def _offset_fetch_failed(self, out: Out, correlation_id: int, request: InFlight, error: str) -> None:
        self.offset_fetch_in_flight = None


OFFSET_FETCH_MEMBER_ERRORS = frozenset({ErrorCode.STALE_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID})
"""A consumer group's answers to an OffsetFetch naming a member it does not have at that epoch."""


def _offsets(offsets: Offsets) -> list[list[Any]]:
    return [[tp.topic, tp.partition, offset] for tp, (offset, _) in sorted(offsets.items())]
