"""What the coordinator holds of any group: Kafka's `Group` interface and its `GroupType`.

Kafka's `GroupMetadataManager` keeps classic groups and KIP-848 consumer groups in one map of
`Group`s and reaches a group's own rules by its type: the classic protocol's requests through
`getOrMaybeCreateClassicGroup`, which refuses a group of another type, and unloading by a switch
on `group.type()`. Here the only type is the classic one (`state.ClassicGroup`, with its state
machine) and KIP-848's consumer group (`consumer_group.ConsumerGroup`); the classic protocol's
handlers reach only classic groups (`GroupManager.classic_group`), ConsumerGroupHeartbeat only
consumer groups (`GroupManager.consumer_group`); a classic request naming a consumer group is
served inside it (`classic_members.py`, 3.8+), and `migration.py` converts a group between the
two types.
"""

from __future__ import annotations

from enum import Enum
from typing import Protocol

__all__ = ["Group", "GroupType"]


class GroupType(Enum):
    """`Group.GroupType`: the protocol a group's members speak. KIP-848's `CONSUMER` joins it
    with its group."""

    CLASSIC = "classic"
    CONSUMER = "consumer"


class Group(Protocol):
    """`Group`: what the manager needs of a group of any type."""

    @property
    def group_id(self) -> str: ...

    @property
    def group_type(self) -> GroupType: ...

    def is_dead(self) -> bool: ...
