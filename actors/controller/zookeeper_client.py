"""The broker's ZooKeeper session (`kafka.zookeeper.ZooKeeperClient`, over ZooKeeper's
`ClientCnxn`): the requests pending on it, its pings, and a broken connection.

The session is opened with `zookeeper.session.timeout.ms` and pinged every third of it. A request
unanswered for the client's read timeout (two thirds of the session timeout) means the connection
broke: every pending request fails and is sent again on the same session (Kafka's
`retryRequestsUntilConnected`). What a lost session means for the candidate and the controller is
the actor's (`actors.controller.behavior`). Left out: moving to another server of an ensemble (the model has one), auth and
the chroot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from actors.core import Address, Out
from protocols.zookeeper import CloseSessionRequest, ConnectRequest, ZkPingRequest

__all__ = ["ZOOKEEPER", "Pending", "ZooKeeperClient"]

ZOOKEEPER = Address("zookeeper", "zookeeper")


@dataclass(frozen=True, slots=True)
class Pending:
    """A request waiting for its answer: what it is for (`purpose`, `arg`, read by the actor
    when the answer comes), the session it was sent on, and the request, to send it again."""

    purpose: str
    arg: Any
    session_id: int
    message: Any = None
    sent_ms: int = 0


class ZooKeeperClient:
    def __init__(self, broker_id: int, session_timeout_ms: int) -> None:
        self.broker_id = broker_id
        self.session_timeout_ms = session_timeout_ms
        self.session_id = 0
        """0: no session (connecting, or closed)."""
        self.next_correlation_id = 0
        self.pending: dict[int, Pending] = {}
        self.now_ms = 0
        """The time of the handler running (the actor sets it as each handler starts)."""

    def new_correlation_id(self) -> int:
        """The next id of this actor's requests: ZooKeeper's, and the ControlledShutdown it sends
        to the controller, share one counter."""
        self.next_correlation_id += 1
        return self.next_correlation_id

    def request(self, out: Out, message: Any, purpose: str, arg: Any = None) -> None:
        correlation_id = self.new_correlation_id()
        self.pending[correlation_id] = Pending(purpose, arg, self.session_id, message, self.now_ms)
        out.send(ZOOKEEPER, message, correlation_id)

    def take(self, correlation_id: int) -> Pending | None:
        """The request an answer is for, no longer pending; None if none is."""
        return self.pending.pop(correlation_id, None)

    def connect(self, out: Out) -> None:
        self.session_id = 0
        self.request(out, ConnectRequest(self.session_timeout_ms), "connect")
        out.set_timer("ping", self.session_timeout_ms // 3)

    def connected(self, out: Out, session_id: int, timeout_ms: int) -> None:
        self.session_id = session_id
        out.set_timer("ping", timeout_ms // 3)

    def ping(self, out: Out) -> None:
        """The `ping` timer: check the connection, ping, and set the timer again."""
        self.check_connection(out)
        if self.session_id:
            self.request(out, ZkPingRequest(self.session_id), "ping")
        out.set_timer("ping", self.session_timeout_ms // 3)

    def check_connection(self, out: Out) -> None:
        """A request unanswered for the client's read timeout (two thirds of the session
        timeout) means its connection broke: over TCP an answer is not lost alone. As
        `ClientCnxn` does, every request pending on it fails (CONNECTIONLOSS) and, as Kafka's
        `ZooKeeperClient` does (`retryRequestsUntilConnected`), each is sent again; the session
        goes on if it has not expired."""
        read_timeout = self.session_timeout_ms * 2 // 3
        pending = sorted(self.pending.items())
        if not any(self.now_ms - w.sent_ms >= read_timeout for _, w in pending):
            return
        out.emit("zk_connection_lost", broker_id=self.broker_id, session_id=self.session_id, pending=len(pending))
        out.disconnect(ZOOKEEPER)  # what the old connection still carries is lost with it
        self.pending = {}
        for _, w in pending:
            if w.purpose != "ping" and (w.session_id == self.session_id or w.purpose == "connect"):
                self.request(out, w.message, w.purpose, w.arg)

    def session_lost(self, out: Out) -> None:
        """The session expired: only a controller step's requests and the replica manager's ISR
        writes stay pending, as their answers still matter (a step's request is sent again on the
        next session, an ISR write is answered)."""
        out.emit("zk_session_lost", broker_id=self.broker_id, session_id=self.session_id)
        out.cancel_timer("ping")
        for correlation_id in sorted(self.pending):
            if self.pending[correlation_id].purpose not in ("step", "isr-update"):
                del self.pending[correlation_id]

    def close(self, out: Out) -> bool:
        """Close the session; False if there is none."""
        if not self.session_id:
            return False
        out.cancel_timer("ping")
        self.request(out, CloseSessionRequest(self.session_id), "close")
        return True
