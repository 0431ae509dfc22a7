"""The consumer protocol's group membership (KIP-848, `group.protocol = consumer`): Kafka's
`AsyncKafkaConsumer` membership, `MembershipManagerImpl` (3.7 to 3.9), later
`AbstractMembershipManager` and `ConsumerMembershipManager` (4.x), driven by its
`HeartbeatRequestManager` (`heartbeat_request.py`); the reconciliation is `reconciliation.py`.

What it models of the Java consumer:
- the coordinator found by FindCoordinator as the classic consumer finds it (a bootstrap
  broker, the next one and a back-off after a failure);
- joining: a heartbeat at epoch 0 with every field; the member id is "" until the answer gives
  one (3.7 to 3.9), or, from 4.0 (KIP-1082), a UUID the client drew when it started, kept for
  the life of the process, rejoins included;
- the answer's member epoch and target assignment: a target that differs from what the member
  owns makes it RECONCILING; one equal to it makes a joining or reconciling member STABLE;
- errors (`HeartbeatRequestManager.onErrorResponse`): FENCED_MEMBER_EPOCH and
  UNKNOWN_MEMBER_ID fence it (its partitions are lost, no commit; epoch 0; it rejoins at once);
  NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE send it looking for the coordinator;
  COORDINATOR_LOAD_IN_PROGRESS backs off; anything else (UNRELEASED_INSTANCE_ID,
  FENCED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED, UNSUPPORTED_ASSIGNOR, INVALID_REQUEST,
  UNSUPPORTED_VERSION...) is fatal: `poll()` throws and the application stops;
- leaving and the poll timer (`member_leaving.py`);
- auto-commit: 3.7 to 3.9 on the background thread at its interval, of the positions of that
  moment (KAFKA-18641: records returned and not yet processed included); from 4.0 in the
  application's `poll()`, of the positions before it returns anything (those of the earlier
  polls), as the classic consumer does;
- a commit carries the member epoch (OffsetCommit v9) while the member has a positive one,
  else -1 and no member id. A commit's error never changes the membership (only heartbeats
  do): the commit fails (CommitFailedException, StaleMemberEpochException) and that is all.

Logged with the classic consumer's events, `generation_id` carrying the member epoch, and
`membership_state_changed` at each transition.
Left out: subscription changes and regular expressions (the topics are fixed), topic ids,
rack ids, the rebalance callbacks' errors.
"""

from __future__ import annotations

import random
import uuid
from typing import Any

from actors.backoff import RetryBackoff
from actors.consumer.application import ApplicationThread
from actors.consumer.commits import Commit, CommitRequestManager
from actors.consumer.config import ConsumerConfig
from actors.consumer.group_membership import COORDINATOR_ERRORS, Generation
from actors.consumer.heartbeat_request import HeartbeatRequestState, HeartbeatState
from actors.consumer.member_state import MemberState, check_transition
from actors.consumer.network import DISCONNECTED, Clock, InFlight, NetworkClient
from actors.consumer.member_leaving import MemberLeaving
from actors.consumer.reconciliation import COMMIT_RETRY, Reconciler, Reconciliation
from actors.consumer.subscription_state import SubscriptionState
from actors.core import Out
from protocols.errors import ErrorCode
from protocols.group import (
    ConsumerGroupHeartbeatResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from protocols.types import TopicPartition

__all__ = ["ConsumerMembershipManager"]

HEARTBEAT = "cg-heartbeat"
POLL_TIMEOUT = "cg-poll-timeout"
AUTO_COMMIT = "cg-auto-commit"
FIND_BACKOFF = "find-backoff"


class ConsumerMembershipManager(Reconciler, MemberLeaving):
    commits: CommitRequestManager
    """Set by the consumer once both exist."""

    def __init__(
        self, config: ConsumerConfig, clock: Clock, network: NetworkClient, subscriptions: SubscriptionState, app: ApplicationThread
    ) -> None:
        self.config = config
        self.clock = clock
        self.network = network
        self.subscriptions = subscriptions
        self.app = app
        self.state = MemberState.UNSUBSCRIBED
        self._member_id = ""
        self.member_epoch = 0
        self._coordinator: int | None = None
        self.retry_backoff = RetryBackoff(config.retry_backoff_ms, config.retry_backoff_max_ms, config.exponential_retry_backoff)
        self.requests = HeartbeatRequestState(config, clock, self.retry_backoff)
        self.fields = HeartbeatState(config)
        self.target: tuple[TopicPartition, ...] = ()
        self.target_local_epoch = 0
        self.current: tuple[TopicPartition, ...] = ()
        self.current_local_epoch = 0
        self.reconciliation: Reconciliation | None = None
        self.leave_in_flight: int | None = None
        self.poll_timer_expired = False
        """`isPollTimerExpired`: the leave under way is the poll timer's (the member goes STALE)."""
        self.find_in_flight: int | None = None
        self.find_attempts = 0
        self.closed = False

    def start(self, rng: random.Random) -> None:
        """The process starts: from 4.0 the member id is drawn now, once (KIP-1082)."""
        self.retry_backoff.rng = rng
        if self.config.client_generated_member_id:
            self._member_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))

    # ------------------------------------------------------------------ who the member is

    @property
    def member_id(self) -> str:
        return self._member_id

    @property
    def generation_id(self) -> int:
        return self.member_epoch

    @property
    def coordinator(self) -> int | None:
        return self._coordinator

    def generation_if_stable(self) -> Generation | None:
        """What a commit carries: the member epoch while positive (`MemberInfo`), else -1 and
        no member id. Never None: the consumer protocol refuses nothing in the client."""
        if self.member_epoch > 0:
            return Generation(self.member_epoch, self._member_id)
        return Generation(-1, "")

    def offset_fetch_member(self) -> tuple[str | None, int]:
        """`CommitRequestManager.MemberInfo`: set while the member epoch is positive, emptied
        when it falls to 0 or below (`onMemberEpochUpdated`)."""
        return (self._member_id, self.member_epoch) if self.member_epoch > 0 else (None, -1)

    def rebalance_in_progress(self) -> bool:
        return self.state in (MemberState.RECONCILING, MemberState.ACKNOWLEDGING)

    def snapshot(self) -> dict[str, Any]:
        return {"state": self.state.value, "member_id": self._member_id, "generation_id": self.member_epoch, "coordinator": self._coordinator}

    def transition_to(self, out: Out, state: MemberState) -> None:
        before = self.state
        if before is state and state is not MemberState.RECONCILING:
            return
        check_transition(before, state)
        self.state = state
        out.emit(
            "membership_state_changed",
            group_id=self.config.group_id,
            member_id=self._member_id,
            generation_id=self.member_epoch,
            previous_state=before.value,
            state=state.value,
        )

    # ------------------------------------------------------------------ the coordinator

    def lookup_coordinator(self, out: Out) -> None:
        if self.find_in_flight is not None or self._coordinator is not None or self.closed:
            return
        request = FindCoordinatorRequest(self.config.group_id)
        self.find_in_flight = self.network.send(out, self.network.least_loaded_node(), "find", request, on_failure=self._find_failed)

    def _on_find_coordinator(self, out: Out, resp: FindCoordinatorResponse) -> None:
        self.find_in_flight = None
        if resp.error_code is not ErrorCode.NONE or resp.node_id < 0:
            self._find_failed(out, 0, None, resp.error_code.name)  # type: ignore[arg-type]
            return
        self.find_attempts = 0
        self._coordinator = resp.node_id
        out.emit("coordinator_discovered", group_id=self.config.group_id, coordinator=resp.node_id)
        self.heartbeat(out)
        self._maybe_auto_commit_in_background(out)

    def _find_failed(self, out: Out, correlation_id: int, request: InFlight, error: str) -> None:
        self.find_in_flight = None
        self.network.try_next_node()
        out.set_timer(FIND_BACKOFF, self.retry_backoff.backoff(self.find_attempts))
        self.find_attempts += 1

    def mark_coordinator_unknown(self, out: Out, reason: str, request: str = "") -> None:
        old = self._coordinator
        if old is None:
            return
        self._coordinator = None
        out.emit("coordinator_lost", group_id=self.config.group_id, coordinator=old, reason=reason, request=request)
        self.network.fail_requests(out, old, coordinator_only=True)
        self.lookup_coordinator(out)

    def on_disconnect(self, out: Out, broker: int) -> None:
        if broker == self._coordinator:
            self.mark_coordinator_unknown(out, DISCONNECTED)

    # ------------------------------------------------------------------ the application's poll

    def poll_heartbeat(self, out: Out) -> None:
        """The application called `poll()`: the poll timer restarts, a STALE member (or one
        not yet subscribed) joins; from 4.0 the auto-commit and the reconciliation run here."""
        if self.closed:
            return
        self.requests.poll()
        out.set_timer(POLL_TIMEOUT, self.config.max_poll_interval_ms)
        self.poll_timer_expired = False
        if self.state in (MemberState.UNSUBSCRIBED, MemberState.STALE):
            self._transition_to_joining(out)  # `subscribe`, or `maybeRejoinStaleMember`
        if self.config.auto_commit_positions_at_poll and self._coordinator is not None:
            self.commits.maybe_auto_commit_offsets_async(out)
        if self.config.reconcile_on_application_poll:
            self.maybe_reconcile(out)
        self.heartbeat(out)

    def poll(self, out: Out) -> None:
        """Each pass of `poll()`'s loop: look for the coordinator, and run the rebalance
        callbacks waiting for the application thread."""
        if self._coordinator is None:
            self.lookup_coordinator(out)
        self.run_callbacks(out)

    # ------------------------------------------------------------------ heartbeats

    def heartbeat(self, out: Out) -> None:
        """`HeartbeatRequestManager.poll`: send a heartbeat if one is due, else wake up when one is."""
        if self.closed:
            return
        if self._coordinator is None or self.state.skips_heartbeat:
            if self.state is MemberState.LEAVING:
                self.transition_to(out, MemberState.UNSUBSCRIBED)  # `onHeartbeatRequestSkipped`
            return
        r = self.requests
        if r.poll_timer_expired() and self.state not in (MemberState.PREPARE_LEAVING, MemberState.LEAVING):
            self._leave_on_poll_timeout(out)
            return
        now_due = self.state is MemberState.LEAVING or (self.state.heartbeats_now and r.in_flight is None)
        if not now_due and not r.can_send():
            if r.in_flight is None:
                out.set_timer(HEARTBEAT, max(0, r.next_due_ms() - self.clock.now_ms))
            return
        self._send_heartbeat(out)

    def _send_heartbeat(self, out: Out) -> int:
        joining = self.state is MemberState.JOINING
        owned = list(self.current) if self.state is not MemberState.LEAVING else []
        request = self.fields.build(self._member_id, self.member_epoch, joining=joining, local_epoch=self.current_local_epoch, owned=owned)
        cid = self.network.send_to_coordinator(out, self._coordinator, HEARTBEAT, request, on_failure=self._heartbeat_failed)
        self.requests.on_send(cid)
        out.set_timer(HEARTBEAT, self.requests.interval_ms)
        # `onHeartbeatRequestGenerated`
        if self.state is MemberState.ACKNOWLEDGING:
            self.transition_to(out, MemberState.STABLE if self.target == self.current else MemberState.RECONCILING)
            if self.state is MemberState.RECONCILING and not self.config.reconcile_on_application_poll:
                self.maybe_reconcile(out)
        elif self.state is MemberState.LEAVING:
            self.leave_in_flight = cid
            self.requests.in_flight = None  # a leave's answer is not waited for
            self.transition_to(out, MemberState.STALE if self.poll_timer_expired else MemberState.UNSUBSCRIBED)
        return cid

    def _on_heartbeat_response(self, out: Out, correlation_id: int, resp: ConsumerGroupHeartbeatResponse) -> None:
        if correlation_id == self.leave_in_flight:
            self.leave_in_flight = None
            return  # the member has left: whatever the answer, the leave is done
        if correlation_id != self.requests.in_flight:
            return
        error = resp.error_code
        if error is ErrorCode.NONE:
            self.requests.on_success(resp.heartbeat_interval_ms)
            self._on_success(out, resp)
        else:
            self._on_error(out, error)
        self.heartbeat(out)

    def _on_success(self, out: Out, resp: ConsumerGroupHeartbeatResponse) -> None:
        """`onHeartbeatSuccess`."""
        if not self.state.in_group or self.state is MemberState.LEAVING:
            return
        if resp.member_id is not None:
            self._member_id = resp.member_id
        self.member_epoch = resp.member_epoch
        if resp.assignment is None or not self.state.takes_assignment:
            return
        target = tuple(sorted(TopicPartition(t.topic, p) for t in resp.assignment.topic_partitions for p in t.partitions))
        if target != self.target:
            self.target, self.target_local_epoch = target, self.target_local_epoch + 1
        if self.target != self.current:
            self.transition_to(out, MemberState.RECONCILING)
            if not self.config.reconcile_on_application_poll:
                self.maybe_reconcile(out)  # the background thread reconciles at once
        elif self.state in (MemberState.RECONCILING, MemberState.JOINING):
            self.transition_to(out, MemberState.STABLE)

    def _on_error(self, out: Out, error: ErrorCode) -> None:
        """`onErrorResponse`: the next request is full; the back-off grows."""
        self.fields.reset()
        self.requests.on_failure()
        if error in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
            self.requests.reset()
            self._transition_to_fenced(out, error.name)
        elif error in COORDINATOR_ERRORS:
            self.requests.reset()
            self.mark_coordinator_unknown(out, error.name, "ConsumerGroupHeartbeat")
        elif error is not ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            self._transition_to_fatal(out, f"ConsumerGroupHeartbeat: {error.name}")

    def _heartbeat_failed(self, out: Out, correlation_id: int, request: InFlight, error: str) -> None:
        """The request failed in the client (its connection closed, it timed out): retried
        after the back-off, full."""
        if correlation_id == self.leave_in_flight:
            self.leave_in_flight = None
            return
        if correlation_id != self.requests.in_flight:
            return
        self.fields.reset()
        self.requests.on_failure()
        self.heartbeat(out)

    # ------------------------------------------------------------------ fencing, failing, joining

    def _transition_to_joining(self, out: Out) -> None:
        if self.state is MemberState.FATAL:
            return
        self.member_epoch = 0
        self.reconciliation = None
        self.target, self.current = (), ()
        self.transition_to(out, MemberState.JOINING)

    def _transition_to_fenced(self, out: Out, reason: str) -> None:
        if self.state in (MemberState.PREPARE_LEAVING, MemberState.LEAVING, MemberState.UNSUBSCRIBED):
            if self.state is not MemberState.UNSUBSCRIBED:
                self.transition_to(out, MemberState.UNSUBSCRIBED)  # it was leaving: it has left
            return
        out.emit("member_reset", group_id=self.config.group_id, member_id=self._member_id, generation_id=self.member_epoch, reason=reason)
        self.transition_to(out, MemberState.FENCED)
        self.member_epoch = 0
        self._release(out, self.subscriptions.owned(), "lost", "fenced")
        self._transition_to_joining(out)

    def _transition_to_fatal(self, out: Out, error: str) -> None:
        before = self.state
        self.transition_to(out, MemberState.FATAL)
        if before not in (MemberState.UNSUBSCRIBED, MemberState.LEAVING, MemberState.PREPARE_LEAVING):
            self._release(out, self.subscriptions.owned(), "lost", "fatal")
        self.app.fail(out, error)

    def _release(self, out: Out, partitions: list[TopicPartition], how: str, reason: str) -> None:
        """`onPartitionsRevoked` or `onPartitionsLost`, then the partitions go."""
        if partitions:
            out.emit(
                f"partitions_{how}",
                group_id=self.config.group_id,
                member_id=self._member_id,
                generation_id=self.member_epoch,
                partitions=[str(tp) for tp in partitions],
                reason=reason,
            )
        self.subscriptions.remove(partitions)

    def stop(self, out: Out) -> None:
        self.closed = True
        for timer in (HEARTBEAT, POLL_TIMEOUT, AUTO_COMMIT, COMMIT_RETRY, FIND_BACKOFF):
            out.cancel_timer(timer)

    def request_rejoin(self) -> None:
        """REBALANCE_IN_PROGRESS answers no consumer-protocol commit: nothing to do."""

    def reset_generation(self, out: Out, reason: str, *, keep_member_id: bool) -> None:
        """A commit answered UNKNOWN_MEMBER_ID fails (CommitFailedException); only a heartbeat
        answer fences a consumer-protocol member."""

    # ------------------------------------------------------------------ auto-commit (3.7 to 3.9)

    def _maybe_auto_commit_in_background(self, out: Out) -> None:
        """3.7 to 3.9: `CommitRequestManager.poll` on the background thread auto-commits the
        positions of the moment once the interval has passed, with the coordinator known and no
        auto-commit in flight."""
        if self.config.auto_commit_positions_at_poll or not self.config.enable_auto_commit or self.closed:
            return
        commits, now = self.commits, self.clock.now_ms
        if self._coordinator is not None and not self._auto_commit_in_flight():
            commits.maybe_auto_commit_offsets_async(out)
        out.set_timer(AUTO_COMMIT, max(1, commits.next_auto_commit_ms - now))

    def _auto_commit_in_flight(self) -> bool:
        return any(c.error is None and c.kind.value == "auto" for c in self.commits.commits.values())

    # ------------------------------------------------------------------ answers and timers

    def on_response(self, out: Out, correlation_id: int, request: InFlight, message: Any) -> None:
        match message:
            case FindCoordinatorResponse():
                self._on_find_coordinator(out, message)
            case ConsumerGroupHeartbeatResponse():
                self._on_heartbeat_response(out, correlation_id, message)

    def on_commit_answered(self, out: Out, commit: Commit) -> None:
        super().on_commit_answered(out, commit)
        if commit.kind.value == "auto":
            self._maybe_auto_commit_in_background(out)

    def on_timer(self, out: Out, kind: str) -> None:
        if kind in (HEARTBEAT, POLL_TIMEOUT):
            self.heartbeat(out)
        elif kind == AUTO_COMMIT:
            self._maybe_auto_commit_in_background(out)
        elif kind == COMMIT_RETRY:
            self.retry_reconcile_commit(out)
        elif kind == FIND_BACKOFF:
            self.lookup_coordinator(out)
