"""Wiring a scenario's actors to nodes: which node hosts which actor, with what config.

Each actor package builds its own config from its checked scenario section
(`actors/*/settings.py`); this module only places the actors and tells each where the others
are: the coordination service `zookeeper`, brokers `broker-N` with their replica manager,
group coordinator and controller candidate, producers `producer-N`, consumers `consumer-N`,
the operator's admin client `admin` (added when first used), and the gossip stand-in's
`node-N` (docs/scenarios.md).
"""

from __future__ import annotations

from actors.addresses import (
    BROKER_ACTOR,
    CONTROLLER_ACTOR,
    GROUP_COORDINATOR_ACTOR,
    controller_address,
    group_coordinator_address,
)
from actors.admin.behavior import AdminClient
from actors.admin.config import ADMIN_ACTOR, ADMIN_NODE, AdminConfig
from actors.broker.behavior import Broker
from actors.broker.settings import broker_config
from actors.consumer.behavior import Consumer
from actors.consumer.config import ConsumerConfig
from actors.consumer.settings import consumer_config
from actors.controller import zkdata as zk
from actors.controller.behavior import Controller
from actors.controller.settings import controller_config
from actors.group.coordinator import GroupCoordinator
from actors.group.placement import OFFSETS_TOPIC
from actors.group.settings import coordinator_config
from actors.producer.behavior import Producer
from actors.producer.settings import producer_config
from actors.workload import GossipActor, gossip_configs
from actors.zookeeper.behavior import ZooKeeper
from protocols.replication import LeaderAndIsrPartition
from sim.cluster.faults import (
    CONSUMER_ACTOR,
)
from sim.cluster.scenario import Scenario, replica_assignment
from sim.engine.kernel import ActorSpec, NodeSpec

__all__ = ["admin_spec", "consumer_configs", "node_specs"]


def node_specs(scenario: Scenario, znodes: tuple[tuple[str, str, int], ...] = ()) -> list[NodeSpec]:
    return _kafka_nodes(scenario, znodes) + _consumer_nodes(scenario) + _workload_nodes(scenario)


def consumer_configs(scenario: Scenario) -> list[ConsumerConfig]:
    """One consumer process per `count` of each `[[consumers]]` entry: `consumer-1`,
    `consumer-2`, ... in the order of the file."""
    brokers = scenario.get("cluster", "brokers")
    partitions = tuple((t["name"], t["partitions"]) for t in scenario.topics)
    configs = []
    for entry in scenario.consumers:
        for i in range(entry["count"]):
            instance = entry["group.instance.id"]
            if instance is not None and entry["count"] > 1:
                instance = f"{instance}-{i + 1}"
            configs.append(
                consumer_config(
                    f"consumer-{len(configs) + 1}",
                    entry,
                    scenario.profile,
                    group_instance_id=instance,
                    partitions=partitions,
                    bootstrap=tuple(range(1, brokers + 1)),
                    offsets_partitions=scenario.get("broker", "offsets.topic.num.partitions"),
                )
            )
    return configs


def admin_spec(scenario: Scenario) -> NodeSpec:
    """The operator's admin client, node `admin`: added to the cluster when first used, so a
    run without group commands has no such node."""
    config = AdminConfig(
        bootstrap=tuple(range(1, scenario.get("cluster", "brokers") + 1)),
        topics=tuple((t["name"], t["partitions"]) for t in scenario.topics),
        profile=scenario.profile,
    )
    return NodeSpec(ADMIN_NODE, (ActorSpec(ADMIN_ACTOR, lambda: AdminClient(config)),))


def _consumer_nodes(scenario: Scenario) -> list[NodeSpec]:
    return [
        NodeSpec(config.name, (ActorSpec(CONSUMER_ACTOR, lambda c=config: Consumer(c)),))
        for config in consumer_configs(scenario)
    ]


def _kafka_nodes(scenario: Scenario, znodes: tuple[tuple[str, str, int], ...] = ()) -> list[NodeSpec]:
    """The coordination service `zookeeper` (ZooKeeper mode), brokers `broker-N` and producers
    `producer-N` (docs/scenarios.md)."""
    brokers = scenario.get("cluster", "brokers")
    if not brokers:
        return []
    settings = scenario.sections["broker"]
    zookeeper_mode = scenario.get("cluster", "metadata.mode") == "zookeeper"
    assignments = {t["name"]: replica_assignment(t, brokers) for t in scenario.all_topics}
    specs = []
    if zookeeper_mode:
        specs.append(NodeSpec("zookeeper", (ActorSpec("zookeeper", lambda: ZooKeeper(initial=_topic_znodes(assignments) + znodes)),)))
    bootstrap: dict[int, list[LeaderAndIsrPartition]] = {b: [] for b in range(1, brokers + 1)}
    if not zookeeper_mode:
        for topic, assignment in assignments.items():
            for partition, replicas in enumerate(assignment):
                created = LeaderAndIsrPartition(
                    topic, partition, 0, replicas[0], 0, tuple(replicas), 0, tuple(replicas), True
                )
                for b in replicas:
                    bootstrap[b].append(created)
    groups = scenario.has_groups  # then every broker runs a group coordinator
    offsets_leaders = ()
    if groups and not zookeeper_mode:
        offsets_leaders = tuple(replicas[0] for replicas in assignments[OFFSETS_TOPIC])
    for b in range(1, brokers + 1):
        config = broker_config(
            b,
            scenario.profile,
            settings,
            scenario.topics,
            zk_client=controller_address(b) if zookeeper_mode else None,
            bootstrap=tuple(bootstrap[b]),
            group_coordinator=group_coordinator_address(b) if groups else None,
            offsets_topic_leaders=offsets_leaders,
        )
        actors = [ActorSpec(BROKER_ACTOR, lambda c=config: Broker(c))]
        if groups:
            coordinator = coordinator_config(b, scenario.profile, settings, scenario.topics)
            actors.append(ActorSpec(GROUP_COORDINATOR_ACTOR, lambda c=coordinator: GroupCoordinator(c)))
        if zookeeper_mode:
            candidate = controller_config(b, scenario.profile, settings, config.address)
            actors.append(ActorSpec(CONTROLLER_ACTOR, lambda c=candidate: Controller(c)))
        specs.append(NodeSpec(f"broker-{b}", tuple(actors)))
    for i, p in enumerate(scenario.producers):
        assignment = assignments[p["topic"]]
        config = producer_config(
            f"producer-{i + 1}",
            p,
            scenario.profile,
            partitions=len(assignment),
            bootstrap=tuple(range(1, brokers + 1)),
            leaders=() if zookeeper_mode else tuple(replicas[0] for replicas in assignment),
        )
        specs.append(NodeSpec(config.name, (ActorSpec("producer", lambda c=config: Producer(c)),)))
    return specs


def _topic_znodes(assignments: dict[str, list[list[int]]]) -> tuple[tuple[str, str, int], ...]:
    """The scenario's topics as an administrator creates them before the run: each topic's
    assignment znode (and the folder its partitions' state goes in). The controller creates
    the partitions' state, with their first leaders, when it starts."""
    znodes: list[tuple[str, str, int]] = []
    for topic in sorted(assignments):
        znodes.append((zk.topic_path(topic), zk.encode_assignment(assignments[topic]), 0))
        znodes.append((zk.partitions_path(topic), "", 0))
    return tuple(znodes)


def _workload_nodes(scenario: Scenario) -> list[NodeSpec]:
    configs = gossip_configs(scenario.sections["workload"])
    nodes = dict.fromkeys(config.address.node for config in configs)
    return [
        NodeSpec(
            node,
            tuple(
                ActorSpec(config.address.actor, lambda c=config: GossipActor(c))
                for config in configs
                if config.address.node == node
            ),
        )
        for node in nodes
    ]
