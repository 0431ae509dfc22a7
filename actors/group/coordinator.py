"""The group coordinator of one broker, as a behaviour (Kafka's Scala `GroupCoordinator` of 3.9,
classic protocol, with the version switches of the profile; and KIP-848's consumer groups as
the new coordinator's `GroupMetadataManager` serves them).

It coordinates the groups whose `__consumer_offsets` partition its broker leads: the broker
tells it of each election and resignation (`loading.py`). It answers JoinGroup (`join.py`),
SyncGroup, Heartbeat and LeaveGroup (`membership.py`), OffsetCommit and OffsetFetch
(`offsets.py`), and the operator's DescribeGroups, ListGroups, DeleteGroups and OffsetDelete
(`admin.py`), and ConsumerGroupHeartbeat (`consumer_heartbeat.py`, on
`consumer_group.py`); the rebalance machinery is in `rebalance.py`, the classic group's state machine
in `state.py`, the decisions in `rules.py`. The manager (`manager.py`) holds its groups as
`Group`s (`group.py`), Kafka's interface for every group type, and the classic protocol's
handlers reach them as classic groups. FindCoordinator is answered by the broker (replica
manager) from its metadata cache.

Appends (commits and group records) go through the broker's real produce path: a ProduceRequest
with acks=-1 and `offsets.commit.timeout.ms` to the replica manager of the same node, whose
answer completes the operation that waited for it. Kafka's coordinator calls `appendRecords`
in-process; here it is a message, so an append costs two latencies of the node's own network
besides replication, and the broker does not hold the coordinator's other requests behind it.

A JoinGroup, SyncGroup, Heartbeat or LeaveGroup naming a consumer group is served inside it
(`classic_members.py`, 3.8+; GROUP_ID_NOT_FOUND in 3.7), and a group changes protocol as
`group.consumer.migration.policy` allows (`migration.py`).

Left out: transactional offset commits, topic deletion removing offsets; of `group.max.size`, the dropping of a refused static
restart's instance id in 2.3 to 2.7 (`removeStaticMember`).
"""

from __future__ import annotations

import json
from typing import Any

from actors.core import Ctx, Inbound, Out
from actors.group import admin, classic_members, consumer_heartbeat, join, loading, membership, offsets, rebalance
from actors.group.config import GroupCoordinatorConfig
from actors.group.manager import GroupManager, PendingCommit, StoreKind, timer_key
from actors.group.rules import store_group_error
from protocols.admin import DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest, OffsetDeleteRequest
from protocols.connection import Disconnected
from protocols.group import (
    ConsumerGroupHeartbeatRequest,
    CoordinatorElected,
    CoordinatorResigned,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from protocols.replication import ProduceResponse

__all__ = ["GroupCoordinator"]


class GroupCoordinator:
    """One broker's group coordinator."""

    def __init__(self, config: GroupCoordinatorConfig) -> None:
        self.config = config
        self.manager = GroupManager(config)

    def on_start(self, ctx: Ctx) -> Out:
        """Nothing is owned until the broker hands over a partition; the retention sweep runs
        every `offsets.retention.check.interval.ms` from now."""
        out = Out()
        out.set_timer(timer_key("retention"), self.config.offsets_retention_check_interval_ms)
        return out

    def on_message(self, ctx: Ctx, inbound: Inbound) -> Out:
        out = Out()
        m = self.manager
        if classic_members.handles(m, inbound):
            classic_members.on_classic_request(m, ctx, out, inbound)
            return out
        match inbound.message:
            case ConsumerGroupHeartbeatRequest() as req:
                consumer_heartbeat.on_consumer_group_heartbeat(m, ctx, out, inbound, req)
            case JoinGroupRequest() as req:
                join.on_join_group(m, ctx, out, inbound, req)
            case SyncGroupRequest() as req:
                membership.on_sync_group(m, ctx, out, inbound, req)
            case HeartbeatRequest() as req:
                membership.on_heartbeat(m, ctx, out, inbound, req)
            case LeaveGroupRequest() as req:
                membership.on_leave_group(m, ctx, out, inbound, req)
            case OffsetCommitRequest() as req:
                offsets.on_offset_commit(m, ctx, out, inbound, req)
            case OffsetFetchRequest() as req:
                offsets.on_offset_fetch(m, out, inbound, req)
            case DescribeGroupsRequest() as req:
                admin.on_describe_groups(m, out, inbound, req)
            case ListGroupsRequest() as req:
                admin.on_list_groups(m, out, inbound, req)
            case DeleteGroupsRequest() as req:
                admin.on_delete_groups(m, ctx, out, inbound, req)
            case OffsetDeleteRequest() as req:
                admin.on_offset_delete(m, ctx, out, inbound, req)
            case ProduceResponse() as resp:
                self._on_produce_response(ctx, out, inbound.correlation_id, resp)
            case CoordinatorElected() as msg:
                loading.on_elected(m, ctx, out, msg)
            case CoordinatorResigned() as msg:
                loading.on_resigned(m, ctx, out, msg)
            case Disconnected():
                pass  # a client's connection closed: Kafka's coordinator does not watch sockets
            case _:
                out.emit("request_ignored", src=str(inbound.src), message=type(inbound.message).__name__)
        return out

    def _dispatch_waiting(self, ctx: Ctx, out: Out, inbound: Inbound) -> None:
        """A request that waited for its consumer group's write, now handled."""
        m = self.manager
        if isinstance(inbound.message, ConsumerGroupHeartbeatRequest):
            consumer_heartbeat.on_consumer_group_heartbeat(m, ctx, out, inbound, inbound.message)
        elif classic_members.handles(m, inbound):
            classic_members.on_classic_request(m, ctx, out, inbound)
        else:
            out.extend(self.on_message(ctx, inbound))  # the group changed protocol meanwhile

    def _on_produce_response(self, ctx: Ctx, out: Out, correlation_id: int, resp: ProduceResponse) -> None:
        pending = self.manager.appends.pop(correlation_id, None)
        if pending is None:
            return
        [result] = resp.partitions
        if isinstance(pending, consumer_heartbeat.PendingConsumerWrite):
            consumer_heartbeat.on_written(
                self.manager, ctx, out, pending, result.error_code, lambda item: self._dispatch_waiting(ctx, out, item)
            )
            return
        if isinstance(pending, PendingCommit):
            offsets.on_commit_appended(out, pending, result.error_code, result.base_offset)
            return
        error = store_group_error(result.error_code)
        rebalance.on_group_stored(self.manager, ctx, out, pending, error)
        if pending.kind == StoreKind.STATIC:
            join.on_static_member_stored(self.manager, out, pending, error)

    def on_timer(self, ctx: Ctx, key: str) -> Out:
        out = Out()
        m = self.manager
        kind, *args = json.loads(key)
        if kind == "retention":
            offsets.on_retention_timer(m, ctx, out)
            return out
        if kind == "load":
            loading.on_load_timer(m, ctx, out, args[0])
            return out
        if kind in ("cg-session", "cg-rebalance", "cg-join", "cg-sync"):
            consumer_heartbeat.on_consumer_timer(m, ctx, out, kind, args[0], args[1])
            return out
        group = m.classic_group(args[0])  # the rebalance's timers are the classic protocol's
        if group is None:
            return out  # the group was unloaded or removed since
        if kind == "join":
            rebalance.on_join_timer(m, ctx, out, group)
        elif kind == "sync":
            rebalance.on_sync_timer(m, ctx, out, group)
        elif kind == "session":
            membership.on_session_timer(m, ctx, out, group, args[1])
        elif kind == "pending":
            join.on_pending_timer(m, ctx, out, group, args[1])
        return out

    def snapshot(self) -> dict[str, Any]:
        return self.manager.snapshot()
