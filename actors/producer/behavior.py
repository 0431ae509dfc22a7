"""A producer: one record per `interval.ms`, round robin over the topic's partitions.

What it models of the Java producer so far: `acks` (0: no response expected; 1; all), the
produce request's timeout (`request.timeout.ms`, sent to the broker and enforced by the client),
and record values that name the producer and the sequence (`producer-1:17`), so a record written
twice is told apart from a record consumed twice. Each batch's outcome is one
`produce_completed` event.

Not yet (the producer issue): retries and `delivery.timeout.ms`, idempotence (producer id,
epoch, sequence deduplication), batching (`linger.ms`, `batch.size`), `max.in.flight`, and
finding leaders by Metadata; until the controller exists a partition's leader is its first
replica, as the controller makes it on creation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from actors.broker.config import broker_address
from actors.core import Ctx, Inbound, Out
from protocols.errors import ErrorCode
from protocols.replication import ProducePartitionData, ProduceRequest, ProduceResponse

__all__ = ["Producer", "ProducerConfig"]


@dataclass(frozen=True, slots=True)
class ProducerConfig:
    name: str
    topic: str
    leaders: tuple[int, ...]
    """The leader broker of each partition, by partition number."""
    acks: int = -1
    request_timeout_ms: int = 30000
    records: int = 100
    interval_ms: int = 100
    start_ms: int = 0


@dataclass(slots=True)
class _InFlight:
    partition: int
    sequence: int
    value: str


@dataclass(slots=True)
class ProducerState:
    sent: int = 0
    acked: list[str] = field(default_factory=list)
    failed: int = 0
    in_flight: dict[int, _InFlight] = field(default_factory=dict)
    next_correlation_id: int = 0


class Producer:
    def __init__(self, config: ProducerConfig) -> None:
        self.config = config
        self.state = ProducerState()

    def on_start(self, ctx: Ctx) -> Out:
        out = Out()
        if self.config.records > 0:
            out.set_timer("send", max(0, self.config.start_ms - ctx.now_ms))
        return out

    def on_timer(self, ctx: Ctx, key: str) -> Out:
        out = Out()
        if key == "send":
            self._send_next(out)
            if self.state.sent < self.config.records:
                out.set_timer("send", self.config.interval_ms)
        elif key.startswith("timeout:"):
            request = self.state.in_flight.pop(int(key.split(":")[1]), None)
            if request is not None:
                self._completed(out, request, ErrorCode.REQUEST_TIMED_OUT, -1)
        return out

    def on_message(self, ctx: Ctx, inbound: Inbound) -> Out:
        out = Out()
        if isinstance(inbound.message, ProduceResponse):
            request = self.state.in_flight.pop(inbound.correlation_id, None)
            if request is not None:  # else: it timed out already
                out.cancel_timer(f"timeout:{inbound.correlation_id}")
                answer = inbound.message.partitions[0]
                self._completed(out, request, answer.error_code, answer.base_offset)
        return out

    def snapshot(self) -> dict[str, Any]:
        s = self.state
        return {"sent": s.sent, "acked": list(s.acked), "failed": s.failed, "in_flight": len(s.in_flight)}

    def _send_next(self, out: Out) -> None:
        cfg, state = self.config, self.state
        sequence = state.sent
        partition = sequence % len(cfg.leaders)
        value = f"{cfg.name}:{sequence}"
        state.sent += 1
        request = ProduceRequest(
            cfg.acks, cfg.request_timeout_ms, (ProducePartitionData(cfg.topic, partition, (value,)),)
        )
        state.next_correlation_id += 1
        correlation_id = state.next_correlation_id
        out.send(broker_address(cfg.leaders[partition]), request, correlation_id)
        in_flight = _InFlight(partition, sequence, value)
        if cfg.acks == 0:
            self._completed(out, in_flight, ErrorCode.NONE, -1)  # nothing will answer
            return
        state.in_flight[correlation_id] = in_flight
        out.set_timer(f"timeout:{correlation_id}", cfg.request_timeout_ms)

    def _completed(self, out: Out, request: _InFlight, error: ErrorCode, base_offset: int) -> None:
        if error is ErrorCode.NONE and self.config.acks != 0:
            self.state.acked.append(request.value)
        elif error is not ErrorCode.NONE:
            self.state.failed += 1
        out.emit(
            "produce_completed",
            topic=self.config.topic,
            partition=request.partition,
            producer=self.config.name,
            first_sequence=request.sequence,
            last_sequence=request.sequence,
            base_offset=base_offset,
            error=error.name,
            acks=self.config.acks,
        )
