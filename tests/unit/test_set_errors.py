"""A mistake a `--set` brings names that `--set`, not the scenario file: the user typed the
value on the command line. A mistake of the file itself still names the file."""

from __future__ import annotations

import pytest

from sim.cluster.faults import FaultError
from sim.cluster.harness import check_scenario
from sim.cluster.scenario import ScenarioError, parse_scenario

FILE = """
[cluster]
brokers = 1
[[topics]]
name = "T"
[[consumers]]
topics = ["T"]
[[faults]]
kind = "crash"
node = "consumer-1"
"""


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("consumer.foo=1", "--set 'consumer.foo=1': unknown section [consumer] (did you mean 'consumers'?)"),
        ("consumers.1.foo=1", "--set 'consumers.1.foo=1': [[consumers]] #1: unknown key 'foo'"),
        ("broker.min.insync.replica=2", "--set 'broker.min.insync.replica=2': [broker]: unknown key 'min.insync.replica' (did you mean 'min.insync.replicas'?)"),
        ("run.seed=x", "--set 'run.seed=x': [run]: seed: expected an integer, got 'x' (a string)"),
    ],
)
def test_a_bad_set_names_the_set(override: str, expected: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(FILE, "s.toml", ["run.duration.ms=1000", override])
    assert str(caught.value) == expected


def test_a_fault_a_set_breaks_names_the_set() -> None:
    """The faults are checked against the nodes after loading (`check_scenario`)."""
    scenario = parse_scenario(FILE, "s.toml", ["faults.1.node=consumer-9"])
    with pytest.raises(FaultError) as caught:
        check_scenario(scenario)
    assert str(caught.value) == (
        "--set 'faults.1.node=consumer-9': [[faults]] #1: node: no node named 'consumer-9' "
        "(the nodes are broker-1, consumer-1, zookeeper)"
    )


def test_the_files_own_mistake_names_the_file_though_sets_are_given() -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(FILE + '"at.ms" = -1\n', "s.toml", ["run.seed=2"])
    assert str(caught.value) == "s.toml: [[faults]] #1: at.ms: must be at least 0, got -1"
    scenario = parse_scenario(FILE.replace("consumer-1", "consumer-7"), "s.toml", ["run.seed=2"])
    with pytest.raises(FaultError) as caught:
        check_scenario(scenario)
    assert str(caught.value).startswith("s.toml: [[faults]] #1: node: no node named 'consumer-7'")
