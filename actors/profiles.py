"""Kafka version profiles: which behaviour and which defaults a scenario's `kafka.version` selects.

Each rule names the release that changed it (its KIP or JIRA); `Profile.for_version` evaluates them for
one version. Behaviour flags are read by the actors that implement them; defaults fill the
settings a scenario leaves out. An explicit setting in the scenario always wins.

ZooKeeper mode is what is modelled, so versions run from 0.10.0 (followers still truncating to
their HW, before KIP-101's leader epochs) to 3.9 (the last release with ZooKeeper). 4.0 and 4.1
are there for their clients and group coordinator (KIP-848's consumer protocol, its defaults):
their brokers still run in ZooKeeper mode, which Kafka 4 removed (KIP-500), so a 4.x run is a
4.x group side on a 3.9-style controller and replication.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["OLDEST", "NEWEST", "Profile", "parse_version"]

Version = tuple[int, int, int]

OLDEST: Version = (0, 10, 0)
NEWEST: Version = (4, 1, 99)
INT_MAX = 2**31 - 1

_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")


def parse_version(text: str) -> Version:
    """'3.9' -> (3, 9, 0); raise ValueError with a sentence a user can act on."""
    match = _VERSION.match(text.strip())
    if match is None:
        msg = f"{text!r} is not a Kafka version such as '3.9' or '2.8.1'"
        raise ValueError(msg)
    major, minor, patch = (int(g) if g is not None else 0 for g in match.groups())
    version = (major, minor, patch)
    if not OLDEST <= version <= NEWEST:
        msg = (
            f"{text!r} is not supported: the simulator models Kafka from 0.10.0 to 4.1 "
            "(ZooKeeper-mode brokers throughout)"
        )
        raise ValueError(msg)
    return version


@dataclass(frozen=True, slots=True)
class Profile:
    """The behaviour switches and default settings of one Kafka version."""

    version: Version
    leader_epochs: bool
    """KIP-101 (0.11.0): followers truncate by leader epoch, not to their HW."""
    epoch_start_on_become_leader: bool
    """KIP-279 (2.0.0): a new leader caches (epoch, LEO) at once; the truncation loop."""
    isr_join_needs_epoch_start: bool
    """KAFKA-7128 (2.1.0): a follower joins the ISR only once it reaches the leader's epoch."""
    fetch_epoch_fencing: bool
    """KIP-320 (2.1.0): FENCED_LEADER_EPOCH and UNKNOWN_LEADER_EPOCH on fetches and ListOffsets."""
    controller_epoch_checked_writes: bool
    """KAFKA-6082 (2.1.0): every ZooKeeper write of the controller is a multi that first checks
    the controller epoch znode's version, so a controller that lost its place writes nothing."""
    broker_epochs: bool
    """KIP-380 (2.2.0): the controller's requests carry the broker's epoch, and a broker refuses
    those meant for an earlier registration of itself (STALE_BROKER_EPOCH)."""
    offset_not_available: bool
    """KIP-207 (2.2.0): a consumer's ListOffsets for the latest offset gets OFFSET_NOT_AVAILABLE
    while the leader's HW is below the start offset of its epoch."""
    incremental_fetch_sessions: bool
    """KIP-227 (1.1.0): a follower's fetch answers carry only the partitions with something new."""
    alter_partition: bool
    """KIP-497 (2.7.0): ISR changes go to the controller by AlterPartition, not a ZK write."""
    truncate_on_fetch: bool
    """KAFKA-10554 (2.8.0): divergence is found on fetch, without OffsetsForLeaderEpoch."""
    caught_up_counts_for_hw: bool
    """KAFKA-15021 (3.6.0): caught-up, eligible replicas outside the ISR hold back the HW."""
    hw_needs_min_isr: bool
    """KAFKA-15583 (3.7.0): the HW does not advance while the ISR is under min ISR."""
    member_id_required: bool
    """KIP-394 (2.2.0): a first JoinGroup gets MEMBER_ID_REQUIRED."""
    async_commit_before_rebalance: bool
    """KAFKA-13310 (3.2.0): the pre-rebalance auto-commit is asynchronous (not awaited in 3.2.0;
    awaited from 3.2.1, KAFKA-14024)."""
    heartbeat_none_while_completing: bool
    """2.6.0: a Heartbeat in CompletingRebalance is answered NONE (REBALANCE_IN_PROGRESS before)."""
    delayed_sync: bool
    """KAFKA-12890 (2.8.1 / 3.0.0): members that do not send SyncGroup within the rebalance
    timeout are removed (`DelayedSync`)."""
    static_membership: bool
    """KIP-345 (2.3.0): `group.instance.id`; static members never send LeaveGroup."""
    offsets_expire_when_empty: bool
    """KIP-211 (2.1.0): a group's offsets expire from when it became Empty, not per commit."""
    keep_member_id_on_illegal_generation: bool
    """KAFKA-13419 (3.2.0): ILLEGAL_GENERATION resets the generation but keeps the member id;
    and partitions are lost on a generation *or* member id reset."""
    pending_revocation_before_commit: bool
    """KAFKA-14196 (3.2.3 / 3.3.0): EAGER with auto-commit marks the partitions pending
    revocation before the pre-rebalance commit, so polls stop returning them."""
    accept_unknown_producer: bool
    """KIP-360 (2.5.0): a broker accepts any sequence from a producer id it has no state for
    (before: UNKNOWN_PRODUCER_ID unless the sequence is 0), and an idempotent producer closes a
    sequence gap by bumping its epoch (before: by taking a new producer id)."""
    log_start_offset_in_fetch: bool
    """KIP-107 (0.11.0): a fetch answer carries the leader's log start offset, and a follower
    moves its own to it (before, a follower's log start moved only by its own retention)."""
    delete_groups: bool
    """KIP-229 (1.1.0): DeleteGroups, the admin client's (and `kafka-consumer-groups --delete`'s)
    way to delete a group."""
    offset_delete: bool
    """KIP-496 (2.4.0): OffsetDelete, `kafka-consumer-groups --delete-offsets`."""
    unmanaged_commit_to_empty_group: bool
    """KAFKA-14201 (3.3.0): an OffsetCommit with generation -1 to an Empty group is stored
    whatever member id and group instance id it carries (before, either one was validated as a
    member of the group, which an Empty group has none of: UNKNOWN_MEMBER_ID)."""
    group_max_size: bool
    """KIP-389 (2.2.0): `group.max.size` caps a group's members (GROUP_MAX_SIZE_REACHED)."""
    evict_last_joiners: bool
    """KAFKA-9885 (2.6.0): over `group.max.size`, a rebalancing group refuses the members that
    rejoin last and counts members joined with a KIP-394 member id; before, it refused each
    member rejoining while the group was over the limit (the first ones) and let a pending
    member's second JoinGroup through."""
    ineligible_replicas: bool
    """KIP-841 (3.3.0): the controller refuses an AlterPartition whose ISR names a broker that
    is not live or is shutting down (INELIGIBLE_REPLICA), and a leader proposes only followers
    its metadata cache lists as live."""
    complete_after_whole_append: bool
    """KAFKA-8334 (2.7.0): a Produce completes the delayed operations of its partitions once
    every partition of the request is appended (`ActionQueue`), not after each append."""
    empty_commit_sync_awaits_async: bool
    """KAFKA-10337 (3.6.0): the classic consumer's `commitSync` of no offsets, which sends no
    request, waits for the asynchronous commits in flight to be answered (before, it returned
    at once)."""
    exponential_retry_backoff: bool
    """KIP-580 (3.7.0): the clients' retry back-off grows exponentially from `retry.backoff.ms`
    to `retry.backoff.max.ms`, with 20% jitter (before: a constant `retry.backoff.ms`)."""
    consumer_group_protocol: bool
    """KIP-848 (3.7.0): the consumer's `group.protocol=consumer` and the broker's `consumer`
    rebalance protocol exist (early access in 3.7, preview in 3.8 and 3.9, GA in 4.0)."""
    classic_members_in_consumer_groups: bool
    """KIP-848's online migration (3.8.0): the coordinator serves JoinGroup, SyncGroup,
    Heartbeat and LeaveGroup of classic members inside a consumer group, and converts a group
    between the protocols as `group.consumer.migration.policy` allows; in 3.7 a classic
    request naming a consumer group gets GROUP_ID_NOT_FOUND."""
    reject_classic_settings_under_consumer_protocol: bool
    """KAFKA-17338, KAFKA-18156 (4.0.0): with `group.protocol=consumer`, `ConsumerConfig`
    refuses `partition.assignment.strategy`, `heartbeat.interval.ms` and `session.timeout.ms`
    (before, the consumer protocol ignored them: the coordinator's settings rule)."""
    reject_remote_assignor_under_classic_protocol: bool
    """KAFKA-15773 (3.9.0): `ConsumerConfig` refuses `group.remote.assignor` set beside
    `group.protocol=classic` (before, the classic protocol ignored it)."""
    older_generation_claims: bool
    """KAFKA-14639 (3.4.1 / 3.5.0): the sticky assignors' validation of owned partitions keeps
    a claim of an older generation that no newer member makes; from 2.6.0 (KAFKA-9987) to 3.4.0
    only the highest generation's claims counted, so a member that missed a generation could
    have a partition it still held given to another member in the same rebalance."""
    subscription_generation_field: bool
    """KIP-792 (3.4.0): the subscription carries the member's generation (the JoinGroup's);
    before, the cooperative assignor's user data carried the generation of its last assignment."""
    reset_generation_on_sync_rebalance: bool
    """KAFKA-13891, only in 3.3.0 and 3.3.1 (reverted in 3.3.2): a SyncGroup answered
    REBALANCE_IN_PROGRESS resets the generation (member id kept), so the member's partitions
    are lost at its next `onJoinPrepare`."""
    client_generated_member_id: bool
    """KIP-1082 (4.0.0): a consumer-protocol member makes up its member id (a UUID) when it
    starts and keeps it for the life of the process, rejoins included; before, it joins with an
    empty id and the coordinator gives it one."""
    pending_revocation_before_reconcile_commit: bool
    """KAFKA-16460 (4.0.0): a consumer-protocol member marks the partitions it is told to revoke
    pending revocation before its auto-commit ahead of the revocation; from 3.7 to 3.9 it marks
    them only after that commit is answered, and polls meanwhile go on returning their records."""
    auto_commit_positions_at_poll: bool
    """KAFKA-18641 (4.0.0): a consumer-protocol member auto-commits the positions of its last
    `poll()`, from that poll; from 3.7 to 3.9 the background thread auto-commits the positions
    of the moment at each interval, records returned but not yet processed included."""
    reconcile_on_application_poll: bool
    """4.0.0 (`maybeReconcile(canCommit)`): a consumer-protocol member starts reconciling a new
    assignment only from an application `poll()`; from 3.7 to 3.9 the background thread starts
    at once, whatever the application is doing."""
    defaults: dict[str, Any]

    @property
    def name(self) -> str:
        major, minor, patch = self.version
        return f"{major}.{minor}" if patch == 0 else f"{major}.{minor}.{patch}"

    @classmethod
    def for_version(cls, text: str) -> Profile:
        v = parse_version(text)
        return cls(
            version=v,
            leader_epochs=v >= (0, 11, 0),
            epoch_start_on_become_leader=v >= (2, 0, 0),
            isr_join_needs_epoch_start=v >= (2, 1, 0),
            fetch_epoch_fencing=v >= (2, 1, 0),
            offset_not_available=v >= (2, 2, 0),
            controller_epoch_checked_writes=v >= (2, 1, 0),
            broker_epochs=v >= (2, 2, 0),
            incremental_fetch_sessions=v >= (1, 1, 0),
            alter_partition=v >= (2, 7, 0),
            truncate_on_fetch=v >= (2, 8, 0),
            caught_up_counts_for_hw=v >= (3, 6, 0),
            hw_needs_min_isr=v >= (3, 7, 0),
            member_id_required=v >= (2, 2, 0),
            async_commit_before_rebalance=v >= (3, 2, 0),
            heartbeat_none_while_completing=v >= (2, 6, 0),
            delayed_sync=v >= (2, 8, 1),
            static_membership=v >= (2, 3, 0),
            offsets_expire_when_empty=v >= (2, 1, 0),
            keep_member_id_on_illegal_generation=v >= (3, 2, 0),
            pending_revocation_before_commit=v >= (3, 2, 3),
            accept_unknown_producer=v >= (2, 5, 0),
            log_start_offset_in_fetch=v >= (0, 11, 0),
            delete_groups=v >= (1, 1, 0),
            offset_delete=v >= (2, 4, 0),
            unmanaged_commit_to_empty_group=v >= (3, 3, 0),
            group_max_size=v >= (2, 2, 0),
            evict_last_joiners=v >= (2, 6, 0),
            ineligible_replicas=v >= (3, 3, 0),
            complete_after_whole_append=v >= (2, 7, 0),
            empty_commit_sync_awaits_async=v >= (3, 6, 0),
            exponential_retry_backoff=v >= (3, 7, 0),
            consumer_group_protocol=v >= (3, 7, 0),
            classic_members_in_consumer_groups=v >= (3, 8, 0),
            reject_classic_settings_under_consumer_protocol=v >= (4, 0, 0),
            reject_remote_assignor_under_classic_protocol=v >= (3, 9, 0),
            older_generation_claims=not (2, 6, 0) <= v <= (3, 4, 0),
            subscription_generation_field=v >= (3, 4, 0),
            reset_generation_on_sync_rebalance=v in ((3, 3, 0), (3, 3, 1)),
            client_generated_member_id=v >= (4, 0, 0),
            pending_revocation_before_reconcile_commit=v >= (4, 0, 0),
            auto_commit_positions_at_poll=v >= (4, 0, 0),
            reconcile_on_application_poll=v >= (4, 0, 0),
            defaults=_defaults(v),
        )


def _defaults(v: Version) -> dict[str, Any]:
    """Defaults that changed between versions, each with the KIP or JIRA that changed it."""
    # KAFKA-13598: 3.0.0 and 3.1.0 silently did not apply the idempotence default.
    idempotence = v >= (3, 0, 0) and v not in ((3, 0, 0), (3, 1, 0))
    if v < (0, 10, 1):
        session_timeout = 30000
    elif v < (3, 0, 0):
        session_timeout = 10000
    else:
        session_timeout = 45000
    return {
        "replica.lag.time.max.ms": 30000 if v >= (2, 5, 0) else 10000,  # KIP-537
        "zookeeper.session.timeout.ms": 18000 if v >= (2, 5, 0) else 6000,
        "unclean.leader.election.enable": v < (0, 11, 0),
        "group.initial.rebalance.delay.ms": 3000 if v >= (0, 11, 0) else 0,  # KIP-134
        "offsets.retention.minutes": 10080 if v >= (2, 0, 0) else 1440,  # KIP-186
        "group.max.session.timeout.ms": 1800000 if v >= (2, 3, 0) else 300000,  # KIP-345
        "partition.assignment.strategy": ["range", "cooperative-sticky"] if v >= (3, 0, 0) else ["range"],
        "session.timeout.ms": session_timeout,  # KIP-735 for 3.0
        "heartbeat.interval.ms": 3000,
        "acks": "all" if v >= (3, 0, 0) else "1",  # KIP-679
        "enable.idempotence": idempotence,
        "retries": INT_MAX if v >= (2, 1, 0) else 0,  # KIP-91
        "linger.ms": 5 if v >= (4, 0, 0) else 0,  # KIP-1030
        # 4.0 turns the consumer protocol on in brokers by default (KIP-848 GA).
        "group.coordinator.rebalance.protocols": ["classic", "consumer"] if v >= (4, 0, 0) else ["classic"],
        # 3.8 and 3.9 keep online migration off; 4.0 turns it on both ways (KIP-848 GA).
        "group.consumer.migration.policy": "bidirectional" if v >= (4, 0, 0) else "disabled",
    }
