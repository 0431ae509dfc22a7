"""The controller's settings (Kafka's ZooKeeper session, leader election and controlled
shutdown keys) and how a controller candidate's config is built from the scenario's `[broker]`
section."""

from __future__ import annotations

from typing import Any

from actors.controller.config import ControllerConfig, ControllerSettings
from actors.core import Address
from actors.profiles import Profile
from actors.settings import setting

__all__ = ["SETTINGS", "controller_config"]

SETTINGS = (
    setting("zookeeper.session.timeout.ms", int, None, low=1, profile_default="zookeeper.session.timeout.ms"),
    setting("unclean.leader.election.enable", bool, None, profile_default="unclean.leader.election.enable"),
    setting("auto.leader.rebalance.enable", bool, True),
    setting("leader.imbalance.check.interval.seconds", int, 300, low=1),
    setting("leader.imbalance.per.broker.percentage", int, 10, low=0, high=100),
    setting("controlled.shutdown.enable", bool, True, doc="a stopping broker first moves its leaderships"),
    setting("controlled.shutdown.max.retries", int, 3, low=1),
    setting("controlled.shutdown.retry.backoff.ms", int, 5000, low=0),
)


def controller_config(broker_id: int, profile: Profile, settings: dict[str, Any], replica_manager: Address) -> ControllerConfig:
    """The controller candidate of broker `broker_id`, from its checked section."""
    return ControllerConfig(
        broker_id,
        session_timeout_ms=settings["zookeeper.session.timeout.ms"],
        settings=ControllerSettings(
            unclean_leader_election_enable=settings["unclean.leader.election.enable"],
            auto_leader_rebalance_enable=settings["auto.leader.rebalance.enable"],
            leader_imbalance_check_interval_ms=settings["leader.imbalance.check.interval.seconds"] * 1000,
            leader_imbalance_per_broker_percentage=settings["leader.imbalance.per.broker.percentage"],
            alter_partition=profile.alter_partition,
            epoch_checked_writes=profile.controller_epoch_checked_writes,
            broker_epochs=profile.broker_epochs,
            ineligible_replicas=profile.ineligible_replicas,
        ),
        replica_manager=replica_manager,
        controlled_shutdown_enable=settings["controlled.shutdown.enable"],
        controlled_shutdown_max_retries=settings["controlled.shutdown.max.retries"],
        controlled_shutdown_retry_backoff_ms=settings["controlled.shutdown.retry.backoff.ms"],
    )
