"""The consumer's partition assignors: which member of a group consumes which partitions.

The group leader runs the assignor the group chose on every member's subscription and sends the
result in its SyncGroup (`ConsumerCoordinator.onLeaderElected`). Four of Kafka's assignors are
modelled, under the names they give in JoinGroup:
- `range` (`RangeAssignor.java`) and `roundrobin` (`RoundRobinAssignor.java`), EAGER only;
- `sticky` (`StickyAssignor.java`), EAGER only, and `cooperative-sticky`
  (`CooperativeStickyAssignor.java`, KIP-429), which also supports COOPERATIVE; both run
  `AbstractStickyAssignor`'s algorithm on the partitions each member says it owns.

Rack awareness (KIP-881) is not modelled. Every function is pure and deterministic: members
are visited in a fixed order and partitions are sorted wherever Kafka iterates a hash map.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import ClassVar

from protocols.types import TopicPartition

__all__ = [
    "ASSIGNORS",
    "Assignor",
    "CooperativeStickyAssignor",
    "DEFAULT_GENERATION",
    "MemberSubscription",
    "PartitionsByMember",
    "RangeAssignor",
    "RebalanceProtocol",
    "RoundRobinAssignor",
    "StickyAssignor",
    "UnknownAssignor",
    "check_strategy",
    "default_strategy",
    "member_order",
    "range_assign",
    "rebalance_protocol",
    "round_robin_assign",
    "sticky_assign",
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


def _result(
    members: Sequence[MemberSubscription], assigned: Mapping[str, Iterable[TopicPartition]]
) -> PartitionsByMember:
    """Every member, in member order, with its partitions sorted (empty when it got none)."""
    return {m.member_id: tuple(sorted(assigned.get(m.member_id, ()))) for m in member_order(members)}


def _check_unique(members: Sequence[MemberSubscription]) -> None:
    ids = [m.member_id for m in members]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate member ids: {sorted(ids)}")


def _subscribed_partitions(
    partitions_per_topic: Mapping[str, int], members: Sequence[MemberSubscription]
) -> list[TopicPartition]:
    """Every partition of every topic some member subscribes to, sorted by topic then partition
    (`AbstractPartitionAssignor.partitions`); topics without metadata have none."""
    topics = sorted({t for m in members for t in m.topics if t in partitions_per_topic})
    return [TopicPartition(t, p) for t in topics for p in range(partitions_per_topic[t])]


# --------------------------------------------------------------------------- range, roundrobin


def range_assign(
    partitions_per_topic: Mapping[str, int], members: Sequence[MemberSubscription]
) -> PartitionsByMember:
    """`RangeAssignor.assign`: topic by topic, each subscriber in member order takes the next
    `P // C` consecutive partitions, the first `P % C` of them one more."""
    _check_unique(members)
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
    return _result(members, assigned)


def round_robin_assign(
    partitions_per_topic: Mapping[str, int], members: Sequence[MemberSubscription]
) -> PartitionsByMember:
    """`RoundRobinAssignor.assign`: all partitions, sorted, dealt one by one round a circle of
    the members in member order, skipping a member not subscribed to the partition's topic."""
    _check_unique(members)
    assigned: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
    ordered = member_order(members)
    position = 0  # the circular iterator's next member
    for tp in _subscribed_partitions(partitions_per_topic, members):
        while tp.topic not in ordered[position].topics:  # some member subscribes to it
            position = (position + 1) % len(ordered)
        assigned[ordered[position].member_id].append(tp)
        position = (position + 1) % len(ordered)
    return _result(members, assigned)


# --------------------------------------------------------------------------- sticky


def _valid_owned(
    partitions_per_topic: Mapping[str, int], members: Sequence[MemberSubscription]
) -> tuple[dict[str, list[TopicPartition]], set[TopicPartition]]:
    """`AbstractStickyAssignor.allSubscriptionsEqual`'s validation of the owned partitions.

    A partition claimed by members of different generations stays with the highest generation;
    one claimed by two members of the same generation is taken from both and returned in the
    second value. Claims on topics the member no longer subscribes to, or on partitions that do
    not exist, are dropped. Kafka visits the members in hash-map order; here in member id order.
    """
    owned: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
    generation = {m.member_id: m.generation_id for m in members}
    claimed_by: dict[TopicPartition, str] = {}
    multiply_claimed: set[TopicPartition] = set()
    for member in sorted(members, key=lambda m: m.member_id):
        for tp in member.owned_partitions:
            if tp.topic not in member.topics or not 0 <= tp.partition < partitions_per_topic.get(tp.topic, 0):
                continue  # unsubscribed, or gone with its topic
            other = claimed_by.get(tp)
            if other is None:
                owned[member.member_id].append(tp)
                claimed_by[tp] = member.member_id
            elif generation[other] == member.generation_id:
                multiply_claimed.add(tp)
                if tp in owned[other]:
                    owned[other].remove(tp)
                claimed_by[tp] = member.member_id
            elif member.generation_id > generation[other]:
                owned[member.member_id].append(tp)
                if tp in owned[other]:
                    owned[other].remove(tp)
                claimed_by[tp] = member.member_id
            # else: the other member's claim is of a newer generation and stands
    return owned, multiply_claimed


def _constrained_assign(
    all_partitions: Sequence[TopicPartition],
    members: Sequence[MemberSubscription],
    owned: Mapping[str, list[TopicPartition]],
    multiply_claimed: set[TopicPartition],
    *,
    sort_owned_partitions: bool,
) -> tuple[dict[str, list[TopicPartition]], dict[TopicPartition, str]]:
    """`AbstractStickyAssignor.ConstrainedAssignmentBuilder.build`, for members with equal
    subscriptions; also returns the partitions that change owner, with their new owner
    (`partitionsTransferringOwnership`).

    Each member keeps up to its quota of its owned partitions (`assignOwnedPartitions`): at most
    `P % C` members keep `ceil(P / C)`, the others `P // C`. The unassigned partitions, sorted,
    then go round the members below `P // C`, and once those are full, one each to the members
    that may still reach `ceil(P / C)` (`assignRoundRobin`).
    """
    total, count = len(all_partitions), len(members)
    min_quota, max_quota = total // count, -(-total // count)
    expected_over_min = total % count
    current_over_min = 0

    assignment: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
    kept: set[TopicPartition] = set()
    revoked: set[TopicPartition] = set()
    under_min: list[str] = []
    exactly_min: list[str] = []
    for member_id in sorted(assignment):  # Kafka: hash-map order
        partitions = owned[member_id]
        if sort_owned_partitions:  # KAFKA-16277 (3.7.1, 3.8.0): by partition number, then topic
            partitions = sorted(partitions, key=lambda tp: (tp.partition, tp.topic))
        partitions = [tp for tp in partitions if tp not in multiply_claimed]
        if len(partitions) < min_quota:
            keep = partitions
            under_min.append(member_id)
        elif len(partitions) >= max_quota and current_over_min < expected_over_min:
            keep = partitions[:max_quota]
            current_over_min += 1
            if current_over_min == expected_over_min:
                exactly_min.clear()  # no other member may go above minQuota now
        else:
            keep = partitions[:min_quota]
            if current_over_min < expected_over_min:
                exactly_min.append(member_id)
        assignment[member_id].extend(keep)
        kept.update(keep)
        revoked.update(partitions[len(keep) :])

    under_min.sort()
    exactly_min.sort()
    transferring: dict[TopicPartition, str] = {}
    position = 0  # an iterator over under_min, restarted when it runs out
    for tp in (tp for tp in all_partitions if tp not in kept):
        from_under_min = True
        if position < len(under_min):
            member_id = under_min[position]
            position += 1
        elif under_min:
            member_id, position = under_min[0], 1
        elif exactly_min:
            member_id, from_under_min = exactly_min.pop(0), False
        else:
            raise AssertionError(f"no member can take {tp}: the quotas are inconsistent")
        assignment[member_id].append(tp)
        # Owned by someone before, so it changes owner (the member's own were all kept above).
        if tp in revoked or tp in multiply_claimed:
            transferring[tp] = member_id
        if len(assignment[member_id]) == min_quota and from_under_min:
            position -= 1
            del under_min[position]
            exactly_min.append(member_id)
    return assignment, transferring


def _general_assign(
    partitions_per_topic: Mapping[str, int],
    members: Sequence[MemberSubscription],
    owned: Mapping[str, list[TopicPartition]],
) -> dict[str, list[TopicPartition]]:
    """A balancing assignment for members with different subscriptions.

    Simpler than Kafka's `GeneralAssignmentBuilder` (`generalAssign`, with its partition
    movement bookkeeping): every member keeps all its valid owned partitions; each unassigned
    partition, topics with the fewest subscribers first (Kafka's `TopicComparator`), goes to the
    subscriber with the fewest partitions; then, while some member has at least two partitions
    more than another subscriber of one of its partitions' topics, one partition moves from the
    fullest such member (a partition it did not own first) to the emptiest. Every move lowers the
    sum of the squared counts, so this ends, at an assignment no single move can balance better.
    Ties are broken by member id, so the result is deterministic.
    """
    assignment = {m.member_id: list(owned[m.member_id]) for m in members}
    subscribers: dict[str, list[str]] = {}
    for member in sorted(members, key=lambda m: m.member_id):
        for topic in sorted(set(member.topics)):
            if topic in partitions_per_topic:
                subscribers.setdefault(topic, []).append(member.member_id)

    taken = {tp for partitions in assignment.values() for tp in partitions}
    topics = sorted(subscribers, key=lambda t: (len(subscribers[t]), t))
    for tp in (TopicPartition(t, p) for t in topics for p in range(partitions_per_topic[t])):
        if tp not in taken:
            target = min(subscribers[tp.topic], key=lambda c: (len(assignment[c]), c))
            assignment[target].append(tp)

    owned_sets = {member_id: set(partitions) for member_id, partitions in owned.items()}
    while True:
        move = _balancing_move(assignment, subscribers, owned_sets)
        if move is None:
            return assignment
        tp, source, target = move
        assignment[source].remove(tp)
        assignment[target].append(tp)


def _balancing_move(
    assignment: Mapping[str, list[TopicPartition]],
    subscribers: Mapping[str, list[str]],
    owned: Mapping[str, set[TopicPartition]],
) -> tuple[TopicPartition, str, str] | None:
    """The first partition that can move to a member holding at least two fewer, or None."""
    for source in sorted(assignment, key=lambda c: (-len(assignment[c]), c)):
        size = len(assignment[source])
        # Partitions the member did not own before move first, to keep the owned ones in place.
        for tp in sorted(assignment[source], key=lambda tp: (tp in owned[source], tp)):
            targets = [c for c in subscribers[tp.topic] if len(assignment[c]) <= size - 2]
            if targets:
                return tp, source, min(targets, key=lambda c: (len(assignment[c]), c))
    return None


def _transferring_ownership(
    members: Sequence[MemberSubscription], assignment: Mapping[str, list[TopicPartition]]
) -> dict[TopicPartition, str]:
    """`CooperativeStickyAssignor.computePartitionsTransferringOwnership`: each partition given
    to a member that did not list it as owned, while a member that did list it loses it."""
    added: dict[TopicPartition, str] = {}
    revoked: set[TopicPartition] = set()
    for member in members:
        assigned, owned = set(assignment[member.member_id]), set(member.owned_partitions)
        added.update((tp, member.member_id) for tp in sorted(assigned - owned))
        revoked.update(owned - assigned)
    return {tp: member_id for tp, member_id in added.items() if tp in revoked}


def sticky_assign(
    partitions_per_topic: Mapping[str, int],
    members: Sequence[MemberSubscription],
    *,
    cooperative: bool,
    sort_owned_partitions: bool = True,
) -> PartitionsByMember:
    """`AbstractStickyAssignor.assign`: a balanced assignment that moves as few owned partitions
    as it can; with `cooperative`, `CooperativeStickyAssignor.assign`.

    With equal subscriptions it is Kafka's `constrainedAssign`; otherwise a simpler balancing
    than Kafka's `generalAssign` (see `_general_assign`). The cooperative assignor then takes
    from its new owner every partition that another member still owns (`adjustAssignment`): the
    owner revokes it after this rebalance, and the follow-up rebalance assigns it (KIP-429).
    `sort_owned_partitions` is KAFKA-16277 (3.7.1, 3.8.0); before it, a member kept the first of
    its owned partitions in the order its subscription listed them.
    """
    _check_unique(members)
    if not members:
        return {}
    owned, multiply_claimed = _valid_owned(partitions_per_topic, members)
    if len({frozenset(m.topics) for m in members}) == 1:
        all_partitions = _subscribed_partitions(partitions_per_topic, members)
        assignment, transferring = _constrained_assign(
            all_partitions, members, owned, multiply_claimed, sort_owned_partitions=sort_owned_partitions
        )
    else:
        assignment = _general_assign(partitions_per_topic, members, owned)
        transferring = _transferring_ownership(members, assignment) if cooperative else {}
    if cooperative:
        for tp, member_id in transferring.items():
            assignment[member_id].remove(tp)
    return _result(members, assignment)


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

    def assign(
        self, partitions_per_topic: Mapping[str, int], members: Sequence[MemberSubscription]
    ) -> PartitionsByMember:
        return sticky_assign(
            partitions_per_topic, members, cooperative=True, sort_owned_partitions=self.sort_owned_partitions
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
