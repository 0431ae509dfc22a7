"""The operator's requests to the coordinator: DescribeGroups, ListGroups, DeleteGroups and
OffsetDelete (`GroupCoordinator.handleDescribeGroup`, `handleListGroups`, `handleDeleteGroups`,
`handleDeleteOffsets`, and `GroupMetadataManager.cleanupGroupMetadata`, 3.9).

- DescribeGroups: each group's state, protocol type and members (client id and host); the
  chosen protocol and each member's assignment only while Stable (`GroupMetadata.summary`). A
  group this coordinator does not hold is described as Dead with no members, without error.
- ListGroups: every group this coordinator holds, with its state (COORDINATOR_LOAD_IN_PROGRESS
  while a partition loads, with the groups already loaded).
- DeleteGroups (KIP-229): an Empty group goes Dead, its offsets are removed and it leaves the
  cache; Dead or unknown is GROUP_ID_NOT_FOUND; any other state NON_EMPTY_GROUP.
- OffsetDelete (KIP-496): an Empty group loses the offsets asked for; a consumer group with
  members keeps those of the topics it subscribes to (GROUP_SUBSCRIBED_TO_TOPIC for each such
  partition) and loses the others; a group whose subscription is unknown counts as subscribed
  to everything; a non-consumer group with members is NON_EMPTY_GROUP.

A consumer group (KIP-848): DescribeGroups describes it as Dead with no members, as 3.9's
coordinator does (its members are ConsumerGroupDescribe's, not modelled); ListGroups lists it
with protocol type "consumer" and its state; DeleteGroups deletes it when Empty (else
NON_EMPTY_GROUP); OffsetDelete keeps the offsets of topics a member subscribes to.

Removed offsets get tombstones, written with acks=0 as Kafka writes them (a lost one is written
again by the next sweep in Kafka; here nothing reads them but a reload). An Empty group left
without offsets goes Dead and leaves the cache, with a group tombstone if it ever had a
generation. Every answer is immediate: nothing waits for the tombstones.
"""

from __future__ import annotations

from collections.abc import Iterable

from actors.core import Ctx, Inbound, Out
from actors.group.consumer_group import ConsumerGroup
from actors.group.consumer_protocol.states import ConsumerGroupState
from actors.group.consumer_records import group_tombstone as consumer_group_tombstone
from actors.group.manager import GroupManager
from actors.group.records import group_tombstone, offset_tombstone
from actors.group.state import ClassicGroup, GroupState, as_classic
from protocols.admin import (
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
)
from protocols.errors import ErrorCode
from protocols.group import Assignment, PartitionError
from protocols.types import TopicPartition

__all__ = [
    "cleanup_group_metadata",
    "offset_delete_errors",
    "on_delete_groups",
    "on_describe_groups",
    "on_list_groups",
    "on_offset_delete",
]

S = GroupState
E = ErrorCode


def on_describe_groups(m: GroupManager, out: Out, inbound: Inbound, req: DescribeGroupsRequest) -> None:
    described = []
    for group_id in req.groups:
        error = m.status_error(group_id, offsets_api=True)
        group = m.classic_group(group_id)
        if error is not E.NONE:
            described.append(DescribedGroup(error, group_id, ""))
        elif group is None:
            described.append(DescribedGroup(E.NONE, group_id, S.DEAD.value))
        else:
            described.append(_summary(group))
    out.reply(inbound, DescribeGroupsResponse(tuple(described)))


def _summary(group: ClassicGroup) -> DescribedGroup:
    """`GroupMetadata.summary`: metadata and assignments only while Stable."""
    stable = group.is_(S.STABLE)
    members = tuple(
        DescribedGroupMember(
            member.member_id,
            member.group_instance_id,
            member.client_id,
            member.client_host,
            member.assignment if stable else Assignment(),
        )
        for member in group.sorted_members()
    )
    protocol = (group.protocol_name or "") if stable else ""
    return DescribedGroup(E.NONE, group.group_id, group.state.value, group.protocol_type or "", protocol, members)


def on_list_groups(m: GroupManager, out: Out, inbound: Inbound, req: ListGroupsRequest) -> None:
    error = E.COORDINATOR_LOAD_IN_PROGRESS if m.loading else E.NONE
    listed = []
    for group_id, group in sorted(m.groups.items()):
        if isinstance(group, ConsumerGroup):
            state = group.state.value
            # The new coordinator compares states without case.
            if not req.states_filter or state.lower() in {f.lower() for f in req.states_filter}:
                listed.append(ListedGroup(group_id, "consumer", state))
            continue
        classic = as_classic(group)
        if req.states_filter and classic.state.value not in req.states_filter:
            continue
        listed.append(ListedGroup(group_id, classic.protocol_type or "", classic.state.value))
    out.reply(inbound, ListGroupsResponse(error, tuple(listed)))


def on_delete_groups(m: GroupManager, ctx: Ctx, out: Out, inbound: Inbound, req: DeleteGroupsRequest) -> None:
    results = []
    for group_id in req.groups_names:
        error = m.status_error(group_id, offsets_api=True)
        consumer = m.consumer_group(group_id)
        if error is E.NONE and consumer is not None:
            error = _delete_consumer_group(m, ctx, out, consumer)
            out.emit("group_deleted", group_id=group_id, error=error.name)
            results.append(DeletableGroupResult(group_id, error))
            continue
        group = m.classic_group(group_id)
        if error is E.NONE:
            if group is None or group.is_(S.DEAD):
                error = E.GROUP_ID_NOT_FOUND
            elif not group.is_(S.EMPTY):
                error = E.NON_EMPTY_GROUP
        if error is E.NONE and group is not None:
            group.transition_to(S.DEAD, out, ctx.now_ms)
            cleanup_group_metadata(m, ctx, out, group, sorted(group.offsets))
        out.emit("group_deleted", group_id=group_id, error=error.name)
        results.append(DeletableGroupResult(group_id, error))
    out.reply(inbound, DeleteGroupsResponse(tuple(results)))


def _delete_consumer_group(m: GroupManager, ctx: Ctx, out: Out, group: ConsumerGroup) -> ErrorCode:
    """`ConsumerGroup.validateDeleteGroup`: only an Empty group; its offsets and its records go."""
    if group.state is not ConsumerGroupState.EMPTY or group.group_id in m.consumer_writes:
        return E.NON_EMPTY_GROUP
    group.transition(out, ConsumerGroupState.DEAD, ctx.now_ms)
    removed = sorted(group.offsets)
    group.offsets, group.pending_offset_commits = {}, {}
    del m.groups[group.group_id]
    tombstones = [offset_tombstone(group.group_id, tp) for tp in removed]
    m.append(out, group.group_id, (*tombstones, consumer_group_tombstone(group.group_id)), None)
    return E.NONE


def offset_delete_errors(group: ClassicGroup, partitions: Iterable[TopicPartition]) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
    """The group's error, or each partition's: NONE to delete, GROUP_SUBSCRIBED_TO_TOPIC to keep."""
    if group.is_(S.DEAD):
        return E.GROUP_ID_NOT_FOUND, {}
    if group.is_(S.EMPTY):
        return E.NONE, dict.fromkeys(partitions, E.NONE)
    if group.protocol_type != "consumer":
        return E.NON_EMPTY_GROUP, {}
    subscribed = group.subscribed_topics  # None: unknown, so every topic counts as subscribed
    return E.NONE, {
        tp: E.GROUP_SUBSCRIBED_TO_TOPIC if subscribed is None or tp.topic in subscribed else E.NONE
        for tp in partitions
    }


def on_offset_delete(m: GroupManager, ctx: Ctx, out: Out, inbound: Inbound, req: OffsetDeleteRequest) -> None:
    asked = [TopicPartition(t.topic, p) for t in req.topics for p in t.partitions]
    error = m.status_error(req.group_id)
    consumer = m.consumer_group(req.group_id)
    if error is E.NONE and consumer is not None:
        _consumer_offset_delete(m, out, inbound, req.group_id, consumer, asked)
        return
    group = m.classic_group(req.group_id)
    answers: dict[TopicPartition, ErrorCode] = {}
    if error is E.NONE:
        if group is None:
            error = E.GROUP_ID_NOT_FOUND
        else:
            error, answers = offset_delete_errors(group, asked)
    if error is not E.NONE or group is None:
        out.emit("group_offsets_deleted", group_id=req.group_id, partitions=_names(asked), error=error.name)
        out.reply(inbound, OffsetDeleteResponse(error))
        return
    deleted = sorted(tp for tp, e in answers.items() if e is E.NONE)
    kept = sorted(tp for tp, e in answers.items() if e is not E.NONE)
    if deleted:
        cleanup_group_metadata(m, ctx, out, group, deleted)
        out.emit("group_offsets_deleted", group_id=req.group_id, partitions=_names(deleted), error=E.NONE.name)
    if kept:
        refused = E.GROUP_SUBSCRIBED_TO_TOPIC.name
        out.emit("group_offsets_deleted", group_id=req.group_id, partitions=_names(kept), error=refused)
    partitions = tuple(PartitionError(tp.topic, tp.partition, answers[tp]) for tp in asked)
    out.reply(inbound, OffsetDeleteResponse(E.NONE, partitions))


def _consumer_offset_delete(
    m: GroupManager, out: Out, inbound: Inbound, group_id: str, group: ConsumerGroup, asked: list[TopicPartition]
) -> None:
    """OffsetDelete on a consumer group: GROUP_SUBSCRIBED_TO_TOPIC for a subscribed topic's
    partitions, the others deleted (the group stays, even with no offsets left)."""
    subscribed = group.subscribed_topics()
    answers = {tp: E.GROUP_SUBSCRIBED_TO_TOPIC if tp.topic in subscribed else E.NONE for tp in asked}
    deleted = sorted(tp for tp, e in answers.items() if e is E.NONE)
    kept = sorted(tp for tp, e in answers.items() if e is not E.NONE)
    removed = [tp for tp in deleted if group.offsets.pop(tp, None) is not None]
    for tp in deleted:
        group.pending_offset_commits.pop(tp, None)
    if removed:
        m.append(out, group_id, tuple(offset_tombstone(group_id, tp) for tp in removed), None)
    if deleted:
        out.emit("group_offsets_deleted", group_id=group_id, partitions=_names(deleted), error=E.NONE.name)
    if kept:
        out.emit("group_offsets_deleted", group_id=group_id, partitions=_names(kept), error=E.GROUP_SUBSCRIBED_TO_TOPIC.name)
    out.reply(inbound, OffsetDeleteResponse(E.NONE, tuple(PartitionError(tp.topic, tp.partition, answers[tp]) for tp in asked)))


def cleanup_group_metadata(m: GroupManager, ctx: Ctx, out: Out, group: ClassicGroup, partitions: list[TopicPartition]) -> None:
    """`cleanupGroupMetadata` with `removeOffsets(partitions)`: the offsets (and commits in
    flight) go, with tombstones; an Empty group left with none goes Dead; a Dead group leaves
    the cache, with a group tombstone if it had a generation."""
    removed = []
    for tp in partitions:
        group.pending_offset_commits.pop(tp, None)
        if group.offsets.pop(tp, None) is not None:
            removed.append(tp)
    if group.is_(S.EMPTY) and not group.has_offsets():
        group.transition_to(S.DEAD, out, ctx.now_ms)
    tombstones = [offset_tombstone(group.group_id, tp) for tp in removed]
    if group.is_(S.DEAD) and m.groups.get(group.group_id) is group:
        del m.groups[group.group_id]
        if group.generation_id > 0:
            tombstones.append(group_tombstone(group.group_id))
    if tombstones:
        m.append(out, group.group_id, tuple(tombstones), None)


def _names(partitions: Iterable[TopicPartition]) -> list[str]:
    return sorted(str(tp) for tp in partitions)
