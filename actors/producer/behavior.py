"""A producer: one record per `interval.ms`, round robin over the topic's partitions.

What it models of the Java producer so far: `acks` (0: no response expected; 1; all), the
produce request's timeout (`request.timeout.ms`, sent to the broker and enforced by the client),
leader discovery by Metadata, and record values that name the producer and the sequence
(`producer-1:17`), so a record written twice is told apart from a record consumed twice. Each
record's outcome is one `produce_completed` event.

Metadata (`Metadata`, `NetworkClient`): the producer asks a broker for the topic's leaders at
start, again `retry.backoff.ms` later while a partition has none, after a NOT_LEADER_OR_FOLLOWER,
LEADER_NOT_AVAILABLE or timed-out answer or a closed connection (a broker's process died: the
requests in flight to it fail with NETWORK_EXCEPTION within a round trip), and every
`metadata.max.age.ms`. It asks one broker while that one answers, and the next (of the
bootstrap list, then of the live brokers it learned of) after `request.timeout.ms` without an
answer, or at once when its connection closes. A record whose partition has no known leader, or
whose leader is backing off after a refused connection (`reconnect.backoff.ms`), waits until its
own `request.timeout.ms` runs out. In a cluster without a controller the leaders are fixed
(`leaders`) and never asked for.

Not yet modelled: retries and `delivery.timeout.ms`, idempotence (producer id,
epoch, sequence deduplication), batching (`linger.ms`, `batch.size`) and `max.in.flight`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from actors.broker.config import broker_address
from actors.core import Ctx, Inbound, Out
from protocols.connection import Disconnected
from protocols.errors import ErrorCode
from protocols.metadata import MetadataRequest, MetadataResponse
from protocols.replication import ProducePartitionData, ProduceRequest, ProduceResponse

__all__ = ["Producer", "ProducerConfig"]


@dataclass(frozen=True, slots=True)
class ProducerConfig:
    name: str
    topic: str
    partitions: int
    bootstrap: tuple[int, ...] = ()
    """Broker ids to ask for metadata first (`bootstrap.servers`)."""
    leaders: tuple[int, ...] = ()
    """Fixed leaders by partition, for a cluster without a controller; empty: ask by Metadata."""
    acks: int = -1
    request_timeout_ms: int = 30000
    records: int = 100
    interval_ms: int = 100
    start_ms: int = 0
    retry_backoff_ms: int = 100
    metadata_max_age_ms: int = 300_000


@dataclass(slots=True)
class _Record:
    partition: int
    sequence: int
    value: str
    broker: int = -1
    """The broker it was last sent to."""


RECONNECT_BACKOFF_MS = 50
"""`reconnect.backoff.ms`: how long a broker whose connection failed is not tried again."""
RECONNECT_BACKOFF_MAX_MS = 1000
"""`reconnect.backoff.max.ms`: the cap of the doubling back-off (Kafka also adds 20% jitter,
left out here)."""

_REFRESH_ON = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.NETWORK_EXCEPTION,
    }
)


@dataclass(slots=True)
class ProducerState:
    sent: int = 0
    acked: list[str] = field(default_factory=list)
    acked_offsets: list[tuple[int, int, str]] = field(default_factory=list)
    """(partition, offset, value) of each record acknowledged with its offset (acks 1 or all)."""
    failed: int = 0
    in_flight: dict[int, _Record] = field(default_factory=dict)
    """Correlation id -> the record sent."""
    waiting: dict[int, _Record] = field(default_factory=dict)
    """Sequence -> a record waiting for its partition's leader to be known and ready."""
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


class Producer:
    def __init__(self, config: ProducerConfig) -> None:
        self.config = config
        self.state = ProducerState()
        self.state.leaders = dict(enumerate(config.leaders))
        self.state.brokers = config.bootstrap
        self.now_ms = 0
        """The time of the handler running (set as each handler starts)."""

    def on_start(self, ctx: Ctx) -> Out:
        self.now_ms = ctx.now_ms
        out = Out()
        if self.config.records > 0:
            out.set_timer("send", max(0, self.config.start_ms - ctx.now_ms))
            if not self.config.leaders:
                self._request_metadata(out)
        return out

    def on_timer(self, ctx: Ctx, key: str) -> Out:
        self.now_ms = ctx.now_ms
        out = Out()
        kind, _, arg = key.partition(":")
        if kind == "send":
            self._send_next(out)
            if self.state.sent < self.config.records:
                out.set_timer("send", self.config.interval_ms)
        elif kind == "timeout":
            record = self.state.in_flight.pop(int(arg), None)
            if record is not None:
                self._completed(out, record, ErrorCode.REQUEST_TIMED_OUT, -1)
        elif kind == "wait-timeout":
            record = self.state.waiting.pop(int(arg), None)
            if record is not None:
                self._completed(out, record, ErrorCode.REQUEST_TIMED_OUT, -1)
        elif kind == "reconnect":
            self._send_waiting(out)
        elif kind == "metadata":
            self._request_metadata(out)
        elif kind == "metadata-timeout" and self.state.metadata_in_flight == int(arg):
            self.state.metadata_in_flight = None
            self.state.metadata_target += 1  # that broker did not answer: ask the next one
            self._request_metadata(out)
        return out

    def on_message(self, ctx: Ctx, inbound: Inbound) -> Out:
        self.now_ms = ctx.now_ms
        out = Out()
        match inbound.message:
            case ProduceResponse() as resp:
                record = self.state.in_flight.pop(inbound.correlation_id, None)
                if record is not None:  # else: it timed out already
                    self.state.reconnect_backoff_ms.pop(record.broker, None)  # it is connected
                    out.cancel_timer(f"timeout:{inbound.correlation_id}")
                    answer = resp.partitions[0]
                    self._completed(out, record, answer.error_code, answer.base_offset)
            case MetadataResponse() as resp if inbound.correlation_id == self.state.metadata_in_flight:
                self._on_metadata(out, resp)
            case Disconnected(peer) if peer.startswith("broker-"):
                self._disconnected(out, int(peer.rsplit("-", 1)[1]))
        return out

    def _disconnected(self, out: Out, broker: int) -> None:
        """`NetworkClient.handleDisconnections`: the requests in flight to `broker` fail with
        NETWORK_EXCEPTION at once, and metadata is asked for again (from another broker, if the
        Metadata request was the one in flight there). The broker is not ready until a back-off
        has passed (`reconnect.backoff.ms`, doubled after each failure up to
        `reconnect.backoff.max.ms`); records for it wait meanwhile, as in the accumulator."""
        state = self.state
        lost = [cid for cid in sorted(state.in_flight) if state.in_flight[cid].broker == broker]
        asked = state.brokers[state.metadata_target % len(state.brokers)] if state.brokers else -1
        metadata_lost = state.metadata_in_flight is not None and asked == broker
        if not lost and not metadata_lost and not self._ready(broker):
            return  # another refused envelope of the same attempt: the connection failed once
        previous = state.reconnect_backoff_ms.get(broker, RECONNECT_BACKOFF_MS // 2)
        backoff = min(2 * previous, RECONNECT_BACKOFF_MAX_MS)
        state.reconnect_backoff_ms[broker] = backoff
        state.not_ready_until[broker] = self.now_ms + backoff
        out.set_timer(f"reconnect:{broker}", backoff)
        for correlation_id in lost:
            record = state.in_flight.pop(correlation_id)
            out.cancel_timer(f"timeout:{correlation_id}")
            self._completed(out, record, ErrorCode.NETWORK_EXCEPTION, -1)
        if metadata_lost:
            out.cancel_timer(f"metadata-timeout:{state.metadata_in_flight}")
            state.metadata_in_flight = None
            state.metadata_target += 1
            self._request_metadata(out)

    def snapshot(self) -> dict[str, Any]:
        s = self.state
        return {
            "sent": s.sent,
            "acked": list(s.acked),
            "acked_offsets": list(s.acked_offsets),
            "failed": s.failed,
            "in_flight": len(s.in_flight),
            "waiting": len(s.waiting),
            "leaders": dict(sorted(s.leaders.items())),
        }

    # ------------------------------------------------------------------ metadata

    def _request_metadata(self, out: Out) -> None:
        state = self.state
        if state.metadata_in_flight is not None or self.config.leaders or not state.brokers:
            return
        count = len(state.brokers)
        # `leastLoadedNode` never picks a node backing off after a failed connection.
        candidates = (state.brokers[(state.metadata_target + k) % count] for k in range(count))
        state.metadata_target += next((k for k, b in enumerate(candidates) if self._ready(b)), 0)
        broker = state.brokers[state.metadata_target % count]
        correlation_id = self._next_correlation_id()
        state.metadata_in_flight = correlation_id
        out.send(broker_address(broker), MetadataRequest((self.config.topic,)), correlation_id)
        out.set_timer(f"metadata-timeout:{correlation_id}", self.config.request_timeout_ms)

    def _on_metadata(self, out: Out, resp: MetadataResponse) -> None:
        state = self.state
        out.cancel_timer(f"metadata-timeout:{state.metadata_in_flight}")
        state.metadata_in_flight = None
        if resp.brokers:
            state.brokers = tuple(resp.brokers)
        for p in resp.partitions:
            if p.partition >= 0:
                state.leaders[p.partition] = p.leader
        self._send_waiting(out)
        leaderless = any(state.leaders.get(p, -1) < 0 for p in range(self.config.partitions))
        out.set_timer("metadata", self.config.retry_backoff_ms if leaderless else self.config.metadata_max_age_ms)

    # ------------------------------------------------------------------ produce

    def _next_correlation_id(self) -> int:
        self.state.next_correlation_id += 1
        return self.state.next_correlation_id

    def _ready(self, broker: int) -> bool:
        """A connection to `broker` may be tried (it is not backing off after a failure)."""
        return self.state.not_ready_until.get(broker, 0) <= self.now_ms

    def _partition_ready(self, partition: int) -> bool:
        """Its leader is known and ready."""
        leader = self.state.leaders.get(partition, -1)
        return leader >= 0 and self._ready(leader)

    def _send_waiting(self, out: Out) -> None:
        """Send every waiting record whose leader is known and ready, in sequence order."""
        state = self.state
        for sequence in sorted(state.waiting):
            record = state.waiting[sequence]
            if self._partition_ready(record.partition):
                del state.waiting[sequence]
                out.cancel_timer(f"wait-timeout:{sequence}")
                self._send(out, record)

    def _send_next(self, out: Out) -> None:
        cfg, state = self.config, self.state
        sequence = state.sent
        state.sent += 1
        record = _Record(sequence % cfg.partitions, sequence, f"{cfg.name}:{sequence}")
        if not self._partition_ready(record.partition):
            state.waiting[sequence] = record
            out.set_timer(f"wait-timeout:{sequence}", cfg.request_timeout_ms)
            if state.leaders.get(record.partition, -1) < 0:
                self._request_metadata(out)
            return
        self._send(out, record)

    def _send(self, out: Out, record: _Record) -> None:
        cfg = self.config
        request = ProduceRequest(
            cfg.acks, cfg.request_timeout_ms, (ProducePartitionData(cfg.topic, record.partition, (record.value,)),)
        )
        correlation_id = self._next_correlation_id()
        record.broker = self.state.leaders[record.partition]
        out.send(broker_address(record.broker), request, correlation_id)
        if cfg.acks == 0:
            self._completed(out, record, ErrorCode.NONE, -1)  # nothing will answer
            return
        self.state.in_flight[correlation_id] = record
        out.set_timer(f"timeout:{correlation_id}", cfg.request_timeout_ms)

    def _completed(self, out: Out, record: _Record, error: ErrorCode, base_offset: int) -> None:
        if error is ErrorCode.NONE and self.config.acks != 0:
            self.state.acked.append(record.value)
            self.state.acked_offsets.append((record.partition, base_offset, record.value))
        elif error is not ErrorCode.NONE:
            self.state.failed += 1
            if error in _REFRESH_ON:
                self._request_metadata(out)
        out.emit(
            "produce_completed",
            topic=self.config.topic,
            partition=record.partition,
            producer=self.config.name,
            first_sequence=record.sequence,
            last_sequence=record.sequence,
            base_offset=base_offset,
            error=error.name,
            acks=self.config.acks,
        )
