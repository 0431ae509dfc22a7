"""The rebalance machinery of the Scala `GroupCoordinator` (3.9): adding and removing members,
`prepareRebalance`, the join barrier (`DelayedJoin`, `InitialDelayedJoin`), `onCompleteJoin` and
`initNextGeneration`, `DelayedSync` (KAFKA-12890, 2.8.1), and propagating the stored assignment.

Requests and timers reach these through `join.py` (JoinGroup) and `membership.py` (SyncGroup,
Heartbeat, LeaveGroup, expiries). Every loop that answers or logs goes in member-id order.
"""

from __future__ import annotations

from actors.core import Ctx, Out
from actors.group import delayed
from actors.group.config import NEW_MEMBER_JOIN_TIMEOUT_MS
from actors.group.manager import (
    GroupManager,
    PendingStore,
    StaticRevert,
    StoreKind,
    assignment_strings,
    timer_key,
)
from actors.group.records import group_record
from actors.group.rules import select_protocol
from actors.group.state import ClassicGroup, GroupState, MemberMetadata
from protocols.errors import ErrorCode
from protocols.group import (
    Assignment,
    JoinGroupMember,
    JoinGroupResponse,
    SyncGroupResponse,
)

__all__ = [
    "add_member_and_rebalance",
    "join_response",
    "maybe_prepare_rebalance",
    "member_added",
    "member_removed",
    "on_group_stored",
    "on_join_timer",
    "on_sync_timer",
    "prepare_rebalance",
    "remove_member_and_update_group",
    "remove_pending_sync_member",
    "store_group",
    "try_complete_join",
]

S = GroupState


# ----------------------------------------------------------------------------- members


def member_added(out: Out, group: ClassicGroup, member: MemberMetadata) -> None:
    out.emit(
        "group_member_added",
        group_id=group.group_id,
        member_id=member.member_id,
        group_instance_id=member.group_instance_id,
        generation_id=group.generation_id,
    )


def member_removed(out: Out, group: ClassicGroup, member_id: str, reason: str) -> None:
    out.emit(
        "group_member_removed",
        group_id=group.group_id,
        member_id=member_id,
        generation_id=group.generation_id,
        reason=reason,
    )


def add_member_and_rebalance(m: GroupManager, ctx: Ctx, out: Out, group: ClassicGroup, member: MemberMetadata) -> None:
    """`addMemberAndRebalance`: the member joins with its JoinGroup parked; it is new, so only
    the new-member join timeout protects it; then the group rebalances if it can."""
    member.is_new = True
    if group.is_(S.PREPARING_REBALANCE) and group.generation_id == 0:
        group.new_member_added = True
    group.add(member)
    out.cancel_timer(timer_key("pending", group.group_id, member.member_id))
    member_added(out, group, member)
    m.schedule_session(out, group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
    maybe_prepare_rebalance(m, ctx, out, group)


def remove_member_and_update_group(
    m: GroupManager, ctx: Ctx, out: Out, group: ClassicGroup, member: MemberMetadata, reason: str
) -> None:
    """`removeMemberAndUpdateGroup`: a parked JoinGroup is answered UNKNOWN_MEMBER_ID (the client
    joins again from scratch); then a rebalance, or in PreparingRebalance a completion check."""
    if member.awaiting_join is not None:
        out.reply(member.awaiting_join, JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID))
        member.awaiting_join = None
    group.remove(member.member_id)
    m.cancel_session(out, group, member.member_id)
    member_removed(out, group, member.member_id, reason)
    if group.state in (S.STABLE, S.COMPLETING_REBALANCE):
        maybe_prepare_rebalance(m, ctx, out, group)
    elif group.is_(S.PREPARING_REBALANCE):
        try_complete_join(m, ctx, out, group)


# ----------------------------------------------------------------------------- the join barrier


def maybe_prepare_rebalance(m: GroupManager, ctx: Ctx, out: Out, group: ClassicGroup) -> None:
    if group.can_rebalance():
        prepare_rebalance(m, ctx, out, group)


def prepare_rebalance(m: GroupManager, ctx: Ctx, out: Out, group: ClassicGroup) -> None:
    """`prepareRebalance`: parked SyncGroups get REBALANCE_IN_PROGRESS, a pending DelayedSync is
    dropped, and the join barrier is armed: the initial delay from Empty, else the largest
    rebalance timeout of the members present now (which completes at once if all joined)."""
    if group.is_(S.COMPLETING_REBALANCE):
        reset_and_propagate_assignment_error(m, out, group, ErrorCode.REBALANCE_IN_PROGRESS)
    remove_sync_expiration(out, group)
    if group.is_(S.EMPTY):
        join = delayed.initial_delayed_join(m.config.group_initial_rebalance_delay_ms, group.rebalance_timeout_ms())
    else:
        join = delayed.delayed_join(group.rebalance_timeout_ms())
    group.transition_to(S.PREPARING_REBALANCE, out, ctx.now_ms)
    _arm_join(out, group, join)
    try_complete_join(m, ctx, out, group)


def _arm_join(out: Out, group: ClassicGroup, join: delayed.DelayedJoin) -> None:
    group.delayed_join = join
    out.set_timer(timer_key("join", group.group_id), join.delay_ms)


def try_complete_join(m: GroupManager, ctx: Ctx, out: Out, group: ClassicGroup) -> None:
    """`tryCompleteJoin`: a `DelayedJoin` (never the initial one) completes once every member
    has joined and no KIP-394 member is pending."""
    join = group.delayed_join
    if join is None or join.initial or not group.has_all_members_joined():
        return
    group.delayed_join = None
    out.cancel_timer(timer_key("join", group.group_id))
    on_complete_join(m, ctx, out, group)


def on_join_timer(m: GroupManager, ctx: Ctx, out: Out, group: ClassicGroup) -> None:
    """The barrier expired: the initial delay may wait again (`InitialDelayedJoin.onComplete`);
    otherwise the join completes with whoever joined."""
    join = group.delayed_join
    if join is None or not group.is_(S.PREPARING_REBALANCE):
        return
    if join.initial:
        again = delayed.on_initial_delay_expired(
            join, m.config.group_initial_rebalance_delay_ms, new_member_added=group.new_member_added
        )
        if again is not None:
            group.new_member_added = False
            _arm_join(out, group, again)
            return
    group.delayed_join = None
    on_complete_join(m, ctx, out, group)


def on_complete_join(m: GroupManager, ctx: Ctx, out: Out, group: ClassicGroup) -> None:
    """`onCompleteJoin`: drop dynamic members that did not rejoin, keep or re-elect the leader
    (the lowest joined member id if the leader did not rejoin), then start the next generation
    and answer every parked JoinGroup; the leader's answer lists the members. If only absent
    static members remain, nobody rejoined and the barrier is armed again."""
    for member in group.not_yet_rejoined():
        if not member.is_static:
            group.remove(member.member_id)
            m.cancel_session(out, group, member.member_id)
            member_removed(out, group, member.member_id, "not_rejoined")
    if group.is_(S.DEAD):
        return
    if not group.maybe_elect_new_joined_leader() and group.members:
        _arm_join(out, group, delayed.delayed_join(group.rebalance_timeout_ms()))
        return
    _init_next_generation(ctx, out, group)
    if group.is_(S.EMPTY):
        store_group(m, out, group, {}, StoreKind.EMPTY, "")
        return
    for member in group.sorted_members():
        if member.awaiting_join is not None:
            out.reply(member.awaiting_join, join_response(group, member.member_id))
            member.awaiting_join = None
        m.schedule_session(out, group, member)
        member.is_new = False
        if m.config.profile.delayed_sync:
            group.pending_sync_members[member.member_id] = None
    if m.config.profile.delayed_sync:
        group.delayed_sync_generation = group.generation_id
        out.set_timer(timer_key("sync", group.group_id), group.rebalance_timeout_ms())


def _init_next_generation(ctx: Ctx, out: Out, group: ClassicGroup) -> None:
    """`initNextGeneration`: generation + 1, the protocol by vote, CompletingRebalance (Empty
    with no members)."""
    group.generation_id += 1
    if group.members:
        group.protocol_name = select_protocol(m.protocol_names for m in group.sorted_members())
        group.subscribed_topics = group.compute_subscribed_topics()
        group.transition_to(S.COMPLETING_REBALANCE, out, ctx.now_ms)
    else:
        group.protocol_name = None
        group.subscribed_topics = group.compute_subscribed_topics()
        group.transition_to(S.EMPTY, out, ctx.now_ms)
    group.pending_sync_members.clear()
    out.emit(
        "generation_started",
        group_id=group.group_id,
        generation_id=group.generation_id,
        protocol_name=group.protocol_name,
        leader_member_id=group.leader_id,
        members=sorted(group.members),
    )


def join_response(group: ClassicGroup, member_id: str, *, leader: str | None = None, skip_assignment: bool = False, with_members: bool | None = None) -> JoinGroupResponse:
    """The current generation as `member_id` sees it: only the leader gets the members and
    their subscriptions (`currentMemberMetadata`)."""
    listed = group.is_leader(member_id) if with_members is None else with_members
    members = ()
    if listed and group.protocol_name is not None:
        members = tuple(
            JoinGroupMember(mm.member_id, mm.group_instance_id, mm.metadata(group.protocol_name))
            for mm in group.sorted_members()
        )
    return JoinGroupResponse(
        ErrorCode.NONE,
        group.generation_id,
        group.protocol_name,
        (group.leader_id if leader is None else leader) or "",
        skip_assignment,
        member_id,
        members,
    )


# ----------------------------------------------------------------------------- DelayedSync


def remove_pending_sync_member(out: Out, group: ClassicGroup, member_id: str) -> None:
    """A SyncGroup arrived: once every member of the generation has sent one, `DelayedSync`
    completes (it has nothing left to do)."""
    group.pending_sync_members.pop(member_id, None)
    if group.delayed_sync_generation is not None and not group.pending_sync_members:
        remove_sync_expiration(out, group)


def remove_sync_expiration(out: Out, group: ClassicGroup) -> None:
    if group.delayed_sync_generation is not None:
        group.delayed_sync_generation = None
        out.cancel_timer(timer_key("sync", group.group_id))


def on_sync_timer(m: GroupManager, ctx: Ctx, out: Out, group: ClassicGroup) -> None:
    """`onExpirePendingSync`: members of this generation that never sent SyncGroup within the
    rebalance timeout are removed, and the group rebalances."""
    generation = group.delayed_sync_generation
    group.delayed_sync_generation = None
    if generation != group.generation_id or group.state not in (S.COMPLETING_REBALANCE, S.STABLE):
        return
    if not group.pending_sync_members:
        return
    for member_id in sorted(group.pending_sync_members):
        group.remove(member_id)
        m.cancel_session(out, group, member_id)
        member_removed(out, group, member_id, "sync_timeout")
    prepare_rebalance(m, ctx, out, group)


# ----------------------------------------------------------------------------- the assignment


def store_group(
    m: GroupManager,
    out: Out,
    group: ClassicGroup,
    assignment: dict[str, Assignment],
    kind: str,
    member_id: str,
    revert: StaticRevert | None = None,
) -> None:
    """`storeGroup`: append the group record (acks=-1); `on_group_stored` handles the answer."""
    record = group_record(group, assignment)
    pending = PendingStore(kind, group, group.generation_id, assignment, member_id, revert)
    m.append(out, group.group_id, (record,), pending)


def on_group_stored(m: GroupManager, ctx: Ctx, out: Out, store: PendingStore, error: ErrorCode) -> None:
    """A group record's append answered. For the leader's SyncGroup (if the group is still
    completing that generation): success makes it Stable and answers the parked SyncGroups;
    failure answers them with the mapped error and rebalances."""
    group = store.group
    out.emit(
        "group_assignment_stored",
        group_id=group.group_id,
        generation_id=store.generation_id,
        assignments=[[mid, assignment_strings(a)] for mid, a in sorted(store.assignment.items())],
        error=error.name,
    )
    if store.kind != StoreKind.SYNC:
        return
    if not group.is_(S.COMPLETING_REBALANCE) or group.generation_id != store.generation_id:
        return
    if error is not ErrorCode.NONE:
        reset_and_propagate_assignment_error(m, out, group, error)
        maybe_prepare_rebalance(m, ctx, out, group)
        return
    for member in group.members.values():
        member.assignment = store.assignment[member.member_id]
    _propagate_assignment(m, out, group, ErrorCode.NONE)
    group.transition_to(S.STABLE, out, ctx.now_ms)


def reset_and_propagate_assignment_error(m: GroupManager, out: Out, group: ClassicGroup, error: ErrorCode) -> None:
    assert group.is_(S.COMPLETING_REBALANCE), "only a completing rebalance has parked SyncGroups"
    for member in group.members.values():
        member.assignment = Assignment()
    _propagate_assignment(m, out, group, error)


def _propagate_assignment(m: GroupManager, out: Out, group: ClassicGroup, error: ErrorCode) -> None:
    """`propagateAssignment`: answer each parked SyncGroup and restart that member's session
    (its expiry was ignored while it waited)."""
    for member in group.sorted_members():
        if member.awaiting_sync is None:
            continue
        if error is ErrorCode.NONE:
            answer = SyncGroupResponse(ErrorCode.NONE, group.protocol_name, member.assignment)
        else:
            answer = SyncGroupResponse(error)
        out.reply(member.awaiting_sync, answer)
        member.awaiting_sync = None
        m.schedule_session(out, group, member)
