"""The checks of a scenario that involve more than one key: the group protocols against the
brokers' (before the version's defaults fill in what was left unset), the topics and their
replicas, the producers' and consumers' topics, Kafka's client-side checks of each consumer,
the network and the faults. Each problem is one `ScenarioError` sentence naming the file, the
entry and the key."""

from __future__ import annotations

from typing import Any, Protocol

from actors.consumer import settings as consumer_settings
from actors.group import settings as group_settings
from actors.profiles import Profile
from actors.settings import SettingError

__all__ = ["ScenarioError", "check_group_protocols", "check_relations", "replica_assignment"]


class ScenarioError(ValueError):
    """A user's mistake in a scenario or an override: one sentence, no traceback."""


class Scenario(Protocol):
    """What the checks read of a `sim.cluster.scenario.Scenario`."""

    @property
    def source(self) -> str: ...
    @property
    def sections(self) -> dict[str, dict[str, Any]]: ...
    @property
    def profile(self) -> Profile: ...
    @property
    def topics(self) -> tuple[dict[str, Any], ...]: ...
    @property
    def producers(self) -> tuple[dict[str, Any], ...]: ...
    @property
    def consumers(self) -> tuple[dict[str, Any], ...]: ...
    @property
    def faults(self) -> tuple[dict[str, Any], ...]: ...

    def get(self, section: str, key: str) -> Any: ...


def check_group_protocols(
    source: str, broker: dict[str, Any], consumers: list[dict[str, Any]], profile: Profile
) -> None:
    """The group protocols, before the version's defaults fill in what was left unset: Kafka
    refuses some consumer keys only when they are given."""
    try:
        group_settings.check(broker, profile)
    except SettingError as exc:
        msg = f"{source}: [broker]: {exc}"
        raise ScenarioError(msg) from None
    protocols = group_settings.rebalance_protocols(broker, profile)
    first_of_group: dict[str, int] = {}
    for i, entry in enumerate(consumers):
        try:
            consumer_settings.check_group_protocol(entry, profile, protocols, broker["group.consumer.assignors"])
        except SettingError as exc:
            msg = f"{source}: [[consumers]] #{i + 1}: {exc}"
            raise ScenarioError(msg) from None
        first = first_of_group.setdefault(entry["group.id"], i)
        if consumers[first]["group.protocol"] == entry["group.protocol"]:
            continue
        # A group of both protocols: classic members inside a consumer group (3.8+).
        mixed = f"[[consumers]] #{first + 1} of the same group.id {entry['group.id']!r} uses {consumers[first]['group.protocol']!r}"
        if not profile.classic_members_in_consumer_groups:
            msg = (
                f"{source}: [[consumers]] #{i + 1}: group.protocol: {entry['group.protocol']!r}, but {mixed}: "
                f"a group of both protocols needs Kafka 3.8 or later (KIP-848's online migration; the version is {profile.name})"
            )
            raise ScenarioError(msg)
        for j in (first, i):
            if consumers[j].get("group.instance.id") is not None:
                msg = (
                    f"{source}: [[consumers]] #{j + 1}: group.instance.id: {consumers[j]['group.instance.id']!r}, in a "
                    f"group of both protocols ({mixed}): static members of a migrating group are not modelled"
                )
                raise ScenarioError(msg)


def replica_assignment(topic: dict[str, Any], brokers: int) -> list[list[int]]:
    """The topic's replicas per partition: as given, or round robin from broker 1 (Kafka's
    assignment starts at a random broker; here it starts at 1, so runs are reproducible)."""
    if topic["replicas"]:
        return [list(r) for r in topic["replicas"]]
    rf = topic["replication.factor"]
    return [[(p + i) % brokers + 1 for i in range(rf)] for p in range(topic["partitions"])]


def _check_topics(scenario: Scenario) -> None:
    brokers = scenario.sections["cluster"]["brokers"]
    seen: set[str] = set()
    for i, topic in enumerate(scenario.topics):
        where = f"{scenario.source}: [[topics]] #{i + 1} ({topic['name']})"
        if topic["name"] in seen:
            msg = f"{where}: name: the topic {topic['name']!r} is defined twice"
            raise ScenarioError(msg)
        seen.add(topic["name"])
        rf = topic["replication.factor"]
        if not topic["replicas"] and rf > brokers:
            msg = f"{where}: replication.factor {rf} is above the broker count {brokers}"
            raise ScenarioError(msg)
        assignment = topic["replicas"]
        if assignment and len(assignment) != topic["partitions"]:
            msg = f"{where}: replicas: {len(assignment)} lists for {topic['partitions']} partitions"
            raise ScenarioError(msg)
        for p, replicas in enumerate(assignment):
            if len(replicas) != rf:
                msg = f"{where}: replicas: partition {p} has {len(replicas)} replicas, replication.factor is {rf}"
                raise ScenarioError(msg)
            if len(set(replicas)) != len(replicas):
                msg = f"{where}: replicas: partition {p} lists a broker twice: {replicas}"
                raise ScenarioError(msg)
            unknown = [b for b in replicas if not 1 <= b <= brokers]
            if unknown:
                msg = f"{where}: replicas: partition {p} names broker {unknown[0]}, but the brokers are 1 to {brokers}"
                raise ScenarioError(msg)
    for i, producer in enumerate(scenario.producers):
        if producer["topic"] not in seen:
            known = ", ".join(sorted(seen)) or "none"
            msg = (
                f"{scenario.source}: [[producers]] #{i + 1}: topic: {producer['topic']!r} is not a "
                f"topic of [[topics]] (defined: {known})"
            )
            raise ScenarioError(msg)
    _check_consumers(scenario, seen)


def _check_consumers(scenario: Scenario, topics: set[str]) -> None:
    """Kafka's client-side checks of a consumer's settings (`ConsumerConfig`, the `Heartbeat`
    and `ConsumerCoordinator` constructors), and the topics it subscribes to, which must be
    the scenario's: topics exist before the run and none is created by a subscription."""
    for i, entry in enumerate(scenario.consumers):
        where = f"{scenario.source}: [[consumers]] #{i + 1}"
        for topic in entry["topics"]:
            if topic not in topics:
                known = ", ".join(sorted(topics)) or "none"
                msg = f"{where}: topics: {topic!r} is not a topic of [[topics]] (defined: {known})"
                raise ScenarioError(msg)
        if not entry["topics"]:
            msg = f"{where}: topics: a consumer needs at least one topic"
            raise ScenarioError(msg)
        try:
            consumer_settings.check(entry, scenario.profile)
        except SettingError as exc:
            msg = f"{where}: {exc}"
            raise ScenarioError(msg) from None
    if scenario.consumers and scenario.get("cluster", "brokers") == 0:
        msg = f"{scenario.source}: [[consumers]] needs brokers: set [cluster] brokers"
        raise ScenarioError(msg)


def check_relations(scenario: Scenario) -> None:
    """Checks that involve more than one key."""
    if scenario.topics and scenario.sections["cluster"]["brokers"] == 0:
        msg = f"{scenario.source}: [[topics]] needs brokers: set [cluster] brokers"
        raise ScenarioError(msg)
    _check_topics(scenario)
    net = scenario.sections["network"]
    if net["latency.max.ms"] < net["latency.min.ms"]:
        msg = (
            f"{scenario.source}: [network] latency.max.ms ({net['latency.max.ms']}) is below "
            f"latency.min.ms ({net['latency.min.ms']})"
        )
        raise ScenarioError(msg)
    for i, fault in enumerate(scenario.faults):
        if fault["kind"] == "partition":
            between, isolate = fault["between"], fault["isolate"]
            if bool(between) == bool(isolate):
                msg = f"{scenario.source}: [[faults]] #{i + 1}: a partition needs `isolate` or `between`"
                raise ScenarioError(msg)
            if between and len(between) != 2:  # noqa: PLR2004 - two sides
                msg = f"{scenario.source}: [[faults]] #{i + 1}: between: expected two lists of nodes"
                raise ScenarioError(msg)
    cluster = scenario.sections["cluster"]
    if cluster["brokers"] and cluster["metadata.mode"] == "zookeeper" and not scenario.get("zookeeper", "enabled"):
        msg = (
            f"{scenario.source}: [zookeeper] enabled = false, but [cluster] metadata.mode = "
            '"zookeeper" needs the coordination service (use metadata.mode = "static" for a '
            "cluster without a controller)"
        )
        raise ScenarioError(msg)
    if scenario.sections["cluster"]["brokers"] == 0 and scenario.sections["workload"]["nodes"] == 0:
        msg = f"{scenario.source}: the scenario has no nodes: set [cluster] brokers (or [workload] nodes)"
        raise ScenarioError(msg)
