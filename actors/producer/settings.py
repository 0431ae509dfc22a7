"""The producer's settings (Kafka's `ProducerConfig` keys, and the records the simulated
application generates), Kafka's checks of how they combine, and how a producer's config is
built from its scenario entry."""

from __future__ import annotations

from typing import Any

from actors.producer.config import INT_MAX, ProducerConfig
from actors.producer.partitioner import Partitioning
from actors.profiles import Profile
from actors.settings import ACKS, SettingError, setting
from protocols.replication import RECORD_BATCH_OVERHEAD, RECORD_OVERHEAD

__all__ = ["SETTINGS", "producer_config", "resolve"]

DELIVERY_TIMEOUT_DEFAULT_MS = 120000
MAX_IN_FLIGHT_FOR_IDEMPOTENCE = 5

SETTINGS = (
    setting("topic", str, required=True),
    setting("acks", "acks", None, profile_default="acks", doc="0, 1, all or -1"),
    setting("request.timeout.ms", int, 30000, low=1),
    setting(
        "linger.ms",
        int,
        None,
        low=0,
        profile_default="linger.ms",
        doc="how long a batch waits for more records (0; 5 from 4.0, KIP-1030)",
    ),
    setting("batch.size", int, 16384, low=0, doc="bytes; a batch always takes its first record"),
    setting("max.request.size", int, 1048576, low=1),
    setting("max.in.flight.requests.per.connection", int, 5, low=1),
    setting("retries", int, None, low=0, high=INT_MAX, profile_default="retries"),
    setting("retry.backoff.ms", int, 100, low=0, doc="wait before a retry, or before asking again for a missing leader"),
    setting(
        "retry.backoff.max.ms",
        int,
        1000,
        low=0,
        doc="3.7+ (KIP-580): the cap of a retried batch's exponential back-off; ignored before 3.7",
    ),
    setting(
        "delivery.timeout.ms",
        int,
        None,
        low=1,
        doc="2.1+ (KIP-91); unset: 120000, raised to linger.ms + request.timeout.ms if below",
    ),
    setting("enable.idempotence", bool, None, doc="unset: the version's default, dropped if the settings conflict"),
    setting("partitioner", str, "default", choices=("default", "round_robin")),
    setting("metadata.max.age.ms", int, 300000, low=1, doc="refresh the leaders at least this often"),
    setting("records", int, 100, low=0, doc="records generated in all"),
    setting("interval.ms", int, 100, low=1, doc="a tick every interval.ms"),
    setting("records.per.interval", int, 1, low=1, high=1_000_000, doc="records generated at each tick"),
    setting("start.ms", int, 0, low=0),
    setting("burst.ms", int, 0, low=0, doc="with pause.ms: generate for burst.ms, then pause"),
    setting("pause.ms", int, 0, low=0),
    setting("keys", int, 0, low=0, doc="distinct keys (record n has key-{n % keys}); 0: no keys"),
    setting("record.bytes", int, 100, low=0, doc="a record's key and value size"),
)


def resolve(producer: dict[str, Any], profile: Profile) -> None:
    """Kafka's producer checks that involve several settings, and whether each was set
    (`postProcessAndValidateIdempotenceConfigs`, `configureDeliveryTimeout`): a conflict with
    an explicit `enable.idempotence = true` or `delivery.timeout.ms` is a `SettingError`; a
    default that conflicts is adjusted, as Kafka does."""

    def value(key: str) -> Any:
        given = producer[key]
        if given is not None:
            return given
        default = profile.defaults[key]
        return ACKS[default] if key == "acks" else default

    record = producer["record.bytes"] + RECORD_BATCH_OVERHEAD + RECORD_OVERHEAD
    if record > producer["max.request.size"]:
        msg = (
            f"record.bytes ({producer['record.bytes']}) makes a record of {record} bytes in its "
            f"batch, above max.request.size ({producer['max.request.size']}): Kafka refuses every record "
            "(RecordTooLargeException)"
        )
        raise SettingError(msg)
    linger, request_timeout = value("linger.ms"), producer["request.timeout.ms"]
    delivery = producer["delivery.timeout.ms"]
    if delivery is not None and delivery < linger + request_timeout:
        msg = (
            f"delivery.timeout.ms ({delivery}) must be at least linger.ms + "
            f"request.timeout.ms ({linger} + {request_timeout})"
        )
        raise SettingError(msg)
    if delivery is None:
        producer["delivery.timeout.ms"] = max(DELIVERY_TIMEOUT_DEFAULT_MS, linger + request_timeout)
    explicit = producer["enable.idempotence"] is not None
    idempotence = value("enable.idempotence")
    conflicts = []
    if value("acks") != -1:
        conflicts.append(f"acks = all (got {value('acks')})")
    if value("retries") == 0:
        conflicts.append("retries > 0 (got 0)")
    if producer["max.in.flight.requests.per.connection"] > MAX_IN_FLIGHT_FOR_IDEMPOTENCE:
        got = producer["max.in.flight.requests.per.connection"]
        conflicts.append(f"max.in.flight.requests.per.connection <= 5 (got {got})")
    if explicit and idempotence and profile.version < (0, 11, 0):
        msg = f"enable.idempotence = true needs Kafka 0.11 or later (the version is {profile.name})"
        raise SettingError(msg)
    if explicit and idempotence and conflicts:
        msg = f"enable.idempotence = true requires {conflicts[0]}"
        raise SettingError(msg)
    producer["enable.idempotence"] = bool(idempotence) and not conflicts


def producer_config(
    name: str,
    p: dict[str, Any],
    profile: Profile,
    *,
    partitions: int,
    bootstrap: tuple[int, ...],
    leaders: tuple[int, ...],
) -> ProducerConfig:
    """A producer's config from its resolved entry; the keyword arguments are the cluster's."""
    version = profile.version
    return ProducerConfig(
        name=name,
        topic=p["topic"],
        partitions=partitions,
        bootstrap=bootstrap,
        leaders=leaders,
        acks=p["acks"],
        request_timeout_ms=p["request.timeout.ms"],
        linger_ms=p["linger.ms"],
        batch_size=p["batch.size"],
        max_request_size=p["max.request.size"],
        max_in_flight=p["max.in.flight.requests.per.connection"],
        retries=p["retries"],
        retry_backoff_ms=p["retry.backoff.ms"],
        retry_backoff_max_ms=p["retry.backoff.max.ms"],
        exponential_backoff=profile.exponential_retry_backoff,
        delivery_timeout_ms=p["delivery.timeout.ms"] if version >= (2, 1, 0) else None,
        idempotence=p["enable.idempotence"],
        epoch_bump=profile.accept_unknown_producer,
        partitioning=(
            Partitioning.ROUND_ROBIN if p["partitioner"] == "round_robin" else Partitioning.default_for(version)
        ),
        metadata_max_age_ms=p["metadata.max.age.ms"],
        records=p["records"],
        interval_ms=p["interval.ms"],
        records_per_interval=p["records.per.interval"],
        start_ms=p["start.ms"],
        burst_ms=p["burst.ms"],
        pause_ms=p["pause.ms"],
        keys=p["keys"],
        record_bytes=p["record.bytes"],
    )
