"""List settings also take Kafka's comma-separated string, in a scenario file and in `--set`.

Kafka's properties write a list as `range, cooperative-sticky` (`ConfigDef`'s LIST type:
commas, whitespace around them ignored). A list of lists takes the form of
`kafka-topics --replica-assignment`: commas between the lists, colons inside one.
"""

from __future__ import annotations

import pytest

from actors.settings import is_list
from sim.cluster.harness import check_scenario
from sim.cluster.scenario import ScenarioError, parse_scenario
from sim.cluster.schema import ARRAYS, SECTIONS

AS_ARRAYS = """
[cluster]
brokers = 3
[broker]
"group.coordinator.rebalance.protocols" = ["classic"]
"group.consumer.assignors" = ["range", "uniform"]
[[topics]]
name = "T"
partitions = 2
"replication.factor" = 2
replicas = [[1, 2], [2, 3]]
[[consumers]]
topics = ["T"]
"partition.assignment.strategy" = ["range", "cooperative-sticky"]
[[faults]]
kind = "drop"
probability = 0.1
src = ["broker-1", "broker-2"]
dst = ["consumer-1"]
[[faults]]
kind = "partition"
isolate = ["broker-3"]
[[faults]]
kind = "partition"
between = [["broker-1", "broker-2"], ["broker-3"]]
[[faults]]
kind = "rolling_restart"
nodes = ["consumer-1"]
[[faults]]
kind = "admin"
operation = "delete_offsets"
group = "group-1"
topic = "T"
partitions = [0, 1]
"""

AS_STRINGS = {
    "broker.group.coordinator.rebalance.protocols": ('["classic"]', '"classic"'),
    "broker.group.consumer.assignors": ('["range", "uniform"]', '"range,uniform"'),
    "topics.1.replicas": ("[[1, 2], [2, 3]]", '"1:2, 2:3"'),
    "consumers.1.topics": ('["T"]', '"T"'),
    "consumers.1.partition.assignment.strategy": ('["range", "cooperative-sticky"]', '" range , cooperative-sticky"'),
    "faults.1.src": ('["broker-1", "broker-2"]', '"broker-1,broker-2"'),
    "faults.1.dst": ('["consumer-1"]', '"consumer-1"'),
    "faults.2.isolate": ('["broker-3"]', '"broker-3"'),
    "faults.3.between": ('[["broker-1", "broker-2"], ["broker-3"]]', '"broker-1:broker-2,broker-3"'),
    "faults.4.nodes": ('["consumer-1"]', '"consumer-1"'),
    "faults.5.partitions": ("[0, 1]", '"0, 1"'),
}
"""Every list setting of the scenario: where it is (`section.key`, or `array.N.key`), written as
an array and as a string."""


def _setting_of(key: str) -> str:
    """`section.key` as it is, `array.N.key` without its N."""
    name = key.split(".")[0]
    return key if name in SECTIONS else f"{name}.{key.split('.', 2)[2]}"


def _list_settings() -> set[str]:
    found = {f"{name}.{s.key}" for name, settings in SECTIONS.items() for s in settings if is_list(s)}
    for name, schema in ARRAYS.items():
        tables = schema.values() if isinstance(schema, dict) else [schema]
        found |= {f"{name}.{s.key}" for settings in tables for s in settings if is_list(s)}
    return found


def test_the_table_names_every_list_setting_of_the_schema() -> None:
    named = {_setting_of(key) for key in AS_STRINGS}
    assert named == _list_settings()


def test_strings_in_the_file_resolve_to_the_same_scenario_as_arrays() -> None:
    text = AS_ARRAYS
    for array, string in AS_STRINGS.values():
        text = text.replace(f"= {array}\n", f"= {string}\n", 1)
    assert "= [" not in text
    as_strings = parse_scenario(text, "s.toml")
    check_scenario(as_strings)
    assert as_strings == parse_scenario(AS_ARRAYS, "s.toml")
    assert as_strings.consumers[0]["partition.assignment.strategy"] == ["range", "cooperative-sticky"]
    assert as_strings.topics[0]["replicas"] == [[1, 2], [2, 3]]


@pytest.mark.parametrize("key", sorted(AS_STRINGS))
def test_a_comma_separated_set_overrides_each_list_setting(key: str) -> None:
    array, string = AS_STRINGS[key]
    value = string.strip('"')
    base = parse_scenario(AS_ARRAYS, "s.toml")
    scenario = parse_scenario(AS_ARRAYS, "s.toml", [f"{key}={value}"])
    check_scenario(scenario)
    assert scenario == base


def test_a_one_item_list_of_integers_from_set() -> None:
    """`--set faults.5.partitions=1` is the list [1], though TOML reads the integer 1."""
    scenario = parse_scenario(AS_ARRAYS, "s.toml", ["faults.5.partitions=1"])
    assert scenario.faults[4]["partitions"] == [1]


@pytest.mark.parametrize(
    ("setting", "overrides", "expected"),
    [
        (
            '"range,,sticky"',
            [],
            "s.toml: [[consumers]] #1: partition.assignment.strategy: an empty item in 'range,,sticky' (items are separated by ',')",
        ),
        (
            '["range"]',
            ["consumers.1.partition.assignment.strategy=range, "],
            "--set 'consumers.1.partition.assignment.strategy=range, ': [[consumers]] #1: "
            "partition.assignment.strategy: an empty item in 'range, ' (items are separated by ',')",
        ),
    ],
)
def test_an_empty_item_is_one_line_naming_the_key(setting: str, overrides: list[str], expected: str) -> None:
    text = AS_ARRAYS.replace('= ["range", "cooperative-sticky"]', f"= {setting}")
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, "s.toml", overrides)
    assert str(caught.value) == expected


def test_items_of_an_integer_list_must_be_integers() -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(AS_ARRAYS, "s.toml", ["faults.5.partitions=0,one"])
    assert str(caught.value) == "--set 'faults.5.partitions=0,one': [[faults]] #5: partitions: 'one' in '0,one' is not an integer"
