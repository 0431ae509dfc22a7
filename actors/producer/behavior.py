"""A producer: the application's records and `KafkaProducer.send`, driving the producer's
parts.

What it models of the Java producer (`KafkaProducer`, `RecordAccumulator`, `Sender`,
`NetworkClient`):

- Records are generated at `interval.ms` ticks (`records.per.interval` at a time, optionally in
  bursts), each partitioned by the version's partitioner (`partitioner.py`) and appended to its
  partition's batch (`accumulator.py`).
- The sender (`sender.py`) drains ready batches into Produce requests, retries failed batches
  and expires those past `delivery.timeout.ms`; with idempotence (`idempotence.py`) each batch
  carries the producer id, epoch and a per-partition sequence.
- Metadata (`metadata.py`): the topic's leaders, asked for at start and again when stale. In a
  cluster without a controller the leaders are fixed.
- Connections (`network.py`): a broker whose connection failed is not tried again for
  `reconnect.backoff.ms`, doubling up to `reconnect.backoff.max.ms`.

Each handler runs the sender once after what it handled, as Kafka's sender thread loops; the
ticks that would change nothing but the accumulator are folded (see `Producer._begin`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from actors.backoff import RetryBackoff
from actors.core import Ctx, Inbound, Out
from actors.producer.accumulator import RecordAccumulator
from actors.producer.config import ProducerConfig
from actors.producer.fold import MAX_FOLDED_TICKS, NEVER, Room, TimerCommands
from actors.producer.idempotence import Idempotence
from actors.producer.metadata import Metadata
from actors.producer.network import NetworkClient, Time
from actors.producer.partitioner import Partitioner, Partitioning
from actors.producer.sender import Sender
from protocols.connection import Disconnected
from protocols.errors import ErrorCode
from protocols.metadata import MetadataResponse
from protocols.producer import InitProducerIdResponse
from protocols.replication import ProduceResponse

__all__ = ["Producer", "ProducerConfig"]


@dataclass(slots=True)
class ProducerState:
    """The application's side: its records and ticks, and the producer's timers."""

    generated: int = 0
    """Records handed to the producer so far."""
    next_tick_ms: int | None = None
    """When the application next hands records to the producer (the next tick not yet run)."""
    timers_due: dict[str, int] = field(default_factory=dict)
    """Key -> when each timer this producer set fires (a cancelled one is dropped)."""


class Producer:
    def __init__(self, config: ProducerConfig) -> None:
        self.config = config
        self.state = ProducerState()
        self.time = Time()
        self.network = NetworkClient(self.time)
        self.metadata = Metadata(config, self.network)
        self.retry_backoff = RetryBackoff(config.retry_backoff_ms, config.retry_backoff_max_ms, config.exponential_backoff)
        self.accumulator = RecordAccumulator(config.batch_size, config.linger_ms, self.retry_backoff, config.record_bytes)
        self.idempotence = Idempotence(epoch_bump=config.epoch_bump) if config.idempotence else None
        self.sender = Sender(
            config,
            self.time,
            self.accumulator,
            self.idempotence,
            self.metadata,
            self.network,
            lambda: self.state.next_tick_ms,
        )
        self.partitioner: Partitioner | None = None

    # ------------------------------------------------------------------ handlers

    def on_start(self, ctx: Ctx) -> Out:
        self.time.now_ms = ctx.now_ms
        cfg = self.config
        self.partitioner = Partitioner(cfg.partitioning, cfg.partitions, cfg.batch_size, ctx.rng)
        self.retry_backoff.rng = ctx.rng  # KIP-580's jitter: the producer's own seeded stream
        out = TimerCommands(ctx.now_ms, self.state.timers_due)
        if cfg.records > 0:
            self.state.next_tick_ms = max(cfg.start_ms, ctx.now_ms)
            out.set_timer("generate", self.state.next_tick_ms - ctx.now_ms)
            # The producer exists from the start; its records begin at `start.ms`. The sender
            # asks for the metadata and, if idempotent, for a producer id at once.
            if not cfg.leaders:
                self.metadata.request(out)
            if self.idempotence is not None:
                self.sender.init_producer_id(out)
        return out

    def on_timer(self, ctx: Ctx, key: str) -> Out:
        out = self._begin(ctx, key)
        kind, _, arg = key.partition(":")
        if kind == "generate":
            self._generate(out)
        elif kind == "sender":
            self.sender.wakeup_ms = None
        elif kind == "timeout":
            self.sender.request_timed_out(out, int(arg))
        elif kind == "metadata":
            self.metadata.request(out)
        elif kind == "metadata-timeout":
            self.metadata.timed_out(out, int(arg))
        elif kind == "init-timeout" and self.idempotence is not None:
            self.idempotence.init_in_flight = None
        self.sender.run(out)
        self._fold(out)
        return out

    def on_message(self, ctx: Ctx, inbound: Inbound) -> Out:
        out = self._begin(ctx, None)
        match inbound.message:
            case ProduceResponse() as resp:
                self.sender.on_produce_response(out, inbound.correlation_id, resp)
            case MetadataResponse() as resp if inbound.correlation_id == self.metadata.in_flight:
                self.metadata.on_response(out, resp)
            case InitProducerIdResponse() as resp if self.idempotence is not None:
                if inbound.correlation_id == self.idempotence.init_in_flight:
                    out.cancel_timer(f"init-timeout:{inbound.correlation_id}")
                    self.idempotence.on_init_response(resp)
            case Disconnected(peer) if peer.startswith("broker-"):
                self.sender.disconnected(out, int(peer.rsplit("-", 1)[1]), ErrorCode.NETWORK_EXCEPTION)
        self.sender.run(out)
        self._fold(out)
        return out

    def pausing(self, now_ms: int) -> Out:
        """The node stops the world from `now_ms`: the folded ticks before it ran; the next tick
        goes back on the `generate` timer, which fires when the node resumes, as every tick's
        timer would (ticks slept through collapse into that one, whose records are made then)."""
        out = TimerCommands(now_ms, self.state.timers_due)
        self.settle(now_ms)
        at = self.state.next_tick_ms
        if at is not None and self.state.timers_due.get("generate") != at:
            out.set_timer("generate", at - now_ms)
        return out

    def settle(self, now_ms: int) -> None:
        """Run the folded ticks before `now_ms` (they change nothing but the producer's state),
        so that a snapshot taken between windows counts every record made by then."""
        handler_ms = self.time.now_ms
        self._catch_up(now_ms - 1, None)
        self.time.now_ms = handler_ms

    def snapshot(self) -> dict[str, Any]:
        sender = self.sender
        return {
            "sent": self.state.generated,
            "acked": sender.acked.count,
            "acked_runs": sender.acked.copy(),
            "failed": sender.failed,
            "in_flight": sum(len(r.batches) for r in sender.requests.values()),
            "queued": len(self.accumulator),
            "produce_requests": sender.produce_requests,
            "leaders": dict(sorted(self.metadata.leaders.items())),
            "producer_id": self.idempotence.producer_id if self.idempotence else -1,
            "producer_epoch": self.idempotence.producer_epoch if self.idempotence else -1,
        }

    # ------------------------------------------------------------------ records

    def _generate(self, out: Out) -> None:
        """A tick of the application: hand `records.per.interval` records to `send()`."""
        state = self.state
        if state.next_tick_ms is None or state.next_tick_ms > self.time.now_ms:
            return  # the tick already ran, folded (a unit test driving ticks by hand)
        self._tick(out)
        if state.next_tick_ms is not None:
            out.set_timer("generate", state.next_tick_ms - self.time.now_ms)

    def _tick(self, out: Out) -> None:
        """The records of the tick due now, and when the next one is."""
        cfg, state = self.config, self.state
        for _ in range(min(cfg.records_per_interval, cfg.records - state.generated)):
            self._append(out, state.generated)
            state.generated += 1
        state.next_tick_ms = None
        if state.generated < cfg.records:
            state.next_tick_ms = self.time.now_ms + self._next_tick_after(self.time.now_ms)

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
        out = TimerCommands(ctx.now_ms, self.state.timers_due)
        if timer == "generate":
            due = self.state.timers_due.pop(timer, ctx.now_ms)  # before now after a pause
            self._catch_up(min(due, ctx.now_ms) - 1, None)  # the tick it was set for is this one
        else:
            if timer is not None:
                self.state.timers_due.pop(timer, None)
            self._catch_up(ctx.now_ms, out)
        self.time.now_ms = ctx.now_ms
        return out

    def _catch_up(self, now_ms: int, out: Out | None) -> None:
        """Run the folded ticks due by `now_ms` (at `now_ms` too: a tick's timer fires before a
        delivery of the same millisecond, and the fold never lets one tie with another timer).
        With `out`, a handler follows: the `generate` timer is put back on the next tick, as
        ticking every interval would have it when the handler starts."""
        state = self.state
        timer_ms = state.timers_due.get("generate", NEVER)
        at = state.next_tick_ms
        while at is not None and at <= now_ms and at < timer_ms:
            self.time.now_ms = at
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
        room = Room(cfg, self.partitioner, self.accumulator, self.metadata.leader_of, self.sender.in_flight)
        budget = room.records(state.generated, MAX_FOLDED_TICKS * per_tick)
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
            out.set_timer("generate", at - self.time.now_ms)

    def _fold_horizon(self) -> int | None:
        """The time before which ticks may be quiet: the first of the sender's wake-ups and this
        producer's other timers; None if no tick can be quiet now."""
        idem = self.idempotence
        if idem is not None and not idem.ready_to_send():
            return None
        sender = self.sender
        ready = sender.last_ready
        if ready is None or ready.unknown_leader:
            return None
        limit = self.config.max_in_flight
        if any(sender.in_flight.get(node, 0) < limit and self.network.ready(node) for node in ready.nodes):
            return None  # a drain that found nothing still moves the node's drain index
        times = [due for key, due in self.state.timers_due.items() if key != "generate"]
        if sender.wake_ms is not None:
            times.append(sender.wake_ms)
        return min(times) if times else NEVER

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
        available = self.metadata.available_partitions()
        if partitioner.kind is Partitioning.UNIFORM_STICKY and partitioner.sticky is None:
            partitioner.queue_sizes = self.accumulator.queue_sizes(available)
        key = cfg.key_of(number)
        partition = partitioner.partition(key, available)
        sticky = key is None and partitioner.kind is Partitioning.STICKY
        batch = self.accumulator.append(partition, number, self.time.now_ms, abort_on_new_batch=sticky)
        if batch is None:  # KIP-480: a new batch is needed, so the sticky partition moves on
            partition = partitioner.on_new_batch(partition, available)
            batch = self.accumulator.append(partition, number, self.time.now_ms, abort_on_new_batch=False)
            assert batch is not None
        new_batch = batch.count == 1
        partitioner.appended(partition, self.accumulator.record_size, new_batch=new_batch)
        if new_batch:
            out.emit("batch_created", topic=cfg.topic, partition=partition, producer=cfg.name, batch=batch.id, first_record=number)
