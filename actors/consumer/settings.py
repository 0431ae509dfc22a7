"""The consumer's settings (Kafka's `ConsumerConfig` keys, and how the simulated application
polls, processes and commits), Kafka's client-side checks of them, and how a consumer process's
config is built from its scenario entry."""

from __future__ import annotations

from typing import Any

from actors.consumer.assignors import ASSIGNORS
from actors.consumer.config import AppCommit, ConsumerConfig, ProcessingMode
from actors.profiles import Profile
from actors.settings import SettingError, setting, suggest

__all__ = ["CLASSIC_ONLY", "SETTINGS", "check", "check_group_protocol", "consumer_config"]

CLASSIC_ONLY = ("partition.assignment.strategy", "heartbeat.interval.ms", "session.timeout.ms")
"""The settings `ConsumerConfig` refuses with `group.protocol=consumer` from 4.0, in its order."""

SETTINGS = (
    setting("group.id", str, "group-1"),
    setting("topics", list[str], None, required=True, doc="the topics it subscribes to"),
    setting("count", int, 1, low=1, high=1000, doc="identical consumer processes, each its own node"),
    setting(
        "group.protocol",
        str,
        "classic",
        choices=("classic", "consumer"),
        doc="the group protocol: classic (JoinGroup, SyncGroup) or consumer (KIP-848, 3.7+)",
    ),
    setting(
        "group.remote.assignor",
        str,
        None,
        doc="with group.protocol = consumer: the server assignor to ask for (uniform, range); "
        "unset: the coordinator's first of group.consumer.assignors",
    ),
    setting(
        "client.id",
        str,
        None,
        doc="the member id's prefix (`client.id-<uuid>`, KIP-394), so it sets the order the "
        "leader's assignor sees the members in; unset: Kafka's default `consumer-<group.id>-1`, "
        "since each process is its own JVM",
    ),
    setting("group.instance.id", str, None, doc="static membership (2.3+); with count > 1, suffixed -1, -2, ..."),
    setting("session.timeout.ms", int, None, low=1, profile_default="session.timeout.ms"),
    setting("heartbeat.interval.ms", int, None, low=1, profile_default="heartbeat.interval.ms"),
    setting("max.poll.interval.ms", int, 300000, low=1, doc="also the rebalance timeout sent in JoinGroup"),
    setting("max.poll.records", int, 500, low=1),
    setting("fetch.min.bytes", int, 1, low=0),
    setting("fetch.max.wait.ms", int, 500, low=0),
    setting("max.partition.fetch.bytes", int, 1048576, low=1),
    setting("enable.auto.commit", bool, True),
    setting("auto.commit.interval.ms", int, 5000, low=1),
    setting("auto.offset.reset", str, "latest", choices=("latest", "earliest", "none")),
    setting(
        "partition.assignment.strategy",
        list[str],
        None,
        profile_default="partition.assignment.strategy",
        doc="assignor names, most preferred first: range, roundrobin, sticky, cooperative-sticky",
    ),
    setting("request.timeout.ms", int, 30000, low=1),
    setting("retry.backoff.ms", int, 100, low=0),
    setting(
        "retry.backoff.max.ms",
        int,
        1000,
        low=0,
        doc="3.7+ (KIP-580): the cap of the exponential retry back-off; ignored before 3.7",
    ),
    setting("default.api.timeout.ms", int, 60000, low=1, doc="how long commitSync retries"),
    setting(
        "commit",
        str,
        "none",
        choices=("none", "sync", "async", "on_revoke", "processed"),
        doc="what the application commits besides auto-commit: commitSync or commitAsync after "
        "each poll's records, commitSync of the revoked partitions in onPartitionsRevoked, or "
        "the offsets after the records processed (commitAsync before each poll; commitSync in "
        "onPartitionsRevoked once the workers are done with the revoked partitions)",
    ),
    setting("poll.timeout.ms", int, 100, low=0, doc="the Duration the application passes to poll()"),
    setting("process.record.ms", int, 0, low=0, doc="the application's processing time per record"),
    setting("start.ms", int, 0, low=0),
    setting(
        "poll.every.ms",
        int,
        0,
        low=0,
        doc="the application calls poll() at start.ms + k * this, at fixed instants, waiting "
        "for the next one after a poll and its processing; 0: it polls again as soon as it is done",
    ),
    setting(
        "processing",
        str,
        "poll_thread",
        choices=("poll_thread", "workers"),
        doc="who processes what poll() returned: the poll thread, or a pool of worker threads "
        "fed by a bounded hand-off queue while the poll thread polls on",
    ),
    setting("worker.threads", int, 4, low=1, high=1000, doc="the worker pool's size (processing = workers)"),
    setting(
        "worker.queue.records",
        int,
        500,
        low=1,
        doc="records waiting in the hand-off queue at which the application pauses their partitions",
    ),
)


def check(consumer: dict[str, Any], profile: Profile) -> None:
    """Kafka's client-side checks of a consumer's settings (`ConsumerConfig`, the `Heartbeat`
    and `ConsumerCoordinator` constructors); a `SettingError` names the first one that fails."""
    if consumer["heartbeat.interval.ms"] >= consumer["session.timeout.ms"]:
        msg = (
            f"heartbeat.interval.ms ({consumer['heartbeat.interval.ms']}) must be lower "
            f"than session.timeout.ms ({consumer['session.timeout.ms']})"
        )
        raise SettingError(msg)
    _check_strategy(consumer["partition.assignment.strategy"])
    if consumer["group.instance.id"] is not None and not profile.static_membership:
        msg = f"group.instance.id needs Kafka 2.3 or later (the version is {profile.name})"
        raise SettingError(msg)


def check_group_protocol(consumer: dict[str, Any], profile: Profile, protocols: list[str], assignors: list[str]) -> None:
    """`group.protocol`, checked before the version's defaults are filled in (an unset key is
    None), against the brokers' rebalance `protocols` and server `assignors`."""
    remote = consumer["group.remote.assignor"]
    if consumer["group.protocol"] != "consumer":
        if remote is not None and remote.strip() and profile.reject_remote_assignor_under_classic_protocol:
            # `ConsumerConfig.checkGroupRemoteAssignor` (KAFKA-15773).
            msg = f"group.remote.assignor ({remote!r}) cannot be set when group.protocol=CLASSIC (Kafka {profile.name})"
            raise SettingError(msg)
        return
    if not profile.consumer_group_protocol:
        msg = f"group.protocol: 'consumer' needs Kafka 3.7 or later (KIP-848; the version is {profile.name})"
        raise SettingError(msg)
    given = [key for key in CLASSIC_ONLY if consumer[key] is not None]
    if given and profile.reject_classic_settings_under_consumer_protocol:
        # ConsumerConfig's ConfigException: every such key set, in one sentence.
        msg = f"{', '.join(given)} cannot be set when group.protocol=CONSUMER (Kafka {profile.name})"
        raise SettingError(msg)
    if "consumer" not in protocols:
        msg = (
            f"group.protocol: 'consumer', but the brokers' group.coordinator.rebalance.protocols "
            f"{protocols!r} lack it: Kafka answers ConsumerGroupHeartbeat UNSUPPORTED_VERSION, "
            "fatal to the consumer"
        )
        raise SettingError(msg)
    if remote is not None and remote not in assignors:
        # The coordinator would answer the join UNSUPPORTED_ASSIGNOR, which the consumer
        # throws from poll(): a consumer that can never join is a mistake in the scenario.
        msg = (
            f"group.remote.assignor: {remote!r} is not one of the brokers' group.consumer.assignors "
            f"({', '.join(assignors)}): Kafka answers its ConsumerGroupHeartbeat UNSUPPORTED_ASSIGNOR, "
            f"fatal to the consumer{suggest(remote, assignors)}"
        )
        raise SettingError(msg)


def _check_strategy(strategy: list[str]) -> None:
    """`partition.assignment.strategy`: at least one assignor (the `ConsumerCoordinator`
    refuses none), each one the simulator models."""
    valid = ", ".join(ASSIGNORS)
    if not strategy:
        msg = f"partition.assignment.strategy: names no assignor (valid: {valid})"
        raise SettingError(msg)
    for name in strategy:
        if name not in ASSIGNORS:
            msg = f"partition.assignment.strategy: {name!r} is not one of {valid}{suggest(name, ASSIGNORS)}"
            raise SettingError(msg)


def consumer_config(
    name: str,
    entry: dict[str, Any],
    profile: Profile,
    *,
    group_instance_id: str | None,
    partitions: tuple[tuple[str, int], ...],
    bootstrap: tuple[int, ...],
    offsets_partitions: int,
) -> ConsumerConfig:
    """One consumer process's config from its checked entry; the keyword arguments are the
    cluster's. Each process is its own JVM, so each has Kafka's default client id
    `consumer-<group>-1`."""
    return ConsumerConfig(
        name=name,
        group_id=entry["group.id"],
        topics=tuple(entry["topics"]),
        partitions=partitions,
        bootstrap=bootstrap,
        offsets_partitions=offsets_partitions,
        version=profile.version,
        group_instance_id=group_instance_id,
        group_protocol=entry["group.protocol"],
        group_remote_assignor=entry["group.remote.assignor"],
        client_id=entry["client.id"] or f"consumer-{entry['group.id']}-1",
        session_timeout_ms=entry["session.timeout.ms"],
        heartbeat_interval_ms=entry["heartbeat.interval.ms"],
        max_poll_interval_ms=entry["max.poll.interval.ms"],
        max_poll_records=entry["max.poll.records"],
        fetch_min_bytes=entry["fetch.min.bytes"],
        fetch_max_wait_ms=entry["fetch.max.wait.ms"],
        max_partition_fetch_bytes=entry["max.partition.fetch.bytes"],
        enable_auto_commit=entry["enable.auto.commit"],
        auto_commit_interval_ms=entry["auto.commit.interval.ms"],
        auto_offset_reset=entry["auto.offset.reset"],
        assignment_strategy=tuple(entry["partition.assignment.strategy"]),
        request_timeout_ms=entry["request.timeout.ms"],
        retry_backoff_ms=entry["retry.backoff.ms"],
        retry_backoff_max_ms=entry["retry.backoff.max.ms"],
        exponential_retry_backoff=profile.exponential_retry_backoff,
        default_api_timeout_ms=entry["default.api.timeout.ms"],
        app_commit=AppCommit(entry["commit"]),
        poll_timeout_ms=entry["poll.timeout.ms"],
        process_record_ms=entry["process.record.ms"],
        start_ms=entry["start.ms"],
        poll_every_ms=entry["poll.every.ms"],
        processing=ProcessingMode(entry["processing"]),
        worker_threads=entry["worker.threads"],
        worker_queue_records=entry["worker.queue.records"],
    )
