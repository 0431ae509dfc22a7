"""The classic member's liveness: Kafka's `AbstractCoordinator.HeartbeatThread` with its
`Heartbeat` timers.

What it models of the Java consumer:
- the thread runs from the JoinGroup answer until the member leaves or resets (it disables
  itself while the member `hasNotJoinedGroup`): a heartbeat every `heartbeat.interval.ms`, or
  `retry.backoff.ms` after a failed one (from 3.7 growing with each failure in a row up to
  `retry.backoff.max.ms`, KIP-580); with a heartbeat in flight it waits for its answer;
- no successful heartbeat for `session.timeout.ms` marks the coordinator unknown; with none
  known the thread looks one up, and a new coordinator starts the session afresh;
- a heartbeat answered REBALANCE_IN_PROGRESS asks for a rejoin; a fencing error in the
  generation it was sent in resets the member (FENCED_INSTANCE_ID is fatal);
- the poll timer: `max.poll.interval.ms` after the last `poll()` a dynamic member sends
  LeaveGroup and a static one only resets itself. It fires exactly then, where Kafka notices
  it at the thread's next wake-up, at most `retry.backoff.ms` later; with no coordinator known
  it counts once one is found.

Left out: the thread's own lock and wake-ups; a timer stands for each.
"""

from __future__ import annotations

from typing import Protocol

from actors.backoff import RetryBackoff
from actors.consumer.application import ApplicationThread
from actors.consumer.config import ConsumerConfig
from actors.consumer.group_membership import COORDINATOR_ERRORS
from actors.consumer.membership import Membership, MemberState
from actors.consumer.network import Clock, InFlight, NetworkClient
from actors.core import Out
from protocols.errors import ErrorCode
from protocols.group import HeartbeatRequest

__all__ = ["HeartbeatThread"]

_FENCING = frozenset({ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION, ErrorCode.FENCED_INSTANCE_ID})


class Coordinator(Protocol):
    """What the heartbeat thread calls on its `AbstractCoordinator`."""

    member: Membership

    def lookup_coordinator(self, out: Out) -> None: ...

    def mark_coordinator_unknown(self, out: Out, reason: str, request: str = "") -> None: ...

    def request_rejoin(self) -> None: ...

    def reset_generation(self, out: Out, reason: str, *, keep_member_id: bool) -> None: ...

    def maybe_leave_group(self, out: Out) -> None: ...

    @property
    def retry_backoff(self) -> RetryBackoff: ...


class HeartbeatThread:
    def __init__(
        self, config: ConsumerConfig, clock: Clock, network: NetworkClient, app: ApplicationThread, coordinator: Coordinator
    ) -> None:
        self.config = config
        self.clock = clock
        self.network = network
        self.app = app
        self.coordinator = coordinator
        self.in_flight: int | None = None
        self.last_sent_ms = 0
        self.last_ok_ms = 0
        self.next_ms = 0
        self.last_poll_ms = 0
        self.attempts = 0
        """Heartbeats failed since the last answered one (`heartbeatAttempts`, KIP-580)."""
        self.closed = False

    def reset_session_timeout(self) -> None:
        self.last_ok_ms = self.clock.now_ms

    def enable(self, out: Out) -> None:
        """The JoinGroup answer enables the thread and resets its timers."""
        now = self.clock.now_ms
        self.last_ok_ms = now
        self.next_ms = now + self.config.heartbeat_interval_ms
        self.schedule(out)
        self._arm_poll_timer(out)

    def disable(self, out: Out) -> None:
        out.cancel_timer("heartbeat")

    def close(self, out: Out) -> None:
        self.closed = True
        out.cancel_timer("heartbeat")
        out.cancel_timer("poll-timeout")

    def schedule(self, out: Out) -> None:
        """Wake the thread when something is due."""
        m, cfg = self.coordinator.member, self.config
        if m.state.has_not_joined or self.closed:
            return
        # With a heartbeat in flight the thread waits for its answer (or the session's end).
        due = self.next_ms if self.in_flight is None else None
        if m.coordinator is not None:
            session_end = self.last_ok_ms + cfg.session_timeout_ms
            due = session_end if due is None else min(due, session_end)
        if due is None:
            return
        out.set_timer("heartbeat", max(0, due - self.clock.now_ms))

    def run(self, out: Out) -> None:
        """`HeartbeatThread.run`, woken when something is due."""
        m, cfg, now = self.coordinator.member, self.config, self.clock.now_ms
        if m.state.has_not_joined or self.closed:
            return
        if m.coordinator is None:
            # (1) in `HeartbeatThread.run`: look the coordinator up, and wait before the next try.
            self.coordinator.lookup_coordinator(out)
            self.next_ms = now + cfg.retry_backoff_ms
        elif now - self.last_ok_ms >= cfg.session_timeout_ms:
            self.coordinator.mark_coordinator_unknown(out, "SESSION_TIMEOUT")
            self.next_ms = now + cfg.retry_backoff_ms
        elif now >= self.next_ms and self.in_flight is None:
            request = HeartbeatRequest(cfg.group_id, m.generation_id, m.member_id, cfg.group_instance_id)
            self.in_flight = self.network.send_to_coordinator(
                out, m.coordinator, "heartbeat", request, on_failure=self._heartbeat_failed, detail=m.generation_id
            )
            self.last_sent_ms = now
            self.next_ms = now + cfg.heartbeat_interval_ms
        self.schedule(out)

    def on_heartbeat_response(self, out: Out, generation_sent: int, error: ErrorCode) -> None:
        """`HeartbeatResponseHandler`."""
        m, cfg, now = self.coordinator.member, self.config, self.clock.now_ms
        self.in_flight = None
        if error in (ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS):
            self.last_ok_ms = now
            self.attempts = 0  # `receiveHeartbeat`
        if error is ErrorCode.REBALANCE_IN_PROGRESS and m.state is MemberState.STABLE:
            self.coordinator.request_rejoin()
        elif error in _FENCING and m.generation_id == generation_sent and not m.state.has_not_joined:
            if error is ErrorCode.FENCED_INSTANCE_ID:
                self.app.fail(out, "Heartbeat: FENCED_INSTANCE_ID")
                return
            keep = error is ErrorCode.ILLEGAL_GENERATION and cfg.keep_member_id_on_illegal_generation
            self.coordinator.reset_generation(out, error.name, keep_member_id=keep)
        elif error is not ErrorCode.NONE and error is not ErrorCode.REBALANCE_IN_PROGRESS:
            # `Heartbeat.failHeartbeat`: the next one is due after `retry.backoff.ms`, not a
            # whole interval, once the coordinator is known again.
            if error in COORDINATOR_ERRORS:
                self.coordinator.mark_coordinator_unknown(out, error.name, "Heartbeat")
            self.next_ms = now + self._fail_backoff()
        self.schedule(out)

    def _heartbeat_failed(self, out: Out, correlation_id: int, request: InFlight, error: str) -> None:
        self.in_flight = None
        self.next_ms = self.clock.now_ms + self._fail_backoff()
        self.schedule(out)

    def _fail_backoff(self) -> int:
        """`Heartbeat.failHeartbeat`: `retryBackoff.backoff(heartbeatAttempts++)`."""
        backoff = self.coordinator.retry_backoff.backoff(self.attempts)
        self.attempts += 1
        return backoff

    # ------------------------------------------------------------------ the poll timer

    def poll(self, out: Out) -> None:
        """`Heartbeat.poll`: the application called `poll()`."""
        self.last_poll_ms = self.clock.now_ms
        self._arm_poll_timer(out)

    def _arm_poll_timer(self, out: Out) -> None:
        out.set_timer("poll-timeout", self.last_poll_ms + self.config.max_poll_interval_ms - self.clock.now_ms)

    def poll_timer_expired(self) -> bool:
        return self.clock.now_ms - self.last_poll_ms >= self.config.max_poll_interval_ms

    def poll_timeout_expired(self, out: Out) -> None:
        """`max.poll.interval.ms` without a `poll()`: noticed while the thread runs and the
        coordinator is known (`maybeLeaveGroup`); with none known, once one is found."""
        m, cfg = self.coordinator.member, self.config
        if m.state.has_not_joined or m.coordinator is None or self.closed:
            return
        static = cfg.group_instance_id is not None
        out.emit(
            "poll_timeout_expired",
            group_id=cfg.group_id,
            member_id=m.member_id,
            generation_id=m.generation_id,
            static=static,
        )
        if not static:
            self.coordinator.maybe_leave_group(out)
        self.coordinator.reset_generation(out, "POLL_TIMEOUT", keep_member_id=False)
