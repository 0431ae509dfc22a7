"""OffsetCommit, OffsetFetch and offset retention (`GroupCoordinator.handleCommitOffsets` and
`handleFetchOffsets`, `GroupMetadataManager.storeOffsets`, `getOffsets` and
`cleanupGroupMetadata`, 3.9).

An OffsetCommit naming no partition never reaches the coordinator: the broker answers it at
once with an empty response (`KafkaApis.handleOffsetCommitRequest`). A valid commit is staged
(`prepareOffsetCommit`) and appended with acks=-1; it becomes visible to OffsetFetch only once
the append succeeds, and the client is answered then. A failed append
drops the staged offset, though its record may already be in the log and come back when a new
coordinator loads the partition. A commit in Stable or PreparingRebalance also counts as the
member's heartbeat.

OffsetFetch serves the applied offsets and -1 where there is none. Kafka 2.5+ answers a
partition whose commit is still in flight with UNSTABLE_OFFSET_COMMIT when the request sets
`require_stable` (KIP-447); the response here has no per-partition error, so that partition is
answered with its last applied offset: the pending commit is invisible.

A commit to a consumer group (KIP-848) is checked by `epochs.offset_commit_error`: the member
must be known (UNKNOWN_MEMBER_ID) and name its current member epoch in the generation field
(STALE_MEMBER_EPOCH); epoch -1 from outside the group is stored only while it has no members.
It does not count as a heartbeat. OffsetFetch to a consumer group is checked the same way
(`epochs.offset_fetch_error`, v9): a request naming a member must name a known one at its
current epoch; one naming nobody (epoch -1) is answered, as an admin tool's is.

Retention runs every `offsets.retention.check.interval.ms`: expired offsets (`rules.expired_offsets`)
leave the cache and get tombstones (acks=0, as Kafka writes them), and an Empty group left with
no offsets is removed (Dead), with a group tombstone if it ever had a generation.
"""

from __future__ import annotations

from actors.core import Ctx, Inbound, Out
from actors.group.consumer_group import ConsumerGroup
from actors.group.consumer_protocol.epochs import CommitMember
from actors.group.consumer_protocol.states import ConsumerGroupState
from actors.group.consumer_protocol.epochs import offset_commit_error as consumer_commit_error
from actors.group.consumer_protocol.epochs import offset_fetch_error as consumer_fetch_error
from actors.group.consumer_records import group_tombstone as consumer_group_tombstone
from actors.group.manager import GroupManager, PendingCommit, timer_key
from actors.group.records import group_tombstone, offset_record, offset_tombstone
from actors.group.rules import expired_offsets, offset_commit_error, store_offsets_error
from actors.group.state import ClassicGroup, CommittedOffset, GroupState, as_classic
from protocols.errors import ErrorCode
from protocols.group import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchPartition,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchTopic,
    PartitionError,
)
from protocols.types import TopicPartition

__all__ = ["on_commit_appended", "on_offset_commit", "on_offset_fetch", "on_retention_timer"]

S = GroupState
E = ErrorCode


def on_offset_commit(m: GroupManager, ctx: Ctx, out: Out, inbound: Inbound, req: OffsetCommitRequest) -> None:
    if not any(t.partitions for t in req.topics):
        # `KafkaApis.handleOffsetCommitRequest` answers a request with no partition at once,
        # empty, without the coordinator: no validation, no heartbeat, nothing logged.
        out.reply(inbound, OffsetCommitResponse(()))
        return
    offsets = [
        (TopicPartition(t.name, p.partition), p.committed_offset, p.committed_leader_epoch)
        for t in req.topics
        for p in t.partitions
    ]
    instance = req.group_instance_id if m.config.profile.static_membership else None
    error = m.status_error(req.group_id, offsets_api=True)
    consumer = m.consumer_group(req.group_id)
    if error is E.NONE and consumer is not None:
        error = consumer_commit_error(_commit_members(consumer), req.member_id, req.generation_id)
        if error is E.NONE:
            _stage(m, ctx, out, inbound, req, consumer, offsets, consumer.state.value)
            return
    group = m.classic_group(req.group_id)
    if error is E.NONE and consumer is None:
        if group is None and req.generation_id < 0:
            group = m.create_classic_group(out, req.group_id, ctx.now_ms)  # a standalone group
        error = offset_commit_error(
            group, req.generation_id, req.member_id, instance,
            unmanaged_to_empty=m.config.profile.unmanaged_commit_to_empty_group,
        )
    if error is not E.NONE or group is None:
        epoch = m.owned.get(m.partition_for(req.group_id))
        _answer(out, inbound, req.group_id, req.member_id, req.generation_id, offsets, error, coordinator_epoch=epoch)
        return
    if group.state in (S.STABLE, S.PREPARING_REBALANCE):
        m.schedule_session(out, group, group.members[req.member_id])
    _stage(m, ctx, out, inbound, req, group, offsets, group.state.value)


def _commit_members(group: ConsumerGroup) -> dict[str, CommitMember]:
    """What the commit and fetch checks read of a consumer group's members."""
    return {mm.member_id: CommitMember(mm.member_epoch, mm.classic is not None) for mm in group.sorted_members()}


def _stage(
    m: GroupManager,
    ctx: Ctx,
    out: Out,
    inbound: Inbound,
    req: OffsetCommitRequest,
    group: ClassicGroup | ConsumerGroup,
    offsets: list[tuple[TopicPartition, int, int]],
    state: str,
) -> None:
    """`prepareOffsetCommit`, then the append; its answer waits for the append."""
    values = []
    for tp, offset, leader_epoch in offsets:
        values.append(offset_record(group.group_id, tp, offset, leader_epoch, ctx.now_ms))
        group.pending_offset_commits[tp] = (offset, leader_epoch, ctx.now_ms)
    epoch = m.owned.get(m.partition_for(group.group_id))
    pending = PendingCommit(group, inbound, req.member_id, req.generation_id, offsets, ctx.now_ms, state, epoch)
    m.append(out, group.group_id, tuple(values), pending)


def on_commit_appended(out: Out, commit: PendingCommit, append_error: ErrorCode, base_offset: int) -> None:
    """`putCacheCallback`: apply (or drop) the staged offsets, then answer the client."""
    group = commit.group
    for tp, offset, leader_epoch in commit.offsets:
        staged = (offset, leader_epoch, commit.commit_ms)
        if group.is_dead():
            continue
        if append_error is E.NONE and tp in group.pending_offset_commits:
            current = group.offsets.get(tp)
            if current is None or current.record_offset < base_offset:
                group.offsets[tp] = CommittedOffset(offset, leader_epoch, commit.commit_ms, base_offset)
        if group.pending_offset_commits.get(tp) == staged:
            del group.pending_offset_commits[tp]
    error = store_offsets_error(append_error)
    _answer(
        out, commit.inbound, group.group_id, commit.member_id, commit.generation_id, commit.offsets, error,
        commit.group_state, commit.coordinator_epoch,
    )


def _answer(
    out: Out,
    inbound: Inbound,
    group_id: str,
    member_id: str,
    generation_id: int,
    offsets: list[tuple[TopicPartition, int, int]],
    error: ErrorCode,
    group_state: str | None = None,
    coordinator_epoch: int | None = None,
) -> None:
    out.reply(inbound, OffsetCommitResponse(tuple(PartitionError(tp.topic, tp.partition, error) for tp, _, _ in offsets)))
    out.emit(
        "offset_commit_completed",
        group_id=group_id,
        member_id=member_id,
        generation_id=generation_id,
        offsets=sorted([tp.topic, tp.partition, offset] for tp, offset, _ in offsets),
        error=error.name,
        group_state=group_state,
        coordinator_epoch=coordinator_epoch,
    )


def on_offset_fetch(m: GroupManager, out: Out, inbound: Inbound, req: OffsetFetchRequest) -> None:
    """`handleFetchOffsets`/`getOffsets`: the applied offsets of the partitions asked for (all
    of the group's when none are named), -1 where there is none."""
    error = m.status_error(req.group_id, offsets_api=True)
    consumer = m.consumer_group(req.group_id)
    if error is E.NONE and consumer is not None:
        error = consumer_fetch_error(_commit_members(consumer), req.member_id, req.member_epoch)
    if error is not E.NONE:
        out.reply(inbound, OffsetFetchResponse(error))
        return
    group = m.groups.get(req.group_id)
    committed = {} if group is None else group.offsets  # type: ignore[attr-defined]
    if req.topics:
        wanted = [(t.topic, t.partitions) for t in req.topics]
    else:
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(committed):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        wanted = [(topic, tuple(ps)) for topic, ps in by_topic.items()]
    topics = []
    for topic, partitions in wanted:
        answers = []
        for partition in partitions:
            found = committed.get(TopicPartition(topic, partition))
            if found is None:
                answers.append(OffsetFetchPartition(partition))
            else:
                answers.append(OffsetFetchPartition(partition, found.offset, found.leader_epoch))
        topics.append(OffsetFetchTopic(topic, tuple(answers)))
    out.reply(inbound, OffsetFetchResponse(E.NONE, tuple(topics)))


def on_retention_timer(m: GroupManager, ctx: Ctx, out: Out) -> None:
    """`cleanupGroupMetadata` over every loaded group, in group-id order."""
    config = m.config
    for group_id in sorted(m.groups):
        if isinstance(m.groups[group_id], ConsumerGroup):
            _consumer_group_retention(m, ctx, out, m.groups[group_id])  # type: ignore[arg-type]
            continue
        group = as_classic(m.groups[group_id])
        expired = expired_offsets(
            group, ctx.now_ms, config.offsets_retention_ms, expire_when_empty=config.profile.offsets_expire_when_empty
        )
        for tp in expired:
            del group.offsets[tp]
        tombstones = [offset_tombstone(group_id, tp) for tp in expired]
        if expired:
            out.emit("offsets_expired", group_id=group_id, partitions=[str(tp) for tp in expired])
        if group.is_(S.EMPTY) and not group.has_offsets():
            _remove_group(m, ctx, out, group)
            if group.generation_id > 0:
                tombstones.append(group_tombstone(group_id))
        if tombstones:
            m.append(out, group_id, tuple(tombstones), None)
    out.set_timer(timer_key("retention"), config.offsets_retention_check_interval_ms)


def _remove_group(m: GroupManager, ctx: Ctx, out: Out, group: ClassicGroup) -> None:
    group.transition_to(S.DEAD, out, ctx.now_ms)
    del m.groups[group.group_id]


def _consumer_group_retention(m: GroupManager, ctx: Ctx, out: Out, group: ConsumerGroup) -> None:
    """A consumer group's offsets expire the retention after their commit, except those of
    topics a member subscribes to (`ConsumerGroup.offsetExpirationCondition`,
    `isSubscribedToTopic`); an Empty group left with none is deleted."""
    subscribed = group.subscribed_topics()
    expired = [
        tp
        for tp, c in sorted(group.offsets.items())
        if tp.topic not in subscribed
        and tp not in group.pending_offset_commits
        and ctx.now_ms - c.commit_ms >= m.config.offsets_retention_ms
    ]
    for tp in expired:
        del group.offsets[tp]
    tombstones = [offset_tombstone(group.group_id, tp) for tp in expired]
    if expired:
        out.emit("offsets_expired", group_id=group.group_id, partitions=[str(tp) for tp in expired])
    if not group.m.members and not group.has_offsets() and group.group_id not in m.consumer_writes:
        group.transition(out, ConsumerGroupState.DEAD, ctx.now_ms)
        del m.groups[group.group_id]
        tombstones.append(consumer_group_tombstone(group.group_id))
    if tombstones:
        m.append(out, group.group_id, tuple(tombstones), None)
