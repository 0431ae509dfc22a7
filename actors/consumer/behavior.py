"""A consumer process: the application's poll loop, the consumer coordinator and the fetches.

What it models of the Java consumer (`ClassicKafkaConsumer`, `ConsumerCoordinator`,
`AbstractCoordinator` and its `HeartbeatThread`, `Fetcher`):

- **The application** calls `poll()`, processes what it returned (`process.record.ms` per
  record, or a slow spell's time; an application stall adds to it), commits if it is written
  to (`commit`), and polls again. A poll waits up to `poll.timeout.ms` for records; every answer that arrives while it
  waits runs the poll's loop again, as `KafkaConsumer.poll` does.
- **`coordinator.poll`** in each loop: find the coordinator; if a rejoin is needed, run
  `onJoinPrepare` (the pre-rebalance commit, by version, then the revocation) and send
  JoinGroup, without waiting for the rebalance (a zero timer); run `onJoinComplete` for a
  SyncGroup answered since; then, only if the coordinator is known and no rebalance is in
  flight, the periodic auto-commit of the positions (the *previous* polls' records).
- **JoinGroup and SyncGroup answers** are handled when they arrive (the network client does it
  in whichever thread polls it): the leader runs the assignor at once and sends SyncGroup.
- **The heartbeat thread** runs from the JoinGroup answer until the member leaves or resets:
  a heartbeat every `heartbeat.interval.ms`; no successful heartbeat for `session.timeout.ms`
  marks the coordinator unknown; `max.poll.interval.ms` after the last `poll()` a dynamic
  member sends LeaveGroup and a static one only resets itself (it fires exactly then, where
  Kafka notices it at the thread's next wake-up, at most `retry.backoff.ms` later).
- **Commits**: auto-commit, commitSync (retried until `default.api.timeout.ms`), commitAsync
  (never retried), a commit in `onPartitionsRevoked`, and `close()`'s synchronous commit. A
  commit carries the generation only when the member is STABLE (`generationIfStable`);
  otherwise it fails without being sent.
- **The application's calls** (`close()`, `unsubscribe()`, a stall, a slow spell) come from
  the scenario's faults as `ApplicationCall` messages. `close()` and `unsubscribe()` are made
  from the poll loop, between two polls (the consumer is not safe for multi-threaded access):
  one that comes while the records in hand are processed, or while the application waits for a
  commit, is made once that is done.

Every fact the analytics need is logged: records processed per partition as offset ranges,
commits sent and answered, assignments, revocations and losses with their reason.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from actors.broker.config import broker_address, group_coordinator_address
from actors.consumer.assignors import ASSIGNORS, MemberSubscription, RebalanceProtocol, rebalance_protocol
from actors.consumer.config import AppCommit, ConsumerConfig, JoinPrepareCommit
from actors.consumer.fetcher import Fetcher, Returned
from actors.consumer.membership import Commit, CommitKind, MemberState, Membership
from actors.consumer.subscription_state import SubscriptionState, by_topic
from actors.core import Ctx, Inbound, Out
from protocols.application import ApplicationCall
from protocols.connection import Disconnected
from protocols.errors import ErrorCode
from protocols.group import (
    Assignment,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupProtocol,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitTopic,
    OffsetFetchRequest,
    OffsetFetchResponse,
    Subscription,
    SyncGroupAssignment,
    SyncGroupRequest,
    SyncGroupResponse,
)
from protocols.metadata import MetadataRequest, MetadataResponse
from protocols.replication import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    FetchResponse,
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderEpochPartition,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)
from protocols.types import TopicPartition

__all__ = ["Consumer"]

_COORDINATOR_ERRORS = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})
_RETRIABLE_COMMIT = frozenset(
    {
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.REQUEST_TIMED_OUT,
    }
)
_FENCING = frozenset({ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION, ErrorCode.FENCED_INSTANCE_ID})
_METADATA_ERRORS = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
)
_GROUP_REQUESTS = frozenset({"join", "sync", "heartbeat", "commit", "offset_fetch", "leave"})
"""The requests a consumer sends to its group coordinator."""
NEVER_REFRESHED_MS = -(2**62)
"""`Metadata.lastRefreshMs` before the first answer: long enough ago for any back-off."""
RECONNECT_BACKOFF_MS = 50
"""`reconnect.backoff.ms`: how long a broker whose connection failed is not fetched from."""
RECONNECT_BACKOFF_MAX_MS = 1000
"""`reconnect.backoff.max.ms`: the cap of the doubling back-off (without Kafka's 20% jitter)."""
CLOSE_TIMEOUT_MS = 30_000
"""`KafkaConsumer.DEFAULT_CLOSE_TIMEOUT_MS`: how long `close()` may take."""
DISCONNECTED = "DISCONNECTED"
TIMEOUT = "TIMEOUT"
COMMIT_FAILED = "COMMIT_FAILED"
"""`CommitFailedException` raised by the client without sending (the member is not in an
active generation)."""


class App(Enum):
    """What the application thread is doing."""

    STARTING = "starting"
    POLLING = "polling"
    """Inside `poll()`, waiting for records until the poll's deadline."""
    PROCESSING = "processing"
    """Processing the records the last poll returned."""
    BLOCKED = "blocked"
    """Inside a call that waits for a commit (commitSync, a synchronous pre-rebalance commit,
    a commit in `onPartitionsRevoked`, `close()`)."""
    STOPPED = "stopped"
    """After `close()`, `unsubscribe()` or a fatal error: it polls no more."""


class Consumer:
    def __init__(self, config: ConsumerConfig) -> None:
        self.config = config
        self.m = Membership()
        self.subscriptions = SubscriptionState()
        self.fetcher = Fetcher(config.max_partition_fetch_bytes, config.fetch_min_bytes, config.fetch_max_wait_ms, self.subscriptions)
        self.protocol = rebalance_protocol(config.assignment_strategy)
        self.app = App.STARTING
        self.app_until_ms = 0
        self.stall_until_ms = 0
        self.last_poll_ms = 0
        self.next_auto_commit_ms = 0
        self.processing: list[Returned] = []
        self.processing_started_ms = 0
        self.slow_spells: list[tuple[int, int | None, int]] = []
        """(from, until or None, ms per record) of each slow spell not yet over, oldest first."""
        self.deferred_calls: list[str] = []
        """`close` or `unsubscribe` calls waiting for the application to be between polls."""
        self.processing_generation = -1
        self.processing_member = ""
        self.blocked_on: int | None = None
        self.blocked_then = ""
        """What the application does once the commit it waits for is answered."""
        self.requests: dict[int, tuple[str, int, Any]] = {}
        """Correlation id -> (kind, broker, detail) of each request in flight."""
        self.next_correlation_id = 0
        self.find_target = 0
        self.find_in_flight: int | None = None
        self.find_backoff_until = 0
        """After the coordinator's connection failed, no lookup before this time."""
        self.reconnect_backoff_ms: dict[int, int] = {}
        """Broker -> the back-off after its last failed connection, while it keeps failing."""
        self.metadata_in_flight: int | None = None
        self.metadata_refreshed_ms = NEVER_REFRESHED_MS
        """When the last metadata request was answered or failed (`Metadata.lastRefreshMs`)."""
        self.offset_fetch_in_flight: int | None = None
        self.list_offsets_in_flight: set[int] = set()
        self.validating: set[TopicPartition] = set()
        """Partitions whose OffsetsForLeaderEpoch is in flight."""
        self.rng: Any = None
        self.now_ms = 0
        self.processed = 0
        self.close_phase = ""
        """`close()`: "" before it; `commit`, `revoke` (the listener's commit, with
        `commit = on_revoke`), `leave` (waiting for the requests still pending to the
        coordinator), then `closed`."""
        self.close_deadline_ms = 0
        """When close()'s timer expires: it then waits for nothing more."""
        self.unsubscribing = False
        """`unsubscribe()` waits for the listener's commit (`commit = on_revoke`)."""
        self.previous_assignment: list[TopicPartition] = []

    # ------------------------------------------------------------------ handlers

    def on_start(self, ctx: Ctx) -> Out:
        self.now_ms = ctx.now_ms
        self.rng = ctx.rng
        out = Out()
        cfg = self.config
        out.emit(
            "consumer_started",
            group_id=cfg.group_id,
            client_id=cfg.client_id,
            group_instance_id=cfg.group_instance_id,
            topics=list(cfg.topics),
            assignment_strategy=list(cfg.assignment_strategy),
            enable_auto_commit=cfg.enable_auto_commit,
            commit=cfg.app_commit.value,
        )
        out.set_timer("app", max(0, cfg.start_ms - ctx.now_ms))
        return out

    def on_timer(self, ctx: Ctx, key: str) -> Out:
        self.now_ms = ctx.now_ms
        out = Out()
        kind, _, arg = key.partition(":")
        if kind == "app":
            self._app_timer(out)
        elif kind == "heartbeat":
            self._heartbeat_thread(out)
        elif kind == "poll-timeout":
            self._poll_timeout(out)
        elif kind == "timeout":
            self._request_timed_out(out, int(arg))
        elif kind == "metadata":
            self._request_metadata(out)
        elif kind == "find-backoff":
            self._find_coordinator(out)
        elif kind == "commit-retry":
            self._retry_commit(out, int(arg))
        elif kind == "close-timeout":
            self._close_timed_out(out)
        elif kind == "reset-retry":
            self._resume_poll(out)
        self._maybe_closed(out)
        return out

    def on_message(self, ctx: Ctx, inbound: Inbound) -> Out:
        self.now_ms = ctx.now_ms
        out = Out()
        message = inbound.message
        if isinstance(message, ApplicationCall):
            self._application_call(out, message)
            return out
        if isinstance(message, Disconnected):
            if message.peer.startswith("broker-"):
                self._disconnected(out, int(message.peer.rsplit("-", 1)[1]))
            self._maybe_closed(out)
            return out
        request = self.requests.pop(inbound.correlation_id, None)
        if request is None:
            return out  # answered after it timed out, or its connection closed
        out.cancel_timer(f"timeout:{inbound.correlation_id}")
        kind, broker, detail = request
        self._connected(broker)
        match message:
            case FindCoordinatorResponse():
                self._on_find_coordinator(out, message)
            case JoinGroupResponse():
                self._on_join_group(out, inbound.correlation_id, message)
            case SyncGroupResponse():
                self._on_sync_group(out, inbound.correlation_id, message)
            case HeartbeatResponse():
                self._on_heartbeat(out, detail, message.error_code)
            case OffsetCommitResponse():
                error = next((p.error_code for p in message.partitions), ErrorCode.NONE)
                self._commit_answered(out, detail, error.name, error)
            case OffsetFetchResponse():
                self._on_offset_fetch(out, inbound.correlation_id, message)
            case FetchResponse():
                self._on_fetch(out, broker, detail, message)
            case ListOffsetsResponse():
                self._on_list_offsets(out, inbound.correlation_id, message)
            case OffsetForLeaderEpochResponse():
                self._on_epoch_end_offsets(out, detail, message)
            case MetadataResponse():
                self._on_metadata(out, message)
            case LeaveGroupResponse():
                pass
        self._resume_poll(out)
        self._maybe_closed(out)
        return out

    def snapshot(self) -> dict[str, Any]:
        m = self.m
        return {
            "group_id": self.config.group_id,
            "state": m.state.value,
            "member_id": m.member_id,
            "generation_id": m.generation_id,
            "coordinator": m.coordinator,
            "assignment": [str(tp) for tp in self.subscriptions.owned()],
            "positions": {str(tp): s.position for tp, s in sorted(self.subscriptions.assigned.items())},
            "app": self.app.value,
            "processed": self.processed,
        }

    # ------------------------------------------------------------------ the application

    def _app_timer(self, out: Out) -> None:
        if self.app is App.STARTING:
            self._request_metadata(out)
            self._find_coordinator(out)
            self._poll(out)
        elif self.app is App.PROCESSING and self.now_ms >= self.app_until_ms:
            self._processed(out)
        elif self.app is App.POLLING and self.now_ms >= self.app_until_ms:
            self._poll(out)  # the poll returned nothing: the application polls again

    def _poll(self, out: Out) -> None:
        """The application calls `poll()`."""
        if self.now_ms < self.stall_until_ms:
            self.app, self.app_until_ms = App.PROCESSING, self.stall_until_ms
            out.set_timer("app", self.stall_until_ms - self.now_ms)
            return
        if self.deferred_calls:
            # The application is between two polls: it makes the calls it was asked for
            # instead of polling (after either, it polls no more).
            calls, self.deferred_calls = self.deferred_calls, []
            for action in calls:
                self._call_now(out, action)
            return
        self.last_poll_ms = self.now_ms
        self._arm_poll_timeout(out)
        self.app = App.POLLING
        # A poll(0) that finds nothing returns at once, and the application polls again: here
        # no sooner than the next millisecond, so simulated time moves on.
        wait = max(1, self.config.poll_timeout_ms)
        self.app_until_ms = self.now_ms + wait
        out.set_timer("app", wait)
        self._poll_loop(out)

    def _resume_poll(self, out: Out) -> None:
        """An answer arrived: a waiting `poll()` runs its loop again."""
        if self.app is App.POLLING:
            self._poll_loop(out)

    def _poll_loop(self, out: Out) -> None:
        """One pass of `KafkaConsumer.poll`'s loop: the coordinator, positions, records."""
        if self.m.async_commit_fenced:
            # `ConsumerCoordinator.poll` drains the commit callbacks first.
            self._fail(out, "OffsetCommit: FENCED_INSTANCE_ID")
            return
        self._coordinator_poll(out)
        if self.app is not App.POLLING:
            return  # a call inside it blocks (a synchronous commit) or stopped the consumer
        self._update_fetch_positions(out)
        self._validate_positions(out)
        returned = self.fetcher.collect(self.config.max_poll_records)
        if returned:
            self._process(out, returned)
            return
        self._send_fetches(out)

    def _process(self, out: Out, returned: list[Returned]) -> None:
        self.processing = returned
        self.processing_generation = self.m.generation_id
        self.processing_member = self.m.member_id
        self.processing_started_ms = self.now_ms
        self.slow_spells = [s for s in self.slow_spells if s[1] is None or s[1] > self.now_ms]
        self.app = App.PROCESSING
        self.app_until_ms = self.now_ms + self._processing_ms(self.now_ms, sum(r.end - r.first for r in returned))
        out.set_timer("app", self.app_until_ms - self.now_ms)

    def _processing_ms(self, start_ms: int, count: int) -> int:
        """How long `count` records take from `start_ms`, one after the other: each takes
        `process.record.ms`, or the time of the latest slow spell under way when it starts."""
        base = self.config.process_record_ms
        if not self.slow_spells:
            return count * base
        t = start_ms
        for _ in range(count):
            took = base
            for since, until, record_ms in self.slow_spells:
                if since <= t and (until is None or t < until):
                    took = record_ms
            t += took
        return t - start_ms

    def _processed(self, out: Out) -> None:
        """The application finished the records: log them, commit as written, poll again."""
        cfg = self.config
        for r in self.processing:
            self.processed += r.end - r.first
            out.emit(
                "records_processed",
                group_id=cfg.group_id,
                member_id=self.processing_member,
                generation_id=self.processing_generation,
                topic=r.tp.topic,
                partition=r.tp.partition,
                first_offset=r.first,
                end_offset=r.end,
                records=r.end - r.first,
                leader_epoch=r.leader_epoch,
            )
        self.processing = []
        if cfg.app_commit is AppCommit.SYNC:
            self._block_on_commit(out, CommitKind.SYNC, self.subscriptions.all_consumed(), then="poll")
            return
        if cfg.app_commit is AppCommit.ASYNC:
            self._commit(out, CommitKind.ASYNC, self.subscriptions.all_consumed())
        self._poll(out)

    def _application_call(self, out: Out, call: ApplicationCall) -> None:
        if call.action in ("close", "unsubscribe"):
            if self.app in (App.PROCESSING, App.BLOCKED) and not self.close_phase:
                self.deferred_calls.append(call.action)  # made between two polls (see above)
            else:
                self._call_now(out, call.action)
        elif self.app is App.STOPPED:
            return
        elif call.action == "stall":
            self.stall_until_ms = max(self.stall_until_ms, self.now_ms + call.duration_ms)
            if self.app is App.PROCESSING and self.app_until_ms < self.stall_until_ms:
                self.app_until_ms = self.stall_until_ms
                out.set_timer("app", self.app_until_ms - self.now_ms)
        elif call.action == "slow":
            until = self.now_ms + call.duration_ms if call.duration_ms else None
            self.slow_spells.append((self.now_ms, until, call.record_ms))
            if self.app is App.PROCESSING and self.processing:
                # The records in hand not yet begun take the spell's time.
                count = sum(r.end - r.first for r in self.processing)
                end = self.processing_started_ms + self._processing_ms(self.processing_started_ms, count)
                self.app_until_ms = max(end, self.stall_until_ms)
                out.set_timer("app", max(0, self.app_until_ms - self.now_ms))

    def _call_now(self, out: Out, action: str) -> None:
        if action == "close":
            self._close(out)
        elif self.app is not App.STOPPED:
            self._unsubscribe(out)  # after close() or unsubscribe() it has no subscription left

    def _stop(self, out: Out) -> None:
        self.app = App.STOPPED
        self.deferred_calls = []
        out.cancel_timer("app")
        out.cancel_timer("heartbeat")
        out.cancel_timer("poll-timeout")

    # ------------------------------------------------------------------ coordinator.poll

    def _coordinator_poll(self, out: Out) -> None:
        """`ConsumerCoordinator.poll` with `waitForJoinGroup = false`."""
        m = self.m
        if m.coordinator is None:
            self._find_coordinator(out)
            return  # returns early: no rebalance step and no auto-commit
        if m.rejoin_needed or m.joined_assignment is not None or m.state is not MemberState.STABLE:
            if not self._ensure_active_group(out):
                return
        self._maybe_auto_commit(out)

    def _ensure_active_group(self, out: Out) -> bool:
        """`joinGroupIfNeeded` with a zero timer: never waits for the rebalance."""
        m = self.m
        if m.joined_assignment is not None:
            if not self._on_join_complete(out):
                return False
            return not m.rejoin_needed
        if m.join_in_flight is not None or m.sync_in_flight is not None:
            return False
        if m.state is MemberState.STABLE and not m.rejoin_needed:
            return True
        if m.needs_join_prepare:
            if not self._on_join_prepare(out):
                return False
            m.needs_join_prepare = False
        if self.now_ms >= m.join_backoff_until:
            self._send_join_group(out)
        return False

    def _on_join_prepare(self, out: Out) -> bool:
        """`ConsumerCoordinator.onJoinPrepare`: the pre-rebalance auto-commit (by version),
        then the revocation (EAGER: every partition; COOPERATIVE: none, the topics do not
        change). False while a commit it waits for is in flight."""
        m, cfg = self.m, self.config
        owned = self.subscriptions.owned()
        if cfg.enable_auto_commit and owned and not m.join_prepare_revoked:
            if not m.generation_valid:
                # Out of its generation (a poll timeout, a fencing error): the commit fails in
                # the client, and the partitions are reported lost below.
                self._commit(out, CommitKind.JOIN_PREPARE, self.subscriptions.all_consumed())
            elif m.join_prepare_commit is None:
                mode = cfg.join_prepare_commit
                if mode is JoinPrepareCommit.SYNC:
                    self._block_on_commit(out, CommitKind.JOIN_PREPARE, self.subscriptions.all_consumed(), then="poll")
                    return False
                if mode is JoinPrepareCommit.PENDING_REVOCATION and self.protocol is RebalanceProtocol.EAGER:
                    self.subscriptions.mark_pending_revocation(owned)
                m.join_prepare_commit = self._commit(out, CommitKind.JOIN_PREPARE, self.subscriptions.all_consumed())
                m.join_prepare_started_ms = self.now_ms
                if mode is not JoinPrepareCommit.ASYNC_NOT_AWAITED:
                    return False
            elif cfg.join_prepare_commit is not JoinPrepareCommit.SYNC and self.now_ms - m.join_prepare_started_ms < cfg.max_poll_interval_ms:
                # A synchronous commit was waited for, retries and all. An asynchronous one is
                # waited for and sent again after a retriable failure until the rebalance
                # timeout, then the rebalance goes on without it ("joinPrepare timeout").
                commit = m.commits.get(m.join_prepare_commit)
                if commit is not None and commit.error is None:
                    return False  # still waiting for it: poll() returns to the application
                if commit is not None and commit.error != "NONE" and _retriable(commit.error):
                    m.join_prepare_commit = self._commit(out, CommitKind.JOIN_PREPARE, self.subscriptions.all_consumed())
                    return False
        if not self._revoke_for_join(out, owned):
            return False
        m.join_prepare_commit = None
        m.join_prepare_revoked = False
        return True

    def _revoke_for_join(self, out: Out, owned: list[TopicPartition]) -> bool:
        """The revocation step of `onJoinPrepare`; with `commit = on_revoke` the listener's
        commitSync comes first. False while that commit is in flight."""
        m = self.m
        if self.protocol is RebalanceProtocol.COOPERATIVE or not owned:
            return True
        lost = not m.generation_valid or (not m.member_id and self.config.keep_member_id_on_illegal_generation)
        if not lost and self.config.app_commit is AppCommit.ON_REVOKE and not m.join_prepare_revoked:
            if m.revoke_commit is None:
                self._block_on_commit(out, CommitKind.REVOKE, self._consumed_of(owned), then="poll")
                return False
            commit = m.commits.get(m.revoke_commit)
            if commit is not None and commit.error is None:
                return False
        m.revoke_commit = None
        m.join_prepare_revoked = True
        self._give_up(out, owned, "lost" if lost else "revoked", "generation_reset" if lost else "rebalance")
        return True

    def _give_up(self, out: Out, partitions: list[TopicPartition], how: str, reason: str) -> None:
        """`onPartitionsRevoked` or `onPartitionsLost`, then drop the partitions."""
        cfg, m = self.config, self.m
        out.emit(
            f"partitions_{how}",
            group_id=cfg.group_id,
            member_id=m.member_id,
            generation_id=m.generation_id,
            partitions=[str(tp) for tp in partitions],
            reason=reason,
        )
        self.subscriptions.remove(partitions)

    def _on_join_complete(self, out: Out) -> bool:
        """`ConsumerCoordinator.onJoinComplete`, in the `poll()` after the SyncGroup answer.
        False while the commit of a cooperative revocation's `onPartitionsRevoked` is in
        flight (the same poll runs it again once answered)."""
        m, cfg = self.m, self.config
        assigned = m.joined_assignment or []
        owned = self.subscriptions.owned()
        revoked = [tp for tp in owned if tp not in assigned]
        if self.protocol is RebalanceProtocol.COOPERATIVE and revoked and not self._revoke_listener_done(out, revoked):
            return False
        m.joined_assignment = None
        m.needs_join_prepare = True
        m.rejoin_needed = False
        if self.protocol is RebalanceProtocol.COOPERATIVE:
            if revoked:
                # KIP-429: revoke what moved, with no auto-commit, and rejoin so that the next
                # generation can give it to its new owner.
                self._give_up(out, revoked, "revoked", "cooperative")
                m.rejoin_needed = True
            added = [tp for tp in assigned if tp not in owned]
        else:
            self.subscriptions.remove(owned)
            added = list(assigned)
        self.subscriptions.assign(added)
        self.previous_assignment = self.subscriptions.owned()
        out.emit(
            "partitions_assigned",
            group_id=cfg.group_id,
            member_id=m.member_id,
            generation_id=m.generation_id,
            partitions=[str(tp) for tp in added],
            assignment=[str(tp) for tp in self.subscriptions.owned()],
        )
        self.next_auto_commit_ms = self.now_ms + cfg.auto_commit_interval_ms
        return True

    def _revoke_listener_done(self, out: Out, revoked: list[TopicPartition]) -> bool:
        """With `commit = on_revoke`, `onPartitionsRevoked` commits the revoked partitions
        synchronously before they go (KIP-429: the only commit a cooperative revocation gets).
        False while that commit is in flight."""
        m = self.m
        if self.config.app_commit is not AppCommit.ON_REVOKE:
            return True
        if m.revoke_commit is None:
            self._block_on_commit(out, CommitKind.REVOKE, self._consumed_of(revoked), then="poll")
            return False
        commit = m.commits.get(m.revoke_commit)
        if commit is not None and commit.error is None:
            return False
        m.revoke_commit = None
        return True

    def _maybe_auto_commit(self, out: Out) -> None:
        """`maybeAutoCommitOffsetsAsync`: the positions, once the interval has passed."""
        cfg = self.config
        if not cfg.enable_auto_commit or self.now_ms < self.next_auto_commit_ms:
            return
        self.next_auto_commit_ms = self.now_ms + cfg.auto_commit_interval_ms
        offsets = self.subscriptions.all_consumed()
        if offsets:
            self._commit(out, CommitKind.AUTO, offsets)

    # ------------------------------------------------------------------ join and sync

    def _send_join_group(self, out: Out) -> None:
        m, cfg = self.m, self.config
        if self.protocol is RebalanceProtocol.COOPERATIVE:
            owned = self.subscriptions.owned()
        else:
            # EAGER revoked everything before joining; the sticky assignor still learns the
            # member's last assignment (Kafka carries it in the subscription's userData).
            owned = self.previous_assignment if "sticky" in cfg.assignment_strategy else []
        subscription = Subscription(cfg.topics, by_topic(owned), m.generation_id)
        request = JoinGroupRequest(
            cfg.group_id,
            cfg.session_timeout_ms,
            cfg.max_poll_interval_ms,
            m.member_id,
            cfg.group_instance_id,
            "consumer",
            tuple(JoinGroupProtocol(name, subscription) for name in cfg.assignment_strategy),
        )
        m.join_in_flight = self._send_to_coordinator(out, "join", request, timeout_ms=cfg.join_timeout_ms)
        m.state = MemberState.PREPARING_REBALANCE
        out.cancel_timer("heartbeat")

    def _on_join_group(self, out: Out, correlation_id: int, resp: JoinGroupResponse) -> None:
        m, cfg = self.m, self.config
        if correlation_id != m.join_in_flight:
            return
        m.join_in_flight = None
        error = resp.error_code
        if error is ErrorCode.NONE:
            m.member_id, m.generation_id = resp.member_id, resp.generation_id
            m.protocol_name, m.leader_id = resp.protocol_name, resp.leader
            m.state = MemberState.COMPLETING_REBALANCE
            self._enable_heartbeats(out)
            assignments: tuple[SyncGroupAssignment, ...] = ()
            if resp.leader == resp.member_id and not resp.skip_assignment:
                assignments = self._assign(resp)
            request = SyncGroupRequest(
                cfg.group_id, m.generation_id, m.member_id, cfg.group_instance_id, m.protocol_name, assignments
            )
            m.sync_in_flight = self._send_to_coordinator(out, "sync", request)
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
            m.reset_generation()
        elif error is ErrorCode.ILLEGAL_GENERATION:
            m.reset_generation(keep_member_id=cfg.keep_member_id_on_illegal_generation)
        elif error in _COORDINATOR_ERRORS:
            self._coordinator_unknown(out, error.name, "JoinGroup")
        elif error in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.REBALANCE_IN_PROGRESS):
            m.join_backoff_until = self.now_ms + cfg.retry_backoff_ms
        else:
            self._fail(out, f"JoinGroup: {error.name}")
            return
        m.rejoin_needed = True
        if m.state is MemberState.PREPARING_REBALANCE and error not in _COORDINATOR_ERRORS:
            m.state = MemberState.UNJOINED

    def _assign(self, resp: JoinGroupResponse) -> tuple[SyncGroupAssignment, ...]:
        """The leader runs the group's chosen assignor over every member's subscription."""
        assignor = ASSIGNORS[resp.protocol_name or self.config.assignment_strategy[0]]
        members = [
            MemberSubscription(
                member.member_id,
                member.group_instance_id,
                member.metadata.topics,
                tuple(TopicPartition(t.topic, p) for t in member.metadata.owned_partitions for p in t.partitions),
                member.metadata.generation_id,
            )
            for member in resp.members
        ]
        topics = sorted({t for member in members for t in member.topics})
        counts = dict(self.config.partitions)
        result = assignor.assign({t: counts[t] for t in topics if t in counts}, members)
        return tuple(
            SyncGroupAssignment(member_id, Assignment(by_topic(list(result[member_id]))))
            for member_id in sorted(result)
        )

    def _on_sync_group(self, out: Out, correlation_id: int, resp: SyncGroupResponse) -> None:
        m, cfg = self.m, self.config
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
        elif error is ErrorCode.ILLEGAL_GENERATION:
            m.reset_generation(keep_member_id=cfg.keep_member_id_on_illegal_generation)
        elif error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
            if error is ErrorCode.FENCED_INSTANCE_ID:
                self._fail(out, "SyncGroup: FENCED_INSTANCE_ID")
                return
            m.reset_generation()
        elif error in _COORDINATOR_ERRORS:
            self._coordinator_unknown(out, error.name, "SyncGroup")
            m.state = MemberState.UNJOINED
        else:
            m.state = MemberState.UNJOINED
        m.rejoin_needed = True

    # ------------------------------------------------------------------ heartbeats

    def _enable_heartbeats(self, out: Out) -> None:
        """The JoinGroup answer enables the heartbeat thread and resets its timers."""
        m = self.m
        m.last_heartbeat_ok_ms = self.now_ms
        m.next_heartbeat_ms = self.now_ms + self.config.heartbeat_interval_ms
        self._arm_heartbeat(out)
        self._arm_poll_timeout(out)

    def _arm_heartbeat(self, out: Out) -> None:
        m, cfg = self.m, self.config
        if m.state.has_not_joined or self.app is App.STOPPED:
            return
        # With a heartbeat in flight the thread waits for its answer (or the session's end).
        due = m.next_heartbeat_ms if m.heartbeat_in_flight is None else None
        if m.coordinator is not None:
            session_end = m.last_heartbeat_ok_ms + cfg.session_timeout_ms
            due = session_end if due is None else min(due, session_end)
        if due is None:
            return
        out.set_timer("heartbeat", max(0, due - self.now_ms))

    def _heartbeat_thread(self, out: Out) -> None:
        """`HeartbeatThread.run`, woken when something is due."""
        m, cfg = self.m, self.config
        if m.state.has_not_joined or self.app is App.STOPPED:
            return
        if m.coordinator is None:
            # (1) in `HeartbeatThread.run`: look the coordinator up, and wait before the next try.
            self._find_coordinator(out)
            m.next_heartbeat_ms = self.now_ms + cfg.retry_backoff_ms
        elif self.now_ms - m.last_heartbeat_ok_ms >= cfg.session_timeout_ms:
            self._coordinator_unknown(out, "SESSION_TIMEOUT")
            m.next_heartbeat_ms = self.now_ms + cfg.retry_backoff_ms
        elif self.now_ms >= m.next_heartbeat_ms and m.heartbeat_in_flight is None:
            request = HeartbeatRequest(cfg.group_id, m.generation_id, m.member_id, cfg.group_instance_id)
            m.heartbeat_in_flight = self._send_to_coordinator(out, "heartbeat", request, detail=m.generation_id)
            m.last_heartbeat_sent_ms = self.now_ms
            m.next_heartbeat_ms = self.now_ms + cfg.heartbeat_interval_ms
        self._arm_heartbeat(out)

    def _on_heartbeat(self, out: Out, generation_sent: int, error: ErrorCode) -> None:
        """`HeartbeatResponseHandler`."""
        m, cfg = self.m, self.config
        m.heartbeat_in_flight = None
        if error in (ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS):
            m.last_heartbeat_ok_ms = self.now_ms
        if error is ErrorCode.REBALANCE_IN_PROGRESS and m.state is MemberState.STABLE:
            m.rejoin_needed = True
        elif error in _FENCING and m.generation_id == generation_sent and not m.state.has_not_joined:
            if error is ErrorCode.FENCED_INSTANCE_ID:
                self._fail(out, "Heartbeat: FENCED_INSTANCE_ID")
                return
            keep = error is ErrorCode.ILLEGAL_GENERATION and cfg.keep_member_id_on_illegal_generation
            self._reset(out, error.name, keep_member_id=keep)
        elif error is not ErrorCode.NONE and error is not ErrorCode.REBALANCE_IN_PROGRESS:
            # `Heartbeat.failHeartbeat`: the next one is due after `retry.backoff.ms`, not a
            # whole interval, once the coordinator is known again.
            if error in _COORDINATOR_ERRORS:
                self._coordinator_unknown(out, error.name, "Heartbeat")
            m.next_heartbeat_ms = self.now_ms + cfg.retry_backoff_ms
        self._arm_heartbeat(out)

    def _arm_poll_timeout(self, out: Out) -> None:
        out.set_timer("poll-timeout", self.last_poll_ms + self.config.max_poll_interval_ms - self.now_ms)

    def _poll_timeout(self, out: Out) -> None:
        """`max.poll.interval.ms` without a `poll()`: noticed while the heartbeat thread runs
        and the coordinator is known (`maybeLeaveGroup`); with none known, once one is found."""
        m, cfg = self.m, self.config
        if m.state.has_not_joined or m.coordinator is None or self.app is App.STOPPED:
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
            self._send_leave_group(out)
        self._reset(out, "POLL_TIMEOUT", keep_member_id=False)

    def _reset(self, out: Out, reason: str, *, keep_member_id: bool) -> None:
        """`resetStateAndGeneration`: the member is out of its generation; its partitions are
        reported lost at the next `onJoinPrepare`."""
        m = self.m
        out.emit(
            "member_reset",
            group_id=self.config.group_id,
            member_id=m.member_id,
            generation_id=m.generation_id,
            reason=reason,
        )
        m.reset_generation(keep_member_id=keep_member_id)
        out.cancel_timer("heartbeat")

    def _send_leave_group(self, out: Out) -> None:
        """`maybeLeaveGroup`: only a dynamic member (KIP-345) with a known coordinator, a
        member id, and not UNJOINED sends LeaveGroup, once, without retrying it."""
        m, cfg = self.m, self.config
        if m.coordinator is None or not m.member_id or cfg.group_instance_id is not None or m.state is MemberState.UNJOINED:
            return
        self._send_to_coordinator(
            out, "leave", LeaveGroupRequest(cfg.group_id, (MemberIdentity(m.member_id, None),))
        )

    # ------------------------------------------------------------------ commits

    def _commit(self, out: Out, kind: CommitKind, offsets: dict[TopicPartition, tuple[int, int]]) -> int:
        """Send an OffsetCommit (or fail it at once, as `sendOffsetCommitRequest` does when
        the member is not STABLE); returns its commit id."""
        commit = self._new_commit(out, kind, offsets, self.now_ms)
        self._send_commit(out, commit)
        return commit.commit_id

    def _new_commit(self, out: Out, kind: CommitKind, offsets: dict[TopicPartition, tuple[int, int]], started_ms: int) -> Commit:
        """Number and log a commit; `_send_commit` sends it. Apart, so that whoever waits for
        it knows its id before an answer given at once (a failure in the client) arrives."""
        m, cfg = self.m, self.config
        commit = Commit(self._next_id(), kind, dict(offsets), m.generation_id, started_ms=started_ms)
        m.commits[commit.commit_id] = commit
        out.emit(
            "offset_commit_sent",
            group_id=cfg.group_id,
            member_id=m.member_id,
            generation_id=m.generation_id,
            commit_id=commit.commit_id,
            kind=kind.value,
            offsets=_offsets(offsets),
        )
        return commit

    def _send_commit(self, out: Out, commit: Commit) -> None:
        m, cfg = self.m, self.config
        commit_id, offsets = commit.commit_id, commit.offsets
        if m.state is not MemberState.STABLE:
            # `generationIfStable` is null: RebalanceInProgressException while a rebalance is
            # under way, CommitFailedException once the member is out of its generation.
            local = COMMIT_FAILED if m.state is MemberState.UNJOINED else "REBALANCE_IN_PROGRESS"
            self._commit_answered(out, commit_id, local, None)
        elif m.coordinator is None:
            # The commit fails as retriable; the lookup starts, as `commitOffsetsSync` and
            # `commitOffsetsAsync` look the coordinator up before sending.
            self._find_coordinator(out)
            self._commit_answered(out, commit_id, "COORDINATOR_NOT_AVAILABLE", ErrorCode.COORDINATOR_NOT_AVAILABLE)
        else:
            topics = tuple(
                OffsetCommitTopic(t.topic, tuple(OffsetCommitPartition(p, *offsets[TopicPartition(t.topic, p)]) for p in t.partitions))
                for t in by_topic(sorted(offsets))
            )
            request = OffsetCommitRequest(cfg.group_id, m.generation_id, m.member_id, cfg.group_instance_id, topics)
            self._send_to_coordinator(out, "commit", request, detail=commit_id)

    def _commit_answered(self, out: Out, commit_id: int, outcome: str, error: ErrorCode | None) -> None:
        """`OffsetCommitResponseHandler`: log the outcome, react to the error, and wake what
        waits for it (commitSync retries retriable errors until `default.api.timeout.ms`)."""
        m, cfg = self.m, self.config
        commit = m.commits.get(commit_id)
        if commit is None or commit.error is not None:
            return
        commit.error = outcome
        out.emit(
            "offset_commit_answered",
            group_id=cfg.group_id,
            member_id=m.member_id,
            commit_id=commit_id,
            kind=commit.kind.value,
            error=outcome,
        )
        if error in _COORDINATOR_ERRORS or error is ErrorCode.REQUEST_TIMED_OUT:
            self._coordinator_unknown(out, error.name, "OffsetCommit")
        elif error is ErrorCode.REBALANCE_IN_PROGRESS:
            m.rejoin_needed = True
        elif error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION) and m.generation_id == commit.generation_id:
            keep = error is ErrorCode.ILLEGAL_GENERATION and cfg.keep_member_id_on_illegal_generation
            self._reset(out, error.name, keep_member_id=keep)
        elif error is ErrorCode.FENCED_INSTANCE_ID and m.generation_id == commit.generation_id:
            # FencedInstanceIdException, fatal. The application's commitSync throws it at
            # once (from `onPartitionsRevoked`, out of `poll()`); an asynchronous commit's
            # failure is thrown by the next `poll()`; a synchronous auto-commit (`close()`,
            # the pre-rebalance commit before 3.2) only logs it.
            if commit.kind in (CommitKind.SYNC, CommitKind.REVOKE):
                self._fail(out, "OffsetCommit: FENCED_INSTANCE_ID")
                return
            if self.blocked_on != commit_id:
                m.async_commit_fenced = True
        if commit.kind is CommitKind.AUTO and _retriable(outcome):
            self.next_auto_commit_ms = self.now_ms + cfg.retry_backoff_ms
        if self.blocked_on == commit_id:
            # A synchronous commit retries until its timer: `default.api.timeout.ms`, or for
            # the pre-rebalance commit before 3.2 the rebalance timeout
            # (`maybeAutoCommitOffsetsSync(rebalanceTimeoutMs)`).
            waited = self.now_ms - commit.started_ms
            bound = cfg.max_poll_interval_ms if commit.kind is CommitKind.JOIN_PREPARE else cfg.default_api_timeout_ms
            if _retriable(outcome) and waited < bound:
                out.set_timer(f"commit-retry:{commit_id}", cfg.retry_backoff_ms)
                return
            self._unblock(out)
        self._prune_commits()

    def _retry_commit(self, out: Out, commit_id: int) -> None:
        """commitSync sends the same offsets again after `retry.backoff.ms`, within the
        `default.api.timeout.ms` that started with the first attempt."""
        m = self.m
        commit = m.commits.get(commit_id)
        if commit is None or self.blocked_on != commit_id:
            return
        retry = self._new_commit(out, commit.kind, commit.offsets, commit.started_ms)
        self.blocked_on = retry.commit_id
        if m.join_prepare_commit == commit_id:
            m.join_prepare_commit = retry.commit_id
        if m.revoke_commit == commit_id:
            m.revoke_commit = retry.commit_id
        self._send_commit(out, retry)

    def _block_on_commit(
        self, out: Out, kind: CommitKind, offsets: dict[TopicPartition, tuple[int, int]], then: str
    ) -> None:
        """A synchronous commit (commitSync, the pre-rebalance commit before 3.2, the commit in
        `onPartitionsRevoked`, `close()`): the application waits for its outcome. The waiting
        is set up before the commit goes, since one that fails in the client (coordinator
        unknown, member not STABLE) is answered at once."""
        self.app = App.BLOCKED
        self.blocked_then = then
        out.cancel_timer("app")
        commit = self._new_commit(out, kind, offsets, self.now_ms)
        self.blocked_on = commit.commit_id
        if kind is CommitKind.JOIN_PREPARE:
            self.m.join_prepare_commit = commit.commit_id
        elif kind is CommitKind.REVOKE:
            self.m.revoke_commit = commit.commit_id
        self._send_commit(out, commit)

    def _unblock(self, out: Out) -> None:
        then = self.blocked_then
        self.blocked_on, self.blocked_then = None, ""
        if then == "close":
            self._finish_close(out)
        elif then == "unsubscribe":
            # A close() asked for meanwhile is made once unsubscribe() has returned.
            calls, self.deferred_calls = self.deferred_calls, []
            self._unsubscribe(out)
            for action in calls:
                self._call_now(out, action)
        elif then == "poll":
            self._poll(out)

    def _prune_commits(self) -> None:
        """Keep the answered commits only while something may still look them up."""
        m = self.m
        keep = {m.join_prepare_commit, m.revoke_commit, self.blocked_on}
        for commit_id in [c for c, commit in m.commits.items() if commit.error is not None and c not in keep]:
            del m.commits[commit_id]

    def _consumed_of(self, partitions: list[TopicPartition]) -> dict[TopicPartition, tuple[int, int]]:
        return self.subscriptions.consumed_of(partitions)

    # ------------------------------------------------------------------ close and unsubscribe

    def _close(self, out: Out) -> None:
        """`close()` (`ConsumerCoordinator.close`): a synchronous auto-commit
        (`maybeAutoCommitOffsetsSync`), then `AbstractCoordinator.close`. A second call
        returns at once."""
        if self.close_phase == "closed":
            out.emit("consumer_closed", group_id=self.config.group_id, member_id=self.m.member_id)
        if self.close_phase:
            return
        self.close_phase = "commit"
        timeout_ms = min(CLOSE_TIMEOUT_MS, self.config.request_timeout_ms)
        self.close_deadline_ms = self.now_ms + timeout_ms
        out.set_timer("close-timeout", timeout_ms)
        if self.config.enable_auto_commit and self.subscriptions.all_consumed() and self.m.generation_valid:
            self._block_on_commit(out, CommitKind.CLOSE, self.subscriptions.all_consumed(), then="close")
            return
        self._finish_close(out)

    def _finish_close(self, out: Out) -> None:
        """`AbstractCoordinator.close`: the heartbeat thread stops; `onLeavePrepare` and
        LeaveGroup; then close waits for the requests still pending to the coordinator, the
        LeaveGroup among them (`awaitPendingRequests`, bounded by their request timeout), so
        that a process exiting after close() does not cut its LeaveGroup off. With
        `commit = on_revoke` the listener's commitSync comes first: its own call, on its own
        timer (`default.api.timeout.ms`), which close()'s timer does not cut short."""
        if self.close_phase == "commit" and self._listener_commits(out, then="close"):
            self.close_phase = "revoke"
            return
        self._on_leave_prepare(out, "close")
        self._send_leave_group(out)
        self._stop(out)
        self.close_phase = "leave"
        self._maybe_closed(out)

    def _close_timed_out(self, out: Out) -> None:
        """close()'s timer expired (`createTimerForRequest`: its 30 s, at most
        `request.timeout.ms`): its commit still retrying is given up, and close() returns
        without waiting for the requests still pending (`_maybe_closed`)."""
        if self.close_phase == "commit" and self.blocked_on is not None:
            out.cancel_timer(f"commit-retry:{self.blocked_on}")
            self.blocked_on, self.blocked_then = None, ""
            self._finish_close(out)

    def _maybe_closed(self, out: Out) -> None:
        if self.close_phase != "leave":
            return
        m = self.m
        pending = any(to == m.coordinator and kind in _GROUP_REQUESTS for kind, to, _ in self.requests.values())
        if not pending or self.now_ms >= self.close_deadline_ms:
            self._closed(out)

    def _closed(self, out: Out) -> None:
        out.cancel_timer("close-timeout")
        self.close_phase = "closed"
        out.emit("consumer_closed", group_id=self.config.group_id, member_id=self.m.member_id)

    def _unsubscribe(self, out: Out) -> None:
        """`ClassicKafkaConsumer.unsubscribe`: the buffered records are dropped, `onLeavePrepare`
        revokes the partitions and LeaveGroup is sent (`maybeLeaveGroup`, not waited for), then
        the subscription is cleared. Unlike close(), it commits nothing itself: unless the
        application's `onPartitionsRevoked` commits (`commit = on_revoke`, waited for before
        LeaveGroup), what was processed since the last commit is processed again by the
        partitions' next owner."""
        m = self.m
        member = m.member_id
        if not self.unsubscribing and self._listener_commits(out, then="unsubscribe"):
            self.unsubscribing = True
            return
        self._on_leave_prepare(out, "unsubscribe")
        self._send_leave_group(out)
        out.emit("consumer_unsubscribed", group_id=self.config.group_id, member_id=member)
        m.reset_generation()  # `resetGenerationOnLeaveGroup`
        self._stop(out)

    def _on_leave_prepare(self, out: Out, reason: str) -> None:
        """`ConsumerCoordinator.onLeavePrepare`: the owned partitions go before the member
        leaves, reported lost when it is out of its generation or a rebalance is under way
        (`rebalanceInProgress`), revoked otherwise."""
        owned = self.subscriptions.owned()
        if owned:
            self._give_up(out, owned, "lost" if self._leaving_loses() else "revoked", reason)

    def _leaving_loses(self) -> bool:
        m = self.m
        return not m.generation_valid or not m.member_id or m.state is not MemberState.STABLE

    def _listener_commits(self, out: Out, then: str) -> bool:
        """With `commit = on_revoke`, the `onPartitionsRevoked` that `onLeavePrepare` is about
        to call commits the partitions synchronously (`onPartitionsLost` does not): the commit
        is made and the application waits for it, then goes on with `then`. True if it did."""
        owned = self.subscriptions.owned()
        if self.config.app_commit is not AppCommit.ON_REVOKE or not owned or self._leaving_loses():
            return False
        self._block_on_commit(out, CommitKind.REVOKE, self._consumed_of(owned), then=then)
        return True

    def _fail(self, out: Out, error: str) -> None:
        """A fatal error thrown from `poll()`: the application stops."""
        out.emit("consumer_failed", group_id=self.config.group_id, member_id=self.m.member_id, error=error)
        self._stop(out)

    # ------------------------------------------------------------------ positions and fetches

    def _update_fetch_positions(self, out: Out) -> None:
        """`updateFetchPositions`: committed offsets for partitions without a position."""
        m = self.m
        missing = self.subscriptions.needing_position(self.now_ms)
        if not missing or self.offset_fetch_in_flight is not None or m.coordinator is None:
            return
        request = OffsetFetchRequest(self.config.group_id, by_topic(missing))
        self.offset_fetch_in_flight = self._send_to_coordinator(out, "offset_fetch", request)

    def _on_offset_fetch(self, out: Out, correlation_id: int, resp: OffsetFetchResponse) -> None:
        if correlation_id != self.offset_fetch_in_flight:
            return
        self.offset_fetch_in_flight = None
        if resp.error_code in _COORDINATOR_ERRORS:
            self._coordinator_unknown(out, resp.error_code.name, "OffsetFetch")
            return
        if resp.error_code is not ErrorCode.NONE:
            return  # retried in the next poll
        reset: list[TopicPartition] = []
        for topic in resp.topics:
            for p in topic.partitions:
                tp = TopicPartition(topic.name, p.partition)
                state = self.subscriptions.assigned.get(tp)
                if state is None or state.position is not None:
                    continue
                if p.committed_offset >= 0:
                    self._set_position(out, tp, p.committed_offset, p.committed_leader_epoch, "committed")
                else:
                    reset.append(tp)
        self._reset_positions(out, reset)

    def _reset_positions(
        self, out: Out, partitions: list[TopicPartition], error: str = "NoOffsetForPartitionException"
    ) -> None:
        """`auto.offset.reset` by ListOffsets to each partition's leader; with `none`, `error`
        (no committed offset, or `OffsetOutOfRangeException` after OFFSET_OUT_OF_RANGE) is
        thrown to the application."""
        if not partitions:
            return
        policy = self.config.auto_offset_reset
        if policy == "none":
            self._fail(out, f"{error}: {', '.join(str(tp) for tp in partitions)}")
            return
        timestamp = EARLIEST_TIMESTAMP if policy == "earliest" else LATEST_TIMESTAMP
        by_leader: dict[int, list[ListOffsetsPartition]] = {}
        for tp in partitions:
            leader, epoch = self.subscriptions.leaders.get(tp, (-1, -1))
            if leader >= 0:
                by_leader.setdefault(leader, []).append(ListOffsetsPartition(tp.topic, tp.partition, timestamp, epoch))
        for leader, parts in sorted(by_leader.items()):
            cid = self._send(out, leader, "list_offsets", broker_address(leader), ListOffsetsRequest(-1, tuple(parts)))
            self.list_offsets_in_flight.add(cid)

    def _on_list_offsets(self, out: Out, correlation_id: int, resp: ListOffsetsResponse) -> None:
        self.list_offsets_in_flight.discard(correlation_id)
        for p in resp.partitions:
            tp = TopicPartition(p.topic, p.partition)
            state = self.subscriptions.assigned.get(tp)
            if state is not None and state.position is None and p.error_code is ErrorCode.NONE:
                self._set_position(out, tp, p.offset, p.leader_epoch, self.config.auto_offset_reset)
            elif p.error_code in _METADATA_ERRORS:
                self._request_metadata(out)
            elif p.error_code is ErrorCode.OFFSET_NOT_AVAILABLE and state is not None:
                # The new leader's HW has not reached its epoch's start yet (KIP-207): the
                # reset is tried again after `retry.backoff.ms`.
                state.retry_at_ms = self.now_ms + self.config.retry_backoff_ms
                out.set_timer("reset-retry", self.config.retry_backoff_ms)

    def _validate_positions(self, out: Out) -> None:
        """`validatePositionsIfNeeded`: OffsetsForLeaderEpoch to each leader for the positions
        awaiting validation, asking where the epoch of each position's last record ends."""
        by_leader: dict[int, list[OffsetForLeaderEpochPartition]] = {}
        for tp in self.subscriptions.needing_validation():
            leader, epoch = self.subscriptions.leaders.get(tp, (-1, -1))
            if leader >= 0 and tp not in self.validating:
                asked = self.subscriptions.assigned[tp].position_epoch
                by_leader.setdefault(leader, []).append(OffsetForLeaderEpochPartition(tp.topic, tp.partition, asked, epoch))
        for leader, parts in sorted(by_leader.items()):
            tps = frozenset(TopicPartition(p.topic, p.partition) for p in parts)
            self.validating |= tps
            request = OffsetForLeaderEpochRequest(-1, tuple(parts))
            self._send(out, leader, "validate", broker_address(leader), request, detail=tps)

    def _on_epoch_end_offsets(self, out: Out, asked: frozenset[TopicPartition], resp: OffsetForLeaderEpochResponse) -> None:
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
            if r.error_code in _METADATA_ERRORS:
                self._request_metadata(out)
            elif r.error_code is not ErrorCode.NONE:
                continue  # tried again at the next poll
            elif (undefined := r.end_offset < 0 or r.leader_epoch < 0) or r.end_offset < state.position:
                truncated.append(tp)
                if self.config.auto_offset_reset == "none":
                    continue
                if undefined:
                    state.position, state.awaiting_validation = None, False  # no epoch to go by: reset
                    self._reset_positions(out, [tp])
                else:
                    self._set_position(out, tp, r.end_offset, r.leader_epoch, "truncation")
            else:
                state.awaiting_validation = False
        if truncated and self.config.auto_offset_reset == "none":
            self._fail(out, f"LogTruncationException: {', '.join(str(tp) for tp in truncated)}")

    def _set_position(self, out: Out, tp: TopicPartition, offset: int, epoch: int, source: str) -> None:
        self.subscriptions.seek(tp, offset, epoch)
        out.emit(
            "fetch_position_set",
            group_id=self.config.group_id,
            member_id=self.m.member_id,
            generation_id=self.m.generation_id,
            topic=tp.topic,
            partition=tp.partition,
            offset=offset,
            source=source,
        )

    def _send_fetches(self, out: Out) -> None:
        for leader, request in self.fetcher.fetch_requests(self.now_ms):
            offsets = {TopicPartition(p.topic, p.partition): p.fetch_offset for p in request.partitions}
            cid = self._send(
                out,
                leader,
                "fetch",
                broker_address(leader),
                request,
                detail=offsets,
                timeout_ms=self.config.request_timeout_ms + request.max_wait_ms,
            )
            self.fetcher.in_flight[leader] = cid

    def _on_fetch(self, out: Out, broker: int, offsets: dict[TopicPartition, int], resp: FetchResponse) -> None:
        self.fetcher.in_flight.pop(broker, None)
        stale = False
        out_of_range: list[TopicPartition] = []
        for answer in resp.partitions:
            error = self.fetcher.on_fetched(offsets, answer)
            tp = TopicPartition(answer.topic, answer.partition)
            if error in _METADATA_ERRORS:
                stale = True
            elif error is ErrorCode.OFFSET_OUT_OF_RANGE and tp in self.subscriptions.assigned:
                if self.subscriptions.assigned[tp].position == offsets.get(tp):
                    self.subscriptions.assigned[tp].position = None
                    out_of_range.append(tp)
        if stale:
            self._request_metadata(out)
        self._reset_positions(out, out_of_range, "OffsetOutOfRangeException")

    # ------------------------------------------------------------------ metadata and coordinator

    def _request_metadata(self, out: Out) -> None:
        """`Metadata.requestUpdate`: the request goes out once `retry.backoff.ms` has passed
        since the last answer or failure (`Metadata.timeToAllowUpdate`), so a consumer told
        again and again that its metadata is stale (a fetch from a broker that restarted and
        leads nothing yet) asks at most ten times a second, not once per round trip."""
        if self.metadata_in_flight is not None or self.app is App.STOPPED:
            return
        wait = self.metadata_refreshed_ms + self.config.retry_backoff_ms - self.now_ms
        if wait > 0:
            out.set_timer("metadata", wait)
            return
        broker = self._any_broker()
        self.metadata_in_flight = self._send(out, broker, "metadata", broker_address(broker), MetadataRequest(self.config.topics))

    def _on_metadata(self, out: Out, resp: MetadataResponse) -> None:
        self.metadata_in_flight = None
        self.metadata_refreshed_ms = self.now_ms
        missing = False
        leaders = {}
        for p in resp.partitions:
            if p.partition < 0:
                missing = True
                continue
            leaders[TopicPartition(p.topic, p.partition)] = (p.leader, p.leader_epoch)
            missing = missing or p.leader < 0
        self.subscriptions.new_leaders(leaders, validate=self.config.validates_positions)
        out.set_timer("metadata", self.config.retry_backoff_ms if missing else 300_000)

    def _find_coordinator(self, out: Out) -> None:
        if self.find_in_flight is not None or self.m.coordinator is not None or self.app is App.STOPPED:
            return
        if self.now_ms < self.find_backoff_until:
            out.set_timer("find-backoff", self.find_backoff_until - self.now_ms)
            return
        broker = self._any_broker()
        self.find_in_flight = self._send(out, broker, "find", broker_address(broker), FindCoordinatorRequest(self.config.group_id))

    def _on_find_coordinator(self, out: Out, resp: FindCoordinatorResponse) -> None:
        self.find_in_flight = None
        if resp.error_code is ErrorCode.NONE and resp.node_id >= 0:
            self.m.coordinator = resp.node_id
            self.m.last_heartbeat_ok_ms = self.now_ms  # a new coordinator: the session starts afresh
            out.emit("coordinator_discovered", group_id=self.config.group_id, coordinator=resp.node_id)
            self._arm_heartbeat(out)
            if self.now_ms - self.last_poll_ms >= self.config.max_poll_interval_ms:
                # The heartbeat thread checks the poll timer whenever it runs with a known
                # coordinator: a deadline that passed while none was known counts now.
                self._poll_timeout(out)
        else:
            self.find_target += 1
            out.set_timer("find-backoff", self.config.retry_backoff_ms)

    def _coordinator_unknown(self, out: Out, reason: str, request: str = "") -> None:
        """`markCoordinatorUnknown`: disconnects it, failing every request in flight to it.
        `request`: the request whose answer said so, if an answer did."""
        m = self.m
        if m.coordinator is None:
            return
        old = m.coordinator
        m.coordinator = None
        out.emit("coordinator_lost", group_id=self.config.group_id, coordinator=old, reason=reason, request=request)
        self._fail_requests(out, old, coordinator_only=True)

    def _connected(self, broker: int) -> None:
        """An answer came from `broker`: its connection works, the back-off starts afresh."""
        self.reconnect_backoff_ms.pop(broker, None)
        self.fetcher.not_ready_until.pop(broker, None)

    def _connection_failed(self, out: Out, broker: int) -> None:
        """`NetworkClient.processDisconnection`: the broker is not ready for
        `reconnect.backoff.ms` (doubled after each failure, up to `reconnect.backoff.max.ms`),
        and metadata is asked for again, since the broker may be dead and its partitions led
        elsewhere (`DefaultMetadataUpdater.handleServerDisconnect`)."""
        backoff = min(2 * self.reconnect_backoff_ms.get(broker, RECONNECT_BACKOFF_MS // 2), RECONNECT_BACKOFF_MAX_MS)
        self.reconnect_backoff_ms[broker] = backoff
        self.fetcher.not_ready_until[broker] = self.now_ms + backoff
        self._request_metadata(out)

    def _disconnected(self, out: Out, broker: int) -> None:
        self._connection_failed(out, broker)
        if broker == self.m.coordinator:
            # `ensureCoordinatorReady`: the coordinator found is unavailable, so it is marked
            # unknown and the next lookup waits `retry.backoff.ms` (a lookup at once would find
            # the same dead broker until the controller moves its partition).
            self._coordinator_unknown(out, DISCONNECTED)
            self.find_backoff_until = self.now_ms + self.config.retry_backoff_ms
        self._fail_requests(out, broker, coordinator_only=False)
        self._resume_poll(out)

    def _fail_requests(self, out: Out, broker: int, *, coordinator_only: bool) -> None:
        """Fail the requests in flight to `broker` as disconnected."""
        for cid in sorted(self.requests):
            kind, to, detail = self.requests[cid]
            if to != broker or (coordinator_only and kind not in _GROUP_REQUESTS):
                continue
            del self.requests[cid]
            out.cancel_timer(f"timeout:{cid}")
            self._request_failed(out, cid, kind, to, detail, DISCONNECTED)

    def _request_timed_out(self, out: Out, cid: int) -> None:
        """`request.timeout.ms` passed: Kafka closes the connection, failing what is on it."""
        request = self.requests.get(cid)
        if request is None:
            return
        _, broker, _ = request
        if broker == self.m.coordinator and request[0] in _GROUP_REQUESTS:
            self._coordinator_unknown(out, TIMEOUT)
        self._fail_requests(out, broker, coordinator_only=False)
        self._connection_failed(out, broker)
        self._resume_poll(out)

    def _request_failed(self, out: Out, cid: int, kind: str, broker: int, detail: Any, error: str) -> None:
        m = self.m
        if kind == "join" and cid == m.join_in_flight:
            m.join_in_flight = None
            m.rejoin_needed = True
        elif kind == "sync" and cid == m.sync_in_flight:
            m.sync_in_flight = None
            m.state = MemberState.UNJOINED
            m.rejoin_needed = True
        elif kind == "heartbeat":
            m.heartbeat_in_flight = None
            m.next_heartbeat_ms = self.now_ms + self.config.retry_backoff_ms
            self._arm_heartbeat(out)
        elif kind == "commit":
            self._commit_answered(out, detail, error, None)
        elif kind == "offset_fetch":
            self.offset_fetch_in_flight = None
        elif kind == "fetch":
            self.fetcher.in_flight.pop(broker, None)
        elif kind == "metadata":
            self.metadata_in_flight = None
            self.metadata_refreshed_ms = self.now_ms  # `Metadata.failedUpdate`
            self.find_target += 1
            out.set_timer("metadata", self.config.retry_backoff_ms)
        elif kind == "find":
            self.find_in_flight = None
            self.find_target += 1
            out.set_timer("find-backoff", self.config.retry_backoff_ms)
        elif kind == "list_offsets":
            self.list_offsets_in_flight.discard(cid)
        elif kind == "validate":
            self.validating -= detail

    # ------------------------------------------------------------------ sending

    def _any_broker(self) -> int:
        brokers = self.config.bootstrap
        return brokers[self.find_target % len(brokers)]

    def _send_to_coordinator(self, out: Out, kind: str, request: Any, *, detail: Any = None, timeout_ms: int | None = None) -> int:
        coordinator = self.m.coordinator
        assert coordinator is not None
        return self._send(out, coordinator, kind, group_coordinator_address(coordinator), request, detail=detail, timeout_ms=timeout_ms)

    def _send(self, out: Out, broker: int, kind: str, dst: Any, request: Any, *, detail: Any = None, timeout_ms: int | None = None) -> int:
        cid = self._next_id()
        self.requests[cid] = (kind, broker, detail)
        out.send(dst, request, cid)
        out.set_timer(f"timeout:{cid}", timeout_ms or self.config.request_timeout_ms)
        return cid

    def _next_id(self) -> int:
        self.next_correlation_id += 1
        return self.next_correlation_id


def _offsets(offsets: dict[TopicPartition, tuple[int, int]]) -> list[list[Any]]:
    return [[tp.topic, tp.partition, offset] for tp, (offset, _) in sorted(offsets.items())]


_RETRIABLE_OUTCOMES = frozenset({DISCONNECTED, TIMEOUT, *(e.name for e in _RETRIABLE_COMMIT)})


def _retriable(outcome: str) -> bool:
    return outcome in _RETRIABLE_OUTCOMES

