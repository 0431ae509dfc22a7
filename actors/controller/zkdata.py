"""What Kafka keeps in ZooKeeper, and how (`kafka.zk.ZkData`): paths and their JSON.

All functions are pure. JSON is written with sorted keys, so a znode's bytes depend on its
content alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from protocols.types import NO_LEADER, TopicPartition

__all__ = [
    "BROKER_IDS",
    "CONTROLLER",
    "CONTROLLER_EPOCH",
    "INITIAL_LEADER_EPOCH",
    "ISR_CHANGE_NOTIFICATION",
    "ISR_CHANGE_PREFIX",
    "NO_LEADER",
    "TOPICS",
    "LeaderIsr",
    "broker_path",
    "decode_assignment",
    "decode_isr_change",
    "decode_state",
    "encode_assignment",
    "encode_isr_change",
    "encode_state",
    "partition_path",
    "partitions_path",
    "state_path",
    "topic_path",
]

CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = f"{ISR_CHANGE_NOTIFICATION}/isr_change_"

INITIAL_LEADER_EPOCH = 0


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{TOPICS}/{topic}/partitions"


def partition_path(tp: TopicPartition) -> str:
    return f"{partitions_path(tp.topic)}/{tp.partition}"


def state_path(tp: TopicPartition) -> str:
    return f"{partition_path(tp)}/state"


@dataclass(frozen=True, slots=True)
class LeaderIsr:
    """A partition's leadership as the controller caches it (`LeaderIsrAndControllerEpoch`):
    the state znode's content and its zkVersion, which is the partition epoch."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    zk_version: int

    def new_leader_and_isr(self, leader: int, isr: tuple[int, ...], controller_epoch: int) -> LeaderIsr:
        """`LeaderAndIsr.newLeaderAndIsr`: a leader or ISR chosen by the controller bumps the
        leader epoch; the zkVersion moves when the write succeeds."""
        return replace(
            self, leader=leader, leader_epoch=self.leader_epoch + 1, isr=isr, controller_epoch=controller_epoch
        )


def encode_state(l: LeaderIsr) -> str:  # noqa: E741 - Kafka's own short name
    return json.dumps(
        {
            "controller_epoch": l.controller_epoch,
            "isr": list(l.isr),
            "leader": l.leader,
            "leader_epoch": l.leader_epoch,
            "version": 1,
        },
        sort_keys=True,
    )


def decode_state(data: str, zk_version: int) -> LeaderIsr:
    d = json.loads(data)
    return LeaderIsr(d["leader"], d["leader_epoch"], tuple(d["isr"]), d["controller_epoch"], zk_version)


def encode_assignment(replicas: list[list[int]]) -> str:
    """`/brokers/topics/T`: the replicas of each partition, the first being the preferred leader."""
    partitions = {str(p): list(r) for p, r in enumerate(replicas)}
    return json.dumps({"partitions": partitions, "version": 1}, sort_keys=True)


def decode_assignment(topic: str, data: str) -> dict[TopicPartition, tuple[int, ...]]:
    partitions = json.loads(data)["partitions"]
    return {TopicPartition(topic, int(p)): tuple(r) for p, r in partitions.items()}


def encode_isr_change(partitions: list[TopicPartition]) -> str:
    entries = [{"partition": tp.partition, "topic": tp.topic} for tp in partitions]
    return json.dumps({"partitions": entries, "version": 1}, sort_keys=True)


def decode_isr_change(data: str) -> list[TopicPartition]:
    return [TopicPartition(e["topic"], e["partition"]) for e in json.loads(data)["partitions"]]
