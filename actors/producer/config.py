"""A producer's settings: Kafka's producer configuration plus the records it generates."""

from __future__ import annotations

from dataclasses import dataclass

from actors.producer.partitioner import Partitioning

__all__ = ["INT_MAX", "ProducerConfig"]

INT_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class ProducerConfig:
    name: str
    topic: str
    partitions: int
    bootstrap: tuple[int, ...] = ()
    """Broker ids to ask for metadata first (`bootstrap.servers`)."""
    leaders: tuple[int, ...] = ()
    """Fixed leaders by partition, for a cluster without a controller; empty: ask by Metadata."""

    # Kafka's settings
    acks: int = -1
    request_timeout_ms: int = 30000
    linger_ms: int = 0
    batch_size: int = 16384
    max_request_size: int = 1048576
    max_in_flight: int = 5
    """`max.in.flight.requests.per.connection`."""
    retries: int = INT_MAX
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1000
    exponential_backoff: bool = False
    """KIP-580 (3.7): a batch's retries back off exponentially up to `retry.backoff.max.ms`;
    before, a constant `retry.backoff.ms`."""
    delivery_timeout_ms: int | None = 120000
    """KIP-91 (2.1); None before it, when a batch expires after `request.timeout.ms` in the
    accumulator and a request's retries are bounded by `retries` alone."""
    idempotence: bool = False
    """`enable.idempotence` as resolved against `acks`, `retries` and `max.in.flight`."""
    epoch_bump: bool = True
    """KIP-360 (2.5): an idempotent producer closes a sequence gap by bumping its epoch;
    before, by taking a new producer id."""
    partitioning: Partitioning = Partitioning.UNIFORM_STICKY
    metadata_max_age_ms: int = 300_000

    # the records it generates
    records: int = 100
    """How many records in all."""
    interval_ms: int = 100
    records_per_interval: int = 1
    """Records generated at each tick, one tick every `interval_ms`."""
    start_ms: int = 0
    burst_ms: int = 0
    """With `pause_ms`: generate for `burst_ms`, then pause for `pause_ms`, and so on."""
    pause_ms: int = 0
    keys: int = 0
    """Distinct keys, record n's key being `key-{n % keys}`; 0: unkeyed records."""
    record_bytes: int = 100
    """A record's key and value size in bytes (what `batch.size` and fetch sizes count)."""

    def key_of(self, number: int) -> str | None:
        return f"key-{number % self.keys}" if self.keys else None

    def value_of(self, number: int) -> str:
        """A record's value names the producer and the record's number."""
        return f"{self.name}:{number}"
