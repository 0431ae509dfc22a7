"""The member-epoch checks of the consumer protocol's coordinator: a heartbeat's
(`GroupMetadataManager.throwIfConsumerGroupMemberEpochIsInvalid`) and an offset commit's
(`ConsumerGroup.validateOffsetCommit`). Each returns Kafka's error code; NONE lets it through."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from protocols.errors import ErrorCode

__all__ = ["OFFSET_COMMIT_MIN_VERSION", "CommitMember", "heartbeat_epoch_error", "offset_commit_error"]

OFFSET_COMMIT_MIN_VERSION = 9
"""OffsetCommit v9 (KIP-848) carries the member epoch; a consumer-protocol member needs it."""

Partitions = Mapping[str, Iterable[int]]


def heartbeat_epoch_error(
    received: int, current: int, previous: int, owned: Partitions | None, assigned: Partitions
) -> ErrorCode:
    """A known member's heartbeat at epoch `received`, the coordinator knowing it at `current`
    (and `previous` before that). Ahead of the coordinator is fenced; behind it too, except
    one epoch behind with owned partitions all still assigned: the answer that bumped the
    epoch was lost, and the member has given up nothing it should not hold."""
    if received > current:
        return ErrorCode.FENCED_MEMBER_EPOCH
    if received < current and (received != previous or not _is_subset(owned, assigned)):
        return ErrorCode.FENCED_MEMBER_EPOCH
    return ErrorCode.NONE


def _is_subset(owned: Partitions | None, assigned: Partitions) -> bool:
    """`isSubset`: a request that does not say what it owns is not a subset."""
    if owned is None:
        return False
    return all(topic in assigned and set(parts) <= set(assigned[topic]) for topic, parts in owned.items())


@dataclass(frozen=True, slots=True)
class CommitMember:
    """What the commit check needs of a member of the group."""

    member_epoch: int
    uses_classic_protocol: bool = False
    """A classic consumer in a consumer group (KIP-848's upgrade path): its generation is the epoch."""


def offset_commit_error(
    members: Mapping[str, CommitMember],
    member_id: str,
    member_epoch: int,
    *,
    api_version: int = OFFSET_COMMIT_MIN_VERSION,
) -> ErrorCode:
    """`ConsumerGroup.validateOffsetCommit`: an epoch below 0 from outside the group (an admin
    tool, a consumer with `assign()`) commits only to a group with no members; a member must
    be known, use OffsetCommit v9 or later if it uses the consumer protocol, and name exactly
    its current epoch (a member that is revoking still has its old epoch, so its commits in
    `onPartitionsRevoked` pass). Transactional commits (TxnOffsetCommit) are not modelled."""
    if member_epoch < 0 and not members:
        return ErrorCode.NONE
    member = members.get(member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if not member.uses_classic_protocol and api_version < OFFSET_COMMIT_MIN_VERSION:
        return ErrorCode.UNSUPPORTED_VERSION
    return _epoch_error(member, member_epoch)


def offset_fetch_error(members: Mapping[str, CommitMember], member_id: str | None, member_epoch: int) -> ErrorCode:
    """`ConsumerGroup.validateOffsetFetch` (OffsetFetch v9): no member id and a negative epoch
    (an admin tool, a classic consumer, a member between two memberships) is answered; a member
    must be known and name exactly its current epoch."""
    if member_id is None and member_epoch < 0:
        return ErrorCode.NONE
    member = members.get(member_id or "")
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    return _epoch_error(member, member_epoch)


def _epoch_error(member: CommitMember, member_epoch: int) -> ErrorCode:
    """`validateMemberEpoch`: a classic member's generation is its epoch."""
    if member_epoch != member.member_epoch:
        return ErrorCode.ILLEGAL_GENERATION if member.uses_classic_protocol else ErrorCode.STALE_MEMBER_EPOCH
    return ErrorCode.NONE
