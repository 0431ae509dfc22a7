"""What every assignor shares (`ConsumerPartitionAssignor`'s types): a member as the leader's
assignor sees it, Kafka's member order, the rebalance protocols, and the shape of a result."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from protocols.types import TopicPartition

__all__ = [
    "DEFAULT_GENERATION",
    "MemberSubscription",
    "PartitionsByMember",
    "RebalanceProtocol",
    "assignment_result",
    "check_unique",
    "member_order",
    "subscribed_partitions",
]

DEFAULT_GENERATION = -1
"""`AbstractStickyAssignor.DEFAULT_GENERATION`: a subscription that names no generation."""

PartitionsByMember = dict[str, tuple[TopicPartition, ...]]
"""An assignor's result: every member id with its partitions, sorted."""


class RebalanceProtocol(Enum):
    """`ConsumerPartitionAssignor.RebalanceProtocol`."""

    EAGER = "eager"
    COOPERATIVE = "cooperative"

    @property
    def id(self) -> int:
        """Kafka's protocol id; a higher id is the more capable protocol."""
        return 0 if self is RebalanceProtocol.EAGER else 1


@dataclass(frozen=True, slots=True)
class MemberSubscription:
    """One member as the leader's assignor sees it (`ConsumerPartitionAssignor.Subscription`
    with the member's ids): its topics and, for the sticky assignors, the partitions it owned
    and in which generation."""

    member_id: str
    group_instance_id: str | None
    topics: tuple[str, ...]
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation_id: int = DEFAULT_GENERATION


def member_order(members: Iterable[MemberSubscription]) -> list[MemberSubscription]:
    """The members in `MemberInfo.compareTo` order: static members (with a `group.instance.id`)
    first, by instance id, then the others by member id."""

    def key(member: MemberSubscription) -> tuple[int, str, str]:
        if member.group_instance_id is not None:
            return (0, member.group_instance_id, member.member_id)  # member id only breaks ties
        return (1, member.member_id, "")

    return sorted(members, key=key)


def assignment_result(
    members: Sequence[MemberSubscription], assigned: Mapping[str, Iterable[TopicPartition]]
) -> PartitionsByMember:
    """Every member, in member order, with its partitions sorted (empty when it got none)."""
    return {m.member_id: tuple(sorted(assigned.get(m.member_id, ()))) for m in member_order(members)}


def check_unique(members: Sequence[MemberSubscription]) -> None:
    ids = [m.member_id for m in members]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate member ids: {sorted(ids)}")


def subscribed_partitions(
    partitions_per_topic: Mapping[str, int], members: Sequence[MemberSubscription]
) -> list[TopicPartition]:
    """Every partition of every topic some member subscribes to, sorted by topic then partition
    (`AbstractPartitionAssignor.partitions`); topics without metadata have none."""
    topics = sorted({t for m in members for t in m.topics if t in partitions_per_topic})
    return [TopicPartition(t, p) for t in topics for p in range(partitions_per_topic[t])]
