"""The admin client's requests in flight: Kafka's `KafkaAdminClient` call handling, reduced to
what the group commands need.

Each request is known by its correlation id, with the command and the attempt of the step that
sent it: an answer to an earlier attempt (the step failed and started again) is ignored. A
request unanswered for `request.timeout.ms`, or on a connection that closed, fails its step,
which starts again after `retry.backoff.ms`; bootstrap requests (Metadata, FindCoordinator) go
to the next bootstrap broker then (a simple `leastLoadedNode`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from actors.admin.config import AdminConfig
from actors.addresses import broker_address, group_coordinator_address
from actors.core import Address, Out

__all__ = ["InFlight", "Requests", "timer_key"]


def timer_key(kind: str, *args: Any) -> str:
    return json.dumps([kind, *args], separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class InFlight:
    request_id: int
    """The command's number."""
    attempt: int
    """The step's attempt that sent it."""
    node: str
    broker_id: int


@dataclass(slots=True)
class Requests:
    config: AdminConfig
    in_flight: dict[int, InFlight] = field(default_factory=dict)
    next_correlation: int = 0
    next_bootstrap: int = 0

    def bootstrap_broker(self) -> int:
        brokers = self.config.bootstrap
        return brokers[self.next_bootstrap % len(brokers)]

    def rotate_bootstrap(self) -> None:
        self.next_bootstrap += 1

    def send(self, out: Out, request_id: int, attempt: int, broker_id: int, message: Any, *, coordinator: bool = False) -> None:
        """Send `message` to the broker (its group coordinator's actor for a group request)."""
        self.next_correlation += 1
        cid = self.next_correlation
        dst: Address = group_coordinator_address(broker_id) if coordinator else broker_address(broker_id)
        self.in_flight[cid] = InFlight(request_id, attempt, dst.node, broker_id)
        out.send(dst, message, cid)
        out.set_timer(timer_key("timeout", cid), self.config.request_timeout_ms)

    def answered(self, out: Out, correlation_id: int) -> InFlight | None:
        request = self.in_flight.pop(correlation_id, None)
        if request is not None:
            out.cancel_timer(timer_key("timeout", correlation_id))
        return request

    def timed_out(self, correlation_id: int) -> InFlight | None:
        return self.in_flight.pop(correlation_id, None)

    def disconnected(self, out: Out, node: str) -> list[InFlight]:
        """Every request in flight to `node`, failed, in the order they were sent."""
        failed = []
        for cid in sorted(self.in_flight):
            if self.in_flight[cid].node == node:
                failed.append(self.in_flight.pop(cid))
                out.cancel_timer(timer_key("timeout", cid))
        return failed

    def forget(self, out: Out, request_id: int) -> None:
        """A command is over: what it still has in flight is answered to no one."""
        for cid in sorted(self.in_flight):
            if self.in_flight[cid].request_id == request_id:
                del self.in_flight[cid]
                out.cancel_timer(timer_key("timeout", cid))
