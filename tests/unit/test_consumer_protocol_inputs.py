"""The consumer protocol's inputs that Kafka refuses, or that the simulator does not model yet:
each is one line naming the file, the entry, the key and the value."""

from __future__ import annotations

import pytest

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
{first}
[[consumers]]
topics = ["T"]
{second}
"""


def _parse(first: str = "", second: str = "", *, version: str = "4.0", broker: str = ""):  # noqa: ANN202
    return parse_scenario(BASE.format(version=version, broker=broker, first=first, second=second), "s.toml")


def _error(first: str = "", second: str = "", *, version: str = "4.0", broker: str = "", overrides: tuple[str, ...] = ()) -> str:
    text = BASE.format(version=version, broker=broker, first=first, second=second)
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, "s.toml", overrides)
    return str(caught.value)


CONSUMER = 'group.protocol = "consumer"'


def test_a_remote_assignor_the_brokers_lack_is_refused_up_front() -> None:
    """The coordinator would answer UNSUPPORTED_ASSIGNOR, fatal to the consumer: refused when
    the scenario is loaded, naming the brokers' assignors."""
    assert _error(second=f'{CONSUMER}\ngroup.remote.assignor = "sticky"') == (
        "s.toml: [[consumers]] #2: group.remote.assignor: 'sticky' is not one of the brokers' "
        "group.consumer.assignors (uniform, range): Kafka answers its ConsumerGroupHeartbeat "
        "UNSUPPORTED_ASSIGNOR, fatal to the consumer"
    )
    narrowed = _error(first=f'{CONSUMER}\ngroup.remote.assignor = "uniform"', second=CONSUMER, broker='"group.consumer.assignors" = ["range"]')
    assert narrowed.startswith("s.toml: [[consumers]] #1: group.remote.assignor: 'uniform' is not one of the brokers' group.consumer.assignors (range)")
    overridden = _error(first=CONSUMER, second=CONSUMER, overrides=("consumers.2.group.remote.assignor=unifrom",))
    assert overridden.startswith("--set 'consumers.2.group.remote.assignor=unifrom': [[consumers]] #2: group.remote.assignor: 'unifrom'")
    assert overridden.endswith("fatal to the consumer (did you mean 'uniform'?)")
    scenario = _parse(f'{CONSUMER}\ngroup.remote.assignor = "range"', CONSUMER)
    assert scenario.consumers[0]["group.remote.assignor"] == "range"


@pytest.mark.parametrize(("version", "refused"), [("3.8", False), ("3.9", True), ("4.0", True)])
def test_a_remote_assignor_beside_the_classic_protocol_is_refused_from_3_9(version: str, refused: bool) -> None:
    """KAFKA-15773 (3.9): `ConsumerConfig` refuses `group.remote.assignor` with the classic
    protocol; 3.8's classic consumer ignores it."""
    consumer = 'group.remote.assignor = "range"'
    if refused:
        assert _error(consumer, version=version) == (
            f"s.toml: [[consumers]] #1: group.remote.assignor ('range') cannot be set when group.protocol=CLASSIC (Kafka {version})"
        )
    else:
        assert _parse(consumer, version=version).consumers[0]["group.remote.assignor"] == "range"


def test_one_group_of_both_protocols_needs_3_8() -> None:
    """A classic consumer and a consumer-protocol consumer of one group.id need classic members
    inside a consumer group (KIP-848's online migration, 3.8+): refused in one line for 3.7,
    run from 3.8; a static member of such a group is refused as not modelled."""
    broker = '"group.coordinator.rebalance.protocols" = ["classic", "consumer"]'
    expected = (
        "s.toml: [[consumers]] #2: group.protocol: 'classic', but [[consumers]] #1 of the same group.id "
        "'group-1' uses 'consumer': a group of both protocols needs Kafka 3.8 or later (KIP-848's online "
        "migration; the version is 3.7)"
    )
    assert _error(CONSUMER, "", version="3.7", broker=broker) == expected
    assert "[[consumers]] #2: group.protocol: 'consumer', but [[consumers]] #1" in _error("", CONSUMER, version="3.7", broker=broker)
    for version in ("3.8", "4.0"):
        mixed = _parse(CONSUMER, "", version=version, broker=broker)
        assert [c["group.protocol"] for c in mixed.consumers] == ["consumer", "classic"]
    assert _error(CONSUMER, 'group.instance.id = "i2"') == (
        "s.toml: [[consumers]] #2: group.instance.id: 'i2', in a group of both protocols ([[consumers]] #1 of the "
        "same group.id 'group-1' uses 'consumer'): static members of a migrating group are not modelled"
    )
    # Two groups, one of each protocol, are fine in every version.
    scenario = _parse(CONSUMER, 'group.id = "other"', version="3.7", broker=broker)
    assert [c["group.protocol"] for c in scenario.consumers] == ["consumer", "classic"]


def test_the_consumer_protocols_session_timeout_is_bounded() -> None:
    assert _error(CONSUMER, CONSUMER, broker='"group.consumer.session.timeout.ms" = 1000') == (
        "s.toml: [broker]: group.consumer.session.timeout.ms: must be at least 45000, got 1000"
    )


def test_the_migration_policy_before_3_8_is_only_disabled_and_a_resolved_scenario_round_trips() -> None:
    """Before 3.8 there is no online migration: `disabled` says so and is accepted (a resolved
    scenario writes every key back out, the policy's default included), any other value is one
    line naming the key and the version."""
    assert _error(broker='"group.consumer.migration.policy" = "upgrade"', version="3.7") == (
        "s.toml: [broker]: group.consumer.migration.policy: 'upgrade' needs Kafka 3.8 or later "
        "(KIP-848's online migration; the version is 3.7)"
    )
    for version in ("2.8", "3.7", "3.9", "4.0"):
        resolved = _parse(version=version).to_toml()
        assert parse_scenario(resolved, "s.toml").to_toml() == resolved
