"""The classic group membership's consumer side: Kafka's `ConsumerCoordinator`.

What it models of the Java consumer:
- `poll` in each pass of `poll()`'s loop: find the coordinator; if a rejoin is needed, run
  `onJoinPrepare` and send JoinGroup, without waiting for the rebalance; run `onJoinComplete`
  for a SyncGroup answered since; then, only if the coordinator is known and no rebalance is in
  flight, the periodic auto-commit of the positions (the *previous* polls' records);
- `onJoinPrepare`: the pre-rebalance auto-commit, by version (`JoinPrepareCommit`: synchronous
  up to 3.1; in 3.2.0 sent at every call, which joins only if it is complete at once, so a
  COOPERATIVE member with positions never rejoins, KAFKA-14024; awaited from 3.2.1, with
  EAGER's partitions pending revocation from 3.2.3), then the revocation (EAGER: every
  partition; COOPERATIVE: none, the topics do not change); a member out of its generation
  reports its partitions lost instead;
- the leader runs the group's chosen assignor at once on the JoinGroup answer
  (`onLeaderElected`); a member's subscription carries its owned partitions (COOPERATIVE) or
  its last assignment for the sticky assignors (Kafka's `userData`);
- `onJoinComplete`: EAGER takes the new assignment whole; COOPERATIVE revokes what moved (no
  auto-commit) and rejoins (KIP-429); the next auto-commit is an interval away;
- the application's rebalance listener: with `commit = on_revoke` (or `processed`),
  `onPartitionsRevoked` commits the revoked partitions synchronously first, what the
  application says (`ApplicationThread.revoked_offsets`, which may first wait for its
  workers); `onPartitionsLost` commits nothing;
- `onLeavePrepare` on `close()` and `unsubscribe()`: the partitions are revoked, or lost when
  the member is out of its generation or, from 2.6, a rebalance is under way.

Partitions assigned, revoked and lost are logged with their reason.
Left out: subscription changes (the topics are fixed) and the leader's check of the topics'
metadata after its assignment.
"""

from __future__ import annotations

from dataclasses import replace

from actors.consumer.abstract_coordinator import AbstractCoordinator
from actors.consumer.application import ApplicationThread
from actors.consumer.assignment import MemberSubscription, RebalanceProtocol
from actors.consumer.assignors import ASSIGNORS, CooperativeStickyAssignor, rebalance_protocol
from actors.consumer.commits import CommitKind, CommitRequestManager, is_retriable
from actors.consumer.config import ConsumerConfig, JoinPrepareCommit
from actors.consumer.group_membership import NO_GENERATION
from actors.consumer.membership import MemberState
from actors.consumer.network import Clock, NetworkClient
from actors.consumer.sticky import ignored_older_claims
from actors.consumer.subscription_state import Offsets, SubscriptionState, by_topic
from actors.core import Out
from protocols.group import (
    Assignment,
    JoinGroupProtocol,
    JoinGroupResponse,
    Subscription,
    SyncGroupAssignment,
)
from protocols.types import TopicPartition

__all__ = ["ConsumerCoordinator"]


class ConsumerCoordinator(AbstractCoordinator):
    commits: CommitRequestManager
    """Set by the consumer once both exist: the coordinator commits before a rebalance, and a
    commit's answer may fence the member."""

    def __init__(
        self, config: ConsumerConfig, clock: Clock, network: NetworkClient, subscriptions: SubscriptionState, app: ApplicationThread
    ) -> None:
        super().__init__(config, clock, network, app)
        self.subscriptions = subscriptions
        self.protocol = rebalance_protocol(config.assignment_strategy)
        self.previous_assignment: list[TopicPartition] = []
        self.assigned_generation = NO_GENERATION
        """The generation of the last assignment taken (`onAssignment`): before 3.4 the
        cooperative assignor's user data carried it as the subscription's generation."""
        self.join_prepare_revoked = False
        self.join_prepare_started_ms = 0
        """When this rebalance's pre-rebalance commit was first sent: `joinPrepareTimer`, one per
        rebalance, bounds the wait for it by the rebalance timeout, retries included."""
        self.join_prepare_complete = False
        """3.2.0: whether the commit this `onJoinPrepare` call sent was complete at once."""

    def poll(self, out: Out) -> None:
        """`ConsumerCoordinator.poll` with `waitForJoinGroup = false`."""
        if not self.ensure_coordinator_ready(out):
            return  # returns early: no rebalance step and no auto-commit
        if self.rejoin_needed_or_pending() and not self.ensure_active_group(out):
            return
        self.commits.maybe_auto_commit_offsets_async(out)

    # ------------------------------------------------------------------ joining

    def protocol_type(self) -> str:
        return "consumer"

    def metadata(self) -> tuple[JoinGroupProtocol, ...]:
        cfg, m = self.config, self.member
        generation = m.generation_id
        if self.protocol is RebalanceProtocol.COOPERATIVE:
            owned = self.subscriptions.owned()
            if not cfg.subscription_generation_field:
                # Before KIP-792 (3.4) the generation came from the assignor's user data: that
                # of its last assignment, older than the JoinGroup's after a missed SyncGroup.
                generation = self.assigned_generation
        else:
            # EAGER revoked everything before joining; the sticky assignor still learns the
            # member's last assignment (Kafka carries it in the subscription's userData).
            owned = self.previous_assignment if "sticky" in cfg.assignment_strategy else []
        subscription = Subscription(cfg.topics, by_topic(owned), generation)
        return tuple(JoinGroupProtocol(name, subscription) for name in cfg.assignment_strategy)

    def on_join_prepare(self, out: Out) -> bool:
        """`ConsumerCoordinator.onJoinPrepare`: the pre-rebalance auto-commit (by version),
        then the revocation (EAGER: every partition; COOPERATIVE: none, the topics do not
        change). False while a commit it waits for is in flight."""
        m, cfg, commits, now = self.member, self.config, self.commits, self.clock.now_ms
        owned = self.subscriptions.owned()
        if cfg.enable_auto_commit and m.generation_valid and cfg.join_prepare_commit is JoinPrepareCommit.ASYNC_NOT_AWAITED:
            return self._join_prepare_not_awaited(out, owned)
        if cfg.enable_auto_commit and owned and not self.join_prepare_revoked:
            if not m.generation_valid:
                # Out of its generation (a poll timeout, a fencing error): the commit fails in
                # the client, and the partitions are reported lost below.
                commits.commit_offsets_async(out, CommitKind.JOIN_PREPARE, self.subscriptions.all_consumed())
            elif commits.join_prepare_commit is None:
                mode = cfg.join_prepare_commit
                if mode is JoinPrepareCommit.SYNC:
                    self._commit_sync(out, CommitKind.JOIN_PREPARE, self.subscriptions.all_consumed())
                    return False
                if mode is JoinPrepareCommit.PENDING_REVOCATION and self.protocol is RebalanceProtocol.EAGER:
                    self.subscriptions.mark_pending_revocation(owned)
                commits.join_prepare_commit = commits.commit_offsets_async(out, CommitKind.JOIN_PREPARE, self.subscriptions.all_consumed())
                self.join_prepare_started_ms = now
                return False
            elif cfg.join_prepare_commit is not JoinPrepareCommit.SYNC and now - self.join_prepare_started_ms < cfg.max_poll_interval_ms:
                # A synchronous commit was waited for, retries and all. An asynchronous one is
                # waited for and sent again after a retriable failure until the rebalance
                # timeout, then the rebalance goes on without it ("joinPrepare timeout").
                commit = commits.get(commits.join_prepare_commit)
                if commit is not None and commit.error is None:
                    return False  # still waiting for it: poll() returns to the application
                if commit is not None and commit.error != "NONE" and is_retriable(commit.error):
                    commits.join_prepare_commit = commits.commit_offsets_async(out, CommitKind.JOIN_PREPARE, self.subscriptions.all_consumed())
                    return False
        if not self._revoke_for_join(out, owned):
            return False
        commits.join_prepare_commit = None
        self.join_prepare_revoked = False
        return True

    def _join_prepare_not_awaited(self, out: Out, owned: list[TopicPartition]) -> bool:
        """3.2.0 (KAFKA-13310): every call sends the positions again, asynchronously, and goes
        on to JoinGroup only if that very commit is already complete: nothing to commit, or
        refused in the client (not retriable). An OffsetCommit sent to the coordinator is never
        answered within the call, so the call returns false whenever the member still has
        positions to commit. EAGER revokes everything in the first call and joins in the next,
        its commit of nothing complete at once, the first commit's outcome never looked at;
        COOPERATIVE revokes nothing and sends its commit again at every `poll()` without ever
        sending JoinGroup (KAFKA-14024) until the coordinator drops it at the rebalance timeout
        and its generation is reset."""
        commits = self.commits
        if commits.revoke_commit is None:
            # Not a return to this call after its listener's commitSync was answered.
            offsets = self.subscriptions.all_consumed()
            self.join_prepare_complete = not offsets
            if offsets:
                # Complete at once only when it is not sent: out of a stable generation it fails
                # in the client (not retriable), and with no coordinator known no future exists.
                self.join_prepare_complete = self.generation_if_stable() is None or self.member.coordinator is None
                commits.commit_offsets_async(out, CommitKind.JOIN_PREPARE, offsets)
        if not self._revoke_for_join(out, owned):
            return False
        self.join_prepare_revoked = False
        return self.join_prepare_complete

    def _revoke_for_join(self, out: Out, owned: list[TopicPartition]) -> bool:
        """The revocation step of `onJoinPrepare`; with `commit = on_revoke` the listener's
        commitSync comes first. False while that commit is in flight."""
        m, commits = self.member, self.commits
        if not owned:
            return True
        lost = not m.generation_valid or (not m.member_id and self.config.keep_member_id_on_illegal_generation)
        if self.protocol is RebalanceProtocol.COOPERATIVE and not lost:
            return True  # the topics do not change: nothing to revoke before joining
        if not lost and self.config.app_commit.listener_commits and not self.join_prepare_revoked:
            if commits.revoke_commit is None:
                offsets = self.app.revoked_offsets(out, owned)
                if offsets is not None:  # None: the listener waits for the application's workers
                    self._commit_sync(out, CommitKind.REVOKE, offsets)
                return False
            if commits.waiting_for(commits.revoke_commit):
                return False
        commits.revoke_commit = None
        self.join_prepare_revoked = True
        self._revoke_or_lose(out, owned, "lost" if lost else "revoked", "generation_reset" if lost else "rebalance")
        return True

    def on_leader_elected(self, out: Out, resp: JoinGroupResponse) -> tuple[SyncGroupAssignment, ...]:
        """The leader runs the group's chosen assignor over every member's subscription."""
        assignor = ASSIGNORS[resp.protocol_name or self.config.assignment_strategy[0]]
        older_claims = self.config.older_generation_claims
        if isinstance(assignor, CooperativeStickyAssignor) and not older_claims:
            assignor = replace(assignor, older_generation_claims=False)
        members = [
            MemberSubscription(
                member.member_id,
                member.group_instance_id,
                member.metadata.topics,
                tuple(TopicPartition(t.topic, p) for t in member.metadata.owned_partitions for p in t.partitions),
                member.metadata.generation_id,
            )
            for member in resp.members
        ]
        topics = sorted({t for member in members for t in member.topics})
        counts = dict(self.config.partitions)
        partitions_per_topic = {t: counts[t] for t in topics if t in counts}
        result = assignor.assign(partitions_per_topic, members)
        if isinstance(assignor, CooperativeStickyAssignor) and not older_claims:
            self._log_ignored_claims(out, partitions_per_topic, members)
        return tuple(
            SyncGroupAssignment(member_id, Assignment(by_topic(list(result[member_id]))))
            for member_id in sorted(result)
        )

    def _log_ignored_claims(
        self, out: Out, partitions_per_topic: dict[str, int], members: list[MemberSubscription]
    ) -> None:
        """KAFKA-14639: name the claims the assignor threw away for their older generation."""
        highest = max(member.generation_id for member in members)
        generations = {member.member_id: member.generation_id for member in members}
        for owner, partitions in ignored_older_claims(partitions_per_topic, members).items():
            out.emit(
                "owned_partitions_ignored",
                group_id=self.config.group_id,
                member_id=self.member.member_id,
                generation_id=self.member.generation_id,
                owner=owner,
                owner_generation_id=generations[owner],
                highest_generation_id=highest,
                partitions=[str(tp) for tp in partitions],
            )

    def on_join_complete(self, out: Out) -> bool:
        """`ConsumerCoordinator.onJoinComplete`, in the `poll()` after the SyncGroup answer.
        False while the commit of a cooperative revocation's `onPartitionsRevoked` is in
        flight (the same poll runs it again once answered)."""
        m, cfg, subscriptions = self.member, self.config, self.subscriptions
        assigned = m.joined_assignment or []
        owned = subscriptions.owned()
        revoked = [tp for tp in owned if tp not in assigned]
        if self.protocol is RebalanceProtocol.COOPERATIVE and revoked and not self._revoke_listener_done(out, revoked):
            return False
        m.joined_assignment = None
        m.needs_join_prepare = True
        m.rejoin_needed = False
        if self.protocol is RebalanceProtocol.COOPERATIVE:
            if revoked:
                # KIP-429: revoke what moved, with no auto-commit, and rejoin so that the next
                # generation can give it to its new owner.
                self._revoke_or_lose(out, revoked, "revoked", "cooperative")
                m.rejoin_needed = True
            added = [tp for tp in assigned if tp not in owned]
        else:
            subscriptions.remove(owned)
            added = list(assigned)
        subscriptions.assign(added)
        self.previous_assignment = subscriptions.owned()
        self.assigned_generation = m.generation_id
        out.emit(
            "partitions_assigned",
            group_id=cfg.group_id,
            member_id=m.member_id,
            generation_id=m.generation_id,
            partitions=[str(tp) for tp in added],
            assignment=[str(tp) for tp in subscriptions.owned()],
        )
        self.commits.reset_auto_commit_timer()
        return True

    def _revoke_listener_done(self, out: Out, revoked: list[TopicPartition]) -> bool:
        """With `commit = on_revoke`, `onPartitionsRevoked` commits the revoked partitions
        synchronously before they go (KIP-429: the only commit a cooperative revocation gets).
        False while that commit is in flight."""
        commits = self.commits
        if not self.config.app_commit.listener_commits:
            return True
        if commits.revoke_commit is None:
            offsets = self.app.revoked_offsets(out, revoked)
            if offsets is not None:  # None: the listener waits for the application's workers
                self._commit_sync(out, CommitKind.REVOKE, offsets)
            return False
        if commits.waiting_for(commits.revoke_commit):
            return False
        commits.revoke_commit = None
        return True

    # ------------------------------------------------------------------ the rebalance listener

    def _revoke_or_lose(self, out: Out, partitions: list[TopicPartition], how: str, reason: str) -> None:
        """`onPartitionsRevoked` or `onPartitionsLost`, then drop the partitions."""
        cfg, m = self.config, self.member
        out.emit(
            f"partitions_{how}",
            group_id=cfg.group_id,
            member_id=m.member_id,
            generation_id=m.generation_id,
            partitions=[str(tp) for tp in partitions],
            reason=reason,
        )
        self.subscriptions.remove(partitions)

    def _commit_sync(self, out: Out, kind: CommitKind, offsets: Offsets) -> None:
        """A synchronous commit inside `poll()`: the application waits for it."""
        self.app.block_on_commit(out)
        self.commits.commit_offsets_sync(out, kind, offsets)

    # ------------------------------------------------------------------ leaving

    def partitions_lost_on_leave(self) -> bool:
        m = self.member
        if not m.generation_valid or not m.member_id:
            return True
        # A rebalance under way loses them too from 2.6 (`rebalanceInProgress` in onLeavePrepare).
        return self.config.lost_on_leave_during_rebalance and m.state is not MemberState.STABLE

    def leave_group(self, out: Out, reason: str) -> None:
        self._on_leave_prepare(out, reason)
        self.maybe_leave_group(out)

    def _on_leave_prepare(self, out: Out, reason: str) -> None:
        """`ConsumerCoordinator.onLeavePrepare`: the owned partitions go before the member
        leaves, reported lost when it is out of its generation or a rebalance is under way
        (`rebalanceInProgress`), revoked otherwise."""
        owned = self.subscriptions.owned()
        if owned:
            self._revoke_or_lose(out, owned, "lost" if self.partitions_lost_on_leave() else "revoked", reason)
