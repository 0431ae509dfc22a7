"""Identifiers shared by every protocol family.

Epochs and ids are `NewType`s over `int` so signatures say which number they mean; on the wire
they are plain msgpack integers.
"""

from __future__ import annotations

from typing import NamedTuple, NewType

BrokerId = NewType("BrokerId", int)
LeaderEpoch = NewType("LeaderEpoch", int)
ControllerEpoch = NewType("ControllerEpoch", int)
BrokerEpoch = NewType("BrokerEpoch", int)
GenerationId = NewType("GenerationId", int)
ProducerId = NewType("ProducerId", int)

NO_LEADER = -1
"""Kafka's `LeaderAndIsr.NoLeader`: the partition has no leader."""

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class TopicPartition(NamedTuple):
    """A topic partition; sorts by topic, then partition, as Kafka's comparators do."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"
