"""The classic group membership's protocol side: Kafka's `AbstractCoordinator`.

What it models of the Java consumer:
- FindCoordinator to a bootstrap broker, the next one `retry.backoff.ms` after a failure; a
  coordinator whose connection closed is marked unknown and the next lookup waits
  `retry.backoff.ms`; marking it unknown fails the requests in flight to it. From 3.7 each of
  those waits is `retryBackoff.backoff(attempts)` (KIP-580), the attempts of one `poll()`;
- `joinGroupIfNeeded` with a zero timer (the poll never waits for the rebalance): the subclass's
  `on_join_prepare`, then JoinGroup (a member answered MEMBER_ID_REQUIRED joins again with the
  id it was given, KIP-394); SyncGroup at once on its answer, with the leader's assignment
  (`on_leader_elected`); the subclass's `on_join_complete` in the next `poll()` after the
  SyncGroup answer;
- answers are handled by whichever thread polls the network client: the heartbeat thread from
  the JoinGroup answer on, the application thread inside its calls. So a JoinGroup answer that
  arrives while the application is busy between two polls waits for its next `poll()` (the
  heartbeat thread is off in PREPARING_REBALANCE), and so does the SyncGroup it leads to;
- the member's state and generation (`membership.py`), reset by a fencing error (keeping the
  member id on ILLEGAL_GENERATION from 3.2, KAFKA-13419; a JoinGroup or SyncGroup one runs
  `onJoinPrepare` again, reporting the partitions lost, from KAFKA-12983) or a poll timeout; the heartbeat
  thread (`heartbeat.py`) runs from the JoinGroup answer on;
- LeaveGroup (`maybeLeaveGroup`): only a dynamic member (KIP-345) with a known coordinator, a
  member id, and not UNJOINED sends it, once, without retrying it.

Left out: `group.protocol = consumer` (KIP-848), which would be another `GroupMembership`
beside this one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from actors.backoff import RetryBackoff
from actors.consumer.application import ApplicationThread
from actors.consumer.config import ConsumerConfig
from actors.consumer.group_membership import COORDINATOR_ERRORS, Generation
from actors.consumer.heartbeat import HeartbeatThread
from actors.consumer.membership import Membership, MemberState
from actors.consumer.network import (
    DISCONNECTED,
    Clock,
    FailureHandler,
    InFlight,
    NetworkClient,
    ignore_failure,
)
from actors.core import Out
from protocols.errors import ErrorCode
from protocols.group import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatResponse,
    JoinGroupProtocol,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    SyncGroupAssignment,
    SyncGroupRequest,
    SyncGroupResponse,
)
from protocols.types import TopicPartition

__all__ = ["AbstractCoordinator"]


class AbstractCoordinator(ABC):
    def __init__(self, config: ConsumerConfig, clock: Clock, network: NetworkClient, app: ApplicationThread) -> None:
        self.config = config
        self.clock = clock
        self.network = network
        self.app = app
        self.member = Membership()
        self.retry_backoff = RetryBackoff(config.retry_backoff_ms, config.retry_backoff_max_ms, config.exponential_retry_backoff)
        """`retryBackoff` (KIP-580 from 3.7); the consumer gives it its random stream at start."""
        self.heartbeat = HeartbeatThread(config, clock, network, app, self)
        self.find_in_flight: int | None = None
        self.find_attempts = 0
        """Failed lookups in this `ensureCoordinatorReady` (one per `poll()`): its `attempts`."""
        self.find_backoff_until = 0
        """After the coordinator's connection failed, no lookup before this time."""
        self.closed = False

    # ------------------------------------------------------------------ the subclass's part

    @abstractmethod
    def protocol_type(self) -> str: ...

    @abstractmethod
    def metadata(self) -> tuple[JoinGroupProtocol, ...]:
        """The protocols the member's JoinGroup offers, each with its subscription."""

    @abstractmethod
    def on_join_prepare(self, out: Out) -> bool:
        """Before a JoinGroup; False while it waits for something (it runs again)."""

    @abstractmethod
    def on_leader_elected(self, out: Out, resp: JoinGroupResponse) -> tuple[SyncGroupAssignment, ...]:
        """The leader's assignment of the group, sent in its SyncGroup."""

    @abstractmethod
    def on_join_complete(self, out: Out) -> bool:
        """After the SyncGroup answer, in the next `poll()`; False while it waits."""

    # ------------------------------------------------------------------ who the member is

    @property
    def member_id(self) -> str:
        return self.member.member_id

    @property
    def generation_id(self) -> int:
        return self.member.generation_id

    @property
    def coordinator(self) -> int | None:
        return self.member.coordinator

    def generation_if_stable(self) -> Generation | None:
        m = self.member
        return Generation(m.generation_id, m.member_id) if m.state is MemberState.STABLE else None

    def offset_fetch_member(self) -> tuple[str | None, int]:
        return None, -1  # ConsumerCoordinator's OffsetFetch names no member

    def rebalance_in_progress(self) -> bool:
        return self.member.state in (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE)

    def snapshot(self) -> dict[str, Any]:
        m = self.member
        return {"state": m.state.value, "member_id": m.member_id, "generation_id": m.generation_id, "coordinator": m.coordinator}

    # ------------------------------------------------------------------ the coordinator

    def ensure_coordinator_ready(self, out: Out) -> bool:
        """True if the coordinator is known; else the lookup starts (never waited for)."""
        if self.member.coordinator is not None:
            return True
        self.lookup_coordinator(out)
        return False

    def lookup_coordinator(self, out: Out) -> None:
        if self.find_in_flight is not None or self.member.coordinator is not None or self.closed:
            return
        now = self.clock.now_ms
        if now < self.find_backoff_until:
            out.set_timer("find-backoff", self.find_backoff_until - now)
            return
        broker = self.network.least_loaded_node()
        request = FindCoordinatorRequest(self.config.group_id)
        self.find_in_flight = self.network.send(out, broker, "find", request, on_failure=self._find_failed)

    def _on_find_coordinator(self, out: Out, resp: FindCoordinatorResponse) -> None:
        self.find_in_flight = None
        if resp.error_code is ErrorCode.NONE and resp.node_id >= 0:
            self.find_attempts = 0
            self.member.coordinator = resp.node_id
            self.heartbeat.reset_session_timeout()  # a new coordinator: the session starts afresh
            out.emit("coordinator_discovered", group_id=self.config.group_id, coordinator=resp.node_id)
            self.heartbeat.schedule(out)
            if self.heartbeat.poll_timer_expired():
                # The heartbeat thread checks the poll timer whenever it runs with a known
                # coordinator: a deadline that passed while none was known counts now.
                self.heartbeat.poll_timeout_expired(out)
        else:
            self.network.try_next_node()
            out.set_timer("find-backoff", self._lookup_backoff())

    def _find_failed(self, out: Out, correlation_id: int, request: InFlight, error: str) -> None:
        self.find_in_flight = None
        self.network.try_next_node()
        out.set_timer("find-backoff", self._lookup_backoff())

    def _lookup_backoff(self) -> int:
        """`ensureCoordinatorReady`'s sleep after a failed lookup: `retryBackoff.backoff(attempts++)`."""
        backoff = self.retry_backoff.backoff(self.find_attempts)
        self.find_attempts += 1
        return backoff

    def mark_coordinator_unknown(self, out: Out, reason: str, request: str = "") -> None:
        """`markCoordinatorUnknown`: disconnects it, failing every request in flight to it.
        `request`: the request whose answer said so, if an answer did."""
        old = self.member.coordinator
        if old is None:
            return
        self.member.coordinator = None
        if self.member.join_answer is not None:
            # The answer was still in the connection's buffer: the disconnection loses it.
            self.member.join_answer = self.member.join_in_flight = None
            self.member.rejoin_needed = True
        out.emit("coordinator_lost", group_id=self.config.group_id, coordinator=old, reason=reason, request=request)
        self.network.fail_requests(out, old, coordinator_only=True)

    def on_disconnect(self, out: Out, broker: int) -> None:
        if broker == self.member.coordinator:
            # `ensureCoordinatorReady`: the coordinator found is unavailable, so it is marked
            # unknown and the next lookup waits `retry.backoff.ms` (a lookup at once would find
            # the same dead broker until the controller moves its partition).
            self.mark_coordinator_unknown(out, DISCONNECTED)
            self.find_backoff_until = self.clock.now_ms + self._lookup_backoff()

    def _send_to_coordinator(
        self, out: Out, kind: str, request: Any, on_failure: FailureHandler, *, detail: Any = None, timeout_ms: int | None = None
    ) -> int:
        coordinator = self.member.coordinator
        assert coordinator is not None
        return self.network.send_to_coordinator(out, coordinator, kind, request, on_failure=on_failure, detail=detail, timeout_ms=timeout_ms)

    # ------------------------------------------------------------------ join and sync

    def rejoin_needed_or_pending(self) -> bool:
        m = self.member
        return m.rejoin_needed or m.joined_assignment is not None or m.state is not MemberState.STABLE

    def request_rejoin(self) -> None:
        self.member.rejoin_needed = True

    def ensure_active_group(self, out: Out) -> bool:
        """`joinGroupIfNeeded` with a zero timer: never waits for the rebalance."""
        m = self.member
        if m.joined_assignment is not None and (not m.generation_valid or m.state is not MemberState.STABLE):
            # The heartbeat thread reset the generation (a poll timeout, a fencing error) after
            # the SyncGroup answer: the assignment is dropped, and the member rejoins from
            # onJoinPrepare, which reports its partitions lost (`resetStateAndRejoin`).
            m.joined_assignment = None
            m.rejoin_needed = m.needs_join_prepare = True
        if m.join_answer is not None:
            answer, m.join_answer = m.join_answer, None
            self._handle_join_answer(out, answer)
            if m.coordinator is None:
                return False  # the answer said the coordinator moved: found again first
        if m.joined_assignment is not None:
            if not self.on_join_complete(out):
                return False
            return not m.rejoin_needed
        if m.join_in_flight is not None or m.sync_in_flight is not None:
            return False
        if m.state is MemberState.STABLE and not m.rejoin_needed:
            return True
        if m.needs_join_prepare:
            if not self.on_join_prepare(out):
                return False
            m.needs_join_prepare = False
        if self.clock.now_ms >= m.join_backoff_until:
            self._send_join_group(out)
        return False

    def _send_join_group(self, out: Out) -> None:
        m, cfg = self.member, self.config
        request = JoinGroupRequest(
            cfg.group_id,
            cfg.session_timeout_ms,
            cfg.max_poll_interval_ms,
            m.member_id,
            cfg.group_instance_id,
            self.protocol_type(),
            self.metadata(),
            cfg.client_id,
        )
        m.join_in_flight = self._send_to_coordinator(out, "join", request, self._join_failed, timeout_ms=cfg.join_timeout_ms)
        m.state = MemberState.PREPARING_REBALANCE
        self.heartbeat.disable(out)

    def _on_join_group(self, out: Out, correlation_id: int, resp: JoinGroupResponse) -> None:
        m = self.member
        if correlation_id != m.join_in_flight:
            return
        if self.app.polls_network():
            self._handle_join_answer(out, resp)
        else:
            m.join_answer = resp

    def _handle_join_answer(self, out: Out, resp: JoinGroupResponse) -> None:
        m, cfg = self.member, self.config
        m.join_in_flight = None
        error = resp.error_code
        if error is ErrorCode.NONE:
            m.member_id, m.generation_id = resp.member_id, resp.generation_id
            m.protocol_name, m.leader_id = resp.protocol_name, resp.leader
            m.state = MemberState.COMPLETING_REBALANCE
            self.heartbeat.enable(out)
            assignments: tuple[SyncGroupAssignment, ...] = ()
            if resp.leader == resp.member_id and not resp.skip_assignment:
                assignments = self.on_leader_elected(out, resp)
            request = SyncGroupRequest(
                cfg.group_id, m.generation_id, m.member_id, cfg.group_instance_id, m.protocol_name, assignments
            )
            m.sync_in_flight = self._send_to_coordinator(out, "sync", request, self._sync_failed)
            return
        out.emit(
            "join_group_failed",
            group_id=cfg.group_id,
            member_id=m.member_id,
            error=error.name,
            assigned_member_id=resp.member_id,
        )
        if error is ErrorCode.MEMBER_ID_REQUIRED:
            m.member_id = resp.member_id  # KIP-394: join again with it, in the next poll()
        elif error is ErrorCode.UNKNOWN_MEMBER_ID:
            self._reset_on_error(keep_member_id=False)
        elif error is ErrorCode.ILLEGAL_GENERATION:
            self._reset_on_error(keep_member_id=cfg.keep_member_id_on_illegal_generation)
        elif error in COORDINATOR_ERRORS:
            self.mark_coordinator_unknown(out, error.name, "JoinGroup")
        elif error in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.REBALANCE_IN_PROGRESS):
            m.join_backoff_until = self.clock.now_ms + cfg.retry_backoff_ms
        else:
            self.app.fail(out, f"JoinGroup: {error.name}")
            return
        m.rejoin_needed = True
        if m.state is MemberState.PREPARING_REBALANCE and error not in COORDINATOR_ERRORS:
            m.state = MemberState.UNJOINED

    def _on_sync_group(self, out: Out, correlation_id: int, resp: SyncGroupResponse) -> None:
        m, cfg = self.member, self.config
        if correlation_id != m.sync_in_flight:
            return
        m.sync_in_flight = None
        error = resp.error_code
        if error is ErrorCode.NONE:
            m.state = MemberState.STABLE
            m.joined_assignment = sorted(
                TopicPartition(t.topic, p) for t in resp.assignment.partitions for p in t.partitions
            )
            return
        if error is ErrorCode.REBALANCE_IN_PROGRESS:
            m.state = MemberState.UNJOINED
            if cfg.reset_generation_on_sync_rebalance:
                # KAFKA-13891 (3.3.0, 3.3.1; reverted in 3.3.2): the member missed this
                # generation's assignment, so it leaves it, keeping its member id; its
                # partitions are lost at the next onJoinPrepare.
                self.reset_generation(out, "sync_rebalance_in_progress", keep_member_id=True)
                m.needs_join_prepare = True  # `resetStateAndRejoin`
        elif error is ErrorCode.ILLEGAL_GENERATION:
            self._reset_on_error(keep_member_id=cfg.keep_member_id_on_illegal_generation)
        elif error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
            if error is ErrorCode.FENCED_INSTANCE_ID:
                self.app.fail(out, "SyncGroup: FENCED_INSTANCE_ID")
                return
            self._reset_on_error(keep_member_id=False)
        elif error in COORDINATOR_ERRORS:
            self.mark_coordinator_unknown(out, error.name, "SyncGroup")
            m.state = MemberState.UNJOINED
        else:
            m.state = MemberState.UNJOINED
        m.rejoin_needed = True

    def _reset_on_error(self, *, keep_member_id: bool) -> None:
        """`resetStateOnResponseError` for a JoinGroup or SyncGroup answer: out of its
        generation; from KAFKA-12983 `onJoinPrepare` runs again before the next JoinGroup
        (`resetStateAndRejoin`), reporting the partitions lost."""
        m = self.member
        m.reset_generation(keep_member_id=keep_member_id)
        if self.config.join_prepare_after_reset:
            m.needs_join_prepare = True

    def _join_failed(self, out: Out, correlation_id: int, request: InFlight, error: str) -> None:
        m = self.member
        if correlation_id == m.join_in_flight:
            m.join_in_flight = None
            m.rejoin_needed = True

    def _sync_failed(self, out: Out, correlation_id: int, request: InFlight, error: str) -> None:
        m = self.member
        if correlation_id == m.sync_in_flight:
            m.sync_in_flight = None
            m.state = MemberState.UNJOINED
            m.rejoin_needed = True

    # ------------------------------------------------------------------ resets, leaving, stopping

    def poll_heartbeat(self, out: Out) -> None:
        # A new `poll()`: its `ensureCoordinatorReady` counts its attempts from 0 (KIP-580).
        self.find_attempts = 0
        self.heartbeat.poll(out)

    def reset_generation(self, out: Out, reason: str, *, keep_member_id: bool) -> None:
        """`resetStateAndGeneration`: the member is out of its generation; its partitions are
        reported lost at the next `onJoinPrepare`."""
        m = self.member
        out.emit(
            "member_reset",
            group_id=self.config.group_id,
            member_id=m.member_id,
            generation_id=m.generation_id,
            reason=reason,
        )
        m.reset_generation(keep_member_id=keep_member_id)
        self.heartbeat.disable(out)

    def maybe_leave_group(self, out: Out) -> None:
        m, cfg = self.member, self.config
        if m.coordinator is None or not m.member_id or cfg.group_instance_id is not None or m.state is MemberState.UNJOINED:
            return
        request = LeaveGroupRequest(cfg.group_id, (MemberIdentity(m.member_id, None),))
        self._send_to_coordinator(out, "leave", request, ignore_failure)

    def reset_generation_on_leave_group(self) -> None:
        self.member.reset_generation()

    def stop(self, out: Out) -> None:
        self.closed = True
        self.heartbeat.close(out)

    # ------------------------------------------------------------------ answers and timers

    def on_response(self, out: Out, correlation_id: int, request: InFlight, message: Any) -> None:
        match message:
            case FindCoordinatorResponse():
                self._on_find_coordinator(out, message)
            case JoinGroupResponse():
                self._on_join_group(out, correlation_id, message)
            case SyncGroupResponse():
                self._on_sync_group(out, correlation_id, message)
            case HeartbeatResponse():
                self.heartbeat.on_heartbeat_response(out, request.detail, message.error_code)
            case LeaveGroupResponse():
                pass  # never waited for

    def on_timer(self, out: Out, kind: str) -> None:
        if kind == "heartbeat":
            self.heartbeat.run(out)
        elif kind == "poll-timeout":
            self.heartbeat.poll_timeout_expired(out)
        elif kind == "find-backoff":
            self.lookup_coordinator(out)
