"""JoinGroup (`GroupCoordinator.handleJoinGroup`, 3.9).

- A first JoinGroup (`member_id` "") of a dynamic member gets MEMBER_ID_REQUIRED with a new id
  and the id waits as a pending member for its session timeout (KIP-394, 2.2+; before, the member
  is added at once).
- A static member (KIP-345, 2.3+) joins at once; if its instance id is known, the new member id
  replaces the old one (`updateStaticMemberThenRebalanceOrCompleteJoin`): in Stable with an
  unchanged protocol choice the group record is stored and no rebalance happens.
- `group.max.size` (KIP-389, 2.2+) is checked first (`rules.accept_joining_member`): a refused
  JoinGroup gets GROUP_MAX_SIZE_REACHED and its member id leaves the group.
- A known member: in PreparingRebalance it joins the barrier; in CompletingRebalance with the
  same metadata it gets the current generation again; in Stable the leader, or a member whose
  metadata changed, starts a rebalance, and any other member gets the current generation.

The request carries no client id: every simulated consumer is its own process with Java's
default `client.id`, `consumer-<group.id>-1`, so member ids are that, a dash and a UUID.
"""

from __future__ import annotations

from actors.core import Ctx, Inbound, Out
from actors.group import rebalance
from actors.group.manager import GroupManager, PendingStore, StaticRevert, StoreKind, timer_key
from actors.group.rules import accept_joining_member, select_protocol, validate_current_member
from actors.group.state import ClassicGroup, GroupState, MemberMetadata
from protocols.errors import ErrorCode
from protocols.group import JoinGroupRequest, JoinGroupResponse, SyncGroupResponse

__all__ = ["client_id_for", "on_join_group", "on_pending_timer", "on_static_member_stored"]

S = GroupState
E = ErrorCode


def client_id_for(req: JoinGroupRequest) -> str:
    """The request's client id; unsaid, Java's default for the first consumer of a JVM."""
    return req.client_id or f"consumer-{req.group_id}-1"


def on_join_group(m: GroupManager, ctx: Ctx, out: Out, inbound: Inbound, req: JoinGroupRequest) -> None:
    def fail(error: ErrorCode, member_id: str = req.member_id) -> None:
        out.reply(inbound, JoinGroupResponse(error, member_id=member_id))

    error = m.status_error(req.group_id)
    if error is not E.NONE:
        fail(error)
        return
    config = m.config
    if not config.group_min_session_timeout_ms <= req.session_timeout_ms <= config.group_max_session_timeout_ms:
        fail(E.INVALID_SESSION_TIMEOUT)
        return
    unknown = req.member_id == ""
    group = m.classic_group(req.group_id)
    if group is None:
        if not unknown:
            fail(E.UNKNOWN_MEMBER_ID)
            return
        group = m.create_classic_group(out, req.group_id, ctx.now_ms)
    instance = req.group_instance_id if config.profile.static_membership else None
    names = tuple(p.name for p in req.protocols)
    if config.profile.group_max_size and not accept_joining_member(
        group, req.member_id, config.group_max_size, evict_last_joiners=config.profile.evict_last_joiners
    ):
        _refuse_over_max_size(m, out, inbound, group, req.member_id)
    elif not group.supports_protocols(req.protocol_type, names):
        fail(E.INCONSISTENT_GROUP_PROTOCOL)
    elif unknown:
        _new_member_join(m, ctx, out, inbound, req, group, instance)
    else:
        _current_member_join(m, ctx, out, inbound, req, group, instance)
    if group.is_(S.PREPARING_REBALANCE):
        rebalance.try_complete_join(m, ctx, out, group)


def _refuse_over_max_size(m: GroupManager, out: Out, inbound: Inbound, group: ClassicGroup, member_id: str) -> None:
    """GROUP_MAX_SIZE_REACHED with no member id; the member, or the KIP-394 pending member, of
    that id leaves the group with no rebalance of its own (in PreparingRebalance the join may
    now complete without it)."""
    if member_id in group.pending_members:
        group.remove(member_id)
        out.cancel_timer(timer_key("pending", group.group_id, member_id))
        rebalance.member_removed(out, group, member_id, "group_max_size")
    elif member_id in group.members:
        group.remove(member_id)
        m.cancel_session(out, group, member_id)
        rebalance.member_removed(out, group, member_id, "group_max_size")
    out.reply(inbound, JoinGroupResponse(E.GROUP_MAX_SIZE_REACHED, member_id=""))


def _member(req: JoinGroupRequest, member_id: str, instance: str | None, inbound: Inbound) -> MemberMetadata:
    return MemberMetadata(
        member_id=member_id,
        group_instance_id=instance,
        client_id=client_id_for(req),
        rebalance_timeout_ms=req.rebalance_timeout_ms,
        session_timeout_ms=req.session_timeout_ms,
        protocol_type=req.protocol_type,
        protocols=tuple(req.protocols),
        awaiting_join=inbound,
        client_host=inbound.src.node,
    )


def _new_member_join(
    m: GroupManager, ctx: Ctx, out: Out, inbound: Inbound, req: JoinGroupRequest, group: ClassicGroup, instance: str | None
) -> None:
    """`doNewMemberJoinGroup`."""
    member_id = m.new_member_id(ctx, instance if instance is not None else client_id_for(req))
    if instance is not None:
        old = group.static_members.get(instance)
        if old is None:
            rebalance.add_member_and_rebalance(m, ctx, out, group, _member(req, member_id, instance, inbound))
        else:
            _replace_static_member(m, ctx, out, inbound, req, group, instance, old, member_id)
    elif m.config.profile.member_id_required:
        group.pending_members[member_id] = None
        out.set_timer(timer_key("pending", group.group_id, member_id), req.session_timeout_ms)
        out.reply(inbound, JoinGroupResponse(E.MEMBER_ID_REQUIRED, member_id=member_id))
    else:
        rebalance.add_member_and_rebalance(m, ctx, out, group, _member(req, member_id, None, inbound))


def _current_member_join(
    m: GroupManager, ctx: Ctx, out: Out, inbound: Inbound, req: JoinGroupRequest, group: ClassicGroup, instance: str | None
) -> None:
    """`doCurrentMemberJoinGroup`."""
    member_id = req.member_id
    if member_id in group.pending_members:
        # A pending member is never static (its first JoinGroup had no instance id).
        rebalance.add_member_and_rebalance(m, ctx, out, group, _member(req, member_id, None, inbound))
        return
    error = validate_current_member(group, member_id, instance)
    if error is not E.NONE:
        out.reply(inbound, JoinGroupResponse(error, member_id=member_id))
        return
    member = group.members[member_id]
    changed = not member.matches(req.protocols)
    match group.state:
        case S.PREPARING_REBALANCE:
            rebalances = True
        case S.COMPLETING_REBALANCE:
            rebalances = changed
        case S.STABLE:
            # The leader's JoinGroup always rebalances: it may have seen topic metadata change.
            rebalances = changed or group.is_leader(member_id)
        case _:  # Empty or Dead: unexpected here; the member joins again from scratch
            out.reply(inbound, JoinGroupResponse(E.UNKNOWN_MEMBER_ID, member_id=member_id))
            return
    if rebalances:
        _update_member(member, req, inbound)
        rebalance.maybe_prepare_rebalance(m, ctx, out, group)
    else:
        # The same metadata (a lost JoinGroup answer, or a follower in Stable): the current
        # generation, with the members for the leader while the assignment is not stored yet.
        with_members = group.is_(S.COMPLETING_REBALANCE) and group.is_leader(member_id)
        out.reply(inbound, rebalance.join_response(group, member_id, with_members=with_members))


def _update_member(member: MemberMetadata, req: JoinGroupRequest, inbound: Inbound | None) -> None:
    """`updateMember`: new protocols and timeouts; its JoinGroup parked (or none)."""
    member.protocols = tuple(req.protocols)
    member.rebalance_timeout_ms = req.rebalance_timeout_ms
    member.session_timeout_ms = req.session_timeout_ms
    member.awaiting_join = inbound


def on_pending_timer(m: GroupManager, ctx: Ctx, out: Out, group: ClassicGroup, member_id: str) -> None:
    """A KIP-394 pending member never came back within its session timeout: dropped, and the
    join barrier it was holding back is checked again."""
    if member_id not in group.pending_members:
        return
    group.remove(member_id)
    rebalance.member_removed(out, group, member_id, "pending_expired")
    if group.is_(S.PREPARING_REBALANCE):
        rebalance.try_complete_join(m, ctx, out, group)


# ----------------------------------------------------------------------------- static members


def _replace_static_member(
    m: GroupManager,
    ctx: Ctx,
    out: Out,
    inbound: Inbound,
    req: JoinGroupRequest,
    group: ClassicGroup,
    instance: str,
    old_id: str,
    new_id: str,
) -> None:
    """`updateStaticMemberThenRebalanceOrCompleteJoin`: requests parked under the old id are
    fenced; the member keeps its assignment (and leadership) under the new id."""
    leader_before = group.leader_id
    member = group.members[old_id]
    if member.awaiting_join is not None:
        out.reply(member.awaiting_join, JoinGroupResponse(E.FENCED_INSTANCE_ID, member_id=old_id))
    if member.awaiting_sync is not None:
        out.reply(member.awaiting_sync, SyncGroupResponse(E.FENCED_INSTANCE_ID))
    member.awaiting_join = member.awaiting_sync = None
    revert = StaticRevert(instance, old_id, member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms, leader_before, inbound)
    group.replace_static_member(instance, old_id, new_id)
    m.cancel_session(out, group, old_id)
    rebalance.member_removed(out, group, old_id, "replaced")
    rebalance.member_added(out, group, member)
    m.schedule_session(out, group, member)
    _update_member(member, req, inbound)
    if group.is_(S.STABLE):
        if select_protocol(mm.protocol_names for mm in group.sorted_members()) == group.protocol_name:
            assignment = {mm.member_id: mm.assignment for mm in group.sorted_members()}
            rebalance.store_group(m, out, group, assignment, StoreKind.STATIC, new_id, revert)
        else:
            rebalance.maybe_prepare_rebalance(m, ctx, out, group)
    elif group.is_(S.COMPLETING_REBALANCE):
        # The leader may be assigning to the old id: rebalance so the new one gets partitions.
        rebalance.prepare_rebalance(m, ctx, out, group)


def on_static_member_stored(m: GroupManager, out: Out, store: PendingStore, error: ErrorCode) -> None:
    """The group record of a static replacement in Stable answered: on failure the old member
    id is restored and the JoinGroup gets the error with no member id; otherwise the member gets
    the current generation (KIP-814: a leader is told it leads, with `skip_assignment`; before,
    it is told the old leader id so that it does not assign)."""
    group, revert, new_id = store.group, store.revert, store.member_id
    assert revert is not None
    member = group.members.get(new_id)
    if error is not E.NONE:
        if member is not None and not group.is_(S.DEAD):
            member.protocols = revert.protocols
            member.rebalance_timeout_ms = revert.rebalance_timeout_ms
            member.session_timeout_ms = revert.session_timeout_ms
            member.awaiting_join = None
            group.replace_static_member(revert.instance_id, new_id, revert.old_member_id)
            m.cancel_session(out, group, new_id)
            rebalance.member_removed(out, group, new_id, "replaced")
            rebalance.member_added(out, group, member)
            m.schedule_session(out, group, member)
        out.reply(
            revert.join,
            JoinGroupResponse(
                error, group.generation_id, group.protocol_name, revert.leader_before or "", member_id=""
            ),
        )
        return
    if member is None or member.awaiting_join is None:
        return
    if m.config.skip_assignment_for_static_leader:
        leader = group.is_leader(new_id)
        answer = rebalance.join_response(group, new_id, skip_assignment=leader, with_members=leader)
    else:
        answer = rebalance.join_response(group, new_id, leader=revert.leader_before, with_members=False)
    out.reply(member.awaiting_join, answer)
    member.awaiting_join = None
