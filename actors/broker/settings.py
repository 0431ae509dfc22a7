"""The broker's own settings (Kafka's `KafkaConfig` and `LogConfig` keys: replication and the
log) and how a broker's config is built from the scenario's `[broker]` section.

The same section holds the controller's and the group coordinator's keys, as Kafka's
server.properties does; their packages declare them.
"""

from __future__ import annotations

from typing import Any

from actors.broker.config import BrokerConfig
from actors.broker.retention import LogConfig
from actors.core import Address
from actors.profiles import Profile
from actors.settings import setting
from protocols.replication import LeaderAndIsrPartition

__all__ = ["INT_MAX", "SETTINGS", "TOPIC_LOG_SETTINGS", "broker_config", "log_config"]

INT_MAX = 2**31 - 1

SETTINGS = (
    setting("min.insync.replicas", int, 1, low=1),
    setting("replica.lag.time.max.ms", int, None, low=1, profile_default="replica.lag.time.max.ms"),
    setting("replica.fetch.wait.max.ms", int, 500, low=0),
    setting("replica.fetch.backoff.ms", int, 1000, low=0),
    setting("replica.socket.timeout.ms", int, 30000, low=1),
    setting("replica.high.watermark.checkpoint.interval.ms", int, 5000, low=1),
    setting("log.segment.bytes", int, 1073741824, low=14, high=INT_MAX, doc="a log rolls a new segment past this size"),
    setting("log.roll.ms", int, 604800000, low=1, doc="or when its first batch is this old (log.roll.hours = 168)"),
    setting("log.retention.ms", int, 604800000, low=-1, doc="delete segments whose newest record is older; -1: never"),
    setting("log.retention.bytes", int, -1, low=-1, doc="delete the oldest segments while a log is larger; -1: no limit"),
    setting("log.retention.check.interval.ms", int, 300000, low=1),
    setting("log.initial.task.delay.ms", int, 30000, low=0, doc="the first retention check (a fixed 30 s before 3.7)"),
)

TOPIC_LOG_SETTINGS = {
    "segment.bytes": "log.segment.bytes",
    "segment.ms": "log.roll.ms",
    "retention.ms": "log.retention.ms",
    "retention.bytes": "log.retention.bytes",
}
"""Each topic-level log setting and the broker setting it overrides."""


def log_config(broker: dict[str, Any], topic: dict[str, Any] | None = None) -> LogConfig:
    """A topic's log settings: its own where it sets them, else the broker's."""

    def value(key: str) -> int:
        own = None if topic is None else topic[key]
        return own if own is not None else broker[TOPIC_LOG_SETTINGS[key]]

    return LogConfig(value("segment.bytes"), value("segment.ms"), value("retention.ms"), value("retention.bytes"))


def broker_config(
    broker_id: int,
    profile: Profile,
    settings: dict[str, Any],
    topics: tuple[dict[str, Any], ...],
    *,
    zk_client: Address | None,
    bootstrap: tuple[LeaderAndIsrPartition, ...],
    group_coordinator: Address | None,
    offsets_topic_leaders: tuple[int, ...],
) -> BrokerConfig:
    """A broker's config from its checked section and the scenario's topics; the keyword
    arguments are how the cluster wires it to the other actors."""
    return BrokerConfig(
        broker_id,
        profile,
        zk_client=zk_client,
        min_insync_replicas=settings["min.insync.replicas"],
        replica_lag_time_max_ms=settings["replica.lag.time.max.ms"],
        replica_fetch_wait_max_ms=settings["replica.fetch.wait.max.ms"],
        replica_fetch_backoff_ms=settings["replica.fetch.backoff.ms"],
        replica_socket_timeout_ms=settings["replica.socket.timeout.ms"],
        replica_high_watermark_checkpoint_interval_ms=settings["replica.high.watermark.checkpoint.interval.ms"],
        topic_min_insync_replicas=tuple(
            (t["name"], t["min.insync.replicas"]) for t in topics if t["min.insync.replicas"] is not None
        ),
        log_config=log_config(settings),
        topic_log_configs=tuple(
            (t["name"], log_config(settings, t)) for t in topics if any(t[key] is not None for key in TOPIC_LOG_SETTINGS)
        ),
        log_retention_check_interval_ms=settings["log.retention.check.interval.ms"],
        log_initial_task_delay_ms=settings["log.initial.task.delay.ms"],
        bootstrap=bootstrap,
        group_coordinator=group_coordinator,
        offsets_topic_num_partitions=settings["offsets.topic.num.partitions"],
        offsets_topic_leaders=offsets_topic_leaders,
    )
