"""Leaving the group from the application's side: `close()`, `unsubscribe()`, and what the
application's `onPartitionsRevoked` commits (the positions, or with workers what they
finished, once they are done with the revoked partitions).

A part of `behavior.Consumer` (its base class), apart for size: it uses the consumer's
coordinator, subscriptions, commits, network, workers and its synchronous-commit and stop
steps (`_commit_sync`, `block_on_commit`, `_stop`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from actors.consumer.commits import CommitKind
from actors.consumer.config import AppCommit
from actors.consumer.group_membership import NO_GENERATION
from actors.consumer.subscription_state import Offsets
from actors.core import Out
from protocols.types import TopicPartition

__all__ = ["CLOSE_TIMEOUT_MS", "Leaving"]

CLOSE_TIMEOUT_MS = 30_000
"""`KafkaConsumer.DEFAULT_CLOSE_TIMEOUT_MS`: how long `close()` may take."""


class Leaving:
    if TYPE_CHECKING:
        config: Any
        clock: Any
        network: Any
        membership: Any
        subscriptions: Any
        commits: Any
        processing: Any
        workers: Any
        close_phase: str
        close_deadline_ms: int
        unsubscribing: bool
        blocked_then: str
        listener_waiting: tuple[list[TopicPartition], str] | None

        def _commit_sync(self, out: Out, kind: CommitKind, offsets: Offsets, then: str) -> None: ...
        def block_on_commit(self, out: Out, then: str = "poll") -> None: ...
        def _stop(self, out: Out) -> None: ...

    def _close(self, out: Out) -> None:
        """`close()` (`ConsumerCoordinator.close`): a synchronous auto-commit
        (`maybeAutoCommitOffsetsSync`), then `AbstractCoordinator.close`. A second call
        returns at once."""
        if self.close_phase == "closed":
            out.emit("consumer_closed", group_id=self.config.group_id, member_id=self.membership.member_id)
        if self.close_phase:
            return
        self.close_phase = "commit"
        timeout_ms = min(CLOSE_TIMEOUT_MS, self.config.request_timeout_ms)
        self.close_deadline_ms = self.clock.now_ms + timeout_ms
        out.set_timer("close-timeout", timeout_ms)
        if self.config.enable_auto_commit and self.subscriptions.all_consumed() and self.membership.generation_id != NO_GENERATION:
            self._commit_sync(out, CommitKind.CLOSE, self.subscriptions.all_consumed(), then="close")
            return
        self._finish_close(out)

    def _finish_close(self, out: Out) -> None:
        """`AbstractCoordinator.close`: the heartbeat thread stops; `onLeavePrepare` and
        LeaveGroup; then close waits for the requests still pending to the coordinator, the
        LeaveGroup among them (`awaitPendingRequests`, bounded by their request timeout), so
        that a process exiting after close() does not cut its LeaveGroup off. With
        `commit = on_revoke` the listener's commitSync comes first: its own call, on its own
        timer (`default.api.timeout.ms`), which close()'s timer does not cut short."""
        if self.close_phase == "commit" and self._listener_commit_due():
            self.close_phase = "revoke"  # first: a commit of nothing completes at once
            self._listener_commit(out, then="close")
            return
        self.membership.leave_group(out, "close")
        self._stop(out)
        self.close_phase = "leave"
        self._maybe_closed(out)

    def _close_timed_out(self, out: Out) -> None:
        """close()'s timer expired (`createTimerForRequest`: its 30 s, at most
        `request.timeout.ms`): its commit still retrying is given up, and close() returns
        without waiting for the requests still pending (`_maybe_closed`)."""
        if self.close_phase == "commit" and self.commits.sync_commit is not None:
            self.commits.abandon_sync_commit(out)
            self.blocked_then = ""
            self._finish_close(out)

    def _maybe_closed(self, out: Out) -> None:
        if self.close_phase != "leave":
            return
        pending = self.network.has_pending_to_coordinator(self.membership.coordinator)
        if pending and self.clock.now_ms < self.close_deadline_ms:
            return
        out.cancel_timer("close-timeout")
        self.close_phase = "closed"
        out.emit("consumer_closed", group_id=self.config.group_id, member_id=self.membership.member_id)

    def _unsubscribe(self, out: Out) -> None:
        """`ClassicKafkaConsumer.unsubscribe`: the buffered records are dropped, `onLeavePrepare`
        revokes the partitions and LeaveGroup is sent (`maybeLeaveGroup`, not waited for), then
        the subscription is cleared. Unlike close(), it commits nothing itself: unless the
        application's `onPartitionsRevoked` commits (`commit = on_revoke`, waited for before
        LeaveGroup), what was processed since the last commit is processed again by the
        partitions' next owner."""
        member = self.membership.member_id
        if not self.unsubscribing and self._listener_commit_due():
            self.unsubscribing = True  # first: a commit of nothing completes at once
            self._listener_commit(out, then="unsubscribe")
            return
        self.membership.leave_group(out, "unsubscribe")
        out.emit("consumer_unsubscribed", group_id=self.config.group_id, member_id=member)
        self.membership.reset_generation_on_leave_group()
        self._stop(out)

    def _listener_commit_due(self) -> bool:
        """With `commit = on_revoke` or `processed`, the `onPartitionsRevoked` that
        `onLeavePrepare` is about to call commits the partitions synchronously
        (`onPartitionsLost` does not)."""
        owned = self.subscriptions.owned()
        return self.config.app_commit.listener_commits and bool(owned) and not self.membership.partitions_lost_on_leave()

    def _listener_commit(self, out: Out, then: str) -> None:
        """That commit: the application waits for it, then goes on with `then`, which runs
        at once when the commit completes in the client (a commit of nothing)."""
        offsets = self._revoked_offsets(out, self.subscriptions.owned(), then)
        if offsets is not None:
            self._commit_sync(out, CommitKind.REVOKE, offsets, then=then)

    def revoked_offsets(self, out: Out, partitions: list[TopicPartition]) -> Offsets | None:
        return self._revoked_offsets(out, partitions, "poll")

    def _revoked_offsets(self, out: Out, partitions: list[TopicPartition], then: str) -> Offsets | None:
        """`onPartitionsRevoked`'s commit: the positions (`on_revoke`), or what was processed
        (`processed`) once the workers are done with the partitions' records, queued ones
        included; until then the application waits in the listener."""
        if self.config.app_commit is not AppCommit.PROCESSED:
            return self.subscriptions.consumed_of(partitions)
        if self.workers is not None and self.workers.holds(partitions):
            self.listener_waiting = (partitions, then)
            self.block_on_commit(out, then)
            return None
        return self.processing.finished_of(partitions)
