"""A classic group and its members: the state machine of `GroupMetadata` and `MemberMetadata`.

Models the Scala coordinator's `GroupMetadata` (3.9; `ClassicGroup.java` in the new coordinator
has the same states and table): the five states with their valid previous states, one
`transition_to` that asserts the table and logs `group_state_changed`, and the membership
bookkeeping the handlers rely on (`add`, `remove`, `maybeElectNewJoinedLeader`,
`hasAllMembersJoined`, KIP-394 pending members, KIP-345 static members, KAFKA-12890 pending
sync members). The rules that decide answers are in `rules.py`; the handlers in
`membership.py` and `offsets.py`.

Deterministic where Kafka is not: `members` is a hash map in Kafka, so "the first member" when
the leader leaves (`members.keys.headOption`) and "a joined member" when it did not rejoin
(`members.find(_.isAwaitingJoin)`) follow hash order. Here both pick the lowest member id among
the candidates, and every iteration that emits (responses, events) goes in member-id order.

Left out: transactional offset commits. KIP-848's consumer groups are `consumer_group.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from actors.core import Inbound, Out
from actors.group.delayed import DelayedJoin
from actors.group.group import Group, GroupType
from protocols.group import Assignment, JoinGroupProtocol, Subscription

if TYPE_CHECKING:
    from protocols.types import TopicPartition

__all__ = [
    "VALID_PREVIOUS_STATES",
    "ClassicGroup",
    "CommittedOffset",
    "GroupState",
    "IllegalGroupTransition",
    "MemberMetadata",
    "as_classic",
]


class GroupState(Enum):
    """A classic group's state (`GroupState.scala`, `ClassicGroupState.java`).

    - EMPTY: no members; offsets may remain. Action: a JoinGroup from a new member is accepted;
      a commit with generation -1 is stored. Transition: PREPARING_REBALANCE when a member
      joins; DEAD when its last offset expires or its partition is unloaded.
    - PREPARING_REBALANCE: waiting for the members to (re)join. Action: JoinGroups are parked;
      Heartbeat and SyncGroup get REBALANCE_IN_PROGRESS; commits of the current generation
      are still stored. Transition: COMPLETING_REBALANCE when the join completes with members;
      EMPTY when it completes with none; DEAD on unload.
    - COMPLETING_REBALANCE: the new generation waits for the leader's assignment. Action:
      SyncGroups are parked until the leader's is stored. Transition: STABLE once stored;
      PREPARING_REBALANCE on a member change or a failed store; DEAD on unload.
    - STABLE: the assignment is stored and served. Action: heartbeats, SyncGroup answered with
      the stored assignment. Transition: PREPARING_REBALANCE on a member change, a leader's
      JoinGroup or an expiry; DEAD on unload.
    - DEAD: the group is gone from this coordinator (unloaded or removed). Action: everything
      is answered as if the group did not exist here. Transition: none.
    """

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_S = GroupState
VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    _S.EMPTY: frozenset({_S.PREPARING_REBALANCE}),
    _S.PREPARING_REBALANCE: frozenset({_S.STABLE, _S.COMPLETING_REBALANCE, _S.EMPTY}),
    _S.COMPLETING_REBALANCE: frozenset({_S.PREPARING_REBALANCE}),
    _S.STABLE: frozenset({_S.COMPLETING_REBALANCE}),
    _S.DEAD: frozenset({_S.STABLE, _S.PREPARING_REBALANCE, _S.COMPLETING_REBALANCE, _S.EMPTY, _S.DEAD}),
}
"""`GroupState.validPreviousStates`: the only legal transitions."""


class IllegalGroupTransition(Exception):  # noqa: N818 - Kafka's IllegalStateException
    """A transition the table forbids: a bug in the coordinator, never an expected condition."""


@dataclass(slots=True)
class MemberMetadata:
    """`MemberMetadata`: one member, what it supports, and its parked requests."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[JoinGroupProtocol, ...]
    """In the member's order of preference."""
    assignment: Assignment = field(default_factory=Assignment)
    awaiting_join: Inbound | None = None
    """Its parked JoinGroup (`awaitingJoinCallback`)."""
    awaiting_sync: Inbound | None = None
    """Its parked SyncGroup (`awaitingSyncCallback`)."""
    is_new: bool = False
    """Added and not yet through a completed join: its session does not cover a parked
    JoinGroup, and it expires after the new-member join timeout."""
    client_host: str = ""
    """Where its JoinGroup came from (its node); not stored in the group record, so a member
    loaded by a new coordinator has none (DescribeGroups shows it empty)."""

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def protocol_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.protocols)

    def metadata(self, protocol: str) -> Subscription:
        for p in self.protocols:
            if p.name == protocol:
                return p.metadata
        msg = f"member {self.member_id} does not support {protocol}"
        raise ValueError(msg)

    def matches(self, protocols: tuple[JoinGroupProtocol, ...]) -> bool:
        """The same protocols, in the same order, with the same metadata (`matches`)."""
        return self.protocols == tuple(protocols)

    def has_satisfied_heartbeat(self) -> bool:
        """`hasSatisfiedHeartbeat` at the moment its session expires: a member waiting in a
        rebalance (a parked JoinGroup or SyncGroup) is covered, unless it is new."""
        if self.is_new:
            return False
        return self.awaiting_join is not None or self.awaiting_sync is not None


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    """`CommitRecordMetadataAndOffset`: an offset and where its record is in the log."""

    offset: int
    leader_epoch: int
    commit_ms: int
    record_offset: int
    """The `__consumer_offsets` offset of its record (a later record wins on replay)."""


@dataclass(slots=True)
class ClassicGroup:
    """`GroupMetadata`: one group's state, members and offsets on this coordinator."""

    group_id: str
    state: GroupState = GroupState.EMPTY
    state_timestamp_ms: int | None = None
    """`currentStateTimestamp`: when it entered its state (KIP-211 expires offsets from the
    moment it became Empty)."""
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, MemberMetadata] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    """group.instance.id -> member id (KIP-345)."""
    pending_members: dict[str, None] = field(default_factory=dict)
    """KIP-394: ids handed out with MEMBER_ID_REQUIRED, not yet joined (insertion-ordered)."""
    pending_sync_members: dict[str, None] = field(default_factory=dict)
    """KAFKA-12890: members of this generation that have not sent SyncGroup."""
    new_member_added: bool = False
    """`newMemberAdded`: a member joined during the initial delay of generation 0."""
    delayed_join: DelayedJoin | None = None
    delayed_sync_generation: int | None = None
    """The generation a `DelayedSync` is armed for, if one is."""
    subscribed_topics: frozenset[str] | None = None
    """`subscribedTopics`, computed at each new generation and at load; None if unknown."""
    offsets: dict[TopicPartition, CommittedOffset] = field(default_factory=dict)
    pending_offset_commits: dict[TopicPartition, tuple[int, int, int]] = field(default_factory=dict)
    """Commits whose append is in flight (`pendingOffsetCommits`), as (offset, leader epoch,
    commit time): invisible to OffsetFetch until the append is done."""

    @property
    def group_type(self) -> GroupType:
        return GroupType.CLASSIC

    # ------------------------------------------------------------------ states

    def is_(self, state: GroupState) -> bool:
        return self.state is state

    def is_dead(self) -> bool:
        return self.state is GroupState.DEAD

    def transition_to(self, target: GroupState, out: Out, now_ms: int) -> None:
        """`transitionTo`: check the table, move, stamp the time, log `group_state_changed`."""
        if self.state not in VALID_PREVIOUS_STATES[target]:
            msg = f"group {self.group_id} cannot move from {self.state.value} to {target.value}"
            raise IllegalGroupTransition(msg)
        previous = self.state
        self.state = target
        self.state_timestamp_ms = now_ms
        out.emit(
            "group_state_changed",
            group_id=self.group_id,
            previous_state=previous.value,
            state=target.value,
            generation_id=self.generation_id,
        )

    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS_STATES[GroupState.PREPARING_REBALANCE]

    # ------------------------------------------------------------------ members

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def add(self, member: MemberMetadata) -> None:
        """`GroupMetadata.add`: the first member sets the protocol type; with no leader it leads."""
        if not self.members:
            self.protocol_type = member.protocol_type
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.pending_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> MemberMetadata | None:
        """`GroupMetadata.remove`; a removed leader is replaced by the lowest remaining id."""
        member = self.members.pop(member_id, None)
        if member is not None and member.group_instance_id is not None:
            self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = min(self.members) if self.members else None
        self.pending_members.pop(member_id, None)
        self.pending_sync_members.pop(member_id, None)
        return member

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> MemberMetadata:
        """`replaceStaticMember`: the member keeps its metadata, assignment and leadership under
        a new id. The caller fences what was parked under the old id first."""
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        if self.leader_id == old_id:
            self.leader_id = new_id
        self.static_members[instance_id] = new_id
        if old_id in self.pending_sync_members:
            del self.pending_sync_members[old_id]
            self.pending_sync_members[new_id] = None
        return member

    def maybe_elect_new_joined_leader(self) -> bool:
        """`maybeElectNewJoinedLeader`: keep a leader that rejoined, else take the lowest joined
        member id; False if there is no leader or nobody joined."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].awaiting_join is not None:
            return True
        joined = sorted(m for m, member in self.members.items() if member.awaiting_join is not None)
        if not joined:
            return False
        self.leader_id = joined[0]
        return True

    def has_all_members_joined(self) -> bool:
        """`hasAllMembersJoined`: every member has a parked JoinGroup and no KIP-394 member
        is pending."""
        joined = sum(1 for m in self.members.values() if m.awaiting_join is not None)
        return joined == len(self.members) and not self.pending_members

    def not_yet_rejoined(self) -> list[MemberMetadata]:
        return [self.members[m] for m in sorted(self.members) if self.members[m].awaiting_join is None]

    def sorted_members(self) -> list[MemberMetadata]:
        return [self.members[m] for m in sorted(self.members)]

    def rebalance_timeout_ms(self) -> int:
        """`rebalanceTimeoutMs`: the largest of the members'."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def candidate_protocols(self) -> set[str]:
        """The protocols every member supports."""
        sets = [set(m.protocol_names) for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def supports_protocols(self, protocol_type: str, protocols: tuple[str, ...]) -> bool:
        """`supportsProtocols`: an Empty group takes any non-empty set; otherwise the type must
        match and one of the protocols must be supported by every current member (Kafka counts
        each protocol's supporters against the member count, so a group left with no member
        while it rebalances, its last member gone during the join delay, takes any)."""
        if self.is_(GroupState.EMPTY):
            return bool(protocol_type) and bool(protocols)
        if not self.members:
            return self.protocol_type == protocol_type and bool(protocols)
        candidates = self.candidate_protocols()
        return self.protocol_type == protocol_type and any(p in candidates for p in protocols)

    def compute_subscribed_topics(self) -> frozenset[str] | None:
        """`computeSubscribedTopics`: the union of the members' topics for a consumer group."""
        if self.protocol_type != "consumer":
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        return frozenset(t for m in self.members.values() for t in m.metadata(self.protocol_name).topics)

    def has_offsets(self) -> bool:
        return bool(self.offsets) or bool(self.pending_offset_commits)


def as_classic(group: Group) -> ClassicGroup:
    """`group` where only a classic group's rules apply (Kafka dispatches on `group.type()`
    there); the callers have set consumer groups aside, so any other type is a bug."""
    if not isinstance(group, ClassicGroup):
        msg = f"group {group.group_id} is a {group.group_type.value} group, not a classic one"
        raise TypeError(msg)
    return group
