"""Election and resignation: loading and unloading a `__consumer_offsets` partition's groups
(`GroupCoordinator.onElection`/`onResignation`, `GroupMetadataManager.scheduleLoadGroupAndOffsets`,
`removeGroupsForPartition`, `onGroupLoaded`, `onGroupUnloaded`, 3.9).

The broker tells its node's coordinator when it becomes leader of a partition (with the log up
to its end) and when it stops. Each message carries the leader epoch, and the coordinator keeps
the newest one per partition (`epochForPartitionId`): an election or resignation older than what
it has heard is ignored, so a delayed message cannot undo a newer one.

Load: the groups are rebuilt from the log (`records.replay`), Stable or Empty at their last
stored generation; a rebalance under way on the previous coordinator is lost. Every loaded
member's session starts now. A group with more members than `group.max.size` (2.2+) starts a
rebalance at once (`onGroupLoaded`), whose join refuses the members beyond the limit. Kafka's
load lasts as long as reading the partition's log on the coordinator's scheduler thread; here it
takes no simulated time unless `offsets.load.ms` (the simulator's key, `load_ms`) says
otherwise: the partition is loading from the election until that much later, and meanwhile
requests for its groups get COORDINATOR_LOAD_IN_PROGRESS (SyncGroup: REBALANCE_IN_PROGRESS;
Heartbeat: NONE). A resignation during the load cancels it.

Consumer groups (KIP-848) come back with their epochs, members, current and target
assignments (`consumer_records`), in their derived state; every member's session timeout
starts now, and a member that was revoking gets its rebalance timeout again (`onLoaded`).

Unload: each group becomes Dead here (a consumer group's heartbeats waiting for its write are
answered NOT_COORDINATOR); its parked JoinGroups (PreparingRebalance) or SyncGroups
(CompletingRebalance, Stable) are answered NOT_COORDINATOR, and later requests get
NOT_COORDINATOR since the partition is no longer owned.
"""

from __future__ import annotations

from actors.core import Ctx, Out
from actors.group.consumer_group import ConsumerGroup, announce, member_changed
from actors.group.consumer_protocol.states import ConsumerGroupState, MemberState
from actors.group.consumer_records import ConsumerReplay
from actors.group.migration import answer_waiting
from actors.group.manager import GroupManager, announce_group, timer_key
from actors.group.rebalance import member_added, prepare_rebalance, remove_sync_expiration
from actors.group.records import replay
from actors.group.state import ClassicGroup, GroupState, as_classic
from protocols.errors import ErrorCode
from protocols.group import (
    CoordinatorElected,
    CoordinatorResigned,
    JoinGroupResponse,
    SyncGroupResponse,
)
from protocols.replication import RecordBatch

__all__ = ["on_elected", "on_load_timer", "on_resigned"]

S = GroupState


def on_elected(m: GroupManager, ctx: Ctx, out: Out, msg: CoordinatorElected) -> None:
    partition = msg.partition
    if not m.maybe_update_epoch(partition, msg.leader_epoch):
        return  # an election older than a resignation already heard
    if partition in m.owned or partition in m.loading:
        return  # already this coordinator's: a newer epoch with the same leader
    if m.config.load_ms > 0:
        m.loading[partition] = msg.leader_epoch
        m.pending_loads[partition] = msg.batches
        out.set_timer(timer_key("load", partition), m.config.load_ms)
        return
    _load(m, ctx, out, partition, msg.leader_epoch, msg.batches)


def on_load_timer(m: GroupManager, ctx: Ctx, out: Out, partition: int) -> None:
    leader_epoch = m.loading.pop(partition, None)
    batches = m.pending_loads.pop(partition, ())
    if leader_epoch is not None:
        _load(m, ctx, out, partition, leader_epoch, batches)


def _load(m: GroupManager, ctx: Ctx, out: Out, partition: int, leader_epoch: int, batches: tuple[RecordBatch, ...]) -> None:
    consumer = ConsumerReplay()
    loaded = replay(batches, consumer.apply)
    consumer_groups = consumer.build()
    m.owned[partition] = leader_epoch
    out.emit(
        "group_coordinator_loaded", partition=partition, leader_epoch=leader_epoch, groups=sorted({*loaded, *consumer_groups})
    )
    for group_id, cg in consumer_groups.items():
        offsets_only = loaded.pop(group_id, None)  # the group's offsets, replayed as a standalone group's
        if offsets_only is not None:
            cg.offsets = offsets_only.offsets
        _load_consumer_group(m, ctx, out, cg)
    for group_id, group in sorted(loaded.items()):
        if group.state_timestamp_ms is None:
            group.state_timestamp_ms = ctx.now_ms
        m.groups[group_id] = group
        announce_group(out, group)
        for member in group.sorted_members():
            member_added(out, group, member)
            m.schedule_session(out, group, member)
        if m.config.profile.group_max_size and len(group.members) > m.config.group_max_size:
            # `onGroupLoaded`: a group over the limit (stored under a larger one, or past the
            # check before 2.6) rebalances at once, so that its members commit and the join
            # refuses the ones beyond the limit.
            prepare_rebalance(m, ctx, out, group)


def _load_consumer_group(m: GroupManager, ctx: Ctx, out: Out, group: ConsumerGroup) -> None:
    group.state_timestamp_ms = ctx.now_ms
    m.groups[group.group_id] = group
    group.refresh_state(Out(), ctx.now_ms)
    announce(out, group, None)
    for member in group.sorted_members():
        member_changed(out, group.group_id, member)  # as loaded, so the log knows every member here
        session_ms = m.config.consumer_session_timeout_ms if member.classic is None else member.classic.session_timeout_ms
        out.set_timer(timer_key("cg-session", group.group_id, member.member_id), session_ms)
        if member.classic is None and member.state is MemberState.UNREVOKED_PARTITIONS:
            m.rebalance_epochs[(group.group_id, member.member_id)] = member.member_epoch
            out.set_timer(timer_key("cg-rebalance", group.group_id, member.member_id), member.rebalance_timeout_ms)


def _unload_consumer_group(m: GroupManager, ctx: Ctx, out: Out, group: ConsumerGroup) -> None:
    group.transition(out, ConsumerGroupState.DEAD, ctx.now_ms)
    for member in group.sorted_members():
        out.cancel_timer(timer_key("cg-session", group.group_id, member.member_id))
        out.cancel_timer(timer_key("cg-rebalance", group.group_id, member.member_id))
        m.rebalance_epochs.pop((group.group_id, member.member_id), None)
    answer_waiting(out, m.consumer_writes.pop(group.group_id, []), ErrorCode.NOT_COORDINATOR)


def on_resigned(m: GroupManager, ctx: Ctx, out: Out, msg: CoordinatorResigned) -> None:
    partition = msg.partition
    leader_epoch = msg.leader_epoch if msg.leader_epoch >= 0 else None
    if not m.maybe_update_epoch(partition, leader_epoch):
        return  # a resignation older than the election already heard
    was_loading = m.loading.pop(partition, None) is not None
    m.pending_loads.pop(partition, None)
    if was_loading:
        out.cancel_timer(timer_key("load", partition))
    if m.owned.pop(partition, None) is None and not was_loading:
        return
    unloaded = []
    for group in m.groups_of(partition):
        if isinstance(group, ConsumerGroup):
            _unload_consumer_group(m, ctx, out, group)
        else:
            _unload(m, ctx, out, as_classic(group))
        del m.groups[group.group_id]
        unloaded.append(group.group_id)
    out.emit("group_coordinator_unloaded", partition=partition, leader_epoch=msg.leader_epoch, groups=unloaded)


def _unload(m: GroupManager, ctx: Ctx, out: Out, group: ClassicGroup) -> None:
    """`onGroupUnloaded`: Dead, parked requests answered NOT_COORDINATOR, timers dropped."""
    previous = group.state
    group.transition_to(S.DEAD, out, ctx.now_ms)
    for member in group.sorted_members():
        if previous is S.PREPARING_REBALANCE and member.awaiting_join is not None:
            out.reply(member.awaiting_join, JoinGroupResponse(ErrorCode.NOT_COORDINATOR, member_id=member.member_id))
            member.awaiting_join = None
        if previous in (S.COMPLETING_REBALANCE, S.STABLE) and member.awaiting_sync is not None:
            out.reply(member.awaiting_sync, SyncGroupResponse(ErrorCode.NOT_COORDINATOR))
            member.awaiting_sync = None
        m.cancel_session(out, group, member.member_id)
    for member_id in group.pending_members:
        out.cancel_timer(timer_key("pending", group.group_id, member_id))
    group.delayed_join = None
    remove_sync_expiration(out, group)
    out.cancel_timer(timer_key("join", group.group_id))
