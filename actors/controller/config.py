"""The controller's settings: the broker-side configuration its candidate, controller and
shutdown read (`KafkaConfig`'s controller, ZooKeeper and controlled-shutdown keys)."""

from __future__ import annotations

from dataclasses import dataclass, field

from actors.core import Address

__all__ = ["ControllerConfig", "ControllerSettings"]


@dataclass(frozen=True, slots=True)
class ControllerSettings:
    unclean_leader_election_enable: bool = False
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_ms: int = 300_000
    leader_imbalance_per_broker_percentage: int = 10
    alter_partition: bool = True
    """2.7+: ISR changes arrive as AlterPartition; before, as ZooKeeper notifications."""
    epoch_checked_writes: bool = True
    """2.1+ (KAFKA-6082): each write is a multi after a check of the controller epoch znode."""
    broker_epochs: bool = True
    """2.2+ (KIP-380): requests to brokers carry their broker epochs, and ControlledShutdown's
    broker epoch is checked."""
    ineligible_replicas: bool = True
    """3.3+ (KIP-841): an AlterPartition whose ISR names a broker that is not live or is
    shutting down is refused with INELIGIBLE_REPLICA."""


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    broker_id: int
    session_timeout_ms: int = 18000
    settings: ControllerSettings = field(default_factory=ControllerSettings)
    replica_manager: Address | None = None
    """The broker actor on this node, told its broker epoch; None in tests of the election alone."""
    controlled_shutdown_enable: bool = True
    controlled_shutdown_max_retries: int = 3
    controlled_shutdown_retry_backoff_ms: int = 5000
    request_timeout_ms: int = 30000
    """How long the broker waits for the controller's answer to ControlledShutdown."""
