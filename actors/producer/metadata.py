"""The producer's metadata (`Metadata`, and `NetworkClient`'s `DefaultMetadataUpdater`): the
topic's brokers and partition leaders, and when to ask for them again.

The producer asks a broker for the topic's leaders at start, again `retry.backoff.ms` later
while a partition has none, after an error that means stale metadata or a closed connection,
and every `metadata.max.age.ms`. It asks one broker while that one answers, and the next after
`request.timeout.ms` without an answer, or at once when its connection closes. In a cluster
without a controller the leaders are fixed (`config.leaders`) and never asked for. Left out:
topics other than the producer's, and the answer's controller id, which the producer has no
use for.
"""

from __future__ import annotations

from actors.addresses import broker_address
from actors.core import Out
from actors.producer.config import ProducerConfig
from actors.producer.network import NetworkClient
from protocols.metadata import MetadataRequest, MetadataResponse

__all__ = ["Metadata"]


class Metadata:
    def __init__(self, config: ProducerConfig, network: NetworkClient) -> None:
        self.config = config
        self.network = network
        self.leaders: dict[int, int] = dict(enumerate(config.leaders))
        """Partition -> its leader; -1 or absent: none known."""
        self.brokers: tuple[int, ...] = config.bootstrap
        self.in_flight: int | None = None
        """The correlation id of the Metadata request in flight."""
        self.target = 0
        """Which broker to ask: the same one while it answers (Java's least-loaded node prefers a
        connected one), the next after a timeout."""
        self._available: tuple[int, ...] | None = None
        """`available_partitions`, while the leaders stay (recomputed after an answer)."""

    def leader_of(self, partition: int) -> int:
        return self.leaders.get(partition, -1)

    def available_partitions(self) -> tuple[int, ...]:
        """The partitions with a known leader, kept until a metadata answer changes leaders."""
        leaders = self.leaders
        if self._available is None:
            self._available = tuple(p for p in range(self.config.partitions) if leaders.get(p, -1) >= 0)
        return self._available

    def request(self, out: Out) -> None:
        """Ask for the leaders, unless a request is in flight or they are fixed."""
        if self.in_flight is not None or self.config.leaders or not self.brokers:
            return
        broker = self.least_loaded_broker()
        correlation_id = self.network.correlation_id()
        self.in_flight = correlation_id
        out.send(broker_address(broker), MetadataRequest((self.config.topic,)), correlation_id)
        out.set_timer(f"metadata-timeout:{correlation_id}", self.config.request_timeout_ms)

    def least_loaded_broker(self) -> int:
        """`leastLoadedNode`, simplified: the broker last asked while it answers, never one
        backing off after a failed connection."""
        count = len(self.brokers)
        candidates = (self.brokers[(self.target + k) % count] for k in range(count))
        self.target += next((k for k, b in enumerate(candidates) if self.network.ready(b)), 0)
        return self.brokers[self.target % count]

    def on_response(self, out: Out, resp: MetadataResponse) -> None:
        out.cancel_timer(f"metadata-timeout:{self.in_flight}")
        self.in_flight = None
        if resp.brokers:
            self.brokers = tuple(resp.brokers)
        for p in resp.partitions:
            if p.partition >= 0:
                self.leaders[p.partition] = p.leader
        self._available = None
        leaderless = any(self.leaders.get(p, -1) < 0 for p in range(self.config.partitions))
        out.set_timer("metadata", self.config.retry_backoff_ms if leaderless else self.config.metadata_max_age_ms)

    def timed_out(self, out: Out, correlation_id: int) -> None:
        """No answer within `request.timeout.ms`: ask the next broker."""
        if self.in_flight == correlation_id:
            self.in_flight = None
            self.target += 1  # that broker did not answer: ask the next one
            self.request(out)

    def asked(self, broker: int) -> bool:
        """The request in flight went to `broker`."""
        asked = self.brokers[self.target % len(self.brokers)] if self.brokers else -1
        return self.in_flight is not None and asked == broker

    def lost(self, out: Out) -> None:
        """The connection of the request in flight closed: the next request goes to the next
        broker."""
        out.cancel_timer(f"metadata-timeout:{self.in_flight}")
        self.in_flight = None
        self.target += 1
