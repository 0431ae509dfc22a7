"""The group coordinator's settings (Kafka's `offsets.*` and `group.*` broker keys) and how a
coordinator's config is built from the scenario's `[broker]` section."""

from __future__ import annotations

from typing import Any

from actors.group.config import GroupCoordinatorConfig
from actors.profiles import INT_MAX, Profile
from actors.settings import setting

__all__ = ["SETTINGS", "coordinator_config"]

SETTINGS = (
    setting("offsets.topic.num.partitions", int, 50, low=1, high=10000, doc="partitions of __consumer_offsets"),
    setting(
        "offsets.topic.replication.factor",
        int,
        3,
        low=1,
        doc="capped by the broker count (Kafka refuses to create the topic instead)",
    ),
    setting("offsets.commit.timeout.ms", int, 5000, low=1),
    setting("offsets.retention.minutes", int, None, low=1, profile_default="offsets.retention.minutes"),
    setting("offsets.retention.check.interval.ms", int, 600000, low=1),
    setting(
        "group.initial.rebalance.delay.ms",
        int,
        None,
        low=0,
        profile_default="group.initial.rebalance.delay.ms",
    ),
    setting(
        "offsets.load.ms",
        int,
        0,
        low=0,
        doc="the simulator's: how long a new leader of a __consumer_offsets partition takes to load its groups",
    ),
    setting("group.min.session.timeout.ms", int, 6000, low=0),
    setting("group.max.session.timeout.ms", int, None, low=0, profile_default="group.max.session.timeout.ms"),
    setting(
        "group.max.size",
        int,
        INT_MAX,
        low=1,
        high=INT_MAX,
        doc="members a group may have (KIP-389, 2.2+; no effect before): GROUP_MAX_SIZE_REACHED beyond it",
    ),
)


def coordinator_config(broker_id: int, profile: Profile, settings: dict[str, Any]) -> GroupCoordinatorConfig:
    """The coordinator of broker `broker_id`, from its checked section."""
    return GroupCoordinatorConfig(
        broker_id,
        profile,
        offsets_topic_num_partitions=settings["offsets.topic.num.partitions"],
        offsets_commit_timeout_ms=settings["offsets.commit.timeout.ms"],
        offsets_retention_ms=settings["offsets.retention.minutes"] * 60000,
        offsets_retention_check_interval_ms=settings["offsets.retention.check.interval.ms"],
        group_initial_rebalance_delay_ms=settings["group.initial.rebalance.delay.ms"],
        group_min_session_timeout_ms=settings["group.min.session.timeout.ms"],
        group_max_session_timeout_ms=settings["group.max.session.timeout.ms"],
        group_max_size=settings["group.max.size"],
        skip_assignment_for_static_leader=profile.version >= (3, 2, 0),  # KIP-814
        load_ms=settings["offsets.load.ms"],
    )
