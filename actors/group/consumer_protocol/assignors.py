"""The consumer protocol's server-side assignors: `uniform` (`UniformAssignor`, sticky) and
`range` (`RangeAssignor`, as in 3.7 to 4.1).

Kafka walks members and topics in hash-map order, which no run can reproduce; the model walks
members by member id and topics by name, so an assignment is the same on every run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["ASSIGNORS", "AssignorError", "MemberSpec", "assign", "range_assign", "uniform_assign"]

Assignment = dict[str, frozenset[int]]


class AssignorError(ValueError):
    """The assignor cannot assign (Kafka's `PartitionAssignorException`), or a case the model
    does not cover yet."""


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """One member as the assignor sees it: its subscription and its current target."""

    topics: frozenset[str]
    target: Mapping[str, frozenset[int]] = field(default_factory=dict)
    instance_id: str | None = None


def _partition_count(topic: str, partitions: Mapping[str, int]) -> int:
    if topic not in partitions:
        msg = f"members subscribe to {topic!r}, which the topic metadata lacks"
        raise AssignorError(msg)
    return partitions[topic]


def uniform_assign(members: Mapping[str, MemberSpec], partitions: Mapping[str, int]) -> dict[str, Assignment]:
    """`UniformHomogeneousAssignmentBuilder`: each member keeps what it had of its subscribed
    topics up to its quota (total // members; the first total % members members in order get
    one more), and the partitions no member keeps fill the members below their quota in order."""
    if not members:
        return {}
    order = sorted(members)
    topics = members[order[0]].topics
    if any(members[m].topics != topics for m in order):
        msg = "the uniform assignor's heterogeneous subscriptions (members subscribing to different topics) are not modelled yet"
        raise AssignorError(msg)
    held = {(t, p) for m in order for t, parts in members[m].target.items() for p in parts}
    unassigned: list[tuple[str, int]] = []
    total = 0
    for topic in sorted(topics):
        count = _partition_count(topic, partitions)
        unassigned += [(topic, p) for p in range(count) if (topic, p) not in held]
        total += count
    minimum, extra = divmod(total, len(order))
    result: dict[str, Assignment] = {}
    unfilled: list[tuple[str, int]] = []
    for member in order:
        quota = minimum + (1 if extra > 0 else 0)
        extra -= 1 if extra > 0 else 0
        kept: Assignment = {}
        for topic in sorted(members[member].target):
            if topic not in topics:
                continue  # unsubscribed: the whole topic goes
            parts = sorted(members[member].target[topic])
            kept[topic] = frozenset(parts[:quota])
            unassigned += [(topic, p) for p in parts[quota:]]
            quota -= len(kept[topic])
            if not kept[topic]:
                del kept[topic]
        result[member] = kept
        if quota > 0:
            unfilled.append((member, quota))
    taken = 0
    for member, quota in unfilled:
        grown = {t: set(ps) for t, ps in result[member].items()}
        for topic, p in unassigned[taken : taken + quota]:
            grown.setdefault(topic, set()).add(p)
        taken += min(quota, len(unassigned) - taken)
        result[member] = {t: frozenset(ps) for t, ps in sorted(grown.items())}
    if taken < len(unassigned):
        msg = "partitions were left unassigned"
        raise AssignorError(msg)
    return result


def range_assign(members: Mapping[str, MemberSpec], partitions: Mapping[str, int]) -> dict[str, Assignment]:
    """`RangeAssignor`: per topic, its subscribers in order (static members first by instance
    id, then the others by member id) take consecutive ranges, the first partitions % members
    of them one partition more. Not sticky: the ranges follow the order alone."""
    order = sorted(members, key=lambda m: (members[m].instance_id is None, members[m].instance_id or m))
    subscribers: dict[str, int] = {}
    for member in order:
        for topic in members[member].topics:
            subscribers[topic] = subscribers.get(topic, 0) + 1
    next_start = {topic: 0 for topic in subscribers}
    extra = {topic: _partition_count(topic, partitions) % n for topic, n in subscribers.items()}
    result: dict[str, Assignment] = {}
    for member in order:
        assignment: Assignment = {}
        for topic in sorted(members[member].topics):
            count = partitions[topic]
            quota = count // subscribers[topic] + (1 if extra[topic] > 0 else 0)
            extra[topic] -= 1 if extra[topic] > 0 else 0
            start = next_start[topic]
            end = min(start + quota, count)
            next_start[topic] = end
            if start < end:
                assignment[topic] = frozenset(range(start, end))
        result[member] = assignment
    return result


ASSIGNORS = {"uniform": uniform_assign, "range": range_assign}


def assign(name: str, members: Mapping[str, MemberSpec], partitions: Mapping[str, int]) -> dict[str, Assignment]:
    """The target assignment by the assignor `name` (one of `group.consumer.assignors`)."""
    if name not in ASSIGNORS:
        msg = f"{name!r} is not a server-side assignor (uniform, range)"
        raise AssignorError(msg)
    return ASSIGNORS[name](members, partitions)
