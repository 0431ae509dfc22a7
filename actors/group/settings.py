"""The group coordinator's settings (Kafka's `offsets.*` and `group.*` broker keys) and how a
coordinator's config is built from the scenario's `[broker]` section."""

from __future__ import annotations

from typing import Any

from actors.group.config import GroupCoordinatorConfig, MigrationPolicy
from actors.profiles import INT_MAX, Profile
from actors.settings import SettingError, setting, suggest

__all__ = ["CONSUMER_ASSIGNORS", "REBALANCE_PROTOCOLS", "SETTINGS", "check", "coordinator_config", "rebalance_protocols"]

# The consumer protocol's bounds (`group.consumer.min/max.*`, KIP-848): Kafka refuses a
# heartbeat interval or session timeout outside them (`GroupCoordinatorConfig`).
CONSUMER_MIN_HEARTBEAT_INTERVAL_MS = 5000
CONSUMER_MAX_HEARTBEAT_INTERVAL_MS = 15000
CONSUMER_MIN_SESSION_TIMEOUT_MS = 45000
CONSUMER_MAX_SESSION_TIMEOUT_MS = 60000

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
    setting(
        "group.coordinator.rebalance.protocols",
        list[str],
        None,
        profile_default="group.coordinator.rebalance.protocols",
        doc="classic, consumer: the group protocols the coordinator serves (KIP-848; consumer needs 3.7+)",
    ),
    setting(
        "group.consumer.heartbeat.interval.ms",
        int,
        5000,
        low=CONSUMER_MIN_HEARTBEAT_INTERVAL_MS,
        high=CONSUMER_MAX_HEARTBEAT_INTERVAL_MS,
        doc="the heartbeat interval the consumer protocol's coordinator gives its members",
    ),
    setting(
        "group.consumer.session.timeout.ms",
        int,
        45000,
        low=CONSUMER_MIN_SESSION_TIMEOUT_MS,
        high=CONSUMER_MAX_SESSION_TIMEOUT_MS,
        doc="how long the consumer protocol's coordinator keeps a member without a heartbeat",
    ),
    setting(
        "group.consumer.migration.policy",
        str,
        None,
        choices=("disabled", "upgrade", "downgrade", "bidirectional"),
        profile_default="group.consumer.migration.policy",
        doc="KIP-848 (3.8+): which conversions of a group with members between the classic and the consumer protocol the coordinator makes",
    ),
    setting(
        "group.consumer.assignors",
        list[str],
        ["uniform", "range"],
        doc="the consumer protocol's server-side assignors, the first one the default",
    ),
)

REBALANCE_PROTOCOLS = ("classic", "consumer")
CONSUMER_ASSIGNORS = ("uniform", "range")


def check(broker: dict[str, Any], profile: Profile) -> None:
    """Kafka's checks of the group coordinator's keys (`KafkaConfig`, `GroupCoordinatorConfig`,
    the `GroupMetadataManager` builder); a `SettingError` names the key and the value. The
    rebalance protocols are read with the version's default where the scenario leaves them out."""
    protocols = rebalance_protocols(broker, profile)
    key = "group.coordinator.rebalance.protocols"
    for name in protocols:
        if name not in REBALANCE_PROTOCOLS:
            valid = ", ".join(REBALANCE_PROTOCOLS)
            msg = f"{key}: {name!r} is not one of {valid}{suggest(name, REBALANCE_PROTOCOLS)}"
            raise SettingError(msg)
    if "classic" not in protocols:
        msg = f"{key}: {protocols!r} lacks 'classic': Kafka refuses to disable the classic protocol"
        raise SettingError(msg)
    if "consumer" in protocols and not profile.consumer_group_protocol:
        msg = f"{key}: 'consumer' needs Kafka 3.7 or later (KIP-848; the version is {profile.name})"
        raise SettingError(msg)
    # 3.7 to 3.9 serve `consumer` only in a KRaft cluster (`KafkaConfig`). The simulator's
    # brokers stand in for one here, as they do for 4.x, which has no ZooKeeper mode at all.
    # Before 3.8 there is no migration, which is what `disabled` says: a resolved scenario that
    # writes that value back out stays valid for every version.
    policy = broker.get("group.consumer.migration.policy")
    if policy not in (None, "disabled") and not profile.classic_members_in_consumer_groups:
        msg = f"group.consumer.migration.policy: {policy!r} needs Kafka 3.8 or later (KIP-848's online migration; the version is {profile.name})"
        raise SettingError(msg)
    assignors = broker["group.consumer.assignors"]
    if not assignors:
        msg = f"group.consumer.assignors: names no assignor (valid: {', '.join(CONSUMER_ASSIGNORS)})"
        raise SettingError(msg)
    for name in assignors:
        if name not in CONSUMER_ASSIGNORS:
            valid = ", ".join(CONSUMER_ASSIGNORS)
            msg = f"group.consumer.assignors: {name!r} is not one of {valid}{suggest(name, CONSUMER_ASSIGNORS)}"
            raise SettingError(msg)


def rebalance_protocols(broker: dict[str, Any], profile: Profile) -> list[str]:
    """The brokers' `group.coordinator.rebalance.protocols`, or the version's default."""
    given = broker["group.coordinator.rebalance.protocols"]
    return list(profile.defaults["group.coordinator.rebalance.protocols"] if given is None else given)


def coordinator_config(
    broker_id: int, profile: Profile, settings: dict[str, Any], topics: tuple[dict[str, Any], ...] = ()
) -> GroupCoordinatorConfig:
    """The coordinator of broker `broker_id`, from its checked section and the scenario's topics."""
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
        rebalance_protocols=tuple(rebalance_protocols(settings, profile)),
        consumer_heartbeat_interval_ms=settings["group.consumer.heartbeat.interval.ms"],
        consumer_session_timeout_ms=settings["group.consumer.session.timeout.ms"],
        consumer_assignors=tuple(settings["group.consumer.assignors"]),
        consumer_migration_policy=MigrationPolicy(settings["group.consumer.migration.policy"]),
        topic_partitions=tuple(sorted((t["name"], t["partitions"]) for t in topics)),
    )
