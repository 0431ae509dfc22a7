"""The application side of a producer: when records are made and where they go."""

from __future__ import annotations

import random

from actors.core import Address, Ctx, SetTimer
from actors.producer.behavior import Producer
from actors.producer.config import ProducerConfig
from actors.producer.partitioner import Partitioning, partition_for_key


def _producer(**settings: object) -> tuple[Producer, Ctx]:
    config = ProducerConfig(name="producer-1", topic="T", partitions=6, leaders=(1, 2, 3, 1, 2, 3), **settings)  # type: ignore[arg-type]
    producer = Producer(config)
    ctx = Ctx(Address("producer-1", "producer"), 0, random.Random(1))
    producer.on_start(ctx)
    return producer, ctx


def _ticks(producer: Producer, ctx: Ctx, until_ms: int) -> list[int]:
    """Run the application's ticks up to `until_ms`; the times they fired."""
    fired, at = [], producer.state.next_tick_ms
    while at is not None and at < until_ms:
        ctx.now_ms = at
        fired.append(at)
        out = producer.on_timer(ctx, "generate")
        assert any(isinstance(c, SetTimer) and c.key == "generate" for c in out) or producer.state.next_tick_ms is None
        at = producer.state.next_tick_ms
    return fired


def test_ticks_come_every_interval_and_pause_between_bursts() -> None:
    producer, ctx = _producer(records=100, interval_ms=2, start_ms=5, burst_ms=6, pause_ms=10)
    assert _ticks(producer, ctx, 40) == [5, 7, 9, 21, 23, 25, 37, 39]
    assert producer.state.generated == 8


def test_each_tick_makes_records_per_interval_until_records_run_out() -> None:
    producer, ctx = _producer(records=7, interval_ms=10, records_per_interval=3)
    assert _ticks(producer, ctx, 1000) == [0, 10, 20]
    assert producer.state.generated == 7


def test_keyed_records_go_to_their_keys_partition() -> None:
    producer, ctx = _producer(records=12, interval_ms=1, keys=3, partitioning=Partitioning.UNIFORM_STICKY, linger_ms=100)
    _ticks(producer, ctx, 100)
    placed = {n: b.partition for b in producer.accumulator.queued() for n in b.numbers}
    assert placed == {n: partition_for_key(f"key-{n % 3}", 6) for n in range(12)}
