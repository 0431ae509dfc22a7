"""The consumer protocol's heartbeat (KIP-848): Kafka's `HeartbeatRequestManager`, its
`HeartbeatRequestState` (when the next ConsumerGroupHeartbeat may go) and its `HeartbeatState`
(which fields the last request sent).

What it models of the Java consumer (`group.protocol = consumer`):
- one ConsumerGroupHeartbeat joins, heartbeats, acknowledges a reconciliation and leaves;
- cadence: the interval timer restarts when a heartbeat is sent; the interval is the one the
  last answer gave (`heartbeat_interval_ms`), and a new interval restarts the timer from the
  answer (`updateHeartbeatIntervalMs`); before the first answer the client's
  `heartbeat.interval.ms`. One heartbeat in flight at a time, except that a leave goes at once;
- `shouldHeartbeatNow`: JOINING and ACKNOWLEDGING send at once (with none in flight), LEAVING
  always;
- after a failed attempt (an error answer or a failed request) the interval timer is cleared
  and the next heartbeat waits only its back-off (`retry.backoff.ms`, exponential from 3.7,
  KIP-580); fencing and coordinator errors skip the back-off (`heartbeatRequestState.reset`);
- fields (`buildRequestData`): group id, member id, member epoch and instance id always; the
  rebalance timeout, the subscription, the server assignor and the owned partitions only when
  joining or when they changed since the last request sent; after any error the next request
  is full (`heartbeatState.reset`);
- the poll timer: `max.poll.interval.ms` after the last application `poll()`.

Left out: the rack id (no racks are modelled) and client-side assignors (KIP-848 names them,
Kafka never shipped them).
"""

from __future__ import annotations

from dataclasses import dataclass

from actors.backoff import RetryBackoff
from actors.consumer.config import ConsumerConfig
from actors.consumer.network import Clock
from actors.consumer.subscription_state import by_topic
from protocols.group import ConsumerGroupHeartbeatRequest
from protocols.types import TopicPartition

__all__ = ["HeartbeatRequestState", "HeartbeatState", "SentFields"]


@dataclass(slots=True)
class SentFields:
    """What the last request carried of each optional field (None: not known to be sent)."""

    rebalance_timeout_ms: int | None = None
    topics: tuple[str, ...] | None = None
    server_assignor: str | None = None
    owned: tuple[int, tuple[TopicPartition, ...]] | None = None
    """The local assignment as sent: (its local epoch, its partitions). A new reconciliation
    bumps the local epoch, so its acknowledgement carries the owned list even when the
    partitions came out the same."""


class HeartbeatState:
    """`HeartbeatRequestManager.HeartbeatState`: the request's fields, sent only when changed."""

    def __init__(self, config: ConsumerConfig) -> None:
        self.config = config
        self.sent = SentFields()

    def reset(self) -> None:
        """After an error (or a leave on the poll timer): the next request is full."""
        self.sent = SentFields()

    def build(
        self, member_id: str, member_epoch: int, *, joining: bool, local_epoch: int, owned: list[TopicPartition]
    ) -> ConsumerGroupHeartbeatRequest:
        cfg, sent = self.config, self.sent
        rebalance_timeout = -1
        if joining or sent.rebalance_timeout_ms != cfg.max_poll_interval_ms:
            rebalance_timeout = sent.rebalance_timeout_ms = cfg.max_poll_interval_ms
        topics = tuple(sorted(cfg.topics))
        subscribed = None
        if joining or sent.topics != topics:
            subscribed = sent.topics = topics
        assignor = None
        if cfg.group_remote_assignor is not None and (joining or sent.server_assignor != cfg.group_remote_assignor):
            assignor = sent.server_assignor = cfg.group_remote_assignor
        local = (local_epoch, tuple(sorted(owned)))
        partitions = None
        if joining or sent.owned != local:
            sent.owned = local
            partitions = by_topic(list(local[1]))
        return ConsumerGroupHeartbeatRequest(
            cfg.group_id,
            member_id,
            member_epoch,
            cfg.group_instance_id,
            None,
            rebalance_timeout,
            subscribed,
            assignor,
            partitions,
        )


class HeartbeatRequestState:
    """`HeartbeatRequestManager.HeartbeatRequestState` with its `RequestState` back-off, and the
    poll timer the manager checks."""

    def __init__(self, config: ConsumerConfig, clock: Clock, backoff: RetryBackoff) -> None:
        self.config = config
        self.clock = clock
        self.backoff = backoff
        self.interval_ms = config.heartbeat_interval_ms
        self.due_ms = 0
        """When the interval timer expires (the first heartbeat may go at once)."""
        self.in_flight: int | None = None
        self.backoff_until_ms = 0
        self.attempts = 0
        """Failed attempts since the last answered one (`numAttempts`)."""
        self.last_poll_ms = 0

    def can_send(self) -> bool:
        """`canSendRequest`: the interval has passed, none in flight, no back-off left."""
        now = self.clock.now_ms
        return now >= self.due_ms and self.in_flight is None and now >= self.backoff_until_ms

    def next_due_ms(self) -> int:
        """When `can_send` may next hold (with none in flight)."""
        return max(self.due_ms, self.backoff_until_ms)

    def on_send(self, correlation_id: int) -> None:
        """`onSendAttempt` and `resetTimer`: the interval counts from the send."""
        self.in_flight = correlation_id
        self.due_ms = self.clock.now_ms + self.interval_ms

    def on_success(self, interval_ms: int) -> None:
        """`onSuccessfulAttempt` and `updateHeartbeatIntervalMs`."""
        self.in_flight = None
        self.attempts = 0
        self.backoff_until_ms = 0
        if interval_ms > 0 and interval_ms != self.interval_ms:
            self.interval_ms = interval_ms
            self.due_ms = self.clock.now_ms + interval_ms

    def on_failure(self) -> None:
        """`onFailedAttempt`: the interval timer is cleared; the back-off grows."""
        self.in_flight = None
        self.due_ms = self.clock.now_ms
        self.backoff_until_ms = self.clock.now_ms + self.backoff.backoff(self.attempts)
        self.attempts += 1

    def reset(self) -> None:
        """`RequestState.reset`: no back-off (fencing and coordinator errors retry at once)."""
        self.in_flight = None
        self.attempts = 0
        self.backoff_until_ms = 0

    # ------------------------------------------------------------------ the poll timer

    def poll(self) -> None:
        """`resetPollTimer`: the application called `poll()`."""
        self.last_poll_ms = self.clock.now_ms

    def poll_deadline_ms(self) -> int:
        return self.last_poll_ms + self.config.max_poll_interval_ms

    def poll_timer_expired(self) -> bool:
        return self.clock.now_ms >= self.poll_deadline_ms()
