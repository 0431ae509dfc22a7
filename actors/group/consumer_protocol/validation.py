"""Which ConsumerGroupHeartbeat requests the coordinator refuses before looking at the group
(`GroupMetadataManager.throwIfConsumerGroupHeartbeatRequestIsInvalid`, 3.9; 4.0 adds
KIP-1082's non-empty member id)."""

from __future__ import annotations

from collections.abc import Sequence

from protocols.errors import ErrorCode
from protocols.group import JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH, ConsumerGroupHeartbeatRequest

__all__ = ["heartbeat_request_error"]


def heartbeat_request_error(
    req: ConsumerGroupHeartbeatRequest, assignors: Sequence[str], *, member_id_required: bool
) -> ErrorCode:
    """INVALID_REQUEST for a malformed request, UNSUPPORTED_ASSIGNOR for a server assignor the
    broker lacks, else NONE. A join (epoch 0) must give its rebalance timeout and a subscription
    and own nothing; a static leave (-2) must name its instance; other epochs below -2 are
    invalid. Only a join may leave the member id empty, and from 4.0 not even a join."""
    epoch = req.member_epoch
    if req.member_id == "" and (member_id_required or epoch > 0 or epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH)):
        return ErrorCode.INVALID_REQUEST
    if req.group_id == "" or req.instance_id == "" or req.rack_id == "":
        return ErrorCode.INVALID_REQUEST
    if epoch == JOIN_EPOCH:
        if req.rebalance_timeout_ms == -1 or req.topic_partitions is None or any(t.partitions for t in req.topic_partitions):
            return ErrorCode.INVALID_REQUEST
        if not req.subscribed_topic_names:
            return ErrorCode.INVALID_REQUEST
    elif epoch == STATIC_LEAVE_EPOCH:
        if req.instance_id is None:
            return ErrorCode.INVALID_REQUEST
    elif epoch < LEAVE_EPOCH:
        return ErrorCode.INVALID_REQUEST
    if req.server_assignor is not None and req.server_assignor not in assignors:
        return ErrorCode.UNSUPPORTED_ASSIGNOR
    return ErrorCode.NONE
