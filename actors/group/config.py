"""The group coordinator's configuration: its broker, the offsets topic, and Kafka's group settings
(`GroupCoordinatorConfig`, `OffsetConfig`) with their defaults."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from actors.addresses import broker_address, group_coordinator_address
from actors.core import Address
from actors.profiles import INT_MAX, Profile

__all__ = ["NEW_MEMBER_JOIN_TIMEOUT_MS", "GroupCoordinatorConfig", "MigrationPolicy"]


class MigrationPolicy(Enum):
    """`ConsumerGroupMigrationPolicy` (3.8+): which conversions of a group with members the
    coordinator makes; an empty group changes protocol whatever the policy."""

    DISABLED = "disabled"
    UPGRADE = "upgrade"
    DOWNGRADE = "downgrade"
    BIDIRECTIONAL = "bidirectional"

    @property
    def upgrade_enabled(self) -> bool:
        return self in (MigrationPolicy.UPGRADE, MigrationPolicy.BIDIRECTIONAL)

    @property
    def downgrade_enabled(self) -> bool:
        return self in (MigrationPolicy.DOWNGRADE, MigrationPolicy.BIDIRECTIONAL)

NEW_MEMBER_JOIN_TIMEOUT_MS = 300000
"""`GroupCoordinator.NewMemberJoinTimeoutMs`: a new member's parked JoinGroup expires after this."""


@dataclass(frozen=True, slots=True)
class GroupCoordinatorConfig:
    broker_id: int
    profile: Profile = field(default_factory=lambda: Profile.for_version("3.9"))
    offsets_topic_num_partitions: int = 50
    offsets_commit_timeout_ms: int = 5000
    offsets_retention_ms: int = 10080 * 60000
    """`offsets.retention.minutes`, in ms."""
    offsets_retention_check_interval_ms: int = 600000
    group_initial_rebalance_delay_ms: int = 3000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_max_size: int = INT_MAX
    """`group.max.size` (KIP-389, 2.2+; no limit before)."""
    skip_assignment_for_static_leader: bool = True
    """KIP-814 (JoinGroup v9, 3.2.0): a static leader that replaced itself in Stable is told it
    leads, with `skip_assignment`; before, it is told the old leader id."""
    rebalance_protocols: tuple[str, ...] = ("classic",)
    """`group.coordinator.rebalance.protocols`: without "consumer", ConsumerGroupHeartbeat is
    answered UNSUPPORTED_VERSION."""
    consumer_heartbeat_interval_ms: int = 5000
    """`group.consumer.heartbeat.interval.ms`, told to every consumer-protocol member."""
    consumer_session_timeout_ms: int = 45000
    """`group.consumer.session.timeout.ms`, from a member's last successful heartbeat."""
    consumer_assignors: tuple[str, ...] = ("uniform", "range")
    """`group.consumer.assignors`; the first is the default."""
    consumer_migration_policy: MigrationPolicy = MigrationPolicy.DISABLED
    """`group.consumer.migration.policy` (3.8+; 3.8 and 3.9 default to disabled, 4.0 to
    bidirectional)."""
    topic_partitions: tuple[tuple[str, int], ...] = ()
    """The cluster's topics and their partition counts: the metadata image the consumer
    protocol's assignors read (topics are fixed for a run, so it never changes)."""
    load_ms: int = 0
    """`offsets.load.ms` (the simulator's key): how long loading a partition takes. Kafka's load
    lasts as long as reading the partition's log; the model loads at once (0) unless told, and
    meanwhile its groups' requests get COORDINATOR_LOAD_IN_PROGRESS."""

    @property
    def address(self) -> Address:
        return group_coordinator_address(self.broker_id)

    @property
    def broker(self) -> Address:
        """The replica manager on the same node: the coordinator appends through it."""
        return broker_address(self.broker_id)

    @classmethod
    def for_profile(cls, broker_id: int, profile: Profile, **settings: object) -> GroupCoordinatorConfig:
        """Defaults from the version profile, then explicit settings."""
        defaults = {
            "offsets_retention_ms": profile.defaults["offsets.retention.minutes"] * 60000,
            "group_initial_rebalance_delay_ms": profile.defaults["group.initial.rebalance.delay.ms"],
            "group_max_session_timeout_ms": profile.defaults["group.max.session.timeout.ms"],
            "consumer_migration_policy": MigrationPolicy(profile.defaults["group.consumer.migration.policy"]),
            # KIP-814 came with 3.2.0; the profile has no flag for it.
            "skip_assignment_for_static_leader": profile.version >= (3, 2, 0),
        }
        return cls(broker_id, profile, **{**defaults, **settings})  # type: ignore[arg-type]
