"""Classic members inside a consumer group (KIP-848's online migration, 3.8+): JoinGroup,
SyncGroup, Heartbeat and LeaveGroup naming a consumer group (`GroupMetadataManager.
classicGroupJoinToConsumerGroup`, `classicGroupSyncToConsumerGroup`,
`classicGroupHeartbeatToConsumerGroup`, `classicGroupLeaveToConsumerGroup`, 3.9).

The coordinator speaks the classic protocol to such a member but runs it through the consumer
group's rules: its JoinGroup is a full heartbeat (subscription from the embedded protocol,
owned partitions from the subscription's `ownedPartitions`), reconciled like any member's, and
answered with its member epoch as the generation and no leader, so the member syncs as a
follower and its SyncGroup answer carries its current assignment. A member still revoking keeps
its old epoch: the client revokes what its assignment lacks and rejoins, and only the JoinGroup
that no longer reports the revoked partitions moves it on. Heartbeat answers
REBALANCE_IN_PROGRESS while the group epoch is ahead of the member's, while it revokes, or once
the partitions it waited for are free, so that it rejoins. Its session timeout is the
JoinGroup's; from a REBALANCE_IN_PROGRESS it has the rebalance timeout to rejoin (join timeout),
and from its JoinGroup answer the rebalance timeout to sync (sync timeout); either fences it.

In 3.7 these requests get GROUP_ID_NOT_FOUND (no classic member joins a consumer group). A
JoinGroup to an Empty consumer group replaces it with a classic group (whatever the policy).
Static classic members inside a consumer group are not modelled: their requests get
GROUP_ID_NOT_FOUND as in 3.7.
"""

from __future__ import annotations

from dataclasses import replace

from actors.core import Ctx, Inbound, Out
from actors.group import consumer_assign, join
from actors.group.consumer_group import ClassicMemberMetadata, ConsumerGroup, ConsumerGroupMember, member_changed, member_removed
from actors.group.consumer_heartbeat import PendingConsumerWrite, bump, cancel_timers, reconcile_member, write
from actors.group.consumer_protocol.reconciliation import ReconciliationError
from actors.group.consumer_protocol.states import MemberState
from actors.group.consumer_records import group_tombstone
from actors.group.manager import GroupManager, timer_key
from actors.group.migration import error_answer
from protocols.errors import ErrorCode
from protocols.group import (
    Assignment,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
    TopicPartitions,
)

__all__ = ["handles", "on_classic_request"]

E = ErrorCode
_CLASSIC = (JoinGroupRequest, SyncGroupRequest, HeartbeatRequest, LeaveGroupRequest)


def handles(m: GroupManager, inbound: Inbound) -> bool:
    """A classic membership request naming a consumer group loaded here."""
    return isinstance(inbound.message, _CLASSIC) and m.consumer_group(inbound.message.group_id) is not None


def on_classic_request(m: GroupManager, ctx: Ctx, out: Out, inbound: Inbound) -> None:
    req = inbound.message
    error = m.status_error(req.group_id)
    group = m.consumer_group(req.group_id)
    if error is E.NONE and (group is None or not m.config.profile.classic_members_in_consumer_groups or _is_static(req)):
        error = E.GROUP_ID_NOT_FOUND
    if error is not E.NONE or group is None:
        out.reply(inbound, error_answer(req, error))
        return
    if isinstance(req, JoinGroupRequest) and not group.m.members:
        _replace_empty_group(m, ctx, out, inbound, group)
        return
    if req.group_id in m.consumer_writes:
        m.consumer_writes[req.group_id].append(inbound)  # after the group's write, in order
        return
    match req:
        case JoinGroupRequest():
            _join(m, ctx, out, inbound, req, group)
        case SyncGroupRequest():
            _sync(m, ctx, out, inbound, req, group)
        case HeartbeatRequest():
            out.reply(inbound, HeartbeatResponse(_heartbeat(m, ctx, out, req, group)))
        case LeaveGroupRequest():
            _leave(m, ctx, out, inbound, req, group)


def _is_static(req: object) -> bool:
    if isinstance(req, LeaveGroupRequest):
        return any(i.group_instance_id is not None for i in req.members)
    return getattr(req, "group_instance_id", None) is not None


def _replace_empty_group(m: GroupManager, ctx: Ctx, out: Out, inbound: Inbound, group: ConsumerGroup) -> None:
    """`maybeDeleteEmptyConsumerGroup`: the Empty consumer group gives way to a classic group,
    its offsets kept."""
    del m.groups[group.group_id]
    m.append(out, group.group_id, (group_tombstone(group.group_id),), None)
    join.on_join_group(m, ctx, out, inbound, inbound.message)
    classic = m.classic_group(group.group_id)
    if classic is not None:
        classic.offsets, classic.pending_offset_commits = group.offsets, group.pending_offset_commits
    else:
        m.groups[group.group_id] = group  # the JoinGroup was refused before a group was made


# ----------------------------------------------------------------------------- JoinGroup


def _owned(req: JoinGroupRequest) -> dict[str, frozenset[int]]:
    owned: dict[str, set[int]] = {}
    for t in req.protocols[0].metadata.owned_partitions:
        owned.setdefault(t.topic, set()).update(t.partitions)
    return {topic: frozenset(ps) for topic, ps in sorted(owned.items()) if ps}


def _join(m: GroupManager, ctx: Ctx, out: Out, inbound: Inbound, req: JoinGroupRequest, group: ConsumerGroup) -> None:
    config = m.config
    if not config.group_min_session_timeout_ms <= req.session_timeout_ms <= config.group_max_session_timeout_ms:
        out.reply(inbound, JoinGroupResponse(E.INVALID_SESSION_TIMEOUT, member_id=req.member_id))
        return
    member_id = req.member_id or m.new_uuid(ctx)
    if not group.supports_classic_protocols(req.protocol_type, tuple(p.name for p in req.protocols)):
        out.reply(inbound, JoinGroupResponse(E.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id))
        return
    if not req.member_id and config.profile.member_id_required:
        # `requiresKnownMemberId`: the id comes back to be joined with; nothing is kept.
        out.reply(inbound, JoinGroupResponse(E.MEMBER_ID_REQUIRED, member_id=member_id))
        return
    before, state_before = group.m.copy(), group.state
    member = group.member(member_id)
    is_new = member is None
    member = member or ConsumerGroupMember(member_id)
    subscription = req.protocols[0].metadata
    updated = replace(
        member,
        rebalance_timeout_ms=req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1 else member.rebalance_timeout_ms,
        subscribed_topics=tuple(sorted(set(subscription.topics))),
        classic=ClassicMemberMetadata(req.session_timeout_ms, req.protocols, join.client_id_for(req)),
    )
    events = Out()
    group.put(updated)
    if is_new or updated.subscribed_topics != member.subscribed_topics:
        bump(events, group, "member_joined" if is_new else "subscription_changed")
    if group.m.group_epoch > group.m.assignment_epoch:
        consumer_assign.update_target(config, events, group)
    try:
        updated = reconcile_member(m, out, group, updated, _owned(req))
    except ReconciliationError as failed:
        group.restore(before)
        out.reply(inbound, JoinGroupResponse(failed.code, member_id=member_id))
        return
    group.put(updated)
    member_changed(events, group.group_id, updated)
    group.refresh_state(events, ctx.now_ms)
    # Once written: the join timeout ends, the session restarts and the sync timeout starts.
    _cancel_join_timeout(m, events, group.group_id, member_id)
    events.set_timer(timer_key("cg-session", group.group_id, member_id), req.session_timeout_ms)
    events.set_timer(timer_key("cg-sync", group.group_id, member_id), req.rebalance_timeout_ms)
    response = JoinGroupResponse(
        E.NONE, generation_id=updated.member_epoch, protocol_name=req.protocols[0].name, member_id=member_id
    )
    write(m, ctx, out, PendingConsumerWrite(group, before, state_before, None, False, inbound, response, events))


# ----------------------------------------------------------------------------- SyncGroup and Heartbeat


def _classic_member(group: ConsumerGroup, member_id: str, generation_id: int) -> ConsumerGroupMember | ErrorCode:
    """`validateConsumerGroupMember`, `throwIfMemberDoesNotUseClassicProtocol`,
    `throwIfGenerationIdUnmatched`."""
    member = group.member(member_id)
    if member is None or member.classic is None:
        return E.UNKNOWN_MEMBER_ID
    if generation_id != member.member_epoch:
        return E.ILLEGAL_GENERATION
    return member


def _arm_join_timeout(m: GroupManager, ctx: Ctx, out: Out, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
    """`scheduleConsumerGroupJoinTimeoutIfAbsent`: the member has its rebalance timeout to rejoin."""
    key = (group.group_id, member.member_id)
    if m.join_deadlines.get(key, -1) > ctx.now_ms:
        return
    m.join_deadlines[key] = ctx.now_ms + member.rebalance_timeout_ms
    out.set_timer(timer_key("cg-join", group.group_id, member.member_id), member.rebalance_timeout_ms)


def _cancel_join_timeout(m: GroupManager, out: Out, group_id: str, member_id: str) -> None:
    m.join_deadlines.pop((group_id, member_id), None)
    out.cancel_timer(timer_key("cg-join", group_id, member_id))


def _sync(m: GroupManager, ctx: Ctx, out: Out, inbound: Inbound, req: SyncGroupRequest, group: ConsumerGroup) -> None:
    found = _classic_member(group, req.member_id, req.generation_id)
    if isinstance(found, ErrorCode):
        out.reply(inbound, SyncGroupResponse(found))
        return
    meta = found.classic
    assert meta is not None
    if req.protocol_name is not None and req.protocol_name != meta.protocol_name:
        out.reply(inbound, SyncGroupResponse(E.INCONSISTENT_GROUP_PROTOCOL))
        return
    # `throwIfRebalanceInProgress`: a member behind the group epoch rejoins first, unless it
    # is still revoking (its rejoin is on its way).
    if group.m.group_epoch > found.member_epoch and found.state is not MemberState.UNREVOKED_PARTITIONS:
        _arm_join_timeout(m, ctx, out, group, found)
        out.reply(inbound, SyncGroupResponse(E.REBALANCE_IN_PROGRESS))
        return
    out.cancel_timer(timer_key("cg-sync", group.group_id, found.member_id))
    out.set_timer(timer_key("cg-session", group.group_id, found.member_id), meta.session_timeout_ms)
    assignment = Assignment(tuple(TopicPartitions(t, tuple(sorted(ps))) for t, ps in sorted(found.assigned.items())))
    out.reply(inbound, SyncGroupResponse(E.NONE, meta.protocol_name, assignment))


def _heartbeat(m: GroupManager, ctx: Ctx, out: Out, req: HeartbeatRequest, group: ConsumerGroup) -> ErrorCode:
    found = _classic_member(group, req.member_id, req.generation_id)
    if isinstance(found, ErrorCode):
        return found
    assert found.classic is not None
    out.set_timer(timer_key("cg-session", group.group_id, found.member_id), found.classic.session_timeout_ms)
    # Rejoin when the group moved on, when it must revoke, or when what it waited for is free.
    if (
        found.member_epoch < group.m.group_epoch
        or found.state is MemberState.UNREVOKED_PARTITIONS
        or (found.state is MemberState.UNRELEASED_PARTITIONS and not group.waiting_on_unreleased_partition(found))
    ):
        _arm_join_timeout(m, ctx, out, group, found)
        return E.REBALANCE_IN_PROGRESS
    return E.NONE


# ----------------------------------------------------------------------------- LeaveGroup


def _leave(m: GroupManager, ctx: Ctx, out: Out, inbound: Inbound, req: LeaveGroupRequest, group: ConsumerGroup) -> None:
    """Each classic member named leaves and the group epoch is bumped once; no downgrade
    follows (only a consumer-protocol member's leave can leave the group all classic)."""
    before, state_before = group.m.copy(), group.state
    events = Out()
    errors = []
    for identity in req.members:
        member = group.member(identity.member_id)
        if member is None or member.classic is None:
            errors.append(E.UNKNOWN_MEMBER_ID)
            continue
        group.remove(member.member_id)
        member_removed(events, group.group_id, member, "left")
        cancel_timers(m, out, group.group_id, member.member_id)
        errors.append(E.NONE)
    if E.NONE in errors:
        bump(events, group, "member_left")
        group.refresh_state(events, ctx.now_ms)
    first = next((e for e in errors if e is not E.NONE), E.NONE)
    write(m, ctx, out, PendingConsumerWrite(group, before, state_before, None, False, inbound, LeaveGroupResponse(first), events))
