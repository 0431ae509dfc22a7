"""A scripted client of the Python API (`Cluster.client`): raw Kafka requests at chosen
simulated times, and every answer with its time.

    client = cluster.client("c1")
    client.send(1000, 1, FindCoordinatorRequest("my-group"))
    client.send(1100, lambda c: c.answers(FindCoordinatorResponse)[-1][1].node_id,
                JoinGroupRequest("my-group", 10000, 60000, ""))
    cluster.run(until_ms=2000)
    client.answers(JoinGroupResponse)   # [(1102, JoinGroupResponse(...))]

The client is a node of its own (`c1`, actor `client`: `actors.scripted`); it answers nothing,
retries nothing and times nothing out. Requests are the dataclasses of `protocols/`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actors.core import Address
from actors.scripted import SEND, ScriptedClient, Target, check_request, destination
from protocols.application import ApplicationCall
from sim.engine.kernel import Kernel

__all__ = ["CLIENT_ACTOR", "Client"]

CLIENT_ACTOR = "client"


class Client:
    """The handle of one scripted client. Read it between runs (`Cluster.run` returns)."""

    def __init__(self, kernel: Kernel, node: str) -> None:
        self._kernel = kernel
        self.node = node
        self.address = Address(node, CLIENT_ACTOR)
        self._script = ScriptedClient(owner=self)

    @property
    def script(self) -> ScriptedClient:
        """The behaviour the client's node runs (the same object after a restart)."""
        return self._script

    def send(self, at_ms: int, broker: Target | Callable[[Client], Target], request: Any) -> int:
        """Send `request` at `at_ms` to `broker`: a broker id, `"broker-N"` or an `Address`
        (group requests go to the broker's group coordinator). Either may be a function of this
        client, called when the request goes out. Returns its correlation id (1, 2, ... in the
        order of the calls)."""
        if type(at_ms) is not int or at_ms < self._kernel.now_ms:
            msg = f"{self.node}: cannot send at {at_ms!r} ms: it is already {self._kernel.now_ms} ms"
            raise ValueError(msg)
        check_request(request)
        if not callable(broker) and not callable(request):
            destination(broker, request)  # a wrong broker is an error now, not when it is due
        correlation_id = self._script.add(at_ms, broker, request)
        if self._script.started:
            self._kernel.tell(self.address, ApplicationCall(SEND), log=False)
        return correlation_id

    def answers(self, kind: type | None = None) -> list[tuple[int, Any]]:
        """`(time, message)` of every message received (of type `kind`, if given), in order:
        the answers, and `Disconnected` when a broker's process closed the connection."""
        return [(t, m) for t, _, _, m in self._script.received if kind is None or isinstance(m, kind)]

    def answer(self, correlation_id: int) -> tuple[int, Any] | None:
        """`(time, message)` of the answer to the request `send` numbered so, if it came."""
        found = [(t, m) for t, _, cid, m in self._script.received if cid == correlation_id]
        return found[0] if found else None

    def sent(self) -> list[tuple[int, Address, int, Any]]:
        """`(time, destination, correlation id, request)` of every request sent, in order."""
        return list(self._script.sent)
