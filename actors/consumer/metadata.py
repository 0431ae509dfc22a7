"""The consumer's view of the partitions' leaders: Kafka's `ConsumerMetadata`.

What it models of the Java consumer: a Metadata request for the subscribed topics at start,
again `retry.backoff.ms` after an answer that lacks a leader, after an error that means stale
metadata or a failed connection, and every 5 minutes (`metadata.max.age.ms`). Requests are
spaced by `retry.backoff.ms` (`Metadata.timeToAllowUpdate`). The leaders go to the
subscription state, which validates the positions of partitions whose leader changed.

Left out: topic creation and deletion (the topics and their partition counts are fixed).
"""

from __future__ import annotations

from actors.consumer.config import ConsumerConfig
from actors.consumer.network import Clock, InFlight, NetworkClient
from actors.consumer.subscription_state import SubscriptionState
from actors.core import Out
from protocols.errors import ErrorCode
from protocols.metadata import MetadataRequest, MetadataResponse
from protocols.types import TopicPartition

__all__ = ["METADATA_ERRORS", "ConsumerMetadata"]

METADATA_ERRORS = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
)
"""Errors of a partition's request that mean the consumer's metadata is stale."""
NEVER_REFRESHED_MS = -(2**62)
"""`Metadata.lastRefreshMs` before the first answer: long enough ago for any back-off."""
METADATA_MAX_AGE_MS = 300_000


class ConsumerMetadata:
    def __init__(self, config: ConsumerConfig, clock: Clock, network: NetworkClient, subscriptions: SubscriptionState) -> None:
        self.config = config
        self.clock = clock
        self.network = network
        self.subscriptions = subscriptions
        self.in_flight: int | None = None
        self.refreshed_ms = NEVER_REFRESHED_MS
        """When the last metadata request was answered or failed (`Metadata.lastRefreshMs`)."""
        self.closed = False

    def request_update(self, out: Out) -> None:
        """`Metadata.requestUpdate`: the request goes out once `retry.backoff.ms` has passed
        since the last answer or failure (`Metadata.timeToAllowUpdate`), so a consumer told
        again and again that its metadata is stale (a fetch from a broker that restarted and
        leads nothing yet) asks at most ten times a second, not once per round trip."""
        if self.in_flight is not None or self.closed:
            return
        wait = self.refreshed_ms + self.config.retry_backoff_ms - self.clock.now_ms
        if wait > 0:
            out.set_timer("metadata", wait)
            return
        broker = self.network.least_loaded_node()
        request = MetadataRequest(self.config.topics)
        self.in_flight = self.network.send(out, broker, "metadata", request, on_failure=self._update_failed)

    def on_metadata_response(self, out: Out, resp: MetadataResponse) -> None:
        self.in_flight = None
        self.refreshed_ms = self.clock.now_ms
        missing = False
        leaders = {}
        for p in resp.partitions:
            if p.partition < 0:
                missing = True
                continue
            leaders[TopicPartition(p.topic, p.partition)] = (p.leader, p.leader_epoch)
            missing = missing or p.leader < 0
        self.subscriptions.new_leaders(leaders, validate=self.config.validates_positions)
        out.set_timer("metadata", self.config.retry_backoff_ms if missing else METADATA_MAX_AGE_MS)

    def _update_failed(self, out: Out, correlation_id: int, request: InFlight, error: str) -> None:
        """`Metadata.failedUpdate`: asked again of the next broker after `retry.backoff.ms`."""
        self.in_flight = None
        self.refreshed_ms = self.clock.now_ms
        self.network.try_next_node()
        out.set_timer("metadata", self.config.retry_backoff_ms)

    def close(self) -> None:
        self.closed = True
