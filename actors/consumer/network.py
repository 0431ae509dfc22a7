"""The consumer's requests and connections: Kafka's `ConsumerNetworkClient` over `NetworkClient`.

What it models of the Java consumer:
- each request in flight is known by its correlation id, with what it is for, the broker it
  went to and a handler of its failure (the part that sent it: Kafka's `RequestFuture`);
- `request.timeout.ms` without an answer closes the connection, and a closed connection fails
  every request on it;
- requests to the group coordinator go on a connection of their own (Kafka gives the
  coordinator a node id of its own), so that marking the coordinator unknown fails only them;
- a broker whose connection failed is backed off for `reconnect.backoff.ms`, doubled after
  each failure up to `reconnect.backoff.max.ms`;
- Metadata and FindCoordinator go to a bootstrap broker, the next one after a failure (a
  simple `leastLoadedNode`).

Left out: the 20% jitter of Kafka's back-off.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from actors.addresses import broker_address, group_coordinator_address
from actors.consumer.config import ConsumerConfig
from actors.core import Out

__all__ = [
    "DISCONNECTED",
    "TIMEOUT",
    "Clock",
    "FailureHandler",
    "InFlight",
    "NetworkClient",
]

DISCONNECTED = "DISCONNECTED"
TIMEOUT = "TIMEOUT"
RECONNECT_BACKOFF_MS = 50
"""`reconnect.backoff.ms`: how long a broker whose connection failed is not fetched from."""
RECONNECT_BACKOFF_MAX_MS = 1000
"""`reconnect.backoff.max.ms`: the cap of the doubling back-off (without Kafka's 20% jitter)."""


@dataclass(slots=True)
class Clock:
    """The simulated time of the event being handled (Kafka's `Time`): the actor sets it
    before each handler, and every part of the consumer reads it."""

    now_ms: int = 0


FailureHandler = Callable[[Out, int, "InFlight", str], None]
"""Called with the correlation id, the request and the client's error (DISCONNECTED)."""


@dataclass(frozen=True, slots=True)
class InFlight:
    kind: str
    broker: int
    detail: Any
    on_failure: FailureHandler
    to_coordinator: bool = False


def ignore_failure(out: Out, correlation_id: int, request: InFlight, error: str) -> None:
    """For a request whose failure changes nothing (LeaveGroup is never retried)."""


class NetworkClient:
    def __init__(self, config: ConsumerConfig, clock: Clock) -> None:
        self.config = config
        self.clock = clock
        self.requests: dict[int, InFlight] = {}
        self.next_correlation_id = 0
        self.node_index = 0
        """Which bootstrap broker `least_loaded_node` names: the next one after a failure."""
        self.reconnect_backoff_ms: dict[int, int] = {}
        """Broker -> the back-off after its last failed connection, while it keeps failing."""
        self.not_ready_until: dict[int, int] = {}
        """Broker -> when a request to it may be tried again after its connection failed
        (`NetworkClient.ready` is false meanwhile)."""

    def next_id(self) -> int:
        self.next_correlation_id += 1
        return self.next_correlation_id

    def send(
        self,
        out: Out,
        broker: int,
        kind: str,
        request: Any,
        *,
        on_failure: FailureHandler,
        detail: Any = None,
        timeout_ms: int | None = None,
    ) -> int:
        return self._send(out, InFlight(kind, broker, detail, on_failure), broker_address(broker), request, timeout_ms)

    def send_to_coordinator(
        self,
        out: Out,
        coordinator: int,
        kind: str,
        request: Any,
        *,
        on_failure: FailureHandler,
        detail: Any = None,
        timeout_ms: int | None = None,
    ) -> int:
        flight = InFlight(kind, coordinator, detail, on_failure, to_coordinator=True)
        return self._send(out, flight, group_coordinator_address(coordinator), request, timeout_ms)

    def _send(self, out: Out, flight: InFlight, dst: Any, request: Any, timeout_ms: int | None) -> int:
        cid = self.next_id()
        self.requests[cid] = flight
        out.send(dst, request, cid)
        out.set_timer(f"timeout:{cid}", timeout_ms or self.config.request_timeout_ms)
        return cid

    def complete(self, out: Out, correlation_id: int) -> InFlight | None:
        """An answer arrived: the request it answers, or None if it timed out or its
        connection closed meanwhile. Its broker's connection works: the back-off starts
        afresh."""
        flight = self.requests.pop(correlation_id, None)
        if flight is not None:
            out.cancel_timer(f"timeout:{correlation_id}")
            self.reconnect_backoff_ms.pop(flight.broker, None)
            self.not_ready_until.pop(flight.broker, None)
        return flight

    def fail_requests(self, out: Out, broker: int, *, coordinator_only: bool, broker_only: bool = False) -> None:
        """Fail the requests in flight to `broker` as disconnected: on its coordinator
        connection only, on its other connection only, or (neither) on both."""
        for cid in sorted(self.requests):
            flight = self.requests[cid]
            if flight.broker != broker or (coordinator_only and not flight.to_coordinator) or (broker_only and flight.to_coordinator):
                continue
            del self.requests[cid]
            out.cancel_timer(f"timeout:{cid}")
            flight.on_failure(out, cid, flight, DISCONNECTED)

    def has_pending_to_coordinator(self, coordinator: int | None) -> bool:
        return any(f.broker == coordinator and f.to_coordinator for f in self.requests.values())

    # ------------------------------------------------------------------ connections

    def least_loaded_node(self) -> int:
        brokers = self.config.bootstrap
        return brokers[self.node_index % len(brokers)]

    def try_next_node(self) -> None:
        self.node_index += 1

    def ready(self, broker: int) -> bool:
        return self.clock.now_ms >= self.not_ready_until.get(broker, 0)

    def connection_failed(self, broker: int) -> None:
        """`NetworkClient.processDisconnection`: the broker is not ready for
        `reconnect.backoff.ms`, doubled after each failure, up to `reconnect.backoff.max.ms`."""
        backoff = min(2 * self.reconnect_backoff_ms.get(broker, RECONNECT_BACKOFF_MS // 2), RECONNECT_BACKOFF_MAX_MS)
        self.reconnect_backoff_ms[broker] = backoff
        self.not_ready_until[broker] = self.clock.now_ms + backoff
