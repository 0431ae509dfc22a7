"""The consumer protocol's client-side reconciliation (KIP-848): Kafka's
`MembershipManagerImpl.maybeReconcile` (3.7 to 3.9) and
`AbstractMembershipManager.maybeReconcile(canCommit)` (4.x), with the auto-commit before a
revocation (`CommitRequestManager.maybeAutoCommitSyncBeforeRevocation`).

The steps, once the member is RECONCILING a target that differs from what it owns:
1. the revoked partitions (owned - target) are marked pending revocation: no more fetches,
   and their buffered records are not returned;
2. with auto-commit, `allConsumed()` is committed, waited for and retried (retriable errors,
   and STALE_MEMBER_EPOCH with the newest epoch, each retry with the positions of then) until
   the rebalance timeout (`max.poll.interval.ms`) from the start; a failure that will not be
   retried lets the reconciliation go on all the same;
3. `onPartitionsRevoked(revoked)`: with `commit = on_revoke` (or `processed`) the application's
   listener commits them synchronously; the listener runs on the application thread, so the
   reconciliation waits for the application's next `poll()`;
4. the assignment becomes the target; 5. `onPartitionsAssigned(added)`; 6. the auto-commit
   timer restarts; 7. ACKNOWLEDGING: a heartbeat goes at once with the new owned partitions.

By version: 3.7 to 3.9 send step 2's commit before step 1 (KAFKA-16460: polls go on returning
the revoked partitions' records until the commit is answered, past the offsets it carries) and
start at once on the background thread; 4.0 marks first, and starts only from an application
`poll()` (whose positions are then safe to commit). A reconciliation is dropped when the member
leaves RECONCILING meanwhile (fenced, leaving, failed).

Part of `ConsumerMembershipManager` (its base class), apart for size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from actors.consumer.commits import Commit, CommitKind, is_retriable
from actors.consumer.member_state import MemberState
from actors.core import Out
from protocols.types import TopicPartition

__all__ = ["Reconciliation", "Reconciler"]

COMMIT_RETRY = "cg-commit-retry"


@dataclass(slots=True)
class Reconciliation:
    target: tuple[TopicPartition, ...]
    local_epoch: int
    revoked: list[TopicPartition]
    added: list[TopicPartition]
    deadline_ms: int
    commit_id: int | None = None
    commit_attempts: int = 0
    step: str = "commit"
    """`commit` (step 2), `callback` (step 3, waiting for the application), `done`."""


class Reconciler:
    if TYPE_CHECKING:
        config: Any
        clock: Any
        subscriptions: Any
        commits: Any
        app: Any
        state: MemberState
        member_epoch: int
        target: tuple[TopicPartition, ...]
        target_local_epoch: int
        current: tuple[TopicPartition, ...]
        current_local_epoch: int
        reconciliation: Reconciliation | None
        retry_backoff: Any
        member_id: str

        def transition_to(self, out: Out, state: MemberState) -> None: ...
        def heartbeat(self, out: Out) -> None: ...
        def _release(self, out: Out, partitions: list[TopicPartition], how: str, reason: str) -> None: ...

    def maybe_reconcile(self, out: Out) -> None:
        if self.state is not MemberState.RECONCILING or self.reconciliation is not None:
            return
        if self.target == self.current:
            return
        owned = self.subscriptions.owned()
        target = set(self.target)
        revoked = [tp for tp in owned if tp not in target]
        added = [tp for tp in self.target if tp not in set(owned)]
        now = self.clock.now_ms
        r = Reconciliation(self.target, self.target_local_epoch, revoked, added, now + self.config.max_poll_interval_ms)
        self.reconciliation = r
        if self.config.pending_revocation_before_reconcile_commit:
            self.subscriptions.mark_pending_revocation(revoked)
        if self.config.enable_auto_commit and self.subscriptions.all_consumed():
            self._send_reconcile_commit(out, r)
            return
        self._revoke_and_assign(out, r)

    def _send_reconcile_commit(self, out: Out, r: Reconciliation) -> None:
        r.commit_id = self.commits.commit_offsets_async(out, CommitKind.JOIN_PREPARE, self.subscriptions.all_consumed())
        self.commits.join_prepare_commit = r.commit_id  # kept until answered and looked at

    def on_commit_answered(self, out: Out, commit: Commit) -> None:
        """`CommitRequestManager`'s answer to a commit: step 2 goes on, or is retried."""
        r = self.reconciliation
        if r is None or r.step != "commit" or commit.commit_id != r.commit_id:
            return
        self.commits.join_prepare_commit = None
        outcome = commit.error or ""
        retry = is_retriable(outcome) or (outcome == "STALE_MEMBER_EPOCH" and self.member_epoch > 0)
        if retry and self.clock.now_ms < r.deadline_ms and not self._aborted(r):
            backoff = self.retry_backoff.backoff(r.commit_attempts)
            r.commit_attempts += 1
            r.commit_id = None
            out.set_timer(COMMIT_RETRY, backoff)
            return
        self._revoke_and_assign(out, r)

    def retry_reconcile_commit(self, out: Out) -> None:
        r = self.reconciliation
        if r is None or r.step != "commit" or r.commit_id is not None:
            return
        if self._aborted(r):
            return
        self._send_reconcile_commit(out, r)

    def _aborted(self, r: Reconciliation) -> bool:
        """`maybeAbortReconciliation`: the member left RECONCILING (or this reconciliation is
        not the member's any more)."""
        if self.state is not MemberState.RECONCILING or self.reconciliation is not r:
            if self.reconciliation is r:
                self.reconciliation = None
            return True
        return False

    def _revoke_and_assign(self, out: Out, r: Reconciliation) -> None:
        if self._aborted(r):
            return
        self.subscriptions.mark_pending_revocation([tp for tp in r.revoked if tp in self.subscriptions.assigned])
        if r.revoked and self.config.app_commit.listener_commits:
            r.step = "callback"  # `onPartitionsRevoked` runs in the application's next poll()
            return
        self._finish(out, r)

    def run_callbacks(self, out: Out) -> bool:
        """The application thread runs the rebalance callbacks waiting for it (in `poll()`).
        False while the listener's commit is in flight (the application waits)."""
        r = self.reconciliation
        if r is None or r.step != "callback":
            return True
        if self._aborted(r):
            return True
        commits = self.commits
        if commits.revoke_commit is None:
            offsets = self.app.revoked_offsets(out, r.revoked)
            if offsets is not None:  # None: the listener waits for the application's workers
                self.app.block_on_commit(out)
                commits.commit_offsets_sync(out, CommitKind.REVOKE, offsets)
            return False
        if commits.waiting_for(commits.revoke_commit):
            return False
        commits.revoke_commit = None
        self._finish(out, r)
        return True

    def _finish(self, out: Out, r: Reconciliation) -> None:
        """Steps 3 to 7: the revocation, the new assignment, the acknowledgement."""
        r.step = "done"
        if r.revoked:
            self._release(out, r.revoked, "revoked", "reconciliation")
        self.subscriptions.assign(r.added)
        self.current, self.current_local_epoch = r.target, r.local_epoch
        out.emit(
            "partitions_assigned",
            group_id=self.config.group_id,
            member_id=self.member_id,
            generation_id=self.member_epoch,
            partitions=[str(tp) for tp in r.added],
            assignment=[str(tp) for tp in self.subscriptions.owned()],
        )
        self.commits.reset_auto_commit_timer()
        self.reconciliation = None
        self.transition_to(out, MemberState.ACKNOWLEDGING)
        self.heartbeat(out)
