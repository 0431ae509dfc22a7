"""A KIP-848 consumer group on the coordinator: `ConsumerGroup` and `ConsumerGroupMember`
(`modern.consumer`, 3.9), the `Group` of type CONSUMER beside the classic one.

The group holds its group epoch, its target assignment (per member, at the assignment epoch)
and its members with their current assignment. The state is derived, never set
(`states.group_state`), and a change of it is logged. A partition's epoch
(`currentPartitionEpoch`) is worked out from the members: the epoch of the member that has it
assigned or pending revocation, else free; a static member that left with epoch -2 still
holds its partitions at -2.

Members are frozen values: a change replaces one, so a copy of the membership (`Membership`)
is cheap, which is what undoes a heartbeat whose records could not be written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from actors.core import Out
from actors.group.consumer_protocol.reconciliation import FREE
from actors.group.consumer_protocol.states import ConsumerGroupState, MemberState, group_state
from actors.group.group import GroupType

if TYPE_CHECKING:
    from actors.group.state import CommittedOffset
    from protocols.group import JoinGroupProtocol
    from protocols.types import TopicPartition

__all__ = ["Assignment", "ClassicMemberMetadata", "ConsumerGroup", "ConsumerGroupMember", "Membership", "consumer_group_snapshot", "partition_names"]

Assignment = Mapping[str, frozenset[int]]


def partition_names(assignment: Assignment) -> list[str]:
    """["T-0", ...] in topic, then partition order."""
    return [f"{topic}-{p}" for topic in sorted(assignment) for p in sorted(assignment[topic])]


def _clean(assignment: Mapping[str, Iterable[int]]) -> dict[str, frozenset[int]]:
    """Topics with no partitions left out, topics in order."""
    return {topic: frozenset(ps) for topic, ps in sorted(assignment.items()) if ps}


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """`ConsumerGroupMemberMetadataValue.ClassicMemberMetadata`: what a member speaking the
    classic protocol inside a consumer group keeps of its JoinGroup (3.8+)."""

    session_timeout_ms: int
    protocols: tuple[JoinGroupProtocol, ...]
    """Its supported protocols with their subscriptions, in its order of preference."""
    client_id: str = ""

    @property
    def protocol_name(self) -> str:
        """The protocol its JoinGroup and SyncGroup answers name: its first."""
        return self.protocols[0].name


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    """`ConsumerGroupMember`: its subscription and its current assignment."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topics: tuple[str, ...] = ()
    server_assignor: str | None = None
    state: MemberState = MemberState.STABLE
    member_epoch: int = 0
    previous_member_epoch: int = -1
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    classic: ClassicMemberMetadata | None = None
    """Set for a member that speaks the classic protocol (`useClassicProtocol`)."""

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None

    def with_assignment(self, state: MemberState, epoch: int, assigned: Assignment, revoking: Assignment) -> ConsumerGroupMember:
        """`updateMemberEpoch` with a new current assignment: the previous epoch is the one it had."""
        return replace(
            self,
            state=state,
            member_epoch=epoch,
            previous_member_epoch=self.member_epoch,
            assigned=_clean(assigned),
            pending_revocation=_clean(revoking),
        )


@dataclass(slots=True)
class Membership:
    """What a heartbeat changes: the epochs, the target and the members."""

    group_epoch: int = 0
    assignment_epoch: int = 0
    target: dict[str, Assignment] = field(default_factory=dict)
    """Member id -> its target assignment at `assignment_epoch`."""
    members: dict[str, ConsumerGroupMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    """Instance id -> member id."""

    def copy(self) -> Membership:
        return Membership(
            self.group_epoch, self.assignment_epoch, dict(self.target), dict(self.members), dict(self.static_members)
        )


@dataclass(slots=True)
class ConsumerGroup:
    """`ConsumerGroup`: one consumer group, its membership and its offsets."""

    group_id: str
    m: Membership = field(default_factory=Membership)
    state: ConsumerGroupState = ConsumerGroupState.EMPTY
    state_timestamp_ms: int | None = None
    offsets: dict[TopicPartition, CommittedOffset] = field(default_factory=dict)
    pending_offset_commits: dict[TopicPartition, tuple[int, int, int]] = field(default_factory=dict)
    """As a classic group's: commits whose append is in flight."""

    @property
    def group_type(self) -> GroupType:
        return GroupType.CONSUMER

    def is_dead(self) -> bool:
        return self.state is ConsumerGroupState.DEAD

    # ------------------------------------------------------------------ members

    def member(self, member_id: str) -> ConsumerGroupMember | None:
        return self.m.members.get(member_id)

    def static_member(self, instance_id: str) -> ConsumerGroupMember | None:
        member_id = self.m.static_members.get(instance_id)
        return None if member_id is None else self.m.members.get(member_id)

    def put(self, member: ConsumerGroupMember) -> None:
        self.m.members[member.member_id] = member
        if member.instance_id is not None:
            self.m.static_members[member.instance_id] = member.member_id

    def remove(self, member_id: str) -> ConsumerGroupMember | None:
        """The member, its target and its instance id go (`removeMember`'s three tombstones)."""
        member = self.m.members.pop(member_id, None)
        self.m.target.pop(member_id, None)
        if member is not None and member.instance_id is not None and self.m.static_members.get(member.instance_id) == member_id:
            del self.m.static_members[member.instance_id]
        return member

    def sorted_members(self) -> list[ConsumerGroupMember]:
        return [self.m.members[mid] for mid in sorted(self.m.members)]

    def partition_epoch(self, topic: str, partition: int) -> int:
        """`currentPartitionEpoch`: the epoch of the member holding it, or FREE."""
        for member in self.m.members.values():
            if partition in member.assigned.get(topic, ()) or partition in member.pending_revocation.get(topic, ()):
                return member.member_epoch
        return FREE

    def subscribed_topics(self) -> frozenset[str]:
        """The union of the members' subscriptions (`subscribedTopicNames`)."""
        return frozenset(t for member in self.m.members.values() for t in member.subscribed_topics)

    def has_offsets(self) -> bool:
        return bool(self.offsets) or bool(self.pending_offset_commits)

    def classic_members(self) -> list[ConsumerGroupMember]:
        return [mm for mm in self.sorted_members() if mm.classic is not None]

    def all_classic_except(self, member_id: str) -> bool:
        """`allMembersUseClassicProtocolExcept`: every other member speaks the classic protocol
        and this one does not."""
        member = self.member(member_id)
        return (
            member is not None
            and member.classic is None
            and len(self.classic_members()) == len(self.m.members) - 1
        )

    def supports_classic_protocols(self, protocol_type: str, names: tuple[str, ...]) -> bool:
        """`supportsClassicProtocols`: a classic member may join if it speaks the consumer
        embedded protocol and one of its protocols is supported by every classic member."""
        if protocol_type != "consumer" or not names:
            return False
        classic = self.classic_members()
        return any(all(n in (p.name for p in mm.classic.protocols) for mm in classic if mm.classic) for n in names)

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """`waitingOnUnreleasedPartition`: a target partition it lacks is still held elsewhere."""
        if member.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        target = self.m.target.get(member.member_id, {})
        return any(
            p not in member.assigned.get(topic, ()) and self.partition_epoch(topic, p) != FREE
            for topic in sorted(target)
            for p in sorted(target[topic])
        )

    # ------------------------------------------------------------------ state

    def refresh_state(self, out: Out, now_ms: int) -> None:
        """`maybeUpdateGroupState`: derive the state; log it when it changed."""
        if self.is_dead():
            return
        m = self.m
        state = group_state(m.group_epoch, m.assignment_epoch, ((mm.state, mm.member_epoch) for mm in m.members.values()))
        if state is not self.state:
            self.transition(out, state, now_ms)

    def transition(self, out: Out, state: ConsumerGroupState, now_ms: int) -> None:
        before = self.state
        self.state = state
        self.state_timestamp_ms = now_ms
        announce(out, self, before.value)

    def restore(self, membership: Membership) -> None:
        self.m = membership


def announce(out: Out, group: ConsumerGroup, previous: str | None) -> None:
    out.emit(
        "consumer_group_state_changed",
        group_id=group.group_id,
        previous_state=previous,
        state=group.state.value,
        group_epoch=group.m.group_epoch,
        assignment_epoch=group.m.assignment_epoch,
    )


def member_changed(out: Out, group_id: str, member: ConsumerGroupMember) -> None:
    out.emit(
        "consumer_member_changed",
        group_id=group_id,
        member_id=member.member_id,
        instance_id=member.instance_id,
        state=member.state.value,
        member_epoch=member.member_epoch,
        previous_member_epoch=member.previous_member_epoch,
        assigned=partition_names(member.assigned),
        pending_revocation=partition_names(member.pending_revocation),
    )


def member_removed(out: Out, group_id: str, member: ConsumerGroupMember, reason: str) -> None:
    out.emit(
        "consumer_member_removed",
        group_id=group_id,
        member_id=member.member_id,
        instance_id=member.instance_id,
        member_epoch=member.member_epoch,
        reason=reason,
    )


def consumer_group_snapshot(group: ConsumerGroup) -> dict[str, Any]:
    """The coordinator's snapshot of a consumer group."""
    return {
        "type": "consumer",
        "state": group.state.value,
        "group_epoch": group.m.group_epoch,
        "assignment_epoch": group.m.assignment_epoch,
        "target": {mid: partition_names(a) for mid, a in sorted(group.m.target.items())},
        "members": {
            mm.member_id: {
                "instance_id": mm.instance_id,
                "state": mm.state.value,
                "member_epoch": mm.member_epoch,
                "previous_member_epoch": mm.previous_member_epoch,
                "subscribed_topics": list(mm.subscribed_topics),
                "assigned": partition_names(mm.assigned),
                "pending_revocation": partition_names(mm.pending_revocation),
            }
            for mm in group.sorted_members()
        },
        "offsets": {str(tp): c.offset for tp, c in sorted(group.offsets.items())},
    }
