"""What the producer keeps of Kafka's `NetworkClient`: the connection state of each broker
(`ClusterConnectionStates`: a broker whose connection failed is not tried again for
`reconnect.backoff.ms`, doubling up to `reconnect.backoff.max.ms`) and the correlation ids of
its requests; and the producer's clock (`Time`).

Left out: connection set-up itself (a request to a broker not backing off is sent at once),
the 20% jitter of the back-off, and socket buffers. The requests in flight and what their
failure means are the sender's (`actors.producer.sender`).
"""

from __future__ import annotations

__all__ = ["RECONNECT_BACKOFF_MAX_MS", "RECONNECT_BACKOFF_MS", "NetworkClient", "Time"]

RECONNECT_BACKOFF_MS = 50
"""`reconnect.backoff.ms`: how long a broker whose connection failed is not tried again."""
RECONNECT_BACKOFF_MAX_MS = 1000
"""`reconnect.backoff.max.ms`: the cap of the doubling back-off (Kafka also adds 20% jitter,
left out here)."""


class Time:
    """Kafka's `Time`, the producer's: the time of the handler running, or of the folded tick
    being run (`actors.producer.behavior` sets it). One object, shared by the producer's parts."""

    __slots__ = ("now_ms",)

    def __init__(self) -> None:
        self.now_ms = 0


class NetworkClient:
    def __init__(self, time: Time) -> None:
        self.time = time
        self.not_ready_until: dict[int, int] = {}
        """Broker -> when a connection to it may be tried again (`reconnect.backoff.ms`)."""
        self.reconnect_backoff_ms: dict[int, int] = {}
        """Broker -> the back-off after its last failed connection, doubled on each failure."""
        self.next_correlation_id = 0

    def ready(self, broker: int) -> bool:
        """A connection to `broker` may be tried (it is not backing off after a failure)."""
        return self.not_ready_until.get(broker, 0) <= self.time.now_ms

    def correlation_id(self) -> int:
        """The next request's correlation id, one sequence for all of this producer's requests."""
        self.next_correlation_id += 1
        return self.next_correlation_id

    def connected(self, broker: int) -> None:
        """An answer came: the back-off starts over at its least."""
        self.reconnect_backoff_ms.pop(broker, None)

    def connection_failed(self, broker: int) -> int:
        """The connection to `broker` failed: it backs off, twice as long as the last time up to
        the cap. Returns the back-off."""
        previous = self.reconnect_backoff_ms.get(broker, RECONNECT_BACKOFF_MS // 2)
        backoff = min(2 * previous, RECONNECT_BACKOFF_MAX_MS)
        self.reconnect_backoff_ms[broker] = backoff
        self.not_ready_until[broker] = self.time.now_ms + backoff
        return backoff
