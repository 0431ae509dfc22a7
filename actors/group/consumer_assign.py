"""The consumer group's target assignment (`GroupMetadataManager.updateTargetAssignment`,
`TargetAssignmentBuilder`, 3.9).

The server assignor is the one most of the members ask for (`computePreferredServerAssignor`;
a tie goes to the smallest name, where Kafka takes a hash map's order), else the first of the
broker's `group.consumer.assignors`. The assignor sees each member's subscription, cut to the
topics that exist (`computeSubscriptionMetadata`: a topic the metadata lacks has no
partitions), and its current target, from which the uniform assignor is sticky.
"""

from __future__ import annotations

from actors.core import Out
from actors.group.config import GroupCoordinatorConfig
from actors.group.consumer_group import ConsumerGroup, partition_names
from actors.group.consumer_protocol.assignors import AssignorError, MemberSpec, assign

__all__ = ["NotModelledError", "preferred_assignor", "update_target"]


class NotModelledError(RuntimeError):
    """The assignor met a case the model does not cover (the run stops, saying which)."""


def preferred_assignor(asked: list[str | None], default: str) -> str:
    counts: dict[str, int] = {}
    for name in asked:
        if name is not None:
            counts[name] = counts.get(name, 0) + 1
    if not counts:
        return default
    most = max(counts.values())
    return min(name for name, n in counts.items() if n == most)


def update_target(config: GroupCoordinatorConfig, events: Out, group: ConsumerGroup) -> None:
    """A new target for every member at the group's epoch; the assignment epoch follows."""
    m = group.m
    members = group.sorted_members()
    name = preferred_assignor([mm.server_assignor for mm in members], config.consumer_assignors[0])
    partitions = dict(config.topic_partitions)
    specs = {
        mm.member_id: MemberSpec(
            frozenset(t for t in mm.subscribed_topics if t in partitions), m.target.get(mm.member_id, {}), mm.instance_id
        )
        for mm in members
    }
    try:
        target = assign(name, specs, partitions)
    except AssignorError as refused:
        msg = f"group {group.group_id}: the {name} assignor cannot assign: {refused}"
        raise NotModelledError(msg) from refused
    m.target = {mid: {t: ps for t, ps in sorted(a.items()) if ps} for mid, a in sorted(target.items())}
    m.assignment_epoch = m.group_epoch
    events.emit(
        "target_assignment_computed",
        group_id=group.group_id,
        assignment_epoch=m.assignment_epoch,
        assignor=name,
        assignment={mid: partition_names(a) for mid, a in m.target.items()},
    )
