"""Scenario files: resolution, overrides, profiles, and a one-sentence error for each mistake."""

from __future__ import annotations

import pytest

from actors.profiles import Profile
from sim.cluster.faults import FaultError
from sim.cluster.harness import check_scenario
from sim.cluster.scenario import ScenarioError, load_scenario, parse_scenario
from sim.studies.builtin import load_study


def _error(text: str, overrides: tuple[str, ...] = ()) -> str:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, "s.toml", overrides)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_defaults_fill_every_key_and_dotted_keys_work_quoted_or_not() -> None:
    s = parse_scenario('[cluster]\nbrokers = 1\n[network]\nlatency.max.ms = 9\n"latency.min.ms" = 2\n', "s.toml")
    assert s.sections["network"] == {"latency.min.ms": 2, "latency.max.ms": 9}
    assert s.sections["run"]["duration.ms"] == 60000
    assert s.profile.name == "3.9"


def test_resolved_scenario_round_trips_through_toml() -> None:
    s = load_study(None, ["run.seed=7", "kafka.version=2.8"])
    again = parse_scenario(s.to_toml(), "resolved")
    assert again.sections == s.sections
    assert again.faults == s.faults
    assert again.profile == s.profile


def test_overrides() -> None:
    s = parse_scenario("[cluster]\nbrokers = 1\n", "s.toml", ["run.seed=42", "network.latency.max.ms=30", "kafka.version=2.4"])
    assert (s.seed, s.get("network", "latency.max.ms"), s.profile.name) == (42, 30, "2.4")
    faulty = load_study(None, ["faults.1.restart.after.ms=10"])
    assert faulty.faults[0]["restart.after.ms"] == 10


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[run]\nseed = \n", "s.toml: TOML syntax error at line 2, column 8: Invalid value"),
        ("[network]\nlatency.mn.ms = 3\n", "s.toml: [network]: unknown key 'latency.mn.ms' (did you mean 'latency.min.ms'?)"),
        ("[netwrk]\n", "s.toml: unknown section [netwrk] (did you mean 'network'?)"),
        ('[run]\nseed = "7"\n', "s.toml: [run]: seed: expected an integer, got '7' (a string)"),
        ("[run]\nseed = -1\n", "s.toml: [run]: seed: must be at least 0, got -1"),
        ("[network]\n\"latency.min.ms\" = 0\n", "s.toml: [network]: latency.min.ms: must be at least 1, got 0"),
        ("[network]\n\"latency.min.ms\" = 9\n\"latency.max.ms\" = 3\n", "s.toml: [network] latency.max.ms (3) is below latency.min.ms (9)"),
        ('[kafka]\nversion = "4.2"\n', "s.toml: [kafka] version: '4.2' is not supported"),
        ('[kafka]\nversion = "three"\n', "s.toml: [kafka] version: 'three' is not a Kafka version"),
        ('[[faults]]\nkind = "crsh"\n', "s.toml: [[faults]] #1: kind: 'crsh' is not one of crash, restart"),
        ('[[faults]]\nkind = "crash"\n', "s.toml: [[faults]] #1: 'node' is required"),
        ('[[faults]]\nkind = "drop"\nprobability = 1.5\n', "s.toml: [[faults]] #1: probability: must be at most 1.0, got 1.5"),
        ('[[faults]]\nkind = "partition"\n', "s.toml: [[faults]] #1: a partition needs `isolate` or `between`"),
        ('[[faults]]\nkind = "pause"\nnode = "node-1"\n"duration" = 5\n', "s.toml: [[faults]] #1: unknown key 'duration' (did you mean 'duration.ms'?)"),
        ("[workload]\nnodes = true\n", "s.toml: [workload]: nodes: expected an integer, got True (a boolean)"),
    ],
)
def test_each_mistake_is_one_sentence_naming_file_key_and_value(text: str, expected: str) -> None:
    assert _error(text).startswith(expected)


CONSUMERS = """
[cluster]
brokers = 1
[[topics]]
name = "T"
[[consumers]]
topics = ["T"]
count = 2
[[consumers]]
"group.id" = "other"
topics = ["T"]
[[faults]]
"""


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        ('kind = "zombie"\nnode = "consumer-9"\n', "s.toml: [[faults]] #1: node: no node named 'consumer-9' (the nodes are "),
        ('kind = "slow"\nnode = "broker-1"\n"process.record.ms" = 5\n', "s.toml: [[faults]] #1: node: 'broker-1' is not a consumer (the consumers are consumer-1, consumer-2, consumer-3)"),
        ('kind = "close"\nnode = "zookeeper"\n', "s.toml: [[faults]] #1: node: 'zookeeper' is not a consumer"),
        ('kind = "rolling_restart"\nnodes = ["consumer-1"]\ngroup = "group-1"\n', "s.toml: [[faults]] #1: nodes, group: a rolling restart takes one, not both (nodes ['consumer-1'], group 'group-1')"),
        ('kind = "rolling_restart"\n', "s.toml: [[faults]] #1: a rolling restart needs `nodes` (a list of consumers) or `group` (a group.id)"),
        ('kind = "rolling_restart"\ngroup = "grup-1"\n', "s.toml: [[faults]] #1: group: no consumer has group.id 'grup-1' (the groups are group-1, other)"),
    ],
)
def test_a_client_fault_names_consumers_of_the_scenario(fault: str, expected: str) -> None:
    with pytest.raises(FaultError) as info:
        check_scenario(parse_scenario(CONSUMERS + fault, "s.toml"))
    assert str(info.value).startswith(expected)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        ('kind = "slow"\nnode = "consumer-1"\n', "s.toml: [[faults]] #1: 'process.record.ms' is required"),
        ('kind = "slow"\nnode = "consumer-1"\n"process.record.ms" = -1\n', "s.toml: [[faults]] #1: process.record.ms: must be at least 0, got -1"),
        ('kind = "rolling_restart"\ngroup = "other"\n"down.ms" = -1\n', "s.toml: [[faults]] #1: down.ms: must be at least 0, got -1"),
        ('kind = "rolling_restart"\ngroup = "other"\n"interval.ms" = "10s"\n', "s.toml: [[faults]] #1: interval.ms: expected an integer, got '10s' (a string)"),
        ('kind = "zombie"\nnode = "consumer-1"\n"duration.ms" = 0\n', "s.toml: [[faults]] #1: duration.ms: must be at least 1, got 0"),
    ],
)
def test_a_client_fault_value_out_of_range(fault: str, expected: str) -> None:
    assert _error(CONSUMERS + fault).startswith(expected)


def test_a_rolling_restart_of_a_group_is_its_consumers_in_node_order() -> None:
    [fault] = check_scenario(parse_scenario(CONSUMERS + 'kind = "rolling_restart"\ngroup = "group-1"\n', "s.toml"))
    assert (fault.nodes, fault.group, fault.interval_ms, fault.down_ms) == (("consumer-1", "consumer-2"), None, 10_000, 0)


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("run.sed=3", "s.toml: [run]: unknown key 'sed' (did you mean 'seed'?)"),
        ("seed=3", "--set 'seed=3': the key needs its section"),
        ("run.seed", "--set 'run.seed': expected SECTION.KEY=VALUE"),
        ("faults.5.node=x", "--set 'faults.5.node=x': expected faults.N.KEY, N the entry's number as in [[faults]] #N"),
        ("faults.0.node=x", "--set 'faults.0.node=x': expected faults.N.KEY, N the entry's number as in [[faults]] #N"),
    ],
)
def test_bad_overrides(override: str, expected: str) -> None:
    assert _error("", (override,)).startswith(expected)


def test_missing_file() -> None:
    with pytest.raises(ScenarioError, match=r"nope\.toml: no such scenario file"):
        load_scenario("nope.toml")


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("0.10.2", {"unclean.leader.election.enable": True, "session.timeout.ms": 10000, "acks": "1"}),
        ("2.4", {"replica.lag.time.max.ms": 10000, "zookeeper.session.timeout.ms": 6000}),
        ("2.5", {"replica.lag.time.max.ms": 30000, "zookeeper.session.timeout.ms": 18000}),
        ("3.0.0", {"enable.idempotence": False, "acks": "all", "session.timeout.ms": 45000}),
        ("3.0.1", {"enable.idempotence": True}),
        ("3.9", {"unclean.leader.election.enable": False, "retries": 2**31 - 1}),
    ],
)
def test_profile_defaults_follow_kafkas_history(version: str, expected: dict[str, object]) -> None:
    defaults = Profile.for_version(version).defaults
    assert {k: defaults[k] for k in expected} == expected


def test_profile_behaviour_switches() -> None:
    old, kip101, modern = (Profile.for_version(v) for v in ("0.10.2", "0.11", "3.9"))
    assert not old.leader_epochs and kip101.leader_epochs
    assert not kip101.truncate_on_fetch and modern.truncate_on_fetch
    assert not Profile.for_version("3.6").hw_needs_min_isr and Profile.for_version("3.7").hw_needs_min_isr


KAFKA = '[cluster]\nbrokers = 3\n[[topics]]\nname = "T"\npartitions = 2\n"replication.factor" = 2\n'


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ('[[topics]]\nname = "U"\n"replication.factor" = 4\n', "s.toml: [[topics]] #2 (U): replication.factor 4 is above the broker count 3"),
        ('[[topics]]\nname = "U"\n"replication.factor" = 2\nreplicas = [[1, 7]]\n', "s.toml: [[topics]] #2 (U): replicas: partition 0 names broker 7, but the brokers are 1 to 3"),
        ('[[topics]]\nname = "U"\n"replication.factor" = 2\nreplicas = [[2, 2]]\n', "s.toml: [[topics]] #2 (U): replicas: partition 0 lists a broker twice: [2, 2]"),
        ('[[topics]]\nname = "U"\n"replication.factor" = 2\nreplicas = [[1, 2, 3]]\n', "s.toml: [[topics]] #2 (U): replicas: partition 0 has 3 replicas, replication.factor is 2"),
        ('[[topics]]\nname = "U"\npartitions = 2\nreplicas = [[1]]\n', "s.toml: [[topics]] #2 (U): replicas: 1 lists for 2 partitions"),
        ('[[topics]]\nname = "U"\nreplicas = 12\n', "s.toml: [[topics]] #2: replicas: expected a list of broker-id lists, one per partition"),
        ('[[topics]]\nname = "U"\npartitions = 2\nreplicas = "1:2,2"\n', "s.toml: [[topics]] #2 (U): replicas: partition 0 has 2 replicas, replication.factor is 1"),
        ('[[topics]]\nname = "U"\nreplicas = "1,x"\n', "s.toml: [[topics]] #2: replicas: 'x' in '1,x' is not an integer"),
        ('[[topics]]\nname = "T"\n', "s.toml: [[topics]] #2 (T): name: the topic 'T' is defined twice"),
        ('[[producers]]\ntopic = "T"\nacks = 2\n', "s.toml: [[producers]] #1: acks: 2 is not one of 0, 1, all, -1"),
        ('[[producers]]\ntopic = "T"\nacks = "most"\n', "s.toml: [[producers]] #1: acks: 'most' is not one of 0, 1, all, -1"),
        ('[[producers]]\ntopic = "X"\n', "s.toml: [[producers]] #1: topic: 'X' is not a topic of [[topics]] (defined: T)"),
        ('[broker]\n"min.insync.replica" = 2\n', "s.toml: [broker]: unknown key 'min.insync.replica' (did you mean 'min.insync.replicas'?)"),
    ],
)
def test_cluster_mistakes(extra: str, expected: str) -> None:
    assert _error(KAFKA + extra).startswith(expected)


def test_no_nodes_at_all_is_an_error() -> None:
    assert _error("").startswith("s.toml: the scenario has no nodes")


@pytest.mark.parametrize(("version", "acks", "lag"), [("2.8", 1, 30000), ("3.9", -1, 30000), ("2.4", 1, 10000)])
def test_profile_supplies_version_dependent_defaults(version: str, acks: int, lag: int) -> None:
    s = parse_scenario(KAFKA + '[[producers]]\ntopic = "T"\n', "s.toml", [f"kafka.version={version}"])
    assert s.producers[0]["acks"] == acks
    assert s.get("broker", "replica.lag.time.max.ms") == lag


def test_explicit_settings_win_over_the_profile_and_acks_spellings_agree() -> None:
    for spelling in ('"all"', "-1", '"-1"'):
        s = parse_scenario(KAFKA + f'[[producers]]\ntopic = "T"\nacks = {spelling}\n', "s.toml", ["kafka.version=2.0"])
        assert s.producers[0]["acks"] == -1
    s = parse_scenario(KAFKA + '[broker]\n"replica.lag.time.max.ms" = 500\n', "s.toml", ["kafka.version=2.4"])
    assert s.get("broker", "replica.lag.time.max.ms") == 500


def test_round_robin_assignment() -> None:
    from sim.cluster.scenario import replica_assignment

    topic = {"replicas": [], "replication.factor": 2, "partitions": 4}
    assert replica_assignment(topic, 3) == [[1, 2], [2, 3], [3, 1], [1, 2]]


P = KAFKA + '[[producers]]\ntopic = "T"\n'


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ('"linger.ms" = -1\n', "s.toml: [[producers]] #1: linger.ms: must be at least 0, got -1"),
        ('"linger.ms" = 2.5\n', "s.toml: [[producers]] #1: linger.ms: expected an integer, got 2.5 (a number)"),
        ('"batch.size" = "16k"\n', "s.toml: [[producers]] #1: batch.size: expected an integer, got '16k' (a string)"),
        (
            '"delivery.timeout.ms" = 30000\n"linger.ms" = 5\n',
            "s.toml: [[producers]] #1: delivery.timeout.ms (30000) must be at least linger.ms + request.timeout.ms (5 + 30000)",
        ),
        ('"enable.idempotence" = true\nacks = 1\n', "s.toml: [[producers]] #1: enable.idempotence = true requires acks = all (got 1)"),
        ('"enable.idempotence" = true\nretries = 0\n', "s.toml: [[producers]] #1: enable.idempotence = true requires retries > 0 (got 0)"),
        (
            '"enable.idempotence" = true\n"max.in.flight.requests.per.connection" = 6\n',
            "s.toml: [[producers]] #1: enable.idempotence = true requires max.in.flight.requests.per.connection <= 5 (got 6)",
        ),
        ('partitioner = "sticky"\n', "s.toml: [[producers]] #1: partitioner: 'sticky' is not one of default, round_robin"),
        (
            '"record.bytes" = 2000\n"max.request.size" = 2000\n',
            "s.toml: [[producers]] #1: record.bytes (2000) makes a record of 2069 bytes in its batch, above max.request.size (2000): Kafka refuses every record (RecordTooLargeException)",
        ),
    ],
)
def test_producer_mistakes(extra: str, expected: str) -> None:
    """Kafka's own checks (`ProducerConfig`, `postProcessAndValidateIdempotenceConfigs`,
    `configureDeliveryTimeout`): one sentence each, naming the setting."""
    assert _error(P + extra) == expected


def test_an_explicit_idempotence_before_0_11_is_an_error() -> None:
    message = _error(P + '"enable.idempotence" = true\nacks = "all"\nretries = 3\n', ["kafka.version=0.10.2"])
    assert message == (
        "--set 'kafka.version=0.10.2': [[producers]] #1: enable.idempotence = true needs Kafka 0.11 or later"
        " (the version is 0.10.2)"
    )


@pytest.mark.parametrize(
    ("version", "extra", "idempotence"),
    [
        ("3.9", "", True),
        ("3.0.0", "", False),  # KAFKA-13598: the default was not applied in 3.0.0 and 3.1.0
        ("3.1.0", "", False),
        ("3.0.1", "", True),
        ("3.2", "", True),
        ("2.8", "", False),
        ("3.9", "acks = 1\n", False),  # a default that conflicts is dropped silently
        ("3.9", "retries = 0\n", False),
        ("3.9", '"max.in.flight.requests.per.connection" = 6\n', False),
        ("2.8", '"enable.idempotence" = true\nacks = "all"\n', True),
    ],
)
def test_idempotence_follows_the_version_and_gives_way_when_only_a_default(version: str, extra: str, idempotence: bool) -> None:
    s = parse_scenario(P + extra, "s.toml", [f"kafka.version={version}"])
    assert s.producers[0]["enable.idempotence"] is idempotence


def test_a_default_delivery_timeout_rises_to_linger_plus_request_timeout() -> None:
    s = parse_scenario(P + '"request.timeout.ms" = 200000\n"linger.ms" = 10\n', "s.toml")
    assert s.producers[0]["delivery.timeout.ms"] == 200010
    assert parse_scenario(P, "s.toml").producers[0]["delivery.timeout.ms"] == 120000


C = KAFKA + '[[consumers]]\ntopics = ["T"]\n'


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (
            '"partition.assignment.strategy" = ["rnage"]\n',
            "s.toml: [[consumers]] #1: partition.assignment.strategy: 'rnage' is not one of range, roundrobin, sticky, cooperative-sticky (did you mean 'range'?)",
        ),
        (
            '"partition.assignment.strategy" = ["range", "cooperative-stiky"]\n',
            "s.toml: [[consumers]] #1: partition.assignment.strategy: 'cooperative-stiky' is not one of range, roundrobin, sticky, cooperative-sticky (did you mean 'cooperative-sticky'?)",
        ),
        (
            '"partition.assignment.strategy" = []\n',
            "s.toml: [[consumers]] #1: partition.assignment.strategy: names no assignor (valid: range, roundrobin, sticky, cooperative-sticky)",
        ),
        (
            '"heartbeat.interval.ms" = 3000\n"session.timeout.ms" = 3000\n',
            "s.toml: [[consumers]] #1: heartbeat.interval.ms (3000) must be lower than session.timeout.ms (3000)",
        ),
        (
            '"heartbeat.interval.ms" = 50000\n',
            "s.toml: [[consumers]] #1: heartbeat.interval.ms (50000) must be lower than session.timeout.ms (45000)",
        ),
        ('topics = ["T", "X"]\n', "s.toml: [[consumers]] #1: topics: 'X' is not a topic of [[topics]] (defined: T)"),
        ('topics = ["__consumer_offsets"]\n', "s.toml: [[consumers]] #1: topics: '__consumer_offsets' is not a topic of [[topics]] (defined: T)"),
        ("topics = []\n", "s.toml: [[consumers]] #1: topics: a consumer needs at least one topic"),
        ('"session.timeout.ms" = 0\n', "s.toml: [[consumers]] #1: session.timeout.ms: must be at least 1, got 0"),
    ],
)
def test_consumer_mistakes(extra: str, expected: str) -> None:
    """Kafka's client-side checks (`ConsumerConfig`, the `Heartbeat` and `ConsumerCoordinator`
    constructors) and the subscription's topics: one sentence each, naming the setting and
    the value. A session timeout outside the broker's range is the coordinator's to refuse
    (tests/cli)."""
    text = C.replace('topics = ["T"]\n', extra) if extra.startswith("topics") else C + extra
    assert _error(text) == expected


def test_a_session_timeout_outside_the_brokers_range_is_not_a_load_error() -> None:
    """The broker's group.min.session.timeout.ms and group.max.session.timeout.ms are the
    coordinator's to apply, at JoinGroup (INVALID_SESSION_TIMEOUT)."""
    s = parse_scenario(C + '"session.timeout.ms" = 5000\n', "s.toml")
    assert (s.consumers[0]["session.timeout.ms"], s.get("broker", "group.min.session.timeout.ms")) == (5000, 6000)


def test_an_error_a_set_brings_names_the_file_and_the_first_such_set() -> None:
    """The file alone is valid: each mistake is the command line's, and the first is named with
    its own message; a mistake in the file stays the file's."""
    overrides = ("run.duration.ms=5000", "network.latency.max.ms=abc", "run.duration.ms=-3")
    assert _error(KAFKA, overrides) == (
        "--set 'network.latency.max.ms=abc': [network]: latency.max.ms: expected an integer, got 'abc' (a string)"
    )
    bad_file = KAFKA + '[run]\n"duration.ms" = -1\n'
    assert _error(bad_file, ("run.seed=3",)) == "s.toml: [run]: duration.ms: must be at least 1, got -1"
