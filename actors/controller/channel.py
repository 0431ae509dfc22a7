"""How the controller talks to brokers (`ControllerChannelManager`, `ControllerBrokerRequestBatch`).

A batch collects, per broker, the LeaderAndIsr partition states, the UpdateMetadata partitions
and the StopReplica partitions of one step, then sends them in Kafka's order: LeaderAndIsr,
UpdateMetadata, StopReplica. Every LeaderAndIsr partition also goes to every live broker's
UpdateMetadata. Requests for a broker that is not live are dropped, as Kafka's channel manager
has no connection to it.

The channel keeps one queue per broker with one request in flight, as Kafka's per-broker
`RequestSendThread` does: the next request leaves when the previous one is answered. A request
with no answer is sent again after `controller.socket.timeout.ms`; one whose connection closed
or was refused, after a 100 ms back-off. So requests a controller
decided before a pause can still leave after it: the stale-controller case of S11.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

from actors.addresses import broker_address
from actors.controller.zkdata import LeaderIsr
from actors.core import Out
from protocols.metadata import (
    StopReplicaPartition,
    StopReplicaRequest,
    UpdateMetadataPartition,
    UpdateMetadataRequest,
)
from protocols.replication import LeaderAndIsrPartition, LeaderAndIsrRequest
from protocols.types import TopicPartition

__all__ = ["Channel", "RequestBatch"]

CONTROLLER_SOCKET_TIMEOUT_MS = 30000
RECONNECT_BACKOFF_MS = 100
"""`RequestSendThread.backoff`: the pause before it reconnects to a broker and sends again."""


@dataclass(slots=True)
class _Queue:
    pending: list[Any] = field(default_factory=list)
    in_flight: int | None = None
    """The correlation id of the request in flight (the head of `pending`)."""


@dataclass(slots=True)
class Channel:
    """Per-broker request queues, one request in flight each."""

    queues: dict[int, _Queue] = field(default_factory=dict)
    next_correlation_id: int = 0

    def add_broker(self, broker: int) -> None:
        self.queues.setdefault(broker, _Queue())

    def remove_broker(self, out: Out, broker: int) -> None:
        """The broker died: what was queued for it is dropped (`removeBroker`)."""
        queue = self.queues.pop(broker, None)
        if queue is not None and queue.in_flight is not None:
            out.cancel_timer(f"channel:{broker}")

    def clear(self, out: Out) -> None:
        for broker in sorted(self.queues):
            self.remove_broker(out, broker)

    def send(self, out: Out, broker: int, request: Any) -> bool:
        queue = self.queues.get(broker)
        if queue is None:
            return False
        queue.pending.append(request)
        if queue.in_flight is None:
            self._send_head(out, broker, queue)
        return True

    def on_response(self, out: Out, broker: int, correlation_id: int) -> None:
        queue = self.queues.get(broker)
        if queue is None or queue.in_flight != correlation_id:
            return
        out.cancel_timer(f"channel:{broker}")
        queue.pending.pop(0)
        queue.in_flight = None
        if queue.pending:
            self._send_head(out, broker, queue)

    def on_disconnected(self, out: Out, broker: int) -> None:
        """The connection to `broker` closed or was refused: `RequestSendThread` reconnects and
        sends the request again after a 100 ms back-off, until the broker is removed."""
        queue = self.queues.get(broker)
        if queue is None or queue.in_flight is None:
            return
        queue.in_flight = None
        out.set_timer(f"channel:{broker}", RECONNECT_BACKOFF_MS)

    def on_timeout(self, out: Out, broker: int) -> None:
        queue = self.queues.get(broker)
        if queue is not None and queue.in_flight is not None:
            out.disconnect(broker_address(broker))  # the socket timeout closes the connection
        if queue is not None and queue.pending:
            self._send_head(out, broker, queue)

    def queued(self, broker: int) -> int:
        queue = self.queues.get(broker)
        return 0 if queue is None else len(queue.pending)

    def _send_head(self, out: Out, broker: int, queue: _Queue) -> None:
        self.next_correlation_id += 1
        queue.in_flight = self.next_correlation_id
        out.send(broker_address(broker), queue.pending[0], self.next_correlation_id)
        out.set_timer(f"channel:{broker}", CONTROLLER_SOCKET_TIMEOUT_MS)


@dataclass(slots=True)
class RequestBatch:
    """The requests of one controller step, per broker."""

    leader_and_isr: dict[int, dict[TopicPartition, LeaderAndIsrPartition]] = field(default_factory=dict)
    update_metadata_brokers: set[int] = field(default_factory=set)
    update_metadata_partitions: set[TopicPartition] = field(default_factory=set)
    stop_replica: dict[int, dict[TopicPartition, StopReplicaPartition]] = field(default_factory=dict)

    def add_leader_and_isr(
        self,
        brokers: Iterable[int],
        tp: TopicPartition,
        leadership: LeaderIsr,
        replicas: tuple[int, ...],
        live: Collection[int],
        *,
        is_new: bool = False,
    ) -> None:
        state = LeaderAndIsrPartition(
            tp.topic,
            tp.partition,
            leadership.controller_epoch,
            leadership.leader,
            leadership.leader_epoch,
            leadership.isr,
            leadership.zk_version,
            replicas,
            is_new,
        )
        for broker in brokers:
            self.leader_and_isr.setdefault(broker, {})[tp] = state
        self.add_update_metadata(live, (tp,))

    def add_update_metadata(self, brokers: Iterable[int], partitions: Iterable[TopicPartition] = ()) -> None:
        self.update_metadata_brokers.update(brokers)
        self.update_metadata_partitions.update(partitions)

    def add_stop_replica(self, broker: int, tp: TopicPartition, leader_epoch: int) -> None:
        self.stop_replica.setdefault(broker, {})[tp] = StopReplicaPartition(tp.topic, tp.partition, leader_epoch)

    def send(  # noqa: PLR0913 - what every request carries
        self,
        out: Out,
        channel: Channel,
        *,
        controller_id: int,
        controller_epoch: int,
        broker_epochs: dict[int, int],
        metadata: Callable[[TopicPartition], UpdateMetadataPartition],
    ) -> None:
        """Send everything, in Kafka's order, to the brokers that are live; then start over."""

        def deliver(broker: int, request: Any, kind: str, partitions: int) -> None:
            sent = channel.send(out, broker, request)
            out.emit(
                "controller_request_sent" if sent else "controller_request_dropped",
                controller_id=controller_id,
                controller_epoch=controller_epoch,
                broker_id=broker,
                request=kind,
                partitions=partitions,
            )

        for broker in sorted(self.leader_and_isr):
            states = self.leader_and_isr[broker]
            request = LeaderAndIsrRequest(
                controller_id,
                controller_epoch,
                tuple(states[tp] for tp in sorted(states)),
                broker_epochs.get(broker, -1),
            )
            deliver(broker, request, "LeaderAndIsr", len(states))
        partitions = tuple(metadata(tp) for tp in sorted(self.update_metadata_partitions))
        live = tuple(sorted(broker_epochs))
        for broker in sorted(self.update_metadata_brokers):
            request = UpdateMetadataRequest(
                controller_id, controller_epoch, broker_epochs.get(broker, -1), partitions, live
            )
            deliver(broker, request, "UpdateMetadata", len(partitions))
        for broker in sorted(self.stop_replica):
            stops = self.stop_replica[broker]
            request = StopReplicaRequest(
                controller_id,
                controller_epoch,
                broker_epochs.get(broker, -1),
                tuple(stops[tp] for tp in sorted(stops)),
            )
            deliver(broker, request, "StopReplica", len(stops))
        self.leader_and_isr.clear()
        self.update_metadata_brokers.clear()
        self.update_metadata_partitions.clear()
        self.stop_replica.clear()
