"""The consumer's partition assignors: which member of a group consumes which partitions.

The group leader runs the assignor the group chose on every member's subscription and sends the
result in its SyncGroup (`ConsumerCoordinator.onLeaderElected`). Four of Kafka's assignors are
modelled, under the names they give in JoinGroup:
- `range` (`RangeAssignor.java`) and `roundrobin` (`RoundRobinAssignor.java`), EAGER only;
- `sticky` (`StickyAssignor.java`), EAGER only, and `cooperative-sticky`
  (`CooperativeStickyAssignor.java`, KIP-429), which also supports COOPERATIVE; both run
  `AbstractStickyAssignor`'s algorithm (`sticky.py`) on the partitions each member says it owns.

Rack awareness (KIP-881) is not modelled. Every function is pure and deterministic: members
are visited in a fixed order and partitions are sorted wherever Kafka iterates a hash map.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from actors.consumer.assignment import (
    MemberSubscription,
    PartitionsByMember,
    RebalanceProtocol,
    assignment_result,
    check_unique,
    member_order,
    subscribed_partitions,
)
from actors.consumer.sticky import sticky_assign
from protocols.types import TopicPartition

__all__ = [
    "ASSIGNORS",
    "Assignor",
    "CooperativeStickyAssignor",
    "RangeAssignor",
    "RoundRobinAssignor",
    "StickyAssignor",
    "UnknownAssignor",
    "check_strategy",
    "default_strategy",
    "range_assign",
    "rebalance_protocol",
    "round_robin_assign",
]

# --------------------------------------------------------------------------- range, roundrobin


def range_assign(
    partitions_per_topic: Mapping[str, int], members: Sequence[MemberSubscription]
) -> PartitionsByMember:
    """`RangeAssignor.assign`: topic by topic, each subscriber in member order takes the next
    `P // C` consecutive partitions, the first `P % C` of them one more."""
    check_unique(members)
    assigned: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
    ordered = member_order(members)
    for topic in sorted({t for m in members for t in m.topics if t in partitions_per_topic}):
        consumers = [m.member_id for m in ordered if topic in m.topics]
        per_consumer, extra = divmod(partitions_per_topic[topic], len(consumers))
        start = 0
        for i, member_id in enumerate(consumers):
            length = per_consumer + (1 if i < extra else 0)
            assigned[member_id].extend(TopicPartition(topic, p) for p in range(start, start + length))
            start += length
    return assignment_result(members, assigned)


def round_robin_assign(
    partitions_per_topic: Mapping[str, int], members: Sequence[MemberSubscription]
) -> PartitionsByMember:
    """`RoundRobinAssignor.assign`: all partitions, sorted, dealt one by one round a circle of
    the members in member order, skipping a member not subscribed to the partition's topic."""
    check_unique(members)
    assigned: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
    ordered = member_order(members)
    position = 0  # the circular iterator's next member
    for tp in subscribed_partitions(partitions_per_topic, members):
        while tp.topic not in ordered[position].topics:  # some member subscribes to it
            position = (position + 1) % len(ordered)
        assigned[ordered[position].member_id].append(tp)
        position = (position + 1) % len(ordered)
    return assignment_result(members, assigned)


# --------------------------------------------------------------------------- the assignors


@dataclass(frozen=True, slots=True)
class Assignor:
    """`ConsumerPartitionAssignor`: a named assignment strategy and the rebalance protocols it
    supports."""

    name: ClassVar[str] = ""
    supported_protocols: ClassVar[tuple[RebalanceProtocol, ...]] = (RebalanceProtocol.EAGER,)

    @property
    def protocol(self) -> RebalanceProtocol:
        """The most capable protocol it supports."""
        return max(self.supported_protocols, key=lambda p: p.id)

    def assign(
        self, partitions_per_topic: Mapping[str, int], members: Sequence[MemberSubscription]
    ) -> PartitionsByMember:
        """Every member's partitions, sorted; a member that gets none maps to `()`."""
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class RangeAssignor(Assignor):
    """`RangeAssignor.java`."""

    name: ClassVar[str] = "range"

    def assign(
        self, partitions_per_topic: Mapping[str, int], members: Sequence[MemberSubscription]
    ) -> PartitionsByMember:
        return range_assign(partitions_per_topic, members)


@dataclass(frozen=True, slots=True)
class RoundRobinAssignor(Assignor):
    """`RoundRobinAssignor.java`."""

    name: ClassVar[str] = "roundrobin"

    def assign(
        self, partitions_per_topic: Mapping[str, int], members: Sequence[MemberSubscription]
    ) -> PartitionsByMember:
        return round_robin_assign(partitions_per_topic, members)


@dataclass(frozen=True, slots=True)
class StickyAssignor(Assignor):
    """`StickyAssignor.java` (KIP-54): Kafka keeps the previous assignment and generation in
    the subscription's user data; here they are the member's owned partitions and generation."""

    name: ClassVar[str] = "sticky"
    sort_owned_partitions: bool = True
    """False before 3.7.1 (KAFKA-16277)."""

    def assign(
        self, partitions_per_topic: Mapping[str, int], members: Sequence[MemberSubscription]
    ) -> PartitionsByMember:
        return sticky_assign(
            partitions_per_topic, members, cooperative=False, sort_owned_partitions=self.sort_owned_partitions
        )


@dataclass(frozen=True, slots=True)
class CooperativeStickyAssignor(Assignor):
    """`CooperativeStickyAssignor.java` (KIP-429)."""

    name: ClassVar[str] = "cooperative-sticky"
    supported_protocols: ClassVar[tuple[RebalanceProtocol, ...]] = (
        RebalanceProtocol.COOPERATIVE,
        RebalanceProtocol.EAGER,
    )
    sort_owned_partitions: bool = True
    """False before 3.7.1 (KAFKA-16277)."""
    older_generation_claims: bool = True
    """False from 2.6.0 to 3.4.0 (KAFKA-14639): only the highest generation's claims count."""

    def assign(
        self, partitions_per_topic: Mapping[str, int], members: Sequence[MemberSubscription]
    ) -> PartitionsByMember:
        return sticky_assign(
            partitions_per_topic,
            members,
            cooperative=True,
            sort_owned_partitions=self.sort_owned_partitions,
            older_generation_claims=self.older_generation_claims,
        )


ASSIGNORS: dict[str, Assignor] = {
    a.name: a for a in (RangeAssignor(), RoundRobinAssignor(), StickyAssignor(), CooperativeStickyAssignor())
}
"""The assignors by the name they give in JoinGroup (`ConsumerPartitionAssignor.name`)."""


class UnknownAssignor(ValueError):
    """`partition.assignment.strategy` names an assignor that does not exist."""


def check_strategy(names: Sequence[str]) -> None:
    """Raise `UnknownAssignor` for the first name in `names` that is not an assignor, and
    `ValueError` if there is none at all (the consumer needs at least one)."""
    valid = ", ".join(ASSIGNORS)
    for name in names:
        if name not in ASSIGNORS:
            raise UnknownAssignor(f"unknown partition.assignment.strategy {name!r}; valid: {valid}")
    if not names:
        raise ValueError(f"partition.assignment.strategy names no assignor; valid: {valid}")


def rebalance_protocol(strategy: Sequence[str]) -> RebalanceProtocol:
    """The most capable protocol that every configured assignor supports (the
    `ConsumerCoordinator` constructor): COOPERATIVE only if all of them are cooperative."""
    check_strategy(strategy)
    common = set(ASSIGNORS[strategy[0]].supported_protocols)
    for name in strategy[1:]:
        common &= set(ASSIGNORS[name].supported_protocols)
    # Never empty: every assignor modelled supports EAGER.
    return max(common, key=lambda p: p.id)


def default_strategy(version: tuple[int, int, int]) -> tuple[str, ...]:
    """The default `partition.assignment.strategy`: `[RangeAssignor]`, and from 3.0
    `[RangeAssignor, CooperativeStickyAssignor]` (KIP-726's first step), which still rebalances
    EAGER with range, so that a later rolling restart can drop range and turn COOPERATIVE."""
    return ("range", "cooperative-sticky") if version >= (3, 0, 0) else ("range",)
