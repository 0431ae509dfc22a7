"""KIP-848's online migration between the protocols (`GroupMetadataManager`, 3.8+): a classic
group converted to a consumer group when a consumer-protocol member joins it (upgrade), and a
consumer group converted back when its last consumer-protocol member leaves and only classic
members remain (downgrade). `group.consumer.migration.policy` allows each conversion of a group
with members; an Empty group changes protocol whatever the policy (`consumer_heartbeat`,
`classic_members`).

- **Upgrade** (`validateOnlineUpgrade`, `convertToConsumerGroup`, `ConsumerGroup.fromClassicGroup`):
  allowed by the policy, for a group of the consumer embedded protocol (protocol type
  `consumer`). Parked JoinGroups and SyncGroups are answered REBALANCE_IN_PROGRESS; the group
  epoch and the target's epoch become the generation; each member becomes a STABLE classic
  member at that epoch, its last assignment both its target and its current assignment, its
  session timeout its JoinGroup's. The joining member then bumps the epoch as any new member
  does, so the classic members learn of the rebalance at their next Heartbeat.
- **Downgrade** (`validateOnlineDowngrade`, `convertToClassicGroup`, `ClassicGroup.fromConsumerGroup`):
  when a consumer-protocol member is fenced or leaves (epoch -1) and every other member is
  classic, there is another member, the policy allows it and the rest fit `group.max.size`.
  The classic group starts Stable at the group epoch, the protocol by vote, each member's
  target as its assignment; its members' sessions restart and a rebalance is prepared at once.
"""

from __future__ import annotations

from actors.core import Ctx, Inbound, Out
from actors.group import rebalance
from actors.group.consumer_group import ClassicMemberMetadata, ConsumerGroup, ConsumerGroupMember, announce, member_changed
from actors.group.consumer_protocol.states import MemberState
from actors.group.manager import GroupManager, announce_group, timer_key
from actors.group.records import group_record
from actors.group.rules import select_protocol
from actors.group.state import ClassicGroup, GroupState, MemberMetadata
from protocols.errors import ErrorCode
from protocols.group import (
    Assignment,
    ConsumerGroupHeartbeatResponse,
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

__all__ = ["answer_waiting", "can_downgrade", "can_upgrade", "downgrade", "error_answer", "upgrade"]


def error_answer(message: object, error: ErrorCode) -> object:
    """The answer of `error` to a request of either protocol's membership APIs."""
    if isinstance(message, JoinGroupRequest):
        return JoinGroupResponse(error, member_id=message.member_id)
    if isinstance(message, SyncGroupRequest):
        return SyncGroupResponse(error)
    if isinstance(message, HeartbeatRequest):
        return HeartbeatResponse(error)
    if isinstance(message, LeaveGroupRequest):
        return LeaveGroupResponse(error)
    return ConsumerGroupHeartbeatResponse(error)


def _as_map(assignment: Assignment) -> dict[str, frozenset[int]]:
    return {t.topic: frozenset(t.partitions) for t in sorted(assignment.partitions, key=lambda t: t.topic) if t.partitions}


def _as_assignment(assignment: dict[str, frozenset[int]]) -> Assignment:
    return Assignment(tuple(TopicPartitions(t, tuple(sorted(ps))) for t, ps in sorted(assignment.items()) if ps))


# ----------------------------------------------------------------------------- upgrade


def can_upgrade(m: GroupManager, group: ClassicGroup) -> bool:
    """`validateOnlineUpgrade`: the policy allows it and the group uses the consumer embedded
    protocol (`group.consumer.max.size` is not modelled)."""
    return (
        m.config.profile.classic_members_in_consumer_groups
        and m.config.consumer_migration_policy.upgrade_enabled
        and group.protocol_type == "consumer"
    )


def upgrade(m: GroupManager, ctx: Ctx, out: Out, events: Out, classic: ClassicGroup) -> ConsumerGroup:
    """`convertToConsumerGroup`: the consumer group made of `classic`, not yet in the manager."""
    for member in classic.sorted_members():
        # A rebalance in progress is over: its members rejoin the consumer group.
        if member.awaiting_join is not None:
            out.reply(member.awaiting_join, JoinGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS, member_id=member.member_id))
            member.awaiting_join = None
        if member.awaiting_sync is not None:
            out.reply(member.awaiting_sync, SyncGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS))
            member.awaiting_sync = None
    # The classic group's timers stay armed: they find no classic group and do nothing, as
    # Kafka's fail its type check (and a failed write puts the classic group back).
    group = ConsumerGroup(classic.group_id, state_timestamp_ms=ctx.now_ms)
    generation = classic.generation_id
    group.m.group_epoch = group.m.assignment_epoch = generation
    for member in classic.sorted_members():
        subscription = member.metadata(classic.protocol_name) if classic.protocol_name else member.protocols[0].metadata
        assigned = _as_map(member.assignment)
        group.put(
            ConsumerGroupMember(
                member.member_id,
                instance_id=member.group_instance_id,
                rebalance_timeout_ms=member.rebalance_timeout_ms,
                subscribed_topics=tuple(sorted(set(subscription.topics))),
                state=MemberState.STABLE,
                member_epoch=generation,
                previous_member_epoch=generation,
                assigned=assigned,
                classic=ClassicMemberMetadata(member.session_timeout_ms, member.protocols, member.client_id),
            )
        )
        group.m.target[member.member_id] = assigned
        out.set_timer(timer_key("cg-session", group.group_id, member.member_id), member.session_timeout_ms)
    group.offsets, group.pending_offset_commits = classic.offsets, classic.pending_offset_commits
    events.emit(
        "consumer_group_upgraded",
        group_id=group.group_id,
        generation_id=generation,
        previous_state=classic.state.value,
        members=sorted(group.m.members),
    )
    group.refresh_state(Out(), ctx.now_ms)
    announce(events, group, None)
    for member in group.sorted_members():
        member_changed(events, group.group_id, member)
    return group


# ----------------------------------------------------------------------------- downgrade


def can_downgrade(m: GroupManager, group: ConsumerGroup, member_id: str) -> bool:
    """`validateOnlineDowngrade`: the leaving member is the last one of the consumer protocol,
    others remain, the policy allows it, and they fit `group.max.size`."""
    if not m.config.profile.classic_members_in_consumer_groups or not group.all_classic_except(member_id):
        return False
    remaining = len(group.m.members) - 1
    return remaining >= 1 and m.config.consumer_migration_policy.downgrade_enabled and remaining <= m.config.group_max_size


def downgrade(m: GroupManager, ctx: Ctx, out: Out, group: ConsumerGroup, leaving: str) -> tuple[ClassicGroup, str]:
    """`convertToClassicGroup`: the classic group replaces `group` in the manager and prepares
    a rebalance at once; returns it with its group record (written after the consumer
    group's tombstone)."""
    classic = ClassicGroup(group.group_id, state=GroupState.STABLE, state_timestamp_ms=ctx.now_ms)
    classic.generation_id = group.m.group_epoch
    classic.protocol_type = "consumer"
    assignments: dict[str, Assignment] = {}
    for member in group.sorted_members():
        if member.member_id == leaving or member.classic is None:
            continue
        meta = member.classic
        classic.add(
            MemberMetadata(
                member.member_id,
                member.instance_id,
                meta.client_id,
                member.rebalance_timeout_ms,
                meta.session_timeout_ms,
                "consumer",
                meta.protocols,
            )
        )
        assignments[member.member_id] = _as_assignment(dict(group.m.target.get(member.member_id, {})))
    classic.protocol_name = select_protocol(mm.protocol_names for mm in classic.sorted_members())
    classic.subscribed_topics = classic.compute_subscribed_topics()
    for member in classic.sorted_members():
        member.assignment = assignments[member.member_id]
    classic.offsets, classic.pending_offset_commits = group.offsets, group.pending_offset_commits
    record = group_record(classic, assignments)
    m.groups[group.group_id] = classic
    out.emit(
        "classic_group_downgraded",
        group_id=group.group_id,
        generation_id=classic.generation_id,
        left_member_id=leaving,
        members=sorted(classic.members),
    )
    announce_group(out, classic)
    for member in classic.sorted_members():
        rebalance.member_added(out, classic, member)
        m.schedule_session(out, classic, member)
    rebalance.prepare_rebalance(m, ctx, out, classic)
    return classic, record


def answer_waiting(out: Out, waiting: list[Inbound | tuple[str, str]], error: ErrorCode) -> None:
    """Answer what waited for a group's write with `error` (the group was unloaded)."""
    for item in waiting:
        if isinstance(item, Inbound):
            out.reply(item, error_answer(item.message, error))
