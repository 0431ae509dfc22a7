"""The coordinator's decisions as pure functions: which protocol a group uses, what a Heartbeat
or an OffsetCommit is answered, how a failed append is reported, which offsets expire.

Each follows the Scala `GroupCoordinator` (3.9) and `GroupMetadata` in Kafka's order of checks,
so a unit test can name one row of each table:
- `select_protocol`: `GroupMetadata.selectProtocol`, with ties broken by the smallest name
  (Kafka's `groupBy(...).maxBy` over a hash map leaves them to hash order);
- `validate_current_member`: `validateCurrentMember` (static membership first, KIP-345);
- `accept_joining_member`: `acceptJoiningMember` (KIP-389's `group.max.size`, as KAFKA-9885
  made it in 2.6; the rule before it too);
- `heartbeat_answer`: `handleHeartbeat` by state; 2.6 answers NONE in CompletingRebalance and
  resets the session there, earlier versions REBALANCE_IN_PROGRESS without the reset;
- `offset_commit_error`: `handleCommitOffsets`, `validateOffsetCommit` and `doCommitOffsets`;
- `store_group_error`, `store_offsets_error`: `GroupMetadataManager.storeGroup` and
  `storeOffsets` mapping the append's error;
- `expired_offsets`: `GroupMetadata.removeExpiredOffsets` (KIP-211 from 2.1; before it, every
  offset expires the retention after its own commit).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from actors.group.state import ClassicGroup, GroupState
from protocols.errors import ErrorCode
from protocols.types import TopicPartition

__all__ = [
    "accept_joining_member",
    "expired_offsets",
    "heartbeat_answer",
    "offset_commit_error",
    "select_protocol",
    "store_group_error",
    "store_offsets_error",
    "validate_current_member",
]

E = ErrorCode


def select_protocol(preferences: Iterable[Sequence[str]]) -> str:
    """The protocol every member supports that gets the most first-choice votes; among tied
    protocols, the smallest name. Each member votes for its most preferred candidate."""
    members = [tuple(p) for p in preferences]
    assert members, "cannot select a protocol for an empty group"
    candidates = set(members[0]).intersection(*members[1:])
    assert candidates, "no protocol is supported by every member"
    votes: dict[str, int] = {}
    for preferred in members:
        vote = next(p for p in preferred if p in candidates)
        votes[vote] = votes.get(vote, 0) + 1
    most = max(votes.values())
    return min(p for p, n in votes.items() if n == most)


def validate_current_member(group: ClassicGroup, member_id: str, group_instance_id: str | None) -> ErrorCode:
    """A static member's instance id must map to this member id (else FENCED_INSTANCE_ID, or
    UNKNOWN_MEMBER_ID for an unknown instance); then the member id must be in the group."""
    if group_instance_id is not None:
        current = group.static_members.get(group_instance_id)
        if current is None:
            return E.UNKNOWN_MEMBER_ID
        if current != member_id:
            return E.FENCED_INSTANCE_ID
        return E.NONE
    return E.NONE if group.has(member_id) else E.UNKNOWN_MEMBER_ID


def accept_joining_member(group: ClassicGroup, member_id: str, max_size: int, *, evict_last_joiners: bool) -> bool:
    """Whether a JoinGroup fits under `group.max.size` (KIP-389, 2.2+); a refused one is answered
    GROUP_MAX_SIZE_REACHED and its member id leaves the group. Members count, KIP-394 pending
    ones do not; static members count like any other.

    From 2.6 (KAFKA-9885): Empty takes anyone; PreparingRebalance takes a member already
    waiting in the join, and anyone else while fewer than `max_size` wait, so the members that
    rejoin last are the ones refused (also a pending member's second JoinGroup); Stable and
    CompletingRebalance take their members, and others while the group is below the limit (a
    static member restarting with no member id is another, even in a full group).
    Before 2.6: a member rejoining while the group is over the limit is refused, whatever its
    state (the first ones to rejoin go), and a JoinGroup with no member id while the group is
    at the limit; a pending member's second JoinGroup is not checked."""
    member = group.members.get(member_id)
    if not evict_last_joiners:
        shed = len(group.members) > max_size and member is not None and member.awaiting_join is None
        return not (shed or (member_id == "" and len(group.members) >= max_size))
    match group.state:
        case GroupState.EMPTY | GroupState.DEAD:
            return True
        case GroupState.PREPARING_REBALANCE:
            awaiting = sum(1 for mm in group.members.values() if mm.awaiting_join is not None)
            return (member is not None and member.awaiting_join is not None) or awaiting < max_size
        case GroupState.COMPLETING_REBALANCE | GroupState.STABLE:
            return member is not None or len(group.members) < max_size
    msg = f"unknown state {group.state}"
    raise AssertionError(msg)


def heartbeat_answer(state: GroupState, *, none_while_completing: bool) -> tuple[ErrorCode, bool]:
    """The answer to a valid member's Heartbeat in `state`, and whether it resets the session."""
    match state:
        case GroupState.EMPTY:
            return E.UNKNOWN_MEMBER_ID, False
        case GroupState.PREPARING_REBALANCE:
            return E.REBALANCE_IN_PROGRESS, True
        case GroupState.COMPLETING_REBALANCE:
            if none_while_completing:
                return E.NONE, True
            return E.REBALANCE_IN_PROGRESS, False
        case GroupState.STABLE:
            return E.NONE, True
        case GroupState.DEAD:
            return E.COORDINATOR_NOT_AVAILABLE, False
    msg = f"unknown state {state}"
    raise AssertionError(msg)


def offset_commit_error(
    group: ClassicGroup | None,
    generation_id: int,
    member_id: str,
    group_instance_id: str | None,
    *,
    unmanaged_to_empty: bool,
) -> ErrorCode:
    """NONE if the commit is to be stored, else the error that answers it, in Kafka's order:
    1. no such group: generation < 0 creates it (the caller does), else ILLEGAL_GENERATION;
    2. Dead: COORDINATOR_NOT_AVAILABLE;
    3. `unmanaged_to_empty` (KAFKA-14201, 3.3.0): generation < 0 to an Empty group is stored,
       whatever member and instance id it names (a consumer using `assign()` with a
       `group.instance.id` sends one);
    4. with a generation >= 0, a member id or an instance id: the member checks, then
       ILLEGAL_GENERATION for another generation;
    5. otherwise (generation -1, nobody): UNKNOWN_MEMBER_ID unless the group is Empty;
    6. by state: CompletingRebalance gets REBALANCE_IN_PROGRESS; Empty, Stable and
       PreparingRebalance store it."""
    if group is None:
        return E.NONE if generation_id < 0 else E.ILLEGAL_GENERATION
    if group.is_(GroupState.DEAD):
        return E.COORDINATOR_NOT_AVAILABLE
    if unmanaged_to_empty and generation_id < 0 and group.is_(GroupState.EMPTY):
        return E.NONE
    if generation_id >= 0 or member_id or group_instance_id is not None:
        error = validate_current_member(group, member_id, group_instance_id)
        if error is not E.NONE:
            return error
        if generation_id != group.generation_id:
            return E.ILLEGAL_GENERATION
    elif not group.is_(GroupState.EMPTY):
        return E.UNKNOWN_MEMBER_ID
    if group.is_(GroupState.COMPLETING_REBALANCE):
        return E.REBALANCE_IN_PROGRESS
    return E.NONE


_NOT_COORDINATOR = frozenset({E.NOT_LEADER_OR_FOLLOWER})
"""And KAFKA_STORAGE_ERROR, which the simulated disk never returns."""
_NOT_AVAILABLE = frozenset({E.UNKNOWN_TOPIC_OR_PARTITION, E.NOT_ENOUGH_REPLICAS, E.NOT_ENOUGH_REPLICAS_AFTER_APPEND})


def store_group_error(append_error: ErrorCode) -> ErrorCode:
    """`storeGroup`: a failed group-record append as the members' SyncGroup error."""
    if append_error is E.NONE:
        return E.NONE
    if append_error in _NOT_COORDINATOR:
        return E.NOT_COORDINATOR
    if append_error in _NOT_AVAILABLE:
        return E.COORDINATOR_NOT_AVAILABLE
    if append_error is E.REQUEST_TIMED_OUT:
        return E.REBALANCE_IN_PROGRESS
    return append_error


def store_offsets_error(append_error: ErrorCode) -> ErrorCode:
    """`storeOffsets`: a failed commit append as the OffsetCommit error (a timeout stays
    REQUEST_TIMED_OUT)."""
    if append_error in _NOT_COORDINATOR:
        return E.NOT_COORDINATOR
    if append_error in _NOT_AVAILABLE:
        return E.COORDINATOR_NOT_AVAILABLE
    return append_error


def expired_offsets(
    group: ClassicGroup, now_ms: int, retention_ms: int, *, expire_when_empty: bool
) -> list[TopicPartition]:
    """The offsets of `group` to expire now, in order; an offset with a commit in flight never
    expires. KIP-211: an Empty group's offsets expire `retention_ms` after it became Empty; a
    Stable consumer group's only for topics it no longer subscribes to, from their commit; a
    standalone group's (no protocol type) from their commit; in other states none."""
    if not expire_when_empty:
        return _older_than(group, now_ms, retention_ms, frozenset(), from_state=False)
    if group.protocol_type is not None and group.is_(GroupState.EMPTY):
        return _older_than(group, now_ms, retention_ms, frozenset(), from_state=True)
    if group.protocol_type == "consumer" and group.subscribed_topics is not None and group.is_(GroupState.STABLE):
        return _older_than(group, now_ms, retention_ms, group.subscribed_topics, from_state=False)
    if group.protocol_type is None:
        return _older_than(group, now_ms, retention_ms, frozenset(), from_state=False)
    return []


def _older_than(
    group: ClassicGroup, now_ms: int, retention_ms: int, keep_topics: frozenset[str], *, from_state: bool
) -> list[TopicPartition]:
    expired = []
    for tp in sorted(group.offsets):
        committed = group.offsets[tp]
        if tp.topic in keep_topics or tp in group.pending_offset_commits:
            continue
        base = group.state_timestamp_ms if from_state and group.state_timestamp_ms is not None else committed.commit_ms
        if now_ms - base >= retention_ms:
            expired.append(tp)
    return expired
