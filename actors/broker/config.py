"""A broker's configuration: its id, its peers, and Kafka's settings with their defaults."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from actors.addresses import broker_address
from actors.broker.retention import OFFSETS_TOPIC_SEGMENT_BYTES, LogConfig
from actors.core import Address
from actors.profiles import Profile
from protocols.replication import LeaderAndIsrPartition

__all__ = ["BrokerConfig"]

@dataclass(frozen=True, slots=True)
class BrokerConfig:
    broker_id: int
    profile: Profile = field(default_factory=lambda: Profile.for_version("3.9"))
    controller: Address | None = None
    """A fixed controller for AlterPartition (2.7+), for tests that play the controller; else
    AlterPartition goes to the controller that sent the newest request."""
    zk_client: Address | None = None
    """The ZooKeeper client on this node (its controller actor); None in a cluster without
    ZooKeeper, where a leader commits ISR changes itself."""
    min_insync_replicas: int = 1
    replica_lag_time_max_ms: int = 30000
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_min_bytes: int = 1
    replica_fetch_backoff_ms: int = 1000
    replica_socket_timeout_ms: int = 30000
    replica_high_watermark_checkpoint_interval_ms: int = 5000
    replica_fetch_max_bytes: int = 1048576
    """Per partition; the first batch is sent whole even if larger (KIP-74)."""
    topic_min_insync_replicas: tuple[tuple[str, int], ...] = ()
    """Topic-level overrides of min.insync.replicas."""
    log_config: LogConfig = field(default_factory=LogConfig)
    """The broker's `log.segment.bytes`, `log.roll.ms`, `log.retention.ms` and
    `log.retention.bytes`: every topic's unless it overrides them."""
    topic_log_configs: tuple[tuple[str, LogConfig], ...] = ()
    """Topics with their own `segment.bytes`, `segment.ms`, `retention.ms` or `retention.bytes`."""
    log_retention_check_interval_ms: int = 300000
    log_initial_task_delay_ms: int = 30000
    """`log.initial.task.delay.ms` (3.7+; a fixed 30 s before): the first retention check."""
    bootstrap: tuple[LeaderAndIsrPartition, ...] = ()
    """Partitions as the controller creates them (leader = first replica, LE 0, ISR = all
    replicas), applied at every start while the cluster has no controller."""
    group_coordinator: Address | None = None
    """The group coordinator on this node, told when this broker becomes or stops being the
    leader of a `__consumer_offsets` partition; None in a cluster without consumer groups."""
    offsets_topic_num_partitions: int = 50
    """`offsets.topic.num.partitions`: FindCoordinator hashes a group id over this many."""
    offsets_topic_leaders: tuple[int, ...] = ()
    """In a cluster without a controller, each `__consumer_offsets` partition's leader (its
    first replica; leaders never move there): FindCoordinator answers from it."""

    def min_insync_replicas_for(self, topic: str) -> int:
        return dict(self.topic_min_insync_replicas).get(topic, self.min_insync_replicas)

    def log_config_for(self, topic: str) -> LogConfig:
        """The topic's log settings; internal topics (`__consumer_offsets`) are compacted, with
        `offsets.topic.segment.bytes` segments."""
        if topic.startswith("__"):
            return replace(self.log_config, segment_bytes=OFFSETS_TOPIC_SEGMENT_BYTES, delete=False)
        return dict(self.topic_log_configs).get(topic, self.log_config)

    @property
    def address(self) -> Address:
        return broker_address(self.broker_id)

    @classmethod
    def for_profile(cls, broker_id: int, profile: Profile, **settings: object) -> BrokerConfig:
        """Defaults from the version profile (replica.lag.time.max.ms), then explicit settings."""
        lag = profile.defaults["replica.lag.time.max.ms"]
        return cls(broker_id, profile, **{"replica_lag_time_max_ms": lag, **settings})  # type: ignore[arg-type]
