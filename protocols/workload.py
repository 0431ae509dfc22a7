"""Messages of the stand-in workload (`actors.workload`): a gossip token and a ping exchange.

They exist so the kernel, the codec and the hosts can be exercised and measured before the Kafka
actors exist; they are simulator-only keys (`protocols.keys.SimKey`).
"""

from __future__ import annotations

from dataclasses import dataclass

from protocols.keys import SimKey
from protocols.registry import Kind, field, message


@message(SimKey.GOSSIP, kind=Kind.ONE_WAY, versions=(0, 1))
@dataclass(frozen=True, slots=True)
class Gossip:
    """A token passed from actor to actor."""

    token: int
    """Which token this is; unique per run."""
    hops: int
    """How many times it has been passed on."""
    origin: str = field(default="", since=1)
    """The actor that created the token (version 1+)."""


@message(SimKey.PING, kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class PingResponse:
    sent_ms: int
    """The `sent_ms` of the request, echoed so the sender can measure the round trip."""


@message(SimKey.PING, kind=Kind.REQUEST, response=PingResponse)
@dataclass(frozen=True, slots=True)
class PingRequest:
    sent_ms: int
    """When the request was sent, in simulated ms."""
