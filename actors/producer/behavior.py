"""A producer: the application's records, the record accumulator and the sender.

What it models of the Java producer (`KafkaProducer`, `RecordAccumulator`, `Sender`,
`NetworkClient`):

- Records are generated at `interval.ms` ticks (`records.per.interval` at a time, optionally in
  bursts), each partitioned by the version's partitioner (`partitioner.py`) and appended to its
  partition's batch (`accumulator.py`).
- The sender drains every ready node into one Produce request carrying the first batch of each
  partition it leads, with at most `max.in.flight.requests.per.connection` requests in flight
  per broker. With a single request in flight a partition's next batch waits for the last
  (`guaranteeMessageOrder`).
- A failed batch is retried while its error is retriable, `retries` allows and its
  `delivery.timeout.ms` has not passed (KIP-91); it waits `retry.backoff.ms` first. Without
  idempotence a retry may write the records twice, and with more than one request in flight
  may land after a later batch. A batch expires, in the queue or in flight, once
  `delivery.timeout.ms` has passed since it was created.
- With idempotence (`idempotence.py`) each batch carries the producer id, epoch and a
  per-partition sequence; the broker deduplicates retries.
- Metadata (`Metadata`, `NetworkClient`): the producer asks a broker for the topic's leaders at
  start, again `retry.backoff.ms` later while a partition has none, after an error that means
  stale metadata or a closed connection, and every `metadata.max.age.ms`. It asks one broker
  while that one answers, and the next after `request.timeout.ms` without an answer, or at once
  when its connection closes. In a cluster without a controller the leaders are fixed.
- Connections: a request without an answer after `request.timeout.ms` closes its connection,
  failing every request in flight on it with REQUEST_TIMED_OUT; a connection closed by a
  crashed broker fails them at once with NETWORK_EXCEPTION, and so does an answer that overtakes
  an earlier one (the network lost that one: a broken TCP stream, which Kafka detects as a
  correlation id mismatch). A broker whose
  connection failed is not tried again for `reconnect.backoff.ms`, doubling up to
  `reconnect.backoff.max.ms`.

Each batch's life is logged: `batch_sent` (with the time it was created), `batch_retried` and
one `produce_completed` with its outcome.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from actors.broker.config import broker_address
from actors.core import Ctx, Inbound, Out
from actors.producer.accumulator import ProducerBatch, Ready, RecordAccumulator
from actors.producer.acked import AckedRecords
from actors.producer.config import ProducerConfig
from actors.producer.idempotence import Idempotence
from actors.producer.partitioner import Partitioner, Partitioning, partition_for_key
from protocols.connection import Disconnected
from protocols.errors import ErrorCode
from protocols.metadata import MetadataRequest, MetadataResponse
from protocols.producer import InitProducerIdResponse
from protocols.replication import ProducePartitionData, ProduceRequest, ProduceResponse

__all__ = ["Producer", "ProducerConfig"]

RECONNECT_BACKOFF_MS = 50
"""`reconnect.backoff.ms`: how long a broker whose connection failed is not tried again."""
RECONNECT_BACKOFF_MAX_MS = 1000
"""`reconnect.backoff.max.ms`: the cap of the doubling back-off (Kafka also adds 20% jitter,
left out here)."""

DELIVERY_TIMEOUT = "DELIVERY_TIMEOUT"
"""The outcome of a batch that expired: the client's TimeoutException, not a broker error."""

_RETRIABLE = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.CORRUPT_MESSAGE,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
    }
)
"""Errors whose exception is a `RetriableException`."""

_REFRESH_ON = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
    }
)
"""Errors after which the metadata is asked for again (`InvalidMetadataException`, and a
closed connection)."""


_NEVER = 2**62
"""Later than any simulated time."""
MAX_FOLDED_TICKS = 64
"""The most ticks one fold looks ahead: beyond it the producer wakes once more and folds again."""


class _Commands(Out):
    """A producer handler's commands, noting when each timer it sets is due (the tick fold
    must stop before every one of them)."""

    def __init__(self, now_ms: int, timers_due: dict[str, int]) -> None:
        super().__init__()
        self._now_ms = now_ms
        self._timers_due = timers_due

    def set_timer(self, key: str, after_ms: int) -> None:
        self._timers_due[key] = self._now_ms + after_ms
        super().set_timer(key, after_ms)

    def cancel_timer(self, key: str) -> None:
        self._timers_due.pop(key, None)
        super().cancel_timer(key)


class _Room:
    """How many of the next records would each be placed without a random draw into an open
    batch with room, for a broker that can take no request now (see `Producer._fold`)."""

    def __init__(self, producer: Producer) -> None:
        self._producer = producer

    def records(self, first: int, limit: int) -> int:
        """Of the records numbered from `first`, how many in a row (at most `limit`)."""
        producer = self._producer
        partitioner = producer.partitioner
        assert partitioner is not None
        if producer.config.keys:
            return self._keyed(first, limit)
        sticky = partitioner.sticky if partitioner.kind in _STICKY_KINDS else None
        if sticky is None:
            return 0
        size = producer.accumulator.record_size
        count = min(limit, self._fits(sticky) // size)
        if partitioner.kind is Partitioning.UNIFORM_STICKY:
            # KIP-794: the record that reaches twice `batch.size` is placed, then the next one
            # chooses again, at random.
            left = 2 * partitioner.batch_size - partitioner.produced_bytes
            count = min(count, max(1, -(-left // size)))
        return count

    def _keyed(self, first: int, limit: int) -> int:
        producer = self._producer
        cfg, size = producer.config, producer.accumulator.record_size
        partitioner = producer.partitioner
        if partitioner is None or partitioner.kind is Partitioning.ROUND_ROBIN:
            return 0
        fits: dict[int, int] = {}
        for count in range(limit):
            partition = partition_for_key(f"key-{(first + count) % cfg.keys}", cfg.partitions)
            room = fits[partition] if partition in fits else self._fits(partition)
            if room < size:
                return count
            fits[partition] = room - size
        return limit

    def _fits(self, partition: int) -> int:
        """Bytes the partition's open batch can still take, 0 if none can be used now."""
        producer = self._producer
        leader = producer.state.leaders.get(partition, -1)
        if leader < 0 or producer.state.in_flight.get(leader, 0) < producer.config.max_in_flight:
            return 0
        acc = producer.accumulator
        queue = acc.queues.get(partition)
        if not queue or queue[-1].closed:
            return 0
        return acc.batch_size - queue[-1].size_bytes


_STICKY_KINDS = frozenset({Partitioning.STICKY, Partitioning.UNIFORM_STICKY})


@dataclass(slots=True)
class _Request:
    broker: int
    batches: list[ProducerBatch]


@dataclass(slots=True)
class ProducerState:
    generated: int = 0
    """Records handed to the producer so far."""
    acked: AckedRecords = field(default_factory=AckedRecords)
    """Where each acknowledged record was written, as runs of consecutive numbers and offsets,
    for the end-of-run checks."""
    failed: int = 0
    """Records whose batch failed for good."""
    requests: dict[int, _Request] = field(default_factory=dict)
    """Correlation id -> a Produce request in flight."""
    in_flight: dict[int, int] = field(default_factory=dict)
    """Broker -> its requests in flight."""
    not_ready_until: dict[int, int] = field(default_factory=dict)
    """Broker -> when a connection to it may be tried again (`reconnect.backoff.ms`)."""
    reconnect_backoff_ms: dict[int, int] = field(default_factory=dict)
    """Broker -> the back-off after its last failed connection, doubled on each failure."""
    leaders: dict[int, int] = field(default_factory=dict)
    brokers: tuple[int, ...] = ()
    metadata_in_flight: int | None = None
    metadata_target: int = 0
    """Which broker to ask: the same one while it answers (Java's least-loaded node prefers a
    connected one), the next after a timeout."""
    next_correlation_id: int = 0
    produce_requests: int = 0
    sender_wakeup_ms: int | None = None
    """When the sender's timer is set to fire."""
    next_tick_ms: int | None = None
    """When the application next hands records to the producer (the next tick not yet run)."""
    timers_due: dict[str, int] = field(default_factory=dict)
    """Key -> when each timer this producer set fires (a cancelled one is dropped)."""
    next_expiry_ms: int | None = None
    """When the first batch known, queued or in flight, expires."""


class Producer:
    def __init__(self, config: ProducerConfig) -> None:
        self.config = config
        self.state = ProducerState()
        self.state.leaders = dict(enumerate(config.leaders))
        self.state.brokers = config.bootstrap
        self.accumulator = RecordAccumulator(
            config.batch_size, config.linger_ms, config.retry_backoff_ms, config.record_bytes
        )
        self.idempotence = Idempotence(epoch_bump=config.epoch_bump) if config.idempotence else None
        self.partitioner: Partitioner | None = None
        self._available: tuple[int, ...] | None = None
        """`_available_partitions`, while the leaders stay (recomputed after a metadata answer)."""
        self._last_ready: Ready | None = None
        """The sender's last readiness check in this handler (None if it made none)."""
        self._sender_wake_ms: int | None = None
        """The first time-driven wake-up the sender's last run found (linger, back-off, expiry)."""
        self.now_ms = 0
        """The time of the handler running (set as each handler starts)."""

    # ------------------------------------------------------------------ handlers

    def on_start(self, ctx: Ctx) -> Out:
        self.now_ms = ctx.now_ms
        cfg = self.config
        self.partitioner = Partitioner(cfg.partitioning, cfg.partitions, cfg.batch_size, ctx.rng)
        out = _Commands(ctx.now_ms, self.state.timers_due)
        if cfg.records > 0:
            self.state.next_tick_ms = max(cfg.start_ms, ctx.now_ms)
            out.set_timer("generate", self.state.next_tick_ms - ctx.now_ms)
            # The producer exists from the start; its records begin at `start.ms`. The sender
            # asks for the metadata and, if idempotent, for a producer id at once.
            if not cfg.leaders:
                self._request_metadata(out)
            if self.idempotence is not None:
                self._init_producer_id(out)
        return out

    def on_timer(self, ctx: Ctx, key: str) -> Out:
        out = self._begin(ctx, key)
        kind, _, arg = key.partition(":")
        if kind == "generate":
            self._generate(out)
        elif kind == "sender":
            self.state.sender_wakeup_ms = None
        elif kind == "timeout":
            self._request_timed_out(out, int(arg))
        elif kind == "metadata":
            self._request_metadata(out)
        elif kind == "metadata-timeout" and self.state.metadata_in_flight == int(arg):
            self.state.metadata_in_flight = None
            self.state.metadata_target += 1  # that broker did not answer: ask the next one
            self._request_metadata(out)
        elif kind == "init-timeout" and self.idempotence is not None:
            self.idempotence.init_in_flight = None
        self._run_sender(out)
        self._fold(out)
        return out

    def on_message(self, ctx: Ctx, inbound: Inbound) -> Out:
        out = self._begin(ctx, None)
        match inbound.message:
            case ProduceResponse() as resp:
                self._on_produce_response(out, inbound.correlation_id, resp)
            case MetadataResponse() as resp if inbound.correlation_id == self.state.metadata_in_flight:
                self._on_metadata(out, resp)
            case InitProducerIdResponse() as resp if self.idempotence is not None:
                if inbound.correlation_id == self.idempotence.init_in_flight:
                    out.cancel_timer(f"init-timeout:{inbound.correlation_id}")
                    self.idempotence.on_init_response(resp)
            case Disconnected(peer) if peer.startswith("broker-"):
                self._disconnected(out, int(peer.rsplit("-", 1)[1]), ErrorCode.NETWORK_EXCEPTION)
        self._run_sender(out)
        self._fold(out)
        return out

    def pausing(self, now_ms: int) -> Out:
        """The node stops the world from `now_ms`: the folded ticks before it ran; the next tick
        goes back on the `generate` timer, which fires when the node resumes, as every tick's
        timer would (ticks slept through collapse into that one, whose records are made then)."""
        out = _Commands(now_ms, self.state.timers_due)
        self.settle(now_ms)
        at = self.state.next_tick_ms
        if at is not None and self.state.timers_due.get("generate") != at:
            out.set_timer("generate", at - now_ms)
        return out

    def settle(self, now_ms: int) -> None:
        """Run the folded ticks before `now_ms` (they change nothing but the producer's state),
        so that a snapshot taken between windows counts every record made by then."""
        handler_ms = self.now_ms
        self._catch_up(now_ms - 1, None)
        self.now_ms = handler_ms

    def snapshot(self) -> dict[str, Any]:
        s = self.state
        return {
            "sent": s.generated,
            "acked": s.acked.count,
            "acked_runs": s.acked.copy(),
            "failed": s.failed,
            "in_flight": sum(len(r.batches) for r in s.requests.values()),
            "queued": len(self.accumulator),
            "produce_requests": s.produce_requests,
            "leaders": dict(sorted(s.leaders.items())),
            "producer_id": self.idempotence.producer_id if self.idempotence else -1,
            "producer_epoch": self.idempotence.producer_epoch if self.idempotence else -1,
        }

    # ------------------------------------------------------------------ records

    def _generate(self, out: Out) -> None:
        """A tick of the application: hand `records.per.interval` records to `send()`."""
        state = self.state
        if state.next_tick_ms is None or state.next_tick_ms > self.now_ms:
            return  # the tick already ran, folded (a unit test driving ticks by hand)
        self._tick(out)
        if state.next_tick_ms is not None:
            out.set_timer("generate", state.next_tick_ms - self.now_ms)

    def _tick(self, out: Out) -> None:
        """The records of the tick due now, and when the next one is."""
        cfg, state = self.config, self.state
        for _ in range(min(cfg.records_per_interval, cfg.records - state.generated)):
            self._append(out, state.generated)
            state.generated += 1
        state.next_tick_ms = None
        if state.generated < cfg.records:
            state.next_tick_ms = self.now_ms + self._next_tick_after(self.now_ms)

    # ------------------------------------------------------------------ folded ticks
    #
    # At 1,000 records a second the application ticks every millisecond, and most ticks only
    # add a record to a batch that cannot leave yet (its broker has
    # `max.in.flight.requests.per.connection` requests in flight): nothing is logged or sent.
    # Such a tick is *quiet*. After each handler the producer works out how many of the next
    # ticks are quiet if nothing else happens first, and sets its `generate` timer for the first
    # one that is not; the quiet ones run, in order and each at its own time, when the producer
    # next wakes for anything (`_catch_up`), before what woke it. The records, batches, times and
    # log are those of ticking every interval; only the wake-ups are fewer.
    #
    # A tick is quiet when its records are placed without a random draw (a key, or the sticky
    # partition already chosen), each joins its partition's open batch with room left (no
    # `batch_created`), and the sender run after it could send nothing: every node with a
    # sendable partition is at its in-flight limit or backing off, no partition lacks a leader,
    # the producer id is ready, and the tick comes before anything time-driven (a linger or
    # back-off ending, an expiry, any other timer of this producer), so it cannot tie with one.

    def _begin(self, ctx: Ctx, timer: str | None) -> Out:
        """Start a handler at `ctx.now_ms`: run the folded ticks that come before it."""
        out = _Commands(ctx.now_ms, self.state.timers_due)
        if timer == "generate":
            due = self.state.timers_due.pop(timer, ctx.now_ms)  # before now after a pause
            self._catch_up(min(due, ctx.now_ms) - 1, None)  # the tick it was set for is this one
        else:
            if timer is not None:
                self.state.timers_due.pop(timer, None)
            self._catch_up(ctx.now_ms, out)
        self.now_ms = ctx.now_ms
        return out

    def _catch_up(self, now_ms: int, out: Out | None) -> None:
        """Run the folded ticks due by `now_ms` (at `now_ms` too: a tick's timer fires before a
        delivery of the same millisecond, and the fold never lets one tie with another timer).
        With `out`, a handler follows: the `generate` timer is put back on the next tick, as
        ticking every interval would have it when the handler starts."""
        state = self.state
        timer_ms = state.timers_due.get("generate", _NEVER)
        at = state.next_tick_ms
        while at is not None and at <= now_ms and at < timer_ms:
            self.now_ms = at
            quiet = Out()
            self._tick(quiet)
            assert not quiet, f"a folded tick at {at} ms was not quiet: {quiet}"
            at = state.next_tick_ms
        if out is not None and at is not None and at < timer_ms:
            out.set_timer("generate", at - now_ms)

    def _fold(self, out: Out) -> None:
        """After a handler: move the `generate` timer past the quiet ticks ahead (see above)."""
        state, cfg = self.state, self.config
        at = state.next_tick_ms
        if at is None or state.timers_due.get("generate") != at:
            return
        horizon = self._fold_horizon()
        if horizon is None or at >= horizon:
            return
        per_tick = cfg.records_per_interval
        budget = _Room(self).records(state.generated, MAX_FOLDED_TICKS * per_tick)
        generated = state.generated
        if not (cfg.burst_ms and cfg.pause_ms):
            # Evenly spaced ticks: what the loop for bursts finds, counted at once. A tick folds
            # if the next comes by the horizon, the budget holds its records, and one follows it.
            left = cfg.records - generated - per_tick
            folded = min((horizon - at) // cfg.interval_ms, budget // per_tick, -(-left // per_tick) if left > 0 else 0)
            at += folded * cfg.interval_ms
        else:
            while at < horizon and budget >= per_tick:
                if generated + per_tick >= cfg.records:
                    break  # the last tick stays real: with no tick after it, it may set the sender's timer
                nxt = at + self._next_tick_after(at)
                if nxt > horizon:
                    break  # a wake-up would fall between two ticks: the tick before it stays real
                generated += per_tick
                budget -= per_tick
                at = nxt
        if at != state.next_tick_ms:
            out.set_timer("generate", at - self.now_ms)

    def _fold_horizon(self) -> int | None:
        """The time before which ticks may be quiet: the first of the sender's wake-ups and this
        producer's other timers; None if no tick can be quiet now."""
        idem = self.idempotence
        if idem is not None and not idem.ready_to_send():
            return None
        ready = self._last_ready
        if ready is None or ready.unknown_leader:
            return None
        state, limit = self.state, self.config.max_in_flight
        if any(state.in_flight.get(node, 0) < limit and self._ready(node) for node in ready.nodes):
            return None  # a drain that found nothing still moves the node's drain index
        times = [due for key, due in state.timers_due.items() if key != "generate"]
        if self._sender_wake_ms is not None:
            times.append(self._sender_wake_ms)
        return min(times) if times else _NEVER

    def _next_tick_after(self, now_ms: int) -> int:
        """The wait for the next tick: `interval.ms`, skipping the pauses between bursts."""
        cfg = self.config
        if not (cfg.burst_ms and cfg.pause_ms):
            return cfg.interval_ms
        cycle = cfg.burst_ms + cfg.pause_ms
        at = now_ms + cfg.interval_ms
        into = (at - cfg.start_ms) % cycle
        return cfg.interval_ms + (cycle - into if into >= cfg.burst_ms else 0)

    def _append(self, out: Out, number: int) -> None:
        """`KafkaProducer.doSend`: partition the record and add it to its batch (a new one is
        logged: its life starts here)."""
        cfg, partitioner = self.config, self.partitioner
        assert partitioner is not None
        available = self._available_partitions()
        if partitioner.kind is Partitioning.UNIFORM_STICKY and partitioner.sticky is None:
            partitioner.queue_sizes = self.accumulator.queue_sizes(available)
        key = cfg.key_of(number)
        partition = partitioner.partition(key, available)
        sticky = key is None and partitioner.kind is Partitioning.STICKY
        batch = self.accumulator.append(partition, number, self.now_ms, abort_on_new_batch=sticky)
        if batch is None:  # KIP-480: a new batch is needed, so the sticky partition moves on
            partition = partitioner.on_new_batch(partition, available)
            batch = self.accumulator.append(partition, number, self.now_ms, abort_on_new_batch=False)
            assert batch is not None
        new_batch = batch.count == 1
        partitioner.appended(partition, self.accumulator.record_size, new_batch=new_batch)
        if new_batch:
            out.emit("batch_created", topic=cfg.topic, partition=partition, producer=cfg.name, batch=batch.id, first_record=number)

    def _available_partitions(self) -> tuple[int, ...]:
        """The partitions with a known leader, kept until a metadata answer changes leaders."""
        leaders = self.state.leaders
        if self._available is None:
            self._available = tuple(p for p in range(self.config.partitions) if leaders.get(p, -1) >= 0)
        return self._available

    # ------------------------------------------------------------------ the sender

    def _run_sender(self, out: Out) -> None:
        """`Sender.runOnce`: expire, find ready nodes, drain them into requests, and set the
        timer for the next time something may become sendable."""
        cfg, state, acc = self.config, self.state, self.accumulator
        now = self.now_ms
        if self.idempotence is not None and not self.idempotence.ready_to_send():
            self._init_producer_id(out)  # a first producer id, or a new one before KIP-360
        self._expire(out)
        wakeups: list[int] = []
        self._last_ready = None
        if acc.queues:
            self._drain(out, wakeups)
        expiries = self._in_flight_expiries()
        expiry = acc.next_expiry(cfg.delivery_timeout_ms, cfg.request_timeout_ms)
        if expiry is not None:
            expiries.append(expiry)
        state.next_expiry_ms = min(expiries) if expiries else None
        wakeups += expiries
        self._sender_wake_ms = min(wakeups) if wakeups else None
        if wakeups:
            self._wake_at(out, min(wakeups))

    def _in_flight_expiries(self) -> list[int]:
        """When batches in flight reach their delivery timeout (`nextBatchExpiryTimeMs`)."""
        delivery = self.config.delivery_timeout_ms
        if delivery is None:
            return []
        now = self.now_ms
        return [
            b.created_ms + delivery
            for r in self.state.requests.values()
            for b in r.batches
            if not b.done and b.created_ms + delivery > now
        ]

    def _drain(self, out: Out, wakeups: list[int]) -> None:
        """`sendProducerData`: drain each ready node with room in flight into a request, and
        again while it stays ready (a poll timeout of 0)."""
        cfg, state, acc = self.config, self.state, self.accumulator
        now = self.now_ms
        ready = acc.ready(now, self._leader_of)
        if ready.unknown_leader:
            self._request_metadata(out)
        if ready.next_check_ms is not None:
            wakeups.append(now + ready.next_check_ms)
        sent = True
        while sent and acc.queues:
            sent = False
            by_leader: dict[int, list[int]] = {}
            for partition in sorted(acc.queues):
                by_leader.setdefault(self._leader_of(partition), []).append(partition)
            for node in ready.nodes:
                if not self._ready(node):
                    wakeups.append(state.not_ready_until[node])
                    continue
                if state.in_flight.get(node, 0) >= cfg.max_in_flight:
                    continue  # a response will wake the sender
                batches = acc.drain(node, by_leader.get(node, []), cfg.max_request_size, now, self._may_send)
                if batches:
                    self._send_produce(out, node, batches)
                    sent = True
            if sent and acc.queues:
                ready = acc.ready(now, self._leader_of)
                if ready.next_check_ms is not None:
                    wakeups.append(now + ready.next_check_ms)
        self._last_ready = ready

    def _wake_at(self, out: Out, at_ms: int) -> None:
        """Set the sender's timer unless an earlier one is set (an early wake-up is harmless),
        or the application's next tick comes first: the sender runs after every tick, once
        the tick's records are in the accumulator."""
        state = self.state
        at_ms = max(at_ms, self.now_ms)
        if state.next_tick_ms is not None and state.next_tick_ms <= at_ms:
            return
        if state.sender_wakeup_ms is None or at_ms < state.sender_wakeup_ms or state.sender_wakeup_ms < self.now_ms:
            state.sender_wakeup_ms = at_ms
            out.set_timer("sender", at_ms - self.now_ms)

    def _leader_of(self, partition: int) -> int:
        return self.state.leaders.get(partition, -1)

    def _may_send(self, batch: ProducerBatch) -> bool:
        """May this partition's first batch be drained now? With one request in flight per
        connection, a partition waits for its batch in flight (`guaranteeMessageOrder` mutes
        it); with idempotence, the sequence rules decide (`shouldStopDrainBatchesForPartition`)."""
        if self.config.max_in_flight == 1 and self._partition_in_flight(batch.partition):
            return False
        if self.idempotence is not None:
            return self.idempotence.may_send(batch)
        return True

    def _partition_in_flight(self, partition: int) -> bool:
        return any(b.partition == partition for r in self.state.requests.values() for b in r.batches)

    def _send_produce(self, out: Out, broker: int, batches: list[ProducerBatch]) -> None:
        """`Sender.sendProduceRequest`: one request to `broker` with its drained batches."""
        cfg, state = self.config, self.state
        correlation_id = self._next_correlation_id()
        parts = []
        for batch in batches:
            if self.idempotence is not None:
                self.idempotence.assign(batch)
            batch.broker = broker
            batch.correlation_id = correlation_id
            parts.append(
                ProducePartitionData(
                    cfg.topic,
                    batch.partition,
                    tuple(cfg.value_of(n) for n in batch.numbers),
                    batch.producer_id,
                    batch.producer_epoch,
                    batch.base_sequence,
                    batch.size_bytes,
                )
            )
            out.emit(
                "batch_sent",
                topic=cfg.topic,
                partition=batch.partition,
                producer=cfg.name,
                batch=batch.id,
                records=list(batch.numbers),
                created_ms=batch.created_ms,
                attempt=batch.attempts + 1,
                broker_id=broker,
                producer_id=batch.producer_id,
                producer_epoch=batch.producer_epoch,
                base_sequence=batch.base_sequence,
            )
        out.send(broker_address(broker), ProduceRequest(cfg.acks, cfg.request_timeout_ms, tuple(parts)), correlation_id)
        state.produce_requests += 1
        if cfg.acks == 0:
            for batch in batches:
                self._complete(out, batch, ErrorCode.NONE, -1)  # nothing will answer
            return
        state.requests[correlation_id] = _Request(broker, batches)
        state.in_flight[broker] = state.in_flight.get(broker, 0) + 1
        out.set_timer(f"timeout:{correlation_id}", cfg.request_timeout_ms)

    def _on_produce_response(self, out: Out, correlation_id: int, resp: ProduceResponse) -> None:
        state = self.state
        request = state.requests.get(correlation_id)
        if request is None:
            return  # it timed out, or its connection closed, already
        oldest = min(cid for cid, r in state.requests.items() if r.broker == request.broker)
        if correlation_id != oldest:
            # Answers come back in order on a connection: one missing means the stream broke
            # (`NetworkClient.correlate` fails), so the connection is closed.
            self._disconnected(out, request.broker, ErrorCode.NETWORK_EXCEPTION, force=True)
            return
        self._finish_request(out, correlation_id)
        self.state.reconnect_backoff_ms.pop(request.broker, None)  # it is connected
        answers = {a.partition: a for a in resp.partitions}
        for batch in request.batches:
            answer = answers.get(batch.partition)
            if answer is None:
                self._handle_error(out, batch, ErrorCode.UNKNOWN_SERVER_ERROR)
            elif answer.error_code in (ErrorCode.NONE, ErrorCode.DUPLICATE_SEQUENCE_NUMBER):
                self._complete(out, batch, ErrorCode.NONE, answer.base_offset)
            else:
                self._handle_error(out, batch, answer.error_code)

    def _finish_request(self, out: Out, correlation_id: int) -> _Request | None:
        state = self.state
        request = state.requests.pop(correlation_id, None)
        if request is None:
            return None
        out.cancel_timer(f"timeout:{correlation_id}")
        state.in_flight[request.broker] -= 1
        for batch in request.batches:
            batch.correlation_id = -1
        return request

    def _handle_error(self, out: Out, batch: ProducerBatch, error: ErrorCode) -> None:
        """`Sender.completeBatch` for an error: retry or fail; refresh metadata if stale."""
        if batch.done:
            return  # it expired while in flight
        cfg = self.config
        if error in _REFRESH_ON:
            self._request_metadata(out)
        if self.idempotence is not None:
            retriable = self.idempotence.can_retry(batch, error, error in _RETRIABLE)
        else:
            retriable = error in _RETRIABLE
        if retriable and batch.attempts < cfg.retries and not batch.expired(self.now_ms, cfg.delivery_timeout_ms):
            out.emit(
                "batch_retried",
                topic=cfg.topic,
                partition=batch.partition,
                producer=cfg.name,
                batch=batch.id,
                error=error.name,
                attempt=batch.attempts + 1,
            )
            self.accumulator.reenqueue(batch, self.now_ms, in_sequence_order=self.idempotence is not None)
            return
        self._fail(out, batch, error.name)

    def _expire(self, out: Out) -> None:
        """Batches past `delivery.timeout.ms`: queued ones (`expiredBatches`) and, from 2.1,
        those in flight (`getExpiredInflightBatches`), whose late answer is then ignored."""
        cfg = self.config
        if self.state.next_expiry_ms is None or self.now_ms < self.state.next_expiry_ms:
            return  # nothing expires yet: new batches expire after those already known
        for batch in self.accumulator.expired(self.now_ms, cfg.delivery_timeout_ms, cfg.request_timeout_ms):
            self._fail(out, batch, DELIVERY_TIMEOUT)
        if cfg.delivery_timeout_ms is None:
            return
        for correlation_id in sorted(self.state.requests):
            for batch in self.state.requests[correlation_id].batches:
                if not batch.done and batch.expired(self.now_ms, cfg.delivery_timeout_ms):
                    self._fail(out, batch, DELIVERY_TIMEOUT)

    def _complete(self, out: Out, batch: ProducerBatch, error: ErrorCode, base_offset: int) -> None:
        """The batch succeeded."""
        if batch.done:
            return
        cfg, state = self.config, self.state
        if self.idempotence is not None:
            self.idempotence.acked(batch)
        if cfg.acks != 0:
            state.acked.add(batch.partition, base_offset, batch.numbers)
        self._completed(out, batch, error.name, base_offset)

    def _fail(self, out: Out, batch: ProducerBatch, error: str) -> None:
        if batch.done:
            return
        if self.idempotence is not None:
            self.idempotence.failed(batch, error)
        self.state.failed += batch.count
        self._completed(out, batch, error, -1)

    def _completed(self, out: Out, batch: ProducerBatch, error: str, base_offset: int) -> None:
        batch.done = True
        cfg = self.config
        out.emit(
            "produce_completed",
            topic=cfg.topic,
            partition=batch.partition,
            producer=cfg.name,
            batch=batch.id,
            records=list(batch.numbers),
            base_sequence=batch.base_sequence,
            created_ms=batch.created_ms,
            base_offset=base_offset,
            error=error,
            attempt=batch.attempts + 1,
            acks=cfg.acks,
        )

    # ------------------------------------------------------------------ connections

    def _request_timed_out(self, out: Out, correlation_id: int) -> None:
        """`NetworkClient.handleTimedOutRequests`: the request's connection is closed, and
        every request in flight on it fails as timed out (`ClientResponse.wasTimedOut`)."""
        request = self.state.requests.get(correlation_id)
        if request is not None:
            self._disconnected(out, request.broker, ErrorCode.REQUEST_TIMED_OUT, force=True)

    def _disconnected(self, out: Out, broker: int, error: ErrorCode, *, force: bool = False) -> None:
        """`NetworkClient.handleDisconnections`: the requests in flight to `broker` fail with
        `error` at once, and metadata is asked for again (from another broker, if the Metadata
        request was the one in flight there). The broker is not ready until a back-off has
        passed (`reconnect.backoff.ms`, doubled after each failure up to
        `reconnect.backoff.max.ms`); records for it wait meanwhile in the accumulator."""
        state = self.state
        lost = [cid for cid in sorted(state.requests) if state.requests[cid].broker == broker]
        asked = state.brokers[state.metadata_target % len(state.brokers)] if state.brokers else -1
        metadata_lost = state.metadata_in_flight is not None and asked == broker
        if not (force or lost or metadata_lost or self._ready(broker)):
            return  # another refused envelope of the same attempt: the connection failed once
        previous = state.reconnect_backoff_ms.get(broker, RECONNECT_BACKOFF_MS // 2)
        backoff = min(2 * previous, RECONNECT_BACKOFF_MAX_MS)
        state.reconnect_backoff_ms[broker] = backoff
        state.not_ready_until[broker] = self.now_ms + backoff
        for correlation_id in lost:
            request = self._finish_request(out, correlation_id)
            assert request is not None
            for batch in request.batches:
                self._handle_error(out, batch, error)
        if metadata_lost:
            out.cancel_timer(f"metadata-timeout:{state.metadata_in_flight}")
            state.metadata_in_flight = None
            state.metadata_target += 1
        self._request_metadata(out)
        self._wake_at(out, self.now_ms + backoff)

    def _ready(self, broker: int) -> bool:
        """A connection to `broker` may be tried (it is not backing off after a failure)."""
        return self.state.not_ready_until.get(broker, 0) <= self.now_ms

    # ------------------------------------------------------------------ metadata

    def _request_metadata(self, out: Out) -> None:
        state = self.state
        if state.metadata_in_flight is not None or self.config.leaders or not state.brokers:
            return
        broker = self._least_loaded_broker()
        correlation_id = self._next_correlation_id()
        state.metadata_in_flight = correlation_id
        out.send(broker_address(broker), MetadataRequest((self.config.topic,)), correlation_id)
        out.set_timer(f"metadata-timeout:{correlation_id}", self.config.request_timeout_ms)

    def _least_loaded_broker(self) -> int:
        """`leastLoadedNode`, simplified: the broker last asked while it answers, never one
        backing off after a failed connection."""
        state = self.state
        count = len(state.brokers)
        candidates = (state.brokers[(state.metadata_target + k) % count] for k in range(count))
        state.metadata_target += next((k for k, b in enumerate(candidates) if self._ready(b)), 0)
        return state.brokers[state.metadata_target % count]

    def _on_metadata(self, out: Out, resp: MetadataResponse) -> None:
        state = self.state
        out.cancel_timer(f"metadata-timeout:{state.metadata_in_flight}")
        state.metadata_in_flight = None
        if resp.brokers:
            state.brokers = tuple(resp.brokers)
        for p in resp.partitions:
            if p.partition >= 0:
                state.leaders[p.partition] = p.leader
        self._available = None
        leaderless = any(state.leaders.get(p, -1) < 0 for p in range(self.config.partitions))
        out.set_timer("metadata", self.config.retry_backoff_ms if leaderless else self.config.metadata_max_age_ms)

    def _init_producer_id(self, out: Out) -> None:
        """Ask any broker for a producer id (or, KIP-360, to bump the epoch of ours)."""
        idem = self.idempotence
        assert idem is not None
        if idem.init_in_flight is not None or not self.state.brokers:
            return
        broker = self._least_loaded_broker()
        correlation_id = self._next_correlation_id()
        idem.init_in_flight = correlation_id
        out.send(broker_address(broker), idem.init_request(), correlation_id)
        out.set_timer(f"init-timeout:{correlation_id}", self.config.request_timeout_ms)

    def _next_correlation_id(self) -> int:
        self.state.next_correlation_id += 1
        return self.state.next_correlation_id

