"""A scripted client: an actor that sends raw Kafka requests at chosen simulated times and
keeps every message it receives (the Python API's `Cluster.client`).

It plays a client that speaks the protocol by hand, as a test of Kafka's coordinator does with
its own request builders: no retries, no timeouts, no reaction to what comes back, so what the
brokers answer is exactly what the script asked for. Each step is sent on a timer at its time,
with the step's number (from 1) as its correlation id; at equal times its steps go before the
answers that arrive, as any actor's timers do.

A step's destination and request may be functions, called with the script's owner (the API's
handle) when the step is sent, so a later request can use an earlier answer (a member id, the
coordinator found). A destination is a broker id, a broker's node name or an `Address`: a
request of the group APIs goes to that broker's group coordinator, any other to its replica
manager (Kafka has one endpoint per broker; here the coordinator is an actor of its own).

Steps added after the client started reach it as an application call (`ApplicationCall`
`send`), which schedules them. A restarted client sends the steps still to come; one due while
its node was down is not sent.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from actors.addresses import broker_address, group_coordinator_address
from actors.core import Address, Ctx, Inbound, Out
from protocols.application import ApplicationCall
from protocols.group import (
    ConsumerGroupHeartbeatRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from protocols.registry import Kind, message_type

__all__ = ["SEND", "ScriptStep", "ScriptedClient", "Target", "check_request", "destination"]

SEND = "send"
"""The application call that tells a started client it has new steps."""

GROUP_REQUESTS = (
    JoinGroupRequest,
    SyncGroupRequest,
    HeartbeatRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    ConsumerGroupHeartbeatRequest,
)
"""What a broker's group coordinator answers (FindCoordinator is the replica manager's)."""

_BROKER_NODE = re.compile(r"broker-(\d+)")

Target = int | str | Address


def destination(target: Target, request: Any) -> Address:
    """Where a request for `target` (a broker id, `broker-N` or an address) goes."""
    if isinstance(target, Address):
        return target
    if isinstance(target, str):
        found = _BROKER_NODE.fullmatch(target)
        if found is None:
            msg = f"{target!r} is not a broker: name one as 3, 'broker-3' or an Address"
            raise ValueError(msg)
        target = int(found.group(1))
    if type(target) is not int:
        msg = f"{target!r} is not a broker: name one as 3, 'broker-3' or an Address"
        raise TypeError(msg)
    return group_coordinator_address(target) if isinstance(request, GROUP_REQUESTS) else broker_address(target)


def check_request(request: Any) -> None:
    """A step's request must be a registered request of protocols/ (a function is checked when
    it is called)."""
    if callable(request):
        return
    try:
        kind = message_type(type(request)).kind
    except TypeError:
        kind = None
    if kind is not Kind.REQUEST:
        msg = f"{type(request).__name__} is not a request of protocols/ (such as protocols.group.JoinGroupRequest)"
        raise TypeError(msg)


@dataclass(frozen=True, slots=True)
class ScriptStep:
    at_ms: int
    target: Target | Callable[[Any], Target]
    request: Any
    """A registered request, or a function of the owner returning one."""
    correlation_id: int


@dataclass
class ScriptedClient:
    """The behaviour. The API's handle shares it, and reads what it received between runs."""

    owner: Any = None
    """What a step's functions are called with."""
    steps: list[ScriptStep] = field(default_factory=list)
    received: list[tuple[int, Address, int, Any]] = field(default_factory=list)
    """Every message received: (time, source, correlation id, message)."""
    sent: list[tuple[int, Address, int, Any]] = field(default_factory=list)
    """Every request sent: (time, destination, correlation id, request)."""
    started: bool = False
    _scheduled: set[int] = field(default_factory=set, init=False, repr=False)
    """Steps with a timer in this incarnation."""
    _done: set[int] = field(default_factory=set, init=False, repr=False)
    """Correlation ids of the steps sent, or skipped because they fell due while down."""

    def add(self, at_ms: int, target: Target | Callable[[Any], Target], request: Any) -> int:
        step = ScriptStep(at_ms, target, request, len(self.steps) + 1)
        self.steps.append(step)
        return step.correlation_id

    def on_start(self, ctx: Ctx) -> Out:
        self.started = True
        self._scheduled = set()  # a restart lost the timers of the incarnation before
        return self._schedule(ctx, Out())

    def on_timer(self, ctx: Ctx, key: str) -> Out:
        out = Out()
        step = self.steps[int(key)]
        self._done.add(step.correlation_id)
        target = step.target(self.owner) if callable(step.target) else step.target
        request = step.request(self.owner) if callable(step.request) else step.request
        check_request(request)
        dst = destination(target, request)
        out.send(dst, request, step.correlation_id)
        self.sent.append((ctx.now_ms, dst, step.correlation_id, request))
        return out

    def on_message(self, ctx: Ctx, inbound: Inbound) -> Out:
        if isinstance(inbound.message, ApplicationCall) and inbound.message.action == SEND:
            return self._schedule(ctx, Out())
        self.received.append((ctx.now_ms, inbound.src, inbound.correlation_id, inbound.message))
        return Out()

    def _schedule(self, ctx: Ctx, out: Out) -> Out:
        for i, step in enumerate(self.steps):
            if step.correlation_id in self._done or i in self._scheduled:
                continue
            if step.at_ms >= ctx.now_ms:
                out.set_timer(str(i), step.at_ms - ctx.now_ms)
                self._scheduled.add(i)
            else:
                self._done.add(step.correlation_id)  # due while the node was down: never sent
        return out

    def snapshot(self) -> dict[str, Any]:
        return {"steps": len(self.steps), "sent": len(self.sent), "received": len(self.received)}
