"""The controller's event queue (`ControllerEventManager`): one event at a time.

Each event is a step of the elected controller (`actors.controller.kafka_controller`), a
generator that yields ZooKeeper requests; the manager sends them, resumes the step once every
answer is in, and starts the next queued event when the step ends. A request answered
SESSIONEXPIRED is sent again once a new session exists: as Kafka queues an `Expire` event behind
the event in progress, the step in progress goes on. Left out: the queue-time metrics and the
event preemption Kafka uses on shutdown.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from actors.controller.kafka_controller import KafkaController
from actors.controller.kafka_zk_client import ControllerMoved, Step
from actors.controller.zookeeper_client import ZooKeeperClient
from actors.core import Out

__all__ = ["ControllerEventManager", "ControllerEventProcessor"]


class ControllerEventProcessor(Protocol):
    """What the events are for (Kafka's `ControllerEventProcessor`): the controller actor, whose
    elected controller `kc` exists while it is active."""

    kc: KafkaController | None

    def resign(self, out: Out, reason: str) -> None: ...

    def controller_moved(self, out: Out) -> None:
        """A write found another controller's epoch: log it and resign."""
        ...


@dataclass(slots=True)
class _Running:
    """The controller step in progress and the ZooKeeper requests it waits for."""

    number: int
    step: Step
    requests: list[Any] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)
    resend: list[int] = field(default_factory=list)
    """Requests answered SESSIONEXPIRED, sent again once a new session exists."""


class ControllerEventManager:
    def __init__(self, processor: ControllerEventProcessor, zk: ZooKeeperClient) -> None:
        self.processor = processor
        self.zk = zk
        self.events: list[tuple[str, Any]] = []
        self.running: _Running | None = None
        self.steps = 0

    def put(self, out: Out, kind: str, arg: Any = None) -> None:
        if self.processor.kc is None and kind != "expire":
            return
        self.events.append((kind, arg))
        self.run(out)

    def put_first(self, out: Out, kind: str) -> None:
        """Queue `kind` ahead of the rest (the failover of a new controller) and run."""
        self.events.insert(0, (kind, None))
        self.run(out)

    def clear_and_put(self, kind: str) -> None:
        """Kafka's `clearAndPut(Expire)`: queued events are dropped, the one running ends first."""
        self.events = [(kind, None)]

    def resigned(self) -> None:
        """The controller resigned: its step ends, and only `expire` events stay queued."""
        if self.running is not None:
            self.running.step.close()
            self.running = None
        self.events = [e for e in self.events if e[0] == "expire"]

    def run(self, out: Out) -> None:
        """Start queued events, one at a time, while none is waiting for ZooKeeper."""
        while self.running is None and self.events:
            kind, arg = self.events.pop(0)
            if kind == "expire":
                self.processor.resign(out, "session expired")
                continue
            kc = self.processor.kc
            if kc is None:
                continue
            self.steps += 1
            self.running = _Running(self.steps, _event_step(kc, kind, arg))
            self._advance(out, None)

    def on_response(self, out: Out, arg: tuple[int, int], response: Any) -> None:
        """An answer to request `arg[1]` of step `arg[0]`."""
        number, i = arg
        running = self.running
        if running is None or running.number != number:
            return
        running.results[i] = response
        if all(r is not None for r in running.results):
            self._advance(out, tuple(running.results))

    def on_session_expired(self, out: Out, arg: tuple[int, int], session_id: int) -> None:
        """Request `arg[1]` of step `arg[0]`, sent on `session_id`, was answered SESSIONEXPIRED."""
        if self.running is not None and arg[0] == self.running.number:
            self.running.resend.append(arg[1])
            if self.zk.session_id and session_id != self.zk.session_id:
                self.resend(out)  # a new session exists already

    def resend(self, out: Out) -> None:
        """The step in progress goes on, on the new session (see the module docstring)."""
        running = self.running
        if running is None:
            return
        for i in running.resend:
            request = replace(running.requests[i], session_id=self.zk.session_id)
            self.zk.request(out, request, "step", (running.number, i))
        running.resend.clear()

    def _advance(self, out: Out, value: Any) -> None:
        """Resume the running step with `value` until it waits for ZooKeeper or ends."""
        running, kc = self.running, self.processor.kc
        assert running is not None and kc is not None
        kc.out = out
        try:
            requests = running.step.send(value)
            while not requests:
                requests = running.step.send(())
        except StopIteration:
            self.running = None
        except ControllerMoved:
            self.running = None
            self.processor.controller_moved(out)
        else:
            running.requests = list(requests)
            running.results = [None] * len(requests)
            for i, request in enumerate(requests):
                self.zk.request(out, request, "step", (running.number, i))
            return
        self.run(out)


def _event_step(kc: KafkaController, kind: str, arg: Any) -> Step:
    match kind:
        case "failover":
            return kc.on_failover()
        case "broker-change":
            return kc.on_broker_change()
        case "isr-change":
            return kc.on_isr_change_notification()
        case "auto-rebalance":
            return kc.on_auto_rebalance()
        case "alter-partition":
            return kc.on_alter_partition(arg, arg.message)
        case "controlled-shutdown":
            return kc.on_controlled_shutdown(arg, arg.message)
    msg = f"unknown controller event {kind!r}"
    raise ValueError(msg)
