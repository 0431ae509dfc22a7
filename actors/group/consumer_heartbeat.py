"""ConsumerGroupHeartbeat: KIP-848's join, heartbeat and leave (`GroupMetadataManager.
consumerGroupHeartbeat`, `consumerGroupLeave`, `consumerGroupFenceMember`, 3.9).

One heartbeat, in Kafka's order: the request's own checks (`validation`); the group, created
by a join (or converted from a classic group, `migration.upgrade`); the member (`getOrMaybeSubscribe...Member`: a static member's rules, the epoch
check); its subscription, whose change (or a new member) bumps the group epoch; the target
assignment, recomputed while the group epoch is ahead of it; the member's reconciliation
(`reconciliation.reconcile`, with the partition epochs); its session timeout, restarted.
The answer carries the assignment after a full request or when it changed. Fencing the last
member of the consumer protocol among classic members may downgrade the group instead
(`migration.downgrade`).

Kafka writes what a heartbeat changed as records and answers once they are committed; a
failed write leaves the group as it was. Here the records go through `GroupManager.append`
(acks=-1), the answer and the events wait for it, and a failed one restores the membership
as it was and answers the error Kafka maps it to (`append_error`); one whose records reached
the leader's log but timed out keeps the change and answers the error. The coordinator handles one
group's heartbeats and timeouts one at a time: what arrives while the group's write is in
flight waits for it (Kafka applies it at once and holds its answer until that write is
committed; holding the request instead keeps a failed write undoable on its own).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from actors.core import Ctx, Inbound, Out
from actors.group import consumer_assign, migration
from actors.group.consumer_group import ConsumerGroup, ConsumerGroupMember, Membership, announce, member_changed, member_removed
from actors.group.consumer_protocol.epochs import heartbeat_epoch_error
from actors.group.consumer_protocol.reconciliation import Member, ReconciliationError, reconcile
from actors.group.consumer_protocol.states import ConsumerGroupState, MemberState, is_reconciled_to
from actors.group.consumer_protocol.validation import heartbeat_request_error
from actors.group.consumer_records import changes, group_tombstone
from actors.group.manager import GroupManager, timer_key
from actors.group.records import group_tombstone as classic_group_tombstone
from actors.group.state import ClassicGroup, GroupState
from protocols.errors import ErrorCode
from protocols.group import (
    JOIN_EPOCH,
    STATIC_LEAVE_EPOCH,
    ConsumerGroupHeartbeatAssignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)

__all__ = [
    "PendingConsumerWrite",
    "append_error",
    "bump",
    "cancel_timers",
    "fence",
    "on_consumer_group_heartbeat",
    "on_consumer_timer",
    "on_written",
    "reconcile_member",
    "write",
]

E = ErrorCode


@dataclass(slots=True)
class PendingConsumerWrite:
    """A consumer group's records in flight, and what to do when they are committed or not."""

    group: ConsumerGroup
    before: Membership
    state_before: Any
    replaced: ClassicGroup | None
    """The Empty classic group the join replaced, or None; `created` below says if it is new."""
    created: bool
    inbound: Inbound | None
    response: Any
    """The answer to `inbound` once the write is committed (of either protocol's API)."""
    events: Out = field(default_factory=Out)
    downgraded: tuple[ClassicGroup, str] | None = None
    """The classic group that replaced the group on its last consumer-protocol member's leave,
    with its group record."""


def append_error(error: ErrorCode) -> ErrorCode:
    """`GroupCoordinatorService.handleOperationException`: a failed write as the answer's error."""
    if error in (E.NOT_LEADER_OR_FOLLOWER,):
        return E.NOT_COORDINATOR
    if error in (E.UNKNOWN_TOPIC_OR_PARTITION, E.NOT_ENOUGH_REPLICAS, E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.REQUEST_TIMED_OUT):
        return E.COORDINATOR_NOT_AVAILABLE
    return error


_WRITTEN_ANYWAY = frozenset({E.REQUEST_TIMED_OUT, E.NOT_ENOUGH_REPLICAS_AFTER_APPEND})
"""Append errors after the records reached the leader's log: Kafka's coordinator keeps the
change (a later load replays it) and only the answer fails; after any other error nothing was
written and the change is undone."""


def _fail(out: Out, inbound: Inbound, error: ErrorCode) -> None:
    out.reply(inbound, migration.error_answer(inbound.message, error))


def _owned(req: ConsumerGroupHeartbeatRequest) -> dict[str, frozenset[int]] | None:
    if req.topic_partitions is None:
        return None
    return {t.topic: frozenset(t.partitions) for t in req.topic_partitions if t.partitions}


def _wire(assignment: Any) -> ConsumerGroupHeartbeatAssignment:
    return ConsumerGroupHeartbeatAssignment(
        tuple(TopicPartitions(t, tuple(sorted(assignment[t]))) for t in sorted(assignment))
    )


# ----------------------------------------------------------------------------- entry points


def on_consumer_group_heartbeat(m: GroupManager, ctx: Ctx, out: Out, inbound: Inbound, req: ConsumerGroupHeartbeatRequest) -> None:
    config = m.config
    if "consumer" not in config.rebalance_protocols:
        _fail(out, inbound, E.UNSUPPORTED_VERSION)  # the broker does not serve the API
        return
    error = heartbeat_request_error(
        req, config.consumer_assignors, member_id_required=config.profile.client_generated_member_id
    )
    if error is E.NONE:
        error = m.status_error(req.group_id)
    if error is not E.NONE:
        _fail(out, inbound, error)
        return
    if req.group_id in m.consumer_writes:
        m.consumer_writes[req.group_id].append(inbound)
        return
    _heartbeat(m, ctx, out, inbound, req)


def on_consumer_timer(m: GroupManager, ctx: Ctx, out: Out, kind: str, group_id: str, member_id: str) -> None:
    """A member's session (`cg-session`) or rebalance (`cg-rebalance`) timeout fired."""
    if group_id in m.consumer_writes:
        m.consumer_writes[group_id].append((kind, member_id))
        return
    group = m.consumer_group(group_id)
    member = None if group is None else group.member(member_id)
    if group is None or member is None:
        return
    if kind == "cg-rebalance":
        # Fenced only if it is still at the epoch it was revoking in.
        if m.rebalance_epochs.pop((group_id, member_id), None) != member.member_epoch:
            return
        reason = "rebalance_timeout"
    else:
        # A classic member's join and sync timeouts (`consumerGroupFenceMemberOperation`).
        if kind == "cg-join":
            m.join_deadlines.pop((group_id, member_id), None)
        reason = {"cg-join": "join_timeout", "cg-sync": "sync_timeout"}.get(kind, "session_timeout")
    before, state_before = group.m.copy(), group.state
    events = Out()
    downgraded = fence(m, ctx, out, events, group, member, reason)
    write(m, ctx, out, PendingConsumerWrite(group, before, state_before, None, False, None, None, events, downgraded))


# ----------------------------------------------------------------------------- the heartbeat


def _heartbeat(m: GroupManager, ctx: Ctx, out: Out, inbound: Inbound, req: ConsumerGroupHeartbeatRequest) -> None:
    if req.member_epoch < JOIN_EPOCH:
        _leave(m, ctx, out, inbound, req)
        return
    join = req.member_epoch == JOIN_EPOCH
    events = Out()
    existing = m.groups.get(req.group_id)
    replaced_classic = None
    upgraded = None
    if isinstance(existing, ClassicGroup):
        # An Empty classic group gives way to a consumer group; one with members is converted
        # only if the policy allows (`getOrMaybeCreateConsumerGroup`, `validateOnlineUpgrade`).
        if join and not existing.is_(GroupState.EMPTY) and migration.can_upgrade(m, existing):
            upgraded = migration.upgrade(m, ctx, out, events, existing)
        elif not (join and existing.is_(GroupState.EMPTY)):
            _fail(out, inbound, E.GROUP_ID_NOT_FOUND)
            return
        replaced_classic, existing = existing, None
    if existing is None and not join:
        _fail(out, inbound, E.GROUP_ID_NOT_FOUND)
        return
    group = existing if isinstance(existing, ConsumerGroup) else upgraded or ConsumerGroup(req.group_id, state_timestamp_ms=ctx.now_ms)
    created = existing is None
    member_id = req.member_id or m.new_uuid(ctx)
    found = _subscribe(group, member_id, req)
    if isinstance(found, ErrorCode):
        _fail(out, inbound, found)
        return
    member, static_old = found
    before, state_before = group.m.copy(), group.state
    if upgraded is not None:
        before, state_before = Membership(), group.state  # the records write the whole group
        m.groups[group.group_id] = group
    elif created:
        m.groups[group.group_id] = group
        if replaced_classic is not None:
            group.offsets, group.pending_offset_commits = replaced_classic.offsets, replaced_classic.pending_offset_commits
        announce(events, group, None)
    if static_old is not None:
        group.remove(static_old.member_id)
        group.m.target[member_id] = before.target.get(static_old.member_id, {})
        if static_old.member_id != member_id:
            member_removed(events, group.group_id, static_old, "replaced")
            cancel_timers(m, out, group.group_id, static_old.member_id)
    updated = replace(
        member,
        instance_id=req.instance_id if req.instance_id is not None else member.instance_id,
        rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1 else member.rebalance_timeout_ms,
        subscribed_topics=tuple(sorted(set(req.subscribed_topic_names))) if req.subscribed_topic_names is not None else member.subscribed_topics,
        server_assignor=req.server_assignor if req.server_assignor is not None else member.server_assignor,
        classic=None,  # a classic member that heartbeats this way now speaks the consumer protocol
    )
    is_new = group.member(member_id) is None and static_old is None
    group.put(updated)
    if updated.subscribed_topics != member.subscribed_topics or is_new:
        bump(events, group, "member_joined" if is_new else "subscription_changed")
    if group.m.group_epoch > group.m.assignment_epoch:
        consumer_assign.update_target(m.config, events, group)
    try:
        updated = reconcile_member(m, out, group, updated, _owned(req))
    except ReconciliationError as failed:
        group.restore(before)
        if created:
            _undo_create(m, group, replaced_classic)
        _fail(out, inbound, failed.code)
        return
    group.put(updated)
    if updated != member or is_new or static_old is not None:
        member_changed(events, group.group_id, updated)
    out.set_timer(timer_key("cg-session", group.group_id, member_id), m.config.consumer_session_timeout_ms)
    group.refresh_state(events, ctx.now_ms)
    full = join or (req.rebalance_timeout_ms != -1 and req.subscribed_topic_names is not None and req.topic_partitions is not None)
    response = ConsumerGroupHeartbeatResponse(
        E.NONE,
        member_id,
        updated.member_epoch,
        m.config.consumer_heartbeat_interval_ms,
        _wire(updated.assigned) if full or updated.assigned != member.assigned else None,
    )
    pending = PendingConsumerWrite(group, before, state_before, replaced_classic, created, inbound, response, events)
    write(m, ctx, out, pending)


def _subscribe(
    group: ConsumerGroup, member_id: str, req: ConsumerGroupHeartbeatRequest
) -> ErrorCode | tuple[ConsumerGroupMember, ConsumerGroupMember | None]:
    """`getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember`: the member this request is
    from, and the static member it replaces, or the error that refuses it."""
    join = req.member_epoch == JOIN_EPOCH
    owned = _owned(req)
    if req.instance_id is None:
        member = group.member(member_id)
        if member is None:
            return (ConsumerGroupMember(member_id), None) if join else E.UNKNOWN_MEMBER_ID
    else:
        static = group.static_member(req.instance_id)
        if join:
            if static is None:
                return group.member(member_id) or ConsumerGroupMember(member_id), None
            if static.member_epoch != STATIC_LEAVE_EPOCH:
                return E.UNRELEASED_INSTANCE_ID  # its owner has not left: it cannot be replaced
            # The new member takes the old one's place whole, at epoch 0 (`replaceMember`).
            return replace(static, member_id=member_id, member_epoch=0, previous_member_epoch=0), static
        if static is None:
            return E.UNKNOWN_MEMBER_ID
        if static.member_id != member_id:
            return E.FENCED_INSTANCE_ID
        member = static
    error = heartbeat_epoch_error(req.member_epoch, member.member_epoch, member.previous_member_epoch, owned, member.assigned)
    return error if error is not E.NONE else (member, None)


def reconcile_member(m: GroupManager, out: Out, group: ConsumerGroup, member: ConsumerGroupMember, owned: Any) -> ConsumerGroupMember:
    """`maybeReconcile`: towards the target; the rebalance timeout runs while a member of the
    consumer protocol revokes (a classic member has its join and sync timeouts instead)."""
    target_epoch = group.m.assignment_epoch
    if is_reconciled_to(member.state, member.member_epoch, target_epoch):
        return member
    target = group.m.target.get(member.member_id, {})
    current = Member(member.state, member.member_epoch, member.assigned, member.pending_revocation)
    nxt = reconcile(current, target_epoch, target, group.partition_epoch, owned)
    if nxt == current:
        return member
    updated = member.with_assignment(nxt.state, nxt.member_epoch, nxt.assigned, nxt.pending_revocation)
    key = timer_key("cg-rebalance", group.group_id, member.member_id)
    if updated.classic is not None:
        return updated
    if updated.state is MemberState.UNREVOKED_PARTITIONS:
        m.rebalance_epochs[(group.group_id, member.member_id)] = updated.member_epoch
        out.set_timer(key, updated.rebalance_timeout_ms)
    else:
        m.rebalance_epochs.pop((group.group_id, member.member_id), None)
        out.cancel_timer(key)
    return updated


def bump(events: Out, group: ConsumerGroup, reason: str) -> None:
    group.m.group_epoch += 1
    events.emit("group_epoch_bumped", group_id=group.group_id, group_epoch=group.m.group_epoch, reason=reason)


# ----------------------------------------------------------------------------- leaving


def _leave(m: GroupManager, ctx: Ctx, out: Out, inbound: Inbound, req: ConsumerGroupHeartbeatRequest) -> None:
    """`consumerGroupLeave`: -1 removes the member; -2 (static) keeps it, at epoch -2 with its
    assignment, until its session expires or a new instance replaces it."""
    group = m.consumer_group(req.group_id)
    if group is None:
        _fail(out, inbound, E.GROUP_ID_NOT_FOUND)
        return
    if req.instance_id is None:
        member = group.member(req.member_id)
    else:
        member = group.static_member(req.instance_id)
        if member is not None and member.member_id != req.member_id:
            _fail(out, inbound, E.FENCED_INSTANCE_ID)
            return
    if member is None:
        _fail(out, inbound, E.UNKNOWN_MEMBER_ID)
        return
    before, state_before = group.m.copy(), group.state
    events = Out()
    if req.member_epoch == STATIC_LEAVE_EPOCH:
        left = replace(member, member_epoch=STATIC_LEAVE_EPOCH, pending_revocation={})
        group.put(left)
        member_changed(events, group.group_id, left)
        group.refresh_state(events, ctx.now_ms)
    downgraded = None
    if req.member_epoch != STATIC_LEAVE_EPOCH:
        downgraded = fence(m, ctx, out, events, group, member, "left")
    response = ConsumerGroupHeartbeatResponse(E.NONE, member.member_id, req.member_epoch)
    write(m, ctx, out, PendingConsumerWrite(group, before, state_before, None, False, inbound, response, events, downgraded))


def fence(
    m: GroupManager, ctx: Ctx, out: Out, events: Out, group: ConsumerGroup, member: ConsumerGroupMember, reason: str
) -> tuple[ClassicGroup, str] | None:
    """`consumerGroupFenceMember`: the member goes (its partitions are free at once) and the
    group epoch is bumped; the target follows at the next heartbeat. If it was the last member
    of the consumer protocol and the policy allows, the group is downgraded instead (returned
    with its record)."""
    if migration.can_downgrade(m, group, member.member_id):
        member_removed(events, group.group_id, member, reason)
        cancel_timers(m, out, group.group_id, member.member_id)
        for other in group.sorted_members():
            cancel_timers(m, out, group.group_id, other.member_id)
        group.transition(events, ConsumerGroupState.DEAD, ctx.now_ms)
        return migration.downgrade(m, ctx, events, group, member.member_id)
    group.remove(member.member_id)
    member_removed(events, group.group_id, member, reason)
    bump(events, group, "member_left" if reason == "left" else "member_fenced")
    cancel_timers(m, out, group.group_id, member.member_id)
    group.refresh_state(events, ctx.now_ms)
    return None


def cancel_timers(m: GroupManager, out: Out, group_id: str, member_id: str) -> None:
    for kind in ("cg-session", "cg-rebalance", "cg-join", "cg-sync"):
        out.cancel_timer(timer_key(kind, group_id, member_id))
    m.rebalance_epochs.pop((group_id, member_id), None)
    m.join_deadlines.pop((group_id, member_id), None)


# ----------------------------------------------------------------------------- writing


def write(m: GroupManager, ctx: Ctx, out: Out, pending: PendingConsumerWrite) -> None:
    """Append what changed, answering once it is committed; a change of nothing answers now."""
    group = pending.group
    records = changes(group.group_id, pending.before, group.m)
    if pending.downgraded is not None:
        records = (group_tombstone(group.group_id), pending.downgraded[1])
    elif pending.replaced is not None and pending.replaced.generation_id > 0:
        records = (classic_group_tombstone(group.group_id), *records)
    if not records:
        _complete(out, pending)
        return
    m.consumer_writes[group.group_id] = []
    m.append(out, group.group_id, records, pending)


def _complete(out: Out, pending: PendingConsumerWrite) -> None:
    out.extend(pending.events)
    if pending.inbound is not None and pending.response is not None:
        out.reply(pending.inbound, pending.response)


def _undo_create(m: GroupManager, group: ConsumerGroup, replaced: ClassicGroup | None) -> None:
    if replaced is not None:
        m.groups[group.group_id] = replaced
    else:
        m.groups.pop(group.group_id, None)


def on_written(
    m: GroupManager, ctx: Ctx, out: Out, pending: PendingConsumerWrite, error: ErrorCode, dispatch: Callable[[Inbound], None]
) -> None:
    """The group's records are committed (or not): answer, then handle what waited (requests
    through `dispatch`, which knows both protocols' APIs)."""
    group = pending.group
    written = error in _WRITTEN_ANYWAY
    error = append_error(error)
    expected = group if pending.downgraded is None else pending.downgraded[0]
    if m.groups.get(group.group_id) is not expected:
        error = E.NOT_COORDINATOR  # unloaded meanwhile
    elif pending.downgraded is not None:
        # The classic group has taken over and rebalances: a failed write is only answered.
        out.extend(pending.events)
        pending.events = Out()
    elif written:
        out.extend(pending.events)  # in the leader's log: the change stands, unanswered as such
    elif error is not E.NONE:
        group.restore(pending.before)
        group.state = pending.state_before
        if pending.created:
            _undo_create(m, group, pending.replaced)
    if error is E.NONE:
        _complete(out, pending)
    elif pending.inbound is not None:
        _fail(out, pending.inbound, error)
    waiting = m.consumer_writes.pop(group.group_id, [])
    for i, item in enumerate(waiting):
        if group.group_id in m.consumer_writes:
            m.consumer_writes[group.group_id].extend(waiting[i:])
            return
        if isinstance(item, Inbound):
            dispatch(item)
        else:
            on_consumer_timer(m, ctx, out, item[0], group.group_id, item[1])
