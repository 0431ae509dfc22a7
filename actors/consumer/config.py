"""A consumer's settings: Kafka's consumer configuration, the version's behaviour switches,
and the application around it (what it commits, how long it takes per record)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import cache

from actors.profiles import Profile

__all__ = ["AppCommit", "ConsumerConfig", "JoinPrepareCommit", "ProcessingMode"]


class AppCommit(Enum):
    """What the application commits, besides auto-commit."""

    NONE = "none"
    SYNC = "sync"
    """`commitSync()` after processing each poll's records."""
    ASYNC = "async"
    """`commitAsync()` after processing each poll's records (never retried)."""
    ON_REVOKE = "on_revoke"
    """`commitSync(revoked partitions)` in `onPartitionsRevoked`."""
    PROCESSED = "processed"
    """`commitAsync` of the offsets after the last record processed per partition before each
    `poll()`, and in `onPartitionsRevoked` (once the workers are done with the revoked
    partitions' records) `commitSync` of the revoked partitions' ones."""

    @property
    def listener_commits(self) -> bool:
        """`onPartitionsRevoked` commits the revoked partitions synchronously."""
        return self in (AppCommit.ON_REVOKE, AppCommit.PROCESSED)


class ProcessingMode(Enum):
    """Which thread processes what `poll()` returned."""

    POLL_THREAD = "poll_thread"
    """The poll thread itself, which polls again once it is done."""
    WORKERS = "workers"
    """A pool of worker threads fed by a bounded hand-off queue, while the poll thread polls on."""


class JoinPrepareCommit(Enum):
    """How `ConsumerCoordinator.onJoinPrepare` auto-commits before a rebalance, by version."""

    SYNC = "sync"
    """Up to 3.1: `maybeAutoCommitOffsetsSync`; the poll blocks until it is answered."""
    ASYNC_NOT_AWAITED = "async_not_awaited"
    """3.2.0 (KAFKA-13310, fixed by KAFKA-14024): sent and not awaited, never retried."""
    ASYNC_AWAITED = "async_awaited"
    """3.2.1 and 3.2.2: awaited across polls, which keep returning the partitions' records."""
    PENDING_REVOCATION = "pending_revocation"
    """3.2.3+ (KAFKA-14196): EAGER first marks the partitions pending revocation, then awaits."""

    @classmethod
    def for_version(cls, version: tuple[int, int, int]) -> JoinPrepareCommit:
        if version < (3, 2, 0):
            return cls.SYNC
        if version == (3, 2, 0):
            return cls.ASYNC_NOT_AWAITED
        if version < (3, 2, 3):
            return cls.ASYNC_AWAITED
        return cls.PENDING_REVOCATION


@cache
def _profile(version: tuple[int, int, int]) -> Profile:
    """The version's profile, built once: the consumer reads its flags on every poll."""
    return Profile.for_version(".".join(str(n) for n in version))


@dataclass(frozen=True, slots=True)
class ConsumerConfig:
    name: str
    """The node, `consumer-N`."""
    group_id: str
    topics: tuple[str, ...]
    partitions: tuple[tuple[str, int], ...]
    """Each subscribed topic's partition count (what Metadata would say; topics do not change)."""
    bootstrap: tuple[int, ...]
    offsets_partitions: int = 50
    """`offsets.topic.num.partitions`, to name the group's coordinator partition in logs."""
    version: tuple[int, int, int] = (3, 9, 0)
    group_instance_id: str | None = None
    client_id: str = ""
    """`consumer-<group>-1`: the Java default, numbered per process (each consumer here is one)."""

    # Kafka's settings
    group_protocol: str = "classic"
    """`group.protocol`: `classic` (`ConsumerCoordinator`) or `consumer` (KIP-848)."""
    group_remote_assignor: str | None = None
    """`group.remote.assignor`: the server assignor a consumer-protocol member asks for; None
    leaves the choice to the coordinator (the first of its `group.consumer.assignors`)."""
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 3000
    max_poll_interval_ms: int = 300000
    max_poll_records: int = 500
    fetch_min_bytes: int = 1
    fetch_max_wait_ms: int = 500
    max_partition_fetch_bytes: int = 1048576
    enable_auto_commit: bool = True
    auto_commit_interval_ms: int = 5000
    auto_offset_reset: str = "latest"
    assignment_strategy: tuple[str, ...] = ("range", "cooperative-sticky")
    request_timeout_ms: int = 30000
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1000
    exponential_retry_backoff: bool = False
    """KIP-580 (3.7): commitSync's retries, coordinator lookups and failed heartbeats back off
    exponentially up to `retry.backoff.max.ms`; before, a constant `retry.backoff.ms`."""
    default_api_timeout_ms: int = 60000

    # the application
    app_commit: AppCommit = AppCommit.NONE
    poll_timeout_ms: int = 100
    process_record_ms: int = 0
    start_ms: int = 0
    poll_every_ms: int = 0
    """An application that polls at fixed instants, `start_ms + k * poll_every_ms`; 0: again
    as soon as it has processed what the last poll returned."""
    processing: ProcessingMode = ProcessingMode.POLL_THREAD
    worker_threads: int = 4
    worker_queue_records: int = 500
    """The records waiting in the hand-off queue at which the application pauses partitions."""

    def next_poll_ms(self, last_poll_ms: int, now_ms: int) -> int:
        """When the application polls again, having started its last poll at `last_poll_ms` and
        finished with it (and its records) at `now_ms`: at once, or at its cadence's first
        instant after the last poll and not before now (a poll that overran skips instants)."""
        every = self.poll_every_ms
        if every == 0:
            return now_ms
        after = max(last_poll_ms + 1, now_ms, self.start_ms)
        return self.start_ms + -(-(after - self.start_ms) // every) * every

    @property
    def member_id_required(self) -> bool:
        """KIP-394 (2.2): a dynamic member's first JoinGroup is answered MEMBER_ID_REQUIRED."""
        return self.version >= (2, 2, 0)

    @property
    def keep_member_id_on_illegal_generation(self) -> bool:
        """KAFKA-13419 (3.2)."""
        return self.version >= (3, 2, 0)

    @property
    def join_prepare_after_reset(self) -> bool:
        """KAFKA-12983 (2.7.2, 2.8.1, 3.0.0): a JoinGroup or SyncGroup error that resets the
        generation (`resetStateAndRejoin`) runs `onJoinPrepare` again before the next JoinGroup,
        so the member reports its partitions lost; before, it rejoined still owning them."""
        v = self.version
        return v >= (2, 8, 1) or (2, 7, 2) <= v < (2, 8, 0)

    @property
    def validates_positions(self) -> bool:
        """KIP-320's consumer side (KAFKA-7747, 2.3): after a leader change a position is
        checked with OffsetsForLeaderEpoch before it is fetched from again."""
        return self.version >= (2, 3, 0)

    @property
    def keeps_paused_fetches(self) -> bool:
        """KAFKA-7548 (2.4): records fetched for a partition that is then paused stay buffered
        until it is resumed; before, they were dropped and fetched again."""
        return self.version >= (2, 4, 0)

    @property
    def lost_on_leave_during_rebalance(self) -> bool:
        """2.6: `onLeavePrepare` reports the partitions lost, not revoked, while a rebalance is
        under way (`rebalanceInProgress`); before, only out of a generation."""
        return self.version >= (2, 6, 0)

    @property
    def older_generation_claims(self) -> bool:
        """KAFKA-14639 (3.4.1): see `Profile.older_generation_claims`."""
        return _profile(self.version).older_generation_claims

    @property
    def subscription_generation_field(self) -> bool:
        """KIP-792 (3.4.0): see `Profile.subscription_generation_field`."""
        return _profile(self.version).subscription_generation_field

    @property
    def reset_generation_on_sync_rebalance(self) -> bool:
        """KAFKA-13891 (3.3.0 and 3.3.1 only): see `Profile.reset_generation_on_sync_rebalance`."""
        return _profile(self.version).reset_generation_on_sync_rebalance

    @property
    def empty_commit_sync_awaits_async(self) -> bool:
        """KAFKA-10337 (3.6): see `Profile.empty_commit_sync_awaits_async`."""
        return _profile(self.version).empty_commit_sync_awaits_async

    @property
    def client_generated_member_id(self) -> bool:
        """KIP-1082 (4.0): see `Profile.client_generated_member_id`."""
        return _profile(self.version).client_generated_member_id

    @property
    def pending_revocation_before_reconcile_commit(self) -> bool:
        """KAFKA-16460 (4.0): see `Profile.pending_revocation_before_reconcile_commit`."""
        return _profile(self.version).pending_revocation_before_reconcile_commit

    @property
    def auto_commit_positions_at_poll(self) -> bool:
        """KAFKA-18641 (4.0): see `Profile.auto_commit_positions_at_poll`."""
        return _profile(self.version).auto_commit_positions_at_poll

    @property
    def reconcile_on_application_poll(self) -> bool:
        """4.0: see `Profile.reconcile_on_application_poll`."""
        return _profile(self.version).reconcile_on_application_poll

    @property
    def join_prepare_commit(self) -> JoinPrepareCommit:
        return JoinPrepareCommit.for_version(self.version)

    @property
    def join_timeout_ms(self) -> int:
        """`sendJoinGroupRequest`: the rebalance timeout plus `JOIN_GROUP_TIMEOUT_LAPSE`."""
        return max(self.request_timeout_ms, self.max_poll_interval_ms + 5000)
