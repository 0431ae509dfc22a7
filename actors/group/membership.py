"""SyncGroup, Heartbeat, LeaveGroup and session expiry (`GroupCoordinator` 3.9:
`handleSyncGroup`/`doSyncGroup`, `handleHeartbeat`, `handleLeaveGroup`, `onExpireHeartbeat`).

While a partition loads, SyncGroup gets REBALANCE_IN_PROGRESS (the rebalance state is lost with
the old coordinator, so the member rejoins without looking the coordinator up again) and
Heartbeat gets NONE; LeaveGroup gets COORDINATOR_LOAD_IN_PROGRESS.
"""

from __future__ import annotations

from actors.core import Ctx, Inbound, Out
from actors.group import rebalance
from actors.group.manager import GroupManager, StoreKind
from actors.group.rules import heartbeat_answer, validate_current_member
from actors.group.state import ClassicGroup, GroupState
from protocols.errors import ErrorCode
from protocols.group import (
    Assignment,
    HeartbeatRequest,
    HeartbeatResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    SyncGroupRequest,
    SyncGroupResponse,
)

__all__ = ["on_heartbeat", "on_leave_group", "on_session_timer", "on_sync_group"]

S = GroupState
E = ErrorCode


def _instance(m: GroupManager, group_instance_id: str | None) -> str | None:
    return group_instance_id if m.config.profile.static_membership else None


# ----------------------------------------------------------------------------- SyncGroup


def on_sync_group(m: GroupManager, ctx: Ctx, out: Out, inbound: Inbound, req: SyncGroupRequest) -> None:
    error = m.status_error(req.group_id)
    group = m.classic_group(req.group_id)
    if error is E.COORDINATOR_LOAD_IN_PROGRESS:
        error = E.REBALANCE_IN_PROGRESS
    elif error is E.NONE and group is None:
        error = E.UNKNOWN_MEMBER_ID
    elif error is E.NONE and group is not None:
        error = _sync_error(m, group, req)
    if error is not E.NONE or group is None:
        out.reply(inbound, SyncGroupResponse(error))
        return
    member = group.members[req.member_id]
    if group.is_(S.COMPLETING_REBALANCE):
        member.awaiting_sync = inbound
        rebalance.remove_pending_sync_member(out, group, req.member_id)
        if group.is_leader(req.member_id):
            given = {a.member_id: a.assignment for a in req.assignments}
            assignment = {mid: given.get(mid, Assignment()) for mid in sorted(group.members)}
            rebalance.store_group(m, out, group, assignment, StoreKind.SYNC, req.member_id)
    else:  # Stable: the stored assignment
        rebalance.remove_pending_sync_member(out, group, req.member_id)
        out.reply(inbound, SyncGroupResponse(E.NONE, group.protocol_name, member.assignment))
        m.schedule_session(out, group, member)


def _sync_error(m: GroupManager, group: ClassicGroup, req: SyncGroupRequest) -> ErrorCode:
    """`validateSyncGroup`, then the states that answer at once (`doSyncGroup`)."""
    error = validate_current_member(group, req.member_id, _instance(m, req.group_instance_id))
    if error is not E.NONE:
        return error
    if req.generation_id != group.generation_id:
        return E.ILLEGAL_GENERATION
    if req.protocol_name is not None and req.protocol_name != group.protocol_name:
        return E.INCONSISTENT_GROUP_PROTOCOL
    if group.is_(S.EMPTY):
        return E.UNKNOWN_MEMBER_ID
    if group.is_(S.PREPARING_REBALANCE):
        return E.REBALANCE_IN_PROGRESS
    return E.NONE


# ----------------------------------------------------------------------------- Heartbeat


def on_heartbeat(m: GroupManager, ctx: Ctx, out: Out, inbound: Inbound, req: HeartbeatRequest) -> None:
    out.reply(inbound, HeartbeatResponse(_heartbeat(m, out, req)))


def _heartbeat(m: GroupManager, out: Out, req: HeartbeatRequest) -> ErrorCode:
    error = m.status_error(req.group_id)
    if error is E.COORDINATOR_LOAD_IN_PROGRESS:
        return E.NONE  # answered blindly while the group loads
    if error is not E.NONE:
        return error
    group = m.classic_group(req.group_id)
    if group is None:
        return E.UNKNOWN_MEMBER_ID
    error = validate_current_member(group, req.member_id, _instance(m, req.group_instance_id))
    if error is not E.NONE:
        return error
    if req.generation_id != group.generation_id:
        return E.ILLEGAL_GENERATION
    answer, resets = heartbeat_answer(group.state, none_while_completing=m.config.profile.heartbeat_none_while_completing)
    if resets:
        m.schedule_session(out, group, group.members[req.member_id])
    return answer


def on_session_timer(m: GroupManager, ctx: Ctx, out: Out, group: ClassicGroup, member_id: str) -> None:
    """`onExpireHeartbeat`: the member is removed unless a parked JoinGroup or SyncGroup covers
    it (a new member's parked JoinGroup does not: its timer is the new-member join timeout)."""
    member = group.members.get(member_id)
    if member is None or member.has_satisfied_heartbeat():
        return
    reason = "join_timeout" if member.is_new else "session_timeout"
    rebalance.remove_member_and_update_group(m, ctx, out, group, member, reason)


# ----------------------------------------------------------------------------- LeaveGroup


def on_leave_group(m: GroupManager, ctx: Ctx, out: Out, inbound: Inbound, req: LeaveGroupRequest) -> None:
    """`handleLeaveGroup`. Kafka answers a top-level error and one per member; the response
    here has one field, which carries the top-level error, else the first member error
    (`LeaveGroupResponse.error()`, what the Java client reads)."""
    error = m.status_error(req.group_id)
    if error is not E.NONE:
        out.reply(inbound, LeaveGroupResponse(error))
        return
    group = m.classic_group(req.group_id)
    errors = [_leave(m, ctx, out, group, identity) for identity in req.members]
    first = next((e for e in errors if e is not E.NONE), E.NONE)
    out.reply(inbound, LeaveGroupResponse(first))


def _leave(m: GroupManager, ctx: Ctx, out: Out, group: ClassicGroup | None, identity: MemberIdentity) -> ErrorCode:
    if group is None:
        return E.UNKNOWN_MEMBER_ID
    instance = _instance(m, identity.group_instance_id)
    member_id = identity.member_id
    if member_id == "":
        # An administrator removing a static member by its instance id.
        current = group.static_members.get(instance) if instance is not None else None
        if current is None:
            return E.UNKNOWN_MEMBER_ID
        member_id = current
    elif member_id in group.pending_members:
        group.remove(member_id)
        rebalance.member_removed(out, group, member_id, "leave")
        if group.is_(S.PREPARING_REBALANCE):
            rebalance.try_complete_join(m, ctx, out, group)
        return E.NONE
    else:
        error = validate_current_member(group, member_id, instance)
        if error is not E.NONE:
            return error
    rebalance.remove_member_and_update_group(m, ctx, out, group, group.members[member_id], "leave")
    return E.NONE
