"""The producer's sender (`Sender`, with the in-flight requests of `NetworkClient`): requests
built from the accumulator, their answers, retries and delivery timeouts.

- The sender drains every ready node into one Produce request carrying the first batch of each
  partition it leads, with at most `max.in.flight.requests.per.connection` requests in flight
  per broker. With a single request in flight a partition's next batch waits for the last
  (`guaranteeMessageOrder`).
- A failed batch is retried while its error is retriable, `retries` allows and its
  `delivery.timeout.ms` has not passed (KIP-91); it waits `retry.backoff.ms` first, or from
  3.7 an exponential back-off with jitter up to `retry.backoff.max.ms` (KIP-580). Without
  idempotence a retry may write the records twice, and with more than one request in flight
  may land after a later batch. A batch expires, in the queue or in flight, once
  `delivery.timeout.ms` has passed since it was created.
- With idempotence (`idempotence.py`) each batch carries the producer id, epoch and a
  per-partition sequence; the broker deduplicates retries. The sender asks for the producer id
  (`InitProducerId`) before it sends.
- Connections: a request without an answer after `request.timeout.ms` closes its connection,
  failing every request in flight on it with REQUEST_TIMED_OUT; a connection closed by a
  crashed broker fails them at once with NETWORK_EXCEPTION, and so does an answer that overtakes
  an earlier one (the network lost that one: a broken TCP stream, which Kafka detects as a
  correlation id mismatch). A broker whose connection failed is not tried again for a back-off
  (`network.py`).

Each batch's life is logged: `batch_sent` (with the time it was created), `batch_retried` and
one `produce_completed` with its outcome. Left out: transactions, compression and the buffer
memory limit (`buffer.memory`, `max.block.ms`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from actors.addresses import broker_address
from actors.core import Out
from actors.producer.accumulator import ProducerBatch, Ready, RecordAccumulator
from actors.producer.acked import AckedRecords
from actors.producer.config import ProducerConfig
from actors.producer.idempotence import Idempotence
from actors.producer.metadata import Metadata
from actors.producer.network import NetworkClient, Time
from protocols.errors import ErrorCode
from protocols.replication import ProducePartitionData, ProduceRequest, ProduceResponse

__all__ = ["DELIVERY_TIMEOUT", "Sender"]

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


@dataclass(slots=True)
class _Request:
    broker: int
    batches: list[ProducerBatch]


class Sender:
    """`next_tick_ms` tells when the application next hands records to the producer: the
    sender runs after every tick, so it need not set its own timer for then."""

    def __init__(  # noqa: PLR0913 - the parts of the producer it drives
        self,
        config: ProducerConfig,
        time: Time,
        accumulator: RecordAccumulator,
        idempotence: Idempotence | None,
        metadata: Metadata,
        network: NetworkClient,
        next_tick_ms: Callable[[], int | None],
    ) -> None:
        self.config = config
        self.time = time
        self.accumulator = accumulator
        self.idempotence = idempotence
        self.metadata = metadata
        self.network = network
        self.next_tick_ms = next_tick_ms
        self.acked = AckedRecords()
        """Where each acknowledged record was written, as runs of consecutive numbers and
        offsets, for the end-of-run checks."""
        self.failed = 0
        """Records whose batch failed for good."""
        self.requests: dict[int, _Request] = {}
        """Correlation id -> a Produce request in flight."""
        self.in_flight: dict[int, int] = {}
        """Broker -> its requests in flight."""
        self.produce_requests = 0
        self.wakeup_ms: int | None = None
        """When the sender's timer is set to fire."""
        self.next_expiry_ms: int | None = None
        """When the first batch known, queued or in flight, expires."""
        self.last_ready: Ready | None = None
        """The last readiness check of the last run in this handler (None if it made none)."""
        self.wake_ms: int | None = None
        """The first time-driven wake-up the last run found (linger, back-off, expiry)."""

    def run(self, out: Out) -> None:
        """`Sender.runOnce`: expire, find ready nodes, drain them into requests, and set the
        timer for the next time something may become sendable."""
        cfg, acc = self.config, self.accumulator
        if self.idempotence is not None and not self.idempotence.ready_to_send():
            self.init_producer_id(out)  # a first producer id, or a new one before KIP-360
        self._expire(out)
        wakeups: list[int] = []
        self.last_ready = None
        if acc.queues:
            self._drain(out, wakeups)
        expiries = self._in_flight_expiries()
        expiry = acc.next_expiry(cfg.delivery_timeout_ms, cfg.request_timeout_ms)
        if expiry is not None:
            expiries.append(expiry)
        self.next_expiry_ms = min(expiries) if expiries else None
        wakeups += expiries
        self.wake_ms = min(wakeups) if wakeups else None
        if wakeups:
            self._wake_at(out, min(wakeups))

    def _in_flight_expiries(self) -> list[int]:
        """When batches in flight reach their delivery timeout (`nextBatchExpiryTimeMs`)."""
        delivery = self.config.delivery_timeout_ms
        if delivery is None:
            return []
        now = self.time.now_ms
        return [
            b.created_ms + delivery
            for r in self.requests.values()
            for b in r.batches
            if not b.done and b.created_ms + delivery > now
        ]

    def _drain(self, out: Out, wakeups: list[int]) -> None:
        """`sendProducerData`: drain each ready node with room in flight into a request, and
        again while it stays ready (a poll timeout of 0)."""
        cfg, acc = self.config, self.accumulator
        now = self.time.now_ms
        ready = acc.ready(now, self.metadata.leader_of)
        if ready.unknown_leader:
            self.metadata.request(out)
        if ready.next_check_ms is not None:
            wakeups.append(now + ready.next_check_ms)
        sent = True
        while sent and acc.queues:
            sent = False
            by_leader: dict[int, list[int]] = {}
            for partition in sorted(acc.queues):
                by_leader.setdefault(self.metadata.leader_of(partition), []).append(partition)
            for node in ready.nodes:
                if not self.network.ready(node):
                    wakeups.append(self.network.not_ready_until[node])
                    continue
                if self.in_flight.get(node, 0) >= cfg.max_in_flight:
                    continue  # a response will wake the sender
                batches = acc.drain(node, by_leader.get(node, []), cfg.max_request_size, now, self._may_send)
                if batches:
                    self._send_produce(out, node, batches)
                    sent = True
            if sent and acc.queues:
                ready = acc.ready(now, self.metadata.leader_of)
                if ready.next_check_ms is not None:
                    wakeups.append(now + ready.next_check_ms)
        self.last_ready = ready

    def _wake_at(self, out: Out, at_ms: int) -> None:
        """Set the sender's timer unless an earlier one is set (an early wake-up is harmless),
        or the application's next tick comes first: the sender runs after every tick, once
        the tick's records are in the accumulator."""
        at_ms = max(at_ms, self.time.now_ms)
        next_tick_ms = self.next_tick_ms()
        if next_tick_ms is not None and next_tick_ms <= at_ms:
            return
        if self.wakeup_ms is None or at_ms < self.wakeup_ms or self.wakeup_ms < self.time.now_ms:
            self.wakeup_ms = at_ms
            out.set_timer("sender", at_ms - self.time.now_ms)

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
        return any(b.partition == partition for r in self.requests.values() for b in r.batches)

    def _send_produce(self, out: Out, broker: int, batches: list[ProducerBatch]) -> None:
        """`Sender.sendProduceRequest`: one request to `broker` with its drained batches."""
        cfg = self.config
        correlation_id = self.network.correlation_id()
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
        self.produce_requests += 1
        if cfg.acks == 0:
            for batch in batches:
                self._complete(out, batch, ErrorCode.NONE, -1)  # nothing will answer
            return
        self.requests[correlation_id] = _Request(broker, batches)
        self.in_flight[broker] = self.in_flight.get(broker, 0) + 1
        out.set_timer(f"timeout:{correlation_id}", cfg.request_timeout_ms)

    def on_produce_response(self, out: Out, correlation_id: int, resp: ProduceResponse) -> None:
        request = self.requests.get(correlation_id)
        if request is None:
            return  # it timed out, or its connection closed, already
        oldest = min(cid for cid, r in self.requests.items() if r.broker == request.broker)
        if correlation_id != oldest:
            # Answers come back in order on a connection: one missing means the stream broke
            # (`NetworkClient.correlate` fails), so the connection is closed.
            self.disconnected(out, request.broker, ErrorCode.NETWORK_EXCEPTION, force=True)
            return
        self._finish_request(out, correlation_id)
        self.network.connected(request.broker)
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
        request = self.requests.pop(correlation_id, None)
        if request is None:
            return None
        out.cancel_timer(f"timeout:{correlation_id}")
        self.in_flight[request.broker] -= 1
        for batch in request.batches:
            batch.correlation_id = -1
        return request

    def _handle_error(self, out: Out, batch: ProducerBatch, error: ErrorCode) -> None:
        """`Sender.completeBatch` for an error: retry or fail; refresh metadata if stale."""
        if batch.done:
            return  # it expired while in flight
        cfg = self.config
        if error in _REFRESH_ON:
            self.metadata.request(out)
        if self.idempotence is not None:
            retriable = self.idempotence.can_retry(batch, error, error in _RETRIABLE)
        else:
            retriable = error in _RETRIABLE
        if retriable and batch.attempts < cfg.retries and not batch.expired(self.time.now_ms, cfg.delivery_timeout_ms):
            self.accumulator.reenqueue(batch, self.time.now_ms, in_sequence_order=self.idempotence is not None)
            out.emit(
                "batch_retried",
                topic=cfg.topic,
                partition=batch.partition,
                producer=cfg.name,
                batch=batch.id,
                error=error.name,
                attempt=batch.attempts,  # the one that failed (reenqueue counted it)
                backoff_ms=batch.backoff_ms,
            )
            return
        self._fail(out, batch, error.name)

    def _expire(self, out: Out) -> None:
        """Batches past `delivery.timeout.ms`: queued ones (`expiredBatches`) and, from 2.1,
        those in flight (`getExpiredInflightBatches`), whose late answer is then ignored."""
        cfg = self.config
        if self.next_expiry_ms is None or self.time.now_ms < self.next_expiry_ms:
            return  # nothing expires yet: new batches expire after those already known
        for batch in self.accumulator.expired(self.time.now_ms, cfg.delivery_timeout_ms, cfg.request_timeout_ms):
            self._fail(out, batch, DELIVERY_TIMEOUT)
        if cfg.delivery_timeout_ms is None:
            return
        for correlation_id in sorted(self.requests):
            for batch in self.requests[correlation_id].batches:
                if not batch.done and batch.expired(self.time.now_ms, cfg.delivery_timeout_ms):
                    self._fail(out, batch, DELIVERY_TIMEOUT)

    def _complete(self, out: Out, batch: ProducerBatch, error: ErrorCode, base_offset: int) -> None:
        """The batch succeeded."""
        if batch.done:
            return
        if self.idempotence is not None:
            self.idempotence.acked(batch)
        if self.config.acks != 0:
            self.acked.add(batch.partition, base_offset, batch.numbers)
        self._completed(out, batch, error.name, base_offset)

    def _fail(self, out: Out, batch: ProducerBatch, error: str) -> None:
        if batch.done:
            return
        if self.idempotence is not None:
            self.idempotence.failed(batch, error)
        self.failed += batch.count
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

    def request_timed_out(self, out: Out, correlation_id: int) -> None:
        """`NetworkClient.handleTimedOutRequests`: the request's connection is closed, and
        every request in flight on it fails as timed out (`ClientResponse.wasTimedOut`)."""
        request = self.requests.get(correlation_id)
        if request is not None:
            out.disconnect(broker_address(request.broker))
            self.disconnected(out, request.broker, ErrorCode.REQUEST_TIMED_OUT, force=True)

    def disconnected(self, out: Out, broker: int, error: ErrorCode, *, force: bool = False) -> None:
        """`NetworkClient.handleDisconnections`: the requests in flight to `broker` fail with
        `error` at once, and metadata is asked for again (from another broker, if the Metadata
        request was the one in flight there). The broker is not ready until a back-off has
        passed (`reconnect.backoff.ms`, doubled after each failure up to
        `reconnect.backoff.max.ms`); records for it wait meanwhile in the accumulator."""
        lost = [cid for cid in sorted(self.requests) if self.requests[cid].broker == broker]
        metadata_lost = self.metadata.asked(broker)
        if not (force or lost or metadata_lost or self.network.ready(broker)):
            return  # another refused envelope of the same attempt: the connection failed once
        backoff = self.network.connection_failed(broker)
        for correlation_id in lost:
            request = self._finish_request(out, correlation_id)
            assert request is not None
            for batch in request.batches:
                self._handle_error(out, batch, error)
        if metadata_lost:
            self.metadata.lost(out)
        self.metadata.request(out)
        self._wake_at(out, self.time.now_ms + backoff)

    def init_producer_id(self, out: Out) -> None:
        """Ask any broker for a producer id (or, KIP-360, to bump the epoch of ours)."""
        idem = self.idempotence
        assert idem is not None
        if idem.init_in_flight is not None or not self.metadata.brokers:
            return
        broker = self.metadata.least_loaded_broker()
        correlation_id = self.network.correlation_id()
        idem.init_in_flight = correlation_id
        out.send(broker_address(broker), idem.init_request(), correlation_id)
        out.set_timer(f"init-timeout:{correlation_id}", self.config.request_timeout_ms)

