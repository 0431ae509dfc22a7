"""`AbstractStickyAssignor`'s algorithm, which `sticky` and `cooperative-sticky` run: a balanced
assignment that moves as few owned partitions as it can.

With equal subscriptions it is Kafka's `constrainedAssign`; otherwise a simpler balancing than
Kafka's `generalAssign`. Every function is pure and deterministic: members are visited in a
fixed order and partitions are sorted wherever Kafka iterates a hash map.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from actors.consumer.assignment import (
    MemberSubscription,
    PartitionsByMember,
    assignment_result,
    check_unique,
    subscribed_partitions,
)
from protocols.types import TopicPartition

__all__ = ["ignored_older_claims", "sticky_assign"]


def _claims(partitions_per_topic: Mapping[str, int], member: MemberSubscription) -> list[TopicPartition]:
    """The member's owned partitions that still count: claims on topics it no longer
    subscribes to, or on partitions that do not exist, are dropped."""
    return [
        tp
        for tp in member.owned_partitions
        if tp.topic in member.topics and 0 <= tp.partition < partitions_per_topic.get(tp.topic, 0)
    ]


def ignored_older_claims(
    partitions_per_topic: Mapping[str, int], members: Sequence[MemberSubscription]
) -> dict[str, list[TopicPartition]]:
    """The claims the validation before KAFKA-14639's fix (2.6.0 to 3.4.0) throws away: every
    claim of a member whose generation is below the highest one reported, by member id (only
    members with such claims)."""
    if not members:
        return {}
    highest = max(m.generation_id for m in members)
    ignored = {m.member_id: _claims(partitions_per_topic, m) for m in members if m.generation_id < highest}
    return {member_id: claims for member_id, claims in sorted(ignored.items()) if claims}


def _valid_owned(
    partitions_per_topic: Mapping[str, int], members: Sequence[MemberSubscription], *, older_generation_claims: bool = True
) -> tuple[dict[str, list[TopicPartition]], set[TopicPartition]]:
    """`AbstractStickyAssignor.allSubscriptionsEqual`'s validation of the owned partitions.

    A partition claimed by members of different generations stays with the highest generation;
    one claimed by two members of the same generation is taken from both and returned in the
    second value. Kafka visits the members in hash-map order; here in member id order.
    Without `older_generation_claims` (2.6.0 to 3.4.0, KAFKA-9987's validation until
    KAFKA-14639's fix) only the members of the highest generation reported keep any claim: an
    older member's partitions count as free, so nothing withholds them from a new owner while
    it still holds them.
    """
    owned: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
    generation = {m.member_id: m.generation_id for m in members}
    highest = max(generation.values(), default=0)
    claimed_by: dict[TopicPartition, str] = {}
    multiply_claimed: set[TopicPartition] = set()
    for member in sorted(members, key=lambda m: m.member_id):
        if not older_generation_claims and member.generation_id < highest:
            continue
        for tp in _claims(partitions_per_topic, member):
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
    older_generation_claims: bool = True,
) -> PartitionsByMember:
    """`AbstractStickyAssignor.assign`: a balanced assignment that moves as few owned partitions
    as it can; with `cooperative`, `CooperativeStickyAssignor.assign`.

    With equal subscriptions it is Kafka's `constrainedAssign`; otherwise a simpler balancing
    than Kafka's `generalAssign` (see `_general_assign`). The cooperative assignor then takes
    from its new owner every partition that another member still owns (`adjustAssignment`): the
    owner revokes it after this rebalance, and the follow-up rebalance assigns it (KIP-429).
    `sort_owned_partitions` is KAFKA-16277 (3.7.1, 3.8.0); before it, a member kept the first of
    its owned partitions in the order its subscription listed them. `older_generation_claims`
    is KAFKA-14639's fix (3.4.1, 3.5.0; see `_valid_owned`).
    """
    check_unique(members)
    if not members:
        return {}
    owned, multiply_claimed = _valid_owned(partitions_per_topic, members, older_generation_claims=older_generation_claims)
    if len({frozenset(m.topics) for m in members}) == 1:
        all_partitions = subscribed_partitions(partitions_per_topic, members)
        assignment, transferring = _constrained_assign(
            all_partitions, members, owned, multiply_claimed, sort_owned_partitions=sort_owned_partitions
        )
    else:
        assignment = _general_assign(partitions_per_topic, members, owned)
        transferring = _transferring_ownership(members, assignment) if cooperative else {}
    if cooperative:
        for tp, member_id in transferring.items():
            assignment[member_id].remove(tp)
    return assignment_result(members, assignment)
