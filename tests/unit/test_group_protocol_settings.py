"""KIP-848's settings: the consumer's `group.protocol`, the coordinator's
`group.coordinator.rebalance.protocols` and `group.consumer.*` keys, the 4.0 and 4.1 profiles,
and the one-line refusals of what Kafka refuses or the simulator does not model yet."""

from __future__ import annotations

import pytest

from actors.profiles import Profile
from sim.cluster.scenario import ScenarioError, parse_scenario

BASE = """
[kafka]
version = "{version}"
[cluster]
brokers = 1
[broker]
{broker}
[[topics]]
name = "T"
[[consumers]]
topics = ["T"]
{consumer}
[[producers]]
topic = "T"
"""


def _parse(version: str = "3.9", broker: str = "", consumer: str = ""):  # noqa: ANN202
    return parse_scenario(BASE.format(version=version, broker=broker, consumer=consumer), "s.toml")


def _error(version: str = "3.9", broker: str = "", consumer: str = "") -> str:
    with pytest.raises(ScenarioError) as caught:
        _parse(version, broker, consumer)
    return str(caught.value)


@pytest.mark.parametrize(
    ("version", "protocols", "linger"),
    [("3.9", ["classic"], 0), ("4.0", ["classic", "consumer"], 5), ("4.1", ["classic", "consumer"], 5)],
)
def test_the_4x_profiles_turn_the_consumer_protocol_on_in_brokers(version: str, protocols: list[str], linger: int) -> None:
    """4.0 enables the consumer protocol on brokers by default (KIP-848 GA) and raises the
    producer's `linger.ms` to 5 (KIP-1030); the consumer's defaults stay classic."""
    scenario = _parse(version)
    assert scenario.get("broker", "group.coordinator.rebalance.protocols") == protocols
    assert scenario.get("broker", "group.consumer.heartbeat.interval.ms") == 5000
    assert scenario.get("broker", "group.consumer.session.timeout.ms") == 45000
    assert scenario.get("broker", "group.consumer.assignors") == ["uniform", "range"]
    assert scenario.producers[0]["linger.ms"] == linger
    consumer = scenario.consumers[0]
    assert consumer["group.protocol"] == "classic"
    assert (consumer["session.timeout.ms"], consumer["heartbeat.interval.ms"]) == (45000, 3000)
    assert consumer["partition.assignment.strategy"] == ["range", "cooperative-sticky"]


def test_the_profiles_flags_by_version() -> None:
    flags = [
        (p.consumer_group_protocol, p.reject_classic_settings_under_consumer_protocol)
        for p in map(Profile.for_version, ("3.6.2", "3.7", "3.9", "4.0", "4.1.1"))
    ]
    assert flags == [(False, False), (True, False), (True, False), (True, True), (True, True)]


@pytest.mark.parametrize(
    ("version", "broker", "consumer", "expected"),
    [
        (
            "4.0",
            "",
            'session.timeout.ms = 45000\n"partition.assignment.strategy" = "range"',
            "s.toml: [[consumers]] #1: partition.assignment.strategy, session.timeout.ms cannot be set "
            "when group.protocol=CONSUMER (Kafka 4.0)",
        ),
        (
            "4.1",
            "",
            '"heartbeat.interval.ms" = 3000',
            "s.toml: [[consumers]] #1: heartbeat.interval.ms cannot be set when group.protocol=CONSUMER (Kafka 4.1)",
        ),
        (
            "3.6",
            "",
            "",
            "s.toml: [[consumers]] #1: group.protocol: 'consumer' needs Kafka 3.7 or later (KIP-848; the version is 3.6)",
        ),
        (
            "3.9",
            "",
            "session.timeout.ms = 45000",  # 3.7 to 3.9 ignore it: the brokers' protocols decide
            "s.toml: [[consumers]] #1: group.protocol: 'consumer', but the brokers' "
            "group.coordinator.rebalance.protocols ['classic'] lack it: Kafka answers "
            "ConsumerGroupHeartbeat UNSUPPORTED_VERSION, fatal to the consumer",
        ),
        (
            "4.0",
            '"group.coordinator.rebalance.protocols" = "classic"',
            "",
            "s.toml: [[consumers]] #1: group.protocol: 'consumer', but the brokers' "
            "group.coordinator.rebalance.protocols ['classic'] lack it: Kafka answers "
            "ConsumerGroupHeartbeat UNSUPPORTED_VERSION, fatal to the consumer",
        ),
    ],
)
def test_a_consumer_protocol_consumer_is_one_line(version: str, broker: str, consumer: str, expected: str) -> None:
    assert _error(version, broker, 'group.protocol = "consumer"\n' + consumer) == expected


@pytest.mark.parametrize(
    ("version", "broker", "expected"),
    [
        (
            "3.6",
            '"group.coordinator.rebalance.protocols" = "classic,consumer"',
            "s.toml: [broker]: group.coordinator.rebalance.protocols: 'consumer' needs Kafka 3.7 or later "
            "(KIP-848; the version is 3.6)",
        ),
        (
            "4.0",
            '"group.coordinator.rebalance.protocols" = "consumer"',
            "s.toml: [broker]: group.coordinator.rebalance.protocols: ['consumer'] lacks 'classic': Kafka "
            "refuses to disable the classic protocol",
        ),
        (
            "4.0",
            '"group.coordinator.rebalance.protocols" = "classic,share"',
            "s.toml: [broker]: group.coordinator.rebalance.protocols: 'share' is not one of classic, consumer",
        ),
        (
            "4.0",
            '"group.consumer.assignors" = "uniform,sticky"',
            "s.toml: [broker]: group.consumer.assignors: 'sticky' is not one of uniform, range",
        ),
        (
            "4.0",
            '"group.consumer.assignors" = ""',
            "s.toml: [broker]: group.consumer.assignors: names no assignor (valid: uniform, range)",
        ),
        (
            "4.0",
            '"group.consumer.heartbeat.interval.ms" = 4999',
            "s.toml: [broker]: group.consumer.heartbeat.interval.ms: must be at least 5000, got 4999",
        ),
        (
            "4.0",
            '"group.consumer.heartbeat.interval.ms" = 15001',
            "s.toml: [broker]: group.consumer.heartbeat.interval.ms: must be at most 15000, got 15001",
        ),
        (
            "4.0",
            '"group.consumer.session.timeout.ms" = 44999',
            "s.toml: [broker]: group.consumer.session.timeout.ms: must be at least 45000, got 44999",
        ),
        (
            "4.0",
            '"group.consumer.session.timeout.ms" = 60001',
            "s.toml: [broker]: group.consumer.session.timeout.ms: must be at most 60000, got 60001",
        ),
    ],
)
def test_the_coordinators_keys_are_checked_as_kafka_checks_them(version: str, broker: str, expected: str) -> None:
    assert _error(version, broker) == expected


def test_classic_consumers_on_4x_may_set_the_classic_keys() -> None:
    scenario = _parse("4.1", consumer='group.protocol = "classic"\nsession.timeout.ms = 30000')
    assert scenario.consumers[0]["session.timeout.ms"] == 30000


@pytest.mark.parametrize(
    ("version", "broker"),
    [("3.7", '"group.coordinator.rebalance.protocols" = "classic,consumer"'), ("3.9", '"group.coordinator.rebalance.protocols" = "classic,consumer"'), ("4.0", "")],
)
def test_a_consumer_protocol_consumer_runs_where_its_brokers_serve_it(version: str, broker: str) -> None:
    """3.7 to 3.9 serve the consumer protocol when the brokers' rebalance protocols name it (the
    simulated brokers stand in for the KRaft cluster Kafka needs then); 4.0 serves it by default."""
    scenario = _parse(version, broker, 'group.protocol = "consumer"\ngroup.remote.assignor = "range"')
    assert (scenario.consumers[0]["group.protocol"], scenario.consumers[0]["group.remote.assignor"]) == ("consumer", "range")
    assert "consumer" in scenario.get("broker", "group.coordinator.rebalance.protocols")
