"""What the network tells an actor about its connections (`NetworkClient`'s disconnections).

When a broker's process dies, its operating system closes its sockets: every peer connected to
it sees the connection close, and a new connection to it is refused at once. Kafka's clients
learn it that way, within a round trip, and fail the requests in flight on that connection
(`NetworkClient.handleDisconnections`), instead of waiting for `request.timeout.ms`. A machine
that lost power, or one cut off by a partition, closes nothing: its peers hear silence until
their timeouts. The kernel sends `Disconnected` from the peer's side of the connection.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocols.keys import SimKey
from protocols.registry import Kind, message

__all__ = ["Disconnected"]


@message(SimKey.DISCONNECTED, kind=Kind.ONE_WAY)
@dataclass(frozen=True, slots=True)
class Disconnected:
    """The connection to `peer`'s node closed, or a connection to it was refused."""

    peer: str
    """The node at the other end."""
