"""A consumer process: the application's poll loop (Kafka's `KafkaConsumer`, in its classic
form `ClassicKafkaConsumer`), which runs the consumer's parts.

- **The application** calls `poll()`, processes what it returned (`application.Processing`),
  commits if it is written to (`commit`), and polls again. With `processing = "workers"` it
  hands what `poll()` returned to its worker threads (`workers.WorkerPool`) and polls on; it
  pauses the partitions whose records wait once the hand-off queue holds
  `worker.queue.records`, and resumes them, before a poll, once the queue has drained. A poll
  waits up to `poll.timeout.ms` for records; every answer that arrives while it waits runs the
  poll's loop again, as `KafkaConsumer.poll` does. A synchronous commit blocks the application
  until done. With `poll.every.ms` the application polls at fixed instants instead, idle from
  the end of a poll and its processing to the next one.
- **Each pass of the loop** throws the fencing error an asynchronous commit was answered with,
  if any, polls the group membership (`GroupMembership.poll`), gives positions to the
  partitions without one, validates positions after a leader change, and returns the records
  fetched or sends fetches.
- **The application's calls** (`close()`, `unsubscribe()`, a stall, a slow spell) come from
  the scenario's faults as `ApplicationCall` messages. `close()` and `unsubscribe()` are made
  from the poll loop, between two polls (the consumer is not safe for multi-threaded access):
  one that comes while the records in hand are processed, or while the application waits for a
  commit, is made once that is done.

Every fact the analytics need is logged: records processed per partition as offset ranges,
commits sent and answered, assignments, revocations and losses with their reason.
Left out: `assign()`, `seek()` and `wakeup()`: the application only subscribes, polls, pauses
and resumes (with workers), commits and closes or unsubscribes.
"""

from __future__ import annotations

from typing import Any

from actors.addresses import broker_address, group_coordinator_address
from actors.consumer.application import App, Processing
from actors.consumer.commits import CommitKind, CommitRequestManager
from actors.consumer.config import AppCommit, ConsumerConfig, ProcessingMode
from actors.consumer.consumer_coordinator import ConsumerCoordinator
from actors.consumer.consumer_membership import ConsumerMembershipManager
from actors.consumer.fetcher import Fetcher, Returned
from actors.consumer.group_membership import GroupMembership
from actors.consumer.leaving import Leaving
from actors.consumer.metadata import ConsumerMetadata
from actors.consumer.network import TIMEOUT, Clock, NetworkClient
from actors.consumer.offset_fetcher import OffsetFetcher
from actors.consumer.subscription_state import Offsets, SubscriptionState
from actors.consumer.workers import WorkerPool
from actors.core import Ctx, Inbound, Out
from protocols.application import ApplicationCall
from protocols.connection import Disconnected
from protocols.group import OffsetCommitResponse, OffsetFetchResponse
from protocols.metadata import MetadataResponse
from protocols.replication import FetchResponse, ListOffsetsResponse, OffsetForLeaderEpochResponse
from protocols.types import TopicPartition

__all__ = ["Consumer"]



class Consumer(Leaving):
    def __init__(self, config: ConsumerConfig) -> None:
        self.config = config
        self.clock = Clock()
        self.network = NetworkClient(config, self.clock)
        self.subscriptions = SubscriptionState()
        self.fetcher = Fetcher(
            config.max_partition_fetch_bytes,
            config.fetch_min_bytes,
            config.fetch_max_wait_ms,
            self.subscriptions,
            keep_paused=config.keeps_paused_fetches,
        )
        self.metadata = ConsumerMetadata(config, self.clock, self.network, self.subscriptions)
        coordinator: ConsumerCoordinator | ConsumerMembershipManager
        if config.group_protocol == "consumer":
            coordinator = ConsumerMembershipManager(config, self.clock, self.network, self.subscriptions, self)
        else:
            coordinator = ConsumerCoordinator(config, self.clock, self.network, self.subscriptions, self)
        self.membership: GroupMembership = coordinator
        self.positions = OffsetFetcher(config, self.clock, self.network, self.subscriptions, self.metadata, coordinator, self)
        self.commits = CommitRequestManager(config, self.clock, self.network, self.subscriptions, coordinator, self.positions, self)
        coordinator.commits = self.commits
        if isinstance(coordinator, ConsumerMembershipManager):
            self.commits.on_answered = coordinator.on_commit_answered
        self.app = App.STARTING
        self.app_until_ms = 0
        self.poll_started_ms = 0
        """When the application's last `poll()` call began (`poll.every.ms` counts from it)."""
        self.processing = Processing(config.process_record_ms)
        workers = config.processing is ProcessingMode.WORKERS
        self.workers = WorkerPool(config, self.processing, self.subscriptions) if workers else None
        self.listener_waiting: tuple[list[TopicPartition], str] | None = None
        """`onPartitionsRevoked` (`commit = processed`) waits for the workers to finish these
        partitions' records, then commits them and goes on with `then`."""
        self.deferred_calls: list[str] = []
        """`close` or `unsubscribe` calls waiting for the application to be between polls."""
        self.blocked_then = ""
        """What the application does once the commit it waits for is done."""
        self.close_phase = ""
        """`close()`: "" before it; `commit`, `revoke` (the listener's commit, with
        `commit = on_revoke`), `leave` (waiting for the requests still pending to the
        coordinator), then `closed`."""
        self.close_deadline_ms = 0
        """When close()'s timer expires: it then waits for nothing more."""
        self.unsubscribing = False
        """`unsubscribe()` waits for the listener's commit (`commit = on_revoke`)."""

    # ------------------------------------------------------------------ handlers

    def on_start(self, ctx: Ctx) -> Out:
        self.clock.now_ms = ctx.now_ms
        self.membership.retry_backoff.rng = ctx.rng  # KIP-580's jitter: the consumer's own stream
        if isinstance(self.membership, ConsumerMembershipManager):
            self.membership.start(ctx.rng)  # from 4.0 the member id is drawn now (KIP-1082)
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
            group_protocol=cfg.group_protocol,
        )
        out.set_timer("app", max(0, cfg.start_ms - ctx.now_ms))
        return out

    def on_timer(self, ctx: Ctx, key: str) -> Out:
        self.clock.now_ms = ctx.now_ms
        out = Out()
        kind, _, arg = key.partition(":")
        if kind == "app":
            self._app_timer(out)
        elif kind == "timeout":
            self._request_timed_out(out, int(arg))
        elif kind == "metadata":
            self.metadata.request_update(out)
        elif kind == "commit-retry":
            self.commits.retry_commit(out, int(arg))
        elif kind == "commit-deadline":
            self.commits.sync_deadline_passed(out)
        elif kind == "close-timeout":
            self._close_timed_out(out)
        elif kind == "reset-retry":
            self._resume_poll(out)
        elif kind == "worker":
            self._worker_done(out, int(arg))
        else:
            self.membership.on_timer(out, kind)
        self._maybe_closed(out)
        return out

    def on_message(self, ctx: Ctx, inbound: Inbound) -> Out:
        self.clock.now_ms = ctx.now_ms
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
        cid = inbound.correlation_id
        request = self.network.complete(out, cid)
        if request is None:
            return out  # answered after it timed out, or its connection closed
        match message:
            case OffsetCommitResponse():
                self.commits.on_commit_response(out, request.detail, message)
            case OffsetFetchResponse():
                self.commits.on_offset_fetch_response(out, cid, message)
            case FetchResponse():
                self._on_fetch(out, request.broker, request.detail, message)
            case ListOffsetsResponse():
                self.positions.on_list_offsets_response(out, cid, message)
            case OffsetForLeaderEpochResponse():
                self.positions.on_epoch_end_offsets(out, request.detail, message)
            case MetadataResponse():
                self.metadata.on_metadata_response(out, message)
            case _:
                self.membership.on_response(out, cid, request, message)
        self._resume_poll(out)
        self._maybe_closed(out)
        return out

    def snapshot(self) -> dict[str, Any]:
        return {
            "group_id": self.config.group_id,
            **self.membership.snapshot(),
            "assignment": [str(tp) for tp in self.subscriptions.owned()],
            "positions": {str(tp): s.position for tp, s in sorted(self.subscriptions.assigned.items())},
            "app": self.app.value,
            "processed": self.processing.processed,
            "paused": [str(tp) for tp in self.subscriptions.paused()],
            **({"workers": self.workers.snapshot()} if self.workers is not None else {}),
        }

    # ------------------------------------------------------------------ the poll loop

    def _app_timer(self, out: Out) -> None:
        now = self.clock.now_ms
        if self.app is App.STARTING:
            self.metadata.request_update(out)
            self.membership.lookup_coordinator(out)
            self._poll(out)
        elif self.app is App.PROCESSING and now >= self.app_until_ms:
            self._processed(out)
        elif self.app is App.POLLING and now >= self.app_until_ms:
            self._poll_next(out)  # the poll returned nothing: the application polls again
        elif self.app is App.IDLE and now >= self.app_until_ms:
            self._poll(out)

    def _poll(self, out: Out, *, resumed: bool = False) -> None:
        """The application calls `poll()`; or (`resumed`) a `poll()` that a synchronous call
        inside it blocked goes on, and the application does nothing of its own first."""
        now = self.clock.now_ms
        stall_until_ms = self.processing.stall_until_ms
        if now < stall_until_ms and self.workers is None:
            self.app, self.app_until_ms = App.PROCESSING, stall_until_ms
            out.set_timer("app", stall_until_ms - now)
            return
        if self.deferred_calls:
            # The application is between two polls: it makes the calls it was asked for
            # instead of polling (after either, it polls no more).
            calls, self.deferred_calls = self.deferred_calls, []
            for action in calls:
                self._call_now(out, action)
            return
        if self.workers is not None and not resumed:
            self.workers.resume_if_drained(out, self.membership)
        if self.config.app_commit is AppCommit.PROCESSED and not resumed and (offsets := self.processing.to_commit()):
            self.commits.commit_offsets_async(out, CommitKind.ASYNC, offsets)
        self.membership.poll_heartbeat(out)
        if not resumed:
            self.poll_started_ms = now
        self.app = App.POLLING
        # A poll(0) that finds nothing returns at once, and the application polls again: here
        # no sooner than the next millisecond, so simulated time moves on.
        wait = max(1, self.config.poll_timeout_ms)
        self.app_until_ms = now + wait
        out.set_timer("app", wait)
        self._poll_loop(out)

    def _poll_next(self, out: Out) -> None:
        """The application is done with its last poll (and its records): it polls again, at
        once or, with `poll.every.ms`, at its next instant."""
        now = self.clock.now_ms
        at = self.config.next_poll_ms(self.poll_started_ms, now)
        if at <= now:
            self._poll(out)
            return
        self.app, self.app_until_ms = App.IDLE, at
        out.set_timer("app", at - now)

    def _resume_poll(self, out: Out) -> None:
        """An answer arrived: a waiting `poll()` runs its loop again."""
        if self.app is App.POLLING:
            self._poll_loop(out)

    def _poll_loop(self, out: Out) -> None:
        """One pass of `KafkaConsumer.poll`'s loop: the coordinator, positions, records."""
        if self.commits.async_commit_fenced:
            # `ConsumerCoordinator.poll` drains the commit callbacks first.
            self.fail(out, "OffsetCommit: FENCED_INSTANCE_ID")
            return
        self.membership.poll(out)
        self._drop_revoked(out)
        if self.app is not App.POLLING:
            return  # a call inside it blocks (a synchronous commit) or stopped the consumer
        self.commits.refresh_committed_offsets_if_needed(out)
        self.positions.reset_positions_if_needed(out)
        self.positions.validate_positions_if_needed(out)
        returned = self.fetcher.collect(self.config.max_poll_records)
        # Whether it returns records or waits for them, `poll()` sends the fetches it can: the
        # next ones go out before the application processes these (`KafkaConsumer.poll`'s
        # pipelining).
        self.fetcher.send_fetches(out, self.network)
        if returned:
            self._process(out, returned)

    def _process(self, out: Out, returned: list[Returned]) -> None:
        now = self.clock.now_ms
        self.app = App.PROCESSING
        if self.workers is not None:
            # The hand-off takes no time; the poll thread then commits as written and polls.
            self.workers.hand_off(out, now, returned, self.membership)
            self.app_until_ms = now
            out.set_timer("app", 0)
            return
        self.app_until_ms = self.processing.start(now, returned, self.membership.generation_id, self.membership.member_id)
        out.set_timer("app", self.app_until_ms - now)

    def _processed(self, out: Out) -> None:
        """The application finished the records (or handed them to its workers): log them,
        commit as written, poll again. `commit = sync` and `async` commit the positions, what
        the polls returned, whether the workers have processed it or not."""
        cfg = self.config
        if self.workers is None:
            self.processing.finish(out, cfg.group_id)
        if cfg.app_commit is AppCommit.SYNC:
            self._commit_sync(out, CommitKind.SYNC, self.subscriptions.all_consumed(), then="next_poll")
            return
        if cfg.app_commit is AppCommit.ASYNC:
            self.commits.commit_offsets_async(out, CommitKind.ASYNC, self.subscriptions.all_consumed())
        self._poll_next(out)

    # ------------------------------------------------------------------ the application's calls

    def _application_call(self, out: Out, call: ApplicationCall) -> None:
        now = self.clock.now_ms
        if call.action in ("close", "unsubscribe"):
            if self.app in (App.PROCESSING, App.BLOCKED) and not self.close_phase:
                self.deferred_calls.append(call.action)  # made between two polls (see above)
            else:
                self._call_now(out, call.action)
        elif self.app is App.STOPPED:
            return
        elif call.action == "stall" and self.workers is not None:
            self.workers.stall(out, now, call.duration_ms)
        elif call.action == "stall":
            self.processing.stall(now, call.duration_ms)
            if self.app is App.PROCESSING and self.app_until_ms < self.processing.stall_until_ms:
                self.app_until_ms = self.processing.stall_until_ms
                out.set_timer("app", self.app_until_ms - now)
        elif call.action == "slow":
            end = self.processing.slow(now, call.duration_ms, call.record_ms)
            if self.workers is not None:
                self.workers.slow(out, now)
            elif self.app is App.PROCESSING and end is not None:
                self.app_until_ms = max(end, self.processing.stall_until_ms)
                out.set_timer("app", max(0, self.app_until_ms - now))

    def _call_now(self, out: Out, action: str) -> None:
        if action == "close":
            self._close(out)
        elif self.app is not App.STOPPED:
            self._unsubscribe(out)  # after close() or unsubscribe() it has no subscription left

    def _stop(self, out: Out) -> None:
        self.app = App.STOPPED
        self.deferred_calls = []
        out.cancel_timer("app")
        self.listener_waiting = None
        if self.workers is not None:
            self.workers.drop_unowned(out, self.clock.now_ms, ())  # the pool is shut down
        self.membership.stop(out)
        self.metadata.close()

    def fail(self, out: Out, error: str) -> None:
        """A fatal error thrown from `poll()`: the application stops."""
        out.emit("consumer_failed", group_id=self.config.group_id, member_id=self.membership.member_id, error=error)
        self._stop(out)

    # ------------------------------------------------------------------ synchronous commits

    def _commit_sync(self, out: Out, kind: CommitKind, offsets: Offsets, then: str) -> None:
        """The application waits for the commit, then goes on with `then`; blocked first,
        since a commit that fails in the client is answered at once."""
        self.block_on_commit(out, then)
        self.commits.commit_offsets_sync(out, kind, offsets)

    def polls_network(self) -> bool:
        return self.app in (App.POLLING, App.BLOCKED) or bool(self.close_phase)

    def block_on_commit(self, out: Out, then: str = "poll") -> None:
        self.app = App.BLOCKED
        self.blocked_then = then
        out.cancel_timer("app")

    def commit_completed(self, out: Out) -> None:
        then = self.blocked_then
        self.blocked_then = ""
        if then == "close":
            self._finish_close(out)
        elif then == "unsubscribe":
            # A close() asked for meanwhile is made once unsubscribe() has returned.
            calls, self.deferred_calls = self.deferred_calls, []
            self._unsubscribe(out)
            for action in calls:
                self._call_now(out, action)
        elif then == "poll":
            self._poll(out, resumed=True)  # inside poll(): the rebalance step goes on
        elif then == "next_poll":
            self._poll_next(out)

    # ------------------------------------------------------------------ the workers

    def _worker_done(self, out: Out, index: int) -> None:
        if self.workers is None or not self.workers.finish(out, index, self.clock.now_ms, self.config.group_id):
            return
        if self.listener_waiting is not None:
            partitions, then = self.listener_waiting
            if not self.workers.holds(partitions):
                # `onPartitionsRevoked` stops waiting: it commits, and what called it goes on.
                self.listener_waiting = None
                if then == "poll":
                    self.blocked_then = ""
                    self._poll(out, resumed=True)  # the rebalance step runs again, and commits
                else:
                    self._commit_sync(out, CommitKind.REVOKE, self.processing.finished_of(partitions), then=then)

    def _drop_revoked(self, out: Out) -> None:
        """After the rebalance step: what the application held of partitions it no longer
        owns goes (what it had processed, its workers' tasks and its pauses)."""
        self.processing.forget(self.subscriptions.assigned)
        if self.workers is not None:
            self.workers.drop_unowned(out, self.clock.now_ms, self.subscriptions.assigned)

    # ------------------------------------------------------------------ fetches and connections

    def _on_fetch(self, out: Out, broker: int, offsets: dict[TopicPartition, int], resp: FetchResponse) -> None:
        stale, out_of_range = self.fetcher.on_fetch_response(broker, offsets, resp)
        if stale:
            self.metadata.request_update(out)
        self.positions.reset_positions(out, out_of_range, "OffsetOutOfRangeException")

    def _connection_failed(self, out: Out, broker: int) -> None:
        """The broker is backed off, and metadata is asked for again, since it may be dead and
        its partitions led elsewhere (`DefaultMetadataUpdater.handleServerDisconnect`)."""
        self.network.connection_failed(broker)
        self.metadata.request_update(out)

    def _disconnected(self, out: Out, broker: int) -> None:
        self._connection_failed(out, broker)
        self.membership.on_disconnect(out, broker)
        self.network.fail_requests(out, broker, coordinator_only=False)
        self._resume_poll(out)

    def _request_timed_out(self, out: Out, cid: int) -> None:
        """`request.timeout.ms` passed: Kafka closes the connection, failing what is on it. The
        client reaches a broker's group coordinator over a connection of its own (node id
        `Integer.MAX_VALUE - id`), so a fetch that times out leaves the coordinator's requests
        alone, and the other way round."""
        request = self.network.requests.get(cid)
        if request is None:
            return
        broker = request.broker
        if request.to_coordinator:
            out.disconnect(group_coordinator_address(broker))
            if broker == self.membership.coordinator:
                self.membership.mark_coordinator_unknown(out, TIMEOUT)
            self.network.fail_requests(out, broker, coordinator_only=True)
        else:
            out.disconnect(broker_address(broker))  # what the connection still carries is lost
            self.network.fail_requests(out, broker, coordinator_only=False, broker_only=True)
            self._connection_failed(out, broker)
        self._resume_poll(out)
