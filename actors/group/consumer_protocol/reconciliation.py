"""A member's way from its current assignment to its target (`CurrentAssignmentBuilder`).

The coordinator never gives a partition to a member while another holds it: a partition's
epoch (`ModernGroup.currentPartitionEpoch`) is the epoch of the member that has it assigned or
pending revocation, and -1 once free. A member first gives up what its target no longer holds
(UNREVOKED_PARTITIONS, at its old epoch), then moves to the target epoch with what it keeps and
whatever of the rest is free; what is not free yet it waits for (UNRELEASED_PARTITIONS),
re-evaluated at each heartbeat.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from actors.group.consumer_protocol.states import MemberState
from protocols.errors import ErrorCode

__all__ = ["FREE", "Assignment", "Member", "ReconciliationError", "reconcile"]

FREE = -1
"""The partition epoch of a partition no member holds."""

Assignment = Mapping[str, frozenset[int]]
"""Topic name -> partitions; a topic with none is left out."""


class ReconciliationError(Exception):
    """The member must give up everything and rejoin (FENCED_MEMBER_EPOCH)."""

    code = ErrorCode.FENCED_MEMBER_EPOCH


@dataclass(frozen=True, slots=True)
class Member:
    """A member as the coordinator keeps it."""

    state: MemberState
    member_epoch: int
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)


def reconcile(
    member: Member,
    target_epoch: int,
    target: Assignment,
    partition_epoch: Callable[[str, int], int],
    owned: Assignment | None,
) -> Member:
    """`CurrentAssignmentBuilder.build`: the member after a heartbeat that reports `owned`
    (None: the request did not say), given the target assignment at `target_epoch` and the
    group's partition epochs."""
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    if state is MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.pending_revocation):
            return member
        return _next(member, member.member_epoch + 1, target_epoch, target, partition_epoch, owned)
    if state is MemberState.UNRELEASED_PARTITIONS:
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    if owned is None or any(owned.values()):
        msg = "a member in an unknown state must give up its partitions and rejoin"
        raise ReconciliationError(msg)
    return _next(member, target_epoch, target_epoch, target, partition_epoch, owned)


def _owns_any(owned: Assignment | None, revoking: Assignment) -> bool:
    """`ownsRevokedPartitions`: a request that does not say what it owns still owns them."""
    if owned is None:
        return True
    return any(set(parts) & set(revoking.get(topic, ())) for topic, parts in owned.items())


def _next(
    member: Member,
    epoch_if_revoking: int,
    target_epoch: int,
    target: Assignment,
    partition_epoch: Callable[[str, int], int],
    owned: Assignment | None,
) -> Member:
    """`computeNextAssignment`."""
    keep: dict[str, frozenset[int]] = {}
    revoke: dict[str, frozenset[int]] = {}
    add: dict[str, frozenset[int]] = {}
    unreleased = False
    for topic in sorted(set(target) | set(member.assigned)):
        wanted = frozenset(target.get(topic, ()))
        current = frozenset(member.assigned.get(topic, ()))
        kept, gone = current & wanted, current - wanted
        free = frozenset(p for p in wanted - kept if partition_epoch(topic, p) == FREE)
        unreleased = unreleased or free != wanted - kept
        for bucket, parts in ((keep, kept), (revoke, gone), (add, free)):
            if parts:
                bucket[topic] = parts
    if revoke and _owns_any(owned, revoke):
        # Give up first, at the old epoch: a commit from onPartitionsRevoked still passes.
        return Member(MemberState.UNREVOKED_PARTITIONS, epoch_if_revoking, keep, revoke)
    assigned = {topic: keep.get(topic, frozenset()) | add.get(topic, frozenset()) for topic in sorted(set(keep) | set(add))}
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return Member(state, target_epoch, assigned, {})
