"""The protocol's request log (`[run] "log.requests" = true`): each request an actor sends and
each answer it receives, as events of that actor.

This is the requester's view, the one Kafka's `NetworkClient` gives at DEBUG ("Sending
HEARTBEAT request with header ...", "Received HEARTBEAT response from node ... for request
with header ..."): `request_sent` when a request leaves, `response_received` when its answer
is handled, both with the API's name (the registered message's, `Heartbeat`, `GetData`), the
two addresses and the correlation id that pairs them, the answer with its error. So a
consumer's heartbeats, its fetches and each round trip of a `poll()` can be timed from the log.
A request without an answer is one whose answer was lost (`message_dropped`), is still in
flight, or went to a process that died; one-way messages are not requests and are not logged.

It wraps a behaviour (`RequestLog`), so a run without it runs exactly the code it ran before:
nothing on the delivery path asks whether to log.
"""

from __future__ import annotations

import dataclasses
import typing
from enum import IntEnum
from typing import Any

from actors.core import Address, Behavior, Ctx, Emit, Inbound, Out, Send
from protocols.errors import ErrorCode
from protocols.registry import Kind, message_type
from protocols.zookeeper import ZkError

__all__ = ["RequestLog", "answer_error", "api_name"]

_ERROR_TYPES = (ErrorCode, ZkError)
"""The error enums answers carry: Kafka's `Errors` and ZooKeeper's `KeeperException.Code`."""


class _Message(typing.NamedTuple):
    kind: Kind
    api: str


_MESSAGES: dict[type, _Message] = {}


def _message(cls: type) -> _Message:
    known = _MESSAGES.get(cls)
    if known is None:
        mtype = message_type(cls)
        api = mtype.name.removesuffix("Request") if mtype.kind is Kind.REQUEST else mtype.name.removesuffix("Response")
        known = _MESSAGES[cls] = _Message(mtype.kind, api)
    return known


def api_name(message: Any) -> str:
    """The API a registered message belongs to: its name without `Request` or `Response`."""
    return _message(type(message)).api


class _Plan(typing.NamedTuple):
    errors: tuple[str, ...]
    """Fields holding an error code."""
    nested: tuple[str, ...]
    """Fields holding structures (or tuples of them) with error codes inside."""


_PLANS: dict[type, _Plan] = {}


def _plan(cls: type) -> _Plan:
    """Where a message class keeps its error codes, from its type hints (computed once)."""
    plan = _PLANS.get(cls)
    if plan is not None:
        return plan
    _PLANS[cls] = _Plan((), ())  # a structure that contains itself finds nothing more there
    errors, nested = [], []
    for name, hint in typing.get_type_hints(cls).items():
        if name not in {f.name for f in dataclasses.fields(cls)}:
            continue
        inner = _structure(hint)
        if inner in _ERROR_TYPES:
            errors.append(name)
        elif inner is not None and (_plan(inner).errors or _plan(inner).nested):
            nested.append(name)
    plan = _PLANS[cls] = _Plan(tuple(errors), tuple(nested))
    return plan


def _structure(hint: Any) -> type | None:
    """The class a field holds, through `tuple[X, ...]` and `X | None`: an error enum or a
    dataclass, else None."""
    args = [a for a in typing.get_args(hint) if a is not type(None) and a is not Ellipsis]
    if args:
        return _structure(args[0]) if len(args) == 1 else None
    if isinstance(hint, type) and (issubclass(hint, IntEnum) or dataclasses.is_dataclass(hint)):
        return hint
    return None


def answer_error(message: Any) -> str:
    """An answer's error, as Kafka's `AbstractResponse.errorCounts` sees it, in one name: its
    top-level error if that is not NONE, else the first error of its parts in the answer's
    order (a partition's, a ZooKeeper multi's operation), else `NONE`. ZooKeeper's OK is
    `NONE` too; other codes keep their own names."""
    found = _first_error(message)
    return "NONE" if found is None else found.name


def _first_error(value: Any) -> IntEnum | None:
    plan = _plan(type(value))
    for name in plan.errors:
        code = getattr(value, name)
        if code:
            return code
    for name in plan.nested:
        part = getattr(value, name)
        for item in part if isinstance(part, tuple) else (part,):
            if item is not None and (code := _first_error(item)) is not None:
                return code
    return None


class RequestLog:
    """A behaviour that logs the requests of the one it wraps; everything else is that one's."""

    def __init__(self, address: Address, inner: Behavior) -> None:
        self.inner = inner
        self._address = str(address)
        if hasattr(inner, "pausing"):  # the runtime looks the hook up by name
            self.pausing = self._pausing

    def __getattr__(self, name: str) -> Any:
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def on_start(self, ctx: Ctx) -> Out:
        return self._sent(self.inner.on_start(ctx))

    def on_timer(self, ctx: Ctx, key: str) -> Out:
        return self._sent(self.inner.on_timer(ctx, key))

    def on_message(self, ctx: Ctx, inbound: Inbound) -> Out:
        out = self.inner.on_message(ctx, inbound)
        message = inbound.message
        known = _message(type(message))
        if known.kind is not Kind.RESPONSE:
            return self._sent(out)
        traced = Out()
        traced.append(
            Emit(
                "response_received",
                {
                    "api": known.api,
                    "correlation_id": inbound.correlation_id,
                    "src": str(inbound.src),
                    "dst": self._address,
                    "error": answer_error(message),
                },
            )
        )
        traced.extend(self._sent(out))
        return traced

    def _pausing(self, now_ms: int) -> Out:
        return self._sent(self.inner.pausing(now_ms))  # type: ignore[attr-defined]

    def snapshot(self) -> dict[str, Any]:
        return self.inner.snapshot()

    def _sent(self, out: Out) -> Out:
        """`out` with a `request_sent` before each request it sends."""
        if not any(type(c) is Send and _message(type(c.message)).kind is Kind.REQUEST for c in out):
            return out
        traced = Out()
        for command in out:
            if type(command) is Send:
                known = _message(type(command.message))
                if known.kind is Kind.REQUEST:
                    traced.append(
                        Emit(
                            "request_sent",
                            {
                                "api": known.api,
                                "correlation_id": command.correlation_id,
                                "src": self._address,
                                "dst": str(command.dst),
                            },
                        )
                    )
            traced.append(command)
        return traced
