"""Named mutants of Kafka's rules: each breaks one rule the simulator implements, the way a
careless rewrite would, and names the tests that claim that rule. The mutation check
(`python -m tests.mutation`) applies each to a copy of the project and expects those tests to
fail. A rule added to the model (the producer's, the groups') adds its mutants here.

A mutant is a textual patch: `old` must occur exactly once in `path`, so a refactoring that moves
the rule makes the check fail loudly (an error) rather than test nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MUTANTS", "Mutant"]

REPLICATION = "tests/scenarios/test_replication.py"
RULES = "tests/scenarios/test_replication_rules.py"
CONTROLLER = "tests/scenarios/test_controller.py"
PRODUCER = "tests/scenarios/test_producer.py"
CLIENT = "tests/scenarios/test_client_rules.py"


@dataclass(frozen=True, slots=True)
class Mutant:
    name: str
    rule: str
    """The rule broken, with where Kafka states it."""
    path: str
    old: str
    new: str
    tests: tuple[str, ...]
    """The tests that claim the rule (pytest node ids): at least one must fail."""


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "hw_ignores_followers",
        "HW = min LEO over the maximal ISR (Partition.maybeIncrementLeaderHW)",
        "actors/broker/replica_state.py",
        "candidate = min(candidate, state.log_end_offset)",
        "candidate = max(candidate, state.log_end_offset)",
        (f"{REPLICATION}::test_s1_two_fetch_hw_propagation_step_by_step", "tests/unit/broker/test_replica_state.py"),
    ),
    Mutant(
        "hw_moves_backwards",
        "the leader's HW only moves forward (UnifiedLog.maybeIncrementHighWatermark)",
        "actors/broker/replica_state.py",
        "return max(current_hw, candidate)",
        "return candidate",
        (
            "tests/unit/broker/test_replica_state.py::test_hw_never_moves_back",
            "tests/unit/broker/test_replica_state.py::test_a_new_leader_cannot_advance_the_hw_until_isr_followers_fetch",
        ),
    ),
    Mutant(
        "fetch_answer_carries_hw_after_fetch",
        "an immediate fetch answer carries the HW read before the follower's fetch state moved it (Partition.fetchRecords)",
        "actors/broker/leader.py",
        "            _follower_fetched(b, ctx, out, read.partition, fp, replica)\n",
        "            _follower_fetched(b, ctx, out, read.partition, fp, replica)\n"
        "            reads[-1] = read_partition(b, fp, replica)\n",
        (f"{REPLICATION}::test_s1_two_fetch_hw_propagation_step_by_step", f"{RULES}::test_an_immediate_fetch_answer_carries_the_hw_from_before_the_fetch"),
    ),
    Mutant(
        "kip_279_no_loop",
        "KIP-279: the follower asks OffsetsForLeaderEpoch again until truncation is complete (2.0 to 2.7)",
        "actors/broker/follower.py",
        '        _truncate(b, out, partition, offset, "leader_epoch")\n        if complete:',
        '        _truncate(b, out, partition, offset, "leader_epoch")\n        if True:',
        (f"{RULES}::test_kip_279_the_follower_asks_again_until_its_epochs_meet_the_leaders",),
    ),
    Mutant(
        "truncation_ignores_own_epochs",
        "KIP-279: a follower lacking the leader's epoch truncates to the end of its own epoch below it (getOffsetTruncationState)",
        "actors/broker/epoch_cache.py",
        "        return TruncationState(min(own_end, follower_leo), complete=False)",
        "        return TruncationState(min(leader_end, follower_leo), complete=True)",
        (f"{RULES}::test_kip_279_the_follower_asks_again_until_its_epochs_meet_the_leaders",),
    ),
    Mutant(
        "kip_320_no_epoch_fencing",
        "KIP-320 (2.1): FENCED_LEADER_EPOCH and UNKNOWN_LEADER_EPOCH on fetches (Partition.checkCurrentLeaderEpoch)",
        "actors/broker/read.py",
        "if not b.config.profile.fetch_epoch_fencing or current_leader_epoch < 0:",
        "if True:",
        ("tests/unit/broker/test_fencing.py",),
    ),
    Mutant(
        "no_truncation_to_hw_before_0_11",
        "before KIP-101 (0.11) a new follower truncates to its HW: the cause of S2",
        "actors/broker/follower.py",
        '        _truncate(b, out, partition, partition.log.high_watermark, "high_watermark")\n',
        "        pass\n",
        (
            f"{REPLICATION}::test_s2_pre_kip_101_truncation_to_hw_loses_the_acknowledged_record",
            f"{REPLICATION}::test_s2_from_scratch_pre_kip_101_breaks_weak_and_strong_isr_and_loses_m1",
        ),
    ),
    Mutant(
        "isr_expiration_every_lag",
        "the isr-expiration task runs every replica.lag.time.max.ms / 2 (ReplicaManager.startup)",
        "actors/broker/behavior.py",
        'out.set_timer("isr-expiration", self.config.replica_lag_time_max_ms // 2)',
        'out.set_timer("isr-expiration", self.config.replica_lag_time_max_ms)',
        (f"{REPLICATION}::test_s9_isr_shrink_timing",),
    ),
    Mutant(
        "isr_shrink_ignores_leo",
        "a follower at the leader's LEO is caught up however long ago it fetched (Replica.isCaughtUp)",
        "actors/broker/replica_state.py",
        "return state.log_end_offset == leader_leo or now_ms",
        "return now_ms",
        (f"{REPLICATION}::test_s9_a_follower_at_the_leaders_leo_is_never_removed",),
    ),
    Mutant(
        "kafka_7128_no_epoch_start",
        "KAFKA-7128 (2.1): a follower joins the ISR only once it reaches the leader's epoch start",
        "actors/broker/replica_state.py",
        "return not profile.isr_join_needs_epoch_start or state.log_end_offset >= epoch_start_offset",
        "return True",
        (f"{RULES}::test_kafka_7128_a_follower_joins_the_isr_only_once_it_reaches_the_leaders_epoch",),
    ),
    Mutant(
        "min_isr_not_checked_at_append",
        "acks=all under min ISR: NOT_ENOUGH_REPLICAS before the append (Partition.appendRecordsToLeader)",
        "actors/broker/produce.py",
        "if acks == -1 and len(partition.isr) < min_isr:",
        "if acks == -1 and len(partition.isr) < 0:",
        (f"{REPLICATION}::test_s8_acks_all_under_min_isr_is_rejected_before_append", f"{RULES}::test_acks_all_one_replica_short_of_min_isr_is_rejected_before_the_append"),
    ),
    Mutant(
        "min_isr_off_by_one",
        "an ISR of exactly min.insync.replicas accepts acks=all (isr.size < effectiveMinIsr rejects)",
        "actors/broker/produce.py",
        "if acks == -1 and len(partition.isr) < min_isr:",
        "if acks == -1 and len(partition.isr) <= min_isr:",
        (f"{RULES}::test_acks_all_with_the_isr_exactly_at_min_isr_is_appended_and_acknowledged",),
    ),
    Mutant(
        "min_isr_not_capped_by_replication_factor",
        "effectiveMinIsr = min(min.insync.replicas, replication factor)",
        "actors/broker/produce.py",
        "    min_isr = min(b.config.min_insync_replicas_for(tp.topic), len(partition.replicas))\n    if acks",
        "    min_isr = b.config.min_insync_replicas_for(tp.topic)\n    if acks",
        (f"{RULES}::test_min_isr_is_capped_by_the_replication_factor",),
    ),
    Mutant(
        "min_isr_not_checked_after_append",
        "NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below min ISR after the append (checkEnoughReplicasReachOffset)",
        "actors/broker/produce.py",
        "error = ErrorCode.NONE if enough else ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND",
        "error = ErrorCode.NONE",
        (f"{REPLICATION}::test_s8_variant_isr_shrinks_after_the_append",),
    ),
    Mutant(
        "hw_advances_under_min_isr",
        "KAFKA-15583 (3.7): the HW does not advance while the ISR is under min ISR",
        "actors/broker/replica_state.py",
        "if profile.hw_needs_min_isr and isr_size",
        "if False and isr_size",
        (f"{REPLICATION}::test_s8_acks_1_under_min_isr_appends_but_37_holds_the_hw", f"{REPLICATION}::test_s8_variant_isr_shrinks_after_the_append"),
    ),
    Mutant(
        "brokers_ignore_controller_epoch",
        "brokers reject LeaderAndIsr, UpdateMetadata and StopReplica from an older controller epoch (ReplicaManager)",
        "actors/broker/behavior.py",
        "elif req.controller_epoch < self.state.controller_epoch:",
        "elif False:",
        (f"{CONTROLLER}::test_a_paused_controller_that_resumes_changes_nothing",),
    ),
    Mutant(
        "leader_and_isr_equal_epoch_applied",
        "LeaderAndIsr applies to a partition only with a newer leader epoch (becomeLeaderOrFollower)",
        "actors/broker/behavior.py",
        "if p.leader_epoch <= partition.leader_epoch:",
        "if p.leader_epoch < partition.leader_epoch:",
        ("tests/unit/broker/test_fencing.py", f"{CONTROLLER}::test_s11_controller_failover_and_stale_controller_fencing"),
    ),
    Mutant(
        "zookeeper_writes_unfenced",
        "KAFKA-6082 (2.1): every controller write checks /controller_epoch's zkVersion (wrapRequestWithControllerEpochCheck)",
        "actors/controller/kafka_zk_client.py",
        "check = Op(OpCode.CHECK, zk.CONTROLLER_EPOCH, version=self.epoch_zk_version)",
        "check = Op(OpCode.CHECK, zk.CONTROLLER_EPOCH, version=-1)",
        (f"{CONTROLLER}::test_s11_controller_failover_and_stale_controller_fencing", f"{CONTROLLER}::test_a_paused_controller_that_resumes_changes_nothing"),
    ),
    Mutant(
        "offline_election_in_isr_order",
        "the offline election scans the assignment, not the ISR, for the first live ISR member (PartitionLeaderElectionAlgorithms)",
        "actors/controller/election.py",
        "    for replica in assignment:\n        if replica in live and replica in isr:",
        "    for replica in isr:\n        if replica in live and replica in isr:",
        ("tests/unit/test_controller_units.py", f"{CONTROLLER}::test_s10_broker_failure_with_alter_partition"),
    ),
    Mutant(
        "process_crash_is_silent",
        "a crashed process on a live machine closes its connections and refuses new ones (NetworkClient disconnections)",
        "sim/engine/lifecycle.py",
        "state.refusing = kind is CrashKind.PROCESS",
        "state.refusing = False",
        ("tests/scenarios/test_connections.py",),
    ),
    Mutant(
        "offline_election_outside_isr",
        "a clean offline election picks only an ISR member; outside it only with unclean election",
        "actors/controller/election.py",
        "    for replica in assignment:\n        if replica in live and replica in isr:",
        "    for replica in assignment:\n        if replica in live:",
        (f"{CONTROLLER}::test_s7_without_unclean_election_the_partition_waits_for_its_isr_and_loses_nothing",),
    ),
    Mutant(
        "dedup_ignores_cached_batches",
        "a batch matching one of the producer's cached batches is a duplicate, answered with its first offsets (ProducerStateEntry.findDuplicateBatch)",
        "actors/broker/producer_state.py",
        "                    return Verdict(duplicate_of=cached)",
        "                    pass",
        (f"{PRODUCER}::test_s21_a_retry_after_a_lost_answer_writes_twice_unless_idempotent", f"{PRODUCER}::test_s23_the_broker_remembers_five_batches_per_producer"),
    ),
    Mutant(
        "dedup_window_of_six",
        "the broker keeps the last five batches per producer (NUM_BATCHES_TO_RETAIN)",
        "actors/broker/producer_state.py",
        "NUM_BATCHES_TO_RETAIN = 5",
        "NUM_BATCHES_TO_RETAIN = 6",
        (f"{PRODUCER}::test_s23_the_broker_remembers_five_batches_per_producer",),
    ),
    Mutant(
        "sequence_gaps_accepted",
        "a batch must follow the last sequence written, else OUT_OF_ORDER_SEQUENCE_NUMBER (ProducerAppendInfo.checkSequence)",
        "actors/broker/producer_state.py",
        "            if entry.batches and not in_sequence(entry.last_sequence, first_sequence):",
        "            if False:",
        (f"{PRODUCER}::test_s23_the_broker_remembers_five_batches_per_producer", f"{PRODUCER}::test_s22_a_refused_batch_retried_after_a_later_one_lands_after_it_unless_idempotent"),
    ),
    Mutant(
        "dedup_before_min_isr",
        "the min-ISR check runs before the duplicate check, so a retry under min ISR is refused (Partition.appendRecordsToLeader)",
        "actors/broker/produce.py",
        "        error = _produce_error(b, tp, req.acks)\n        if error is ErrorCode.NONE:\n            error = _append(",
        "        error = _produce_error(b, tp, 1 if b.state.partitions.get(tp) and b.state.partitions[tp].log.producers.check(data.producer_id, data.producer_epoch, data.base_sequence, len(data.values)).duplicate_of else req.acks)\n        if error is ErrorCode.NONE:\n            error = _append(",
        (f"{PRODUCER}::test_s8_variant_the_retries_of_an_append_the_isr_left_behind",),
    ),
    Mutant(
        "connections_not_muted",
        "a connection is read again only once the answer to its previous request is sent (SocketServer mutes it)",
        "actors/broker/produce.py",
        "        b.state.muted[inbound.src] = deque()\n",
        "",
        (f"{PRODUCER}::test_a_produce_behind_a_waiting_one_on_its_connection_waits_for_its_answer",),
    ),
    Mutant(
        "idempotent_retry_not_first_in_line",
        "an idempotent producer sends a retried batch only when it is first of its partition's unresolved batches (shouldStopDrainBatchesForPartition)",
        "actors/producer/idempotence.py",
        "        return first is batch  # a retry goes only when it is first in line",
        "        return True",
        (f"{PRODUCER}::test_s22_a_refused_batch_retried_after_a_later_one_lands_after_it_unless_idempotent",),
    ),
    Mutant(
        "linger_ignored",
        "a batch is sendable once linger.ms has passed since it was created, or when full (RecordAccumulator.ready)",
        "actors/producer/accumulator.py",
        "            wait = first.backoff_ms if backing_off else self.linger_ms",
        "            wait = first.backoff_ms if backing_off else 0",
        (f"{PRODUCER}::test_linger_5_sends_five_times_fewer_requests_than_linger_0", "tests/unit/producer/test_accumulator.py"),
    ),
    Mutant(
        "no_delivery_timeout",
        "a batch in flight fails once delivery.timeout.ms has passed since it was created (KIP-91, Sender.getExpiredInflightBatches)",
        "actors/producer/sender.py",
        "                if not batch.done and batch.expired(self.time.now_ms, cfg.delivery_timeout_ms):",
        "                if False:",
        (f"{PRODUCER}::test_a_batch_expires_after_the_delivery_timeout_in_flight_or_queued",),
    ),
    Mutant(
        "sticky_never_moves",
        "KIP-480: the sticky partition moves when a new batch is needed (StickyPartitionCache.nextPartition)",
        "actors/producer/partitioner.py",
        "            self.sticky = self._next_sticky(available, previous=partition)",
        "            pass",
        ("tests/unit/producer/test_partitioner.py",),
    ),
    Mutant(
        "unknown_producer_accepted_before_2_5",
        "before KIP-360 (2.5) a producer id with no state is accepted only from sequence 0 (ProducerAppendInfo.checkSequence)",
        "actors/profiles.py",
        "accept_unknown_producer=v >= (2, 5, 0),",
        "accept_unknown_producer=True,",
        (f"{PRODUCER}::test_a_producer_id_the_broker_has_no_state_for",),
    ),
    Mutant(
        "incremental_fetch_drops_hw_changes",
        "KIP-227 (1.1): an incremental fetch answer leaves out only partitions with no records and the HW last sent (CachedPartition.maybeUpdateResponseData)",
        "actors/broker/leader.py",
        "            or previous.get(tp) != hw  # type: ignore[call-overload]\n",
        "",
        (
            "tests/unit/broker/test_fetch_session.py::test_an_incremental_fetch_answers_only_the_partitions_with_something_new",
            f"{REPLICATION}::test_s1_two_fetch_hw_propagation_step_by_step",
        ),
    ),
    Mutant(
        "incremental_fetch_reads_only_listed",
        "KIP-227 (1.1): an incremental Fetch lists only what changed; the leader reads every partition of the session (IncrementalFetchContext.foreachPartition)",
        "actors/broker/leader.py",
        "    return tuple(held.values()), ErrorCode.NONE\n",
        "    return req.partitions, ErrorCode.NONE\n",
        ("tests/unit/broker/test_fetch_session.py::test_the_leader_reads_its_whole_session_and_refuses_an_unknown_session_or_a_stale_epoch",),
    ),
    Mutant(
        "fetch_session_epoch_unchecked",
        "KIP-227 (1.1): an incremental Fetch must carry the session's next epoch, else INVALID_FETCH_SESSION_EPOCH and nothing changes (FetchManager.newContext)",
        "actors/broker/leader.py",
        "    if req.session_epoch != session.epoch:\n",
        "    if False:\n",
        ("tests/unit/broker/test_fetch_session.py::test_the_leader_reads_its_whole_session_and_refuses_an_unknown_session_or_a_stale_epoch",),
    ),
    Mutant(
        "resting_partition_never_rechecked",
        "a Fetch may skip an idle partition only while it stays as it was: a change (a record appended) is read at the next fetch, as reading every session partition finds it",
        "actors/broker/leader.py",
        "    log.on_change = partition.wake\n",
        "    pass\n",
        ("tests/unit/broker/test_fetch_session.py::test_a_resting_partition_that_changed_is_read_at_the_next_fetch",),
    ),
    Mutant(
        "parked_fetch_misses_a_woken_partition",
        "a follower's fetch waiting in the purgatory completes on a record appended to any partition of its session, also one that rested when it parked (DelayedFetch watches every partition it reads)",
        "actors/broker/partition.py",
        "                session.woke(self.tp)\n",
        "                pass\n",
        ("tests/unit/broker/test_fetch_session.py::test_a_parked_fetch_skips_a_resting_partition_until_it_wakes_and_then_answers_it",),
    ),
    Mutant(
        "steady_fetch_misses_an_applied_answer",
        "an incremental Fetch lists every partition whose fetch position moved since the last one (FetchSessionHandler): a follower's request built from the partitions it applied answers for must see each of them",
        "actors/broker/follower.py",
        "    session.touched.update(followed.tp for followed, _ in pairs)\n",
        "    pass\n",
        ("tests/scenarios/test_resting_partitions.py::test_steady_fetches_leave_the_log_as_building_every_request_whole_does[swarm-0]",),
    ),
    Mutant(
        "stale_fetch_rests_in_the_new_session",
        "a fetch parked in a session the follower has replaced answers as its own request, and puts nothing to rest in the new session, whose full answer must list every partition (KIP-227: an epoch-0 Fetch gets every partition)",
        "actors/broker/leader.py",
        "        current = session is not None and session is op.session\n",
        "        current = session is not None\n",
        ("tests/unit/broker/test_fetch_session.py::test_a_fetch_left_from_a_replaced_session_puts_nothing_to_rest_in_the_new_one",),
    ),
    Mutant(
        "resting_times_read_stale",
        "the ISR check reads a follower's caught-up time as of its last fetch, also for a partition its session skips (replica.lag.time.max.ms, Partition.getOutOfSyncReplicas)",
        "actors/broker/isr.py",
        "            partition.wake()  # the follower times are read now\n",
        "            pass\n",
        ("tests/unit/broker/test_fetch_session.py::test_an_idle_partition_rests_and_its_follower_times_are_brought_up_to_date_when_read",),
    ),
    Mutant(
        "requests_before_registration",
        "a broker processes requests only once it has registered in ZooKeeper (KafkaServer.startup)",
        "actors/broker/behavior.py",
        "        return self.config.zk_client is not None and self.state.broker_epoch < 0\n",
        "        return False\n",
        ("tests/unit/broker/test_fencing.py::test_a_broker_processes_no_request_before_it_has_registered",),
    ),
    Mutant(
        "shutting_down_broker_elected",
        "a broker in controlled shutdown is no candidate (Election.leaderForControlledShutdown)",
        "actors/controller/election.py",
        "        if replica in live and replica in isr and replica not in shutting_down:\n",
        "        if replica in live and replica in isr:\n",
        (
            "tests/scenarios/test_controlled_shutdown.py::test_a_controlled_shutdown_moves_the_leaderships_before_the_broker_exits",
        ),
    ),
    Mutant(
        "empty_group_id_joins",
        "the empty group id is INVALID_GROUP_ID on every API of group membership (GroupCoordinator.isValidGroupId)",
        "actors/group/manager.py",
        "        if not group_id and not offsets_api:\n",
        "        if False:\n",
        (
            "tests/unit/group/test_group_coordinator_units.py::test_the_empty_group_id_is_invalid_for_every_membership_api",
            "tests/scenarios/test_consumer_groups.py::test_a_consumer_with_the_empty_group_id_is_refused_its_join_and_stops",
        ),
    ),
    Mutant(
        "commit_sent_while_rejoining",
        "a commit carries the generation only while the member is STABLE; while it rejoins, commitSync fails in the client and nothing is sent (ConsumerCoordinator.sendOffsetCommitRequest, generationIfStable)",
        "actors/consumer/commits.py",
        "        generation = m.generation_if_stable()\n",
        "        generation = m.generation_if_stable() or (\n"
        "            type(\"G\", (), {\"generation_id\": m.generation_id, \"member_id\": m.member_id})() if m.rebalance_in_progress() else None\n"
        "        )\n",
        (f"{CLIENT}::test_a_member_sends_no_commit_while_it_rejoins",),
    ),
    Mutant(
        "leave_during_rebalance_revokes",
        "from 2.6 a member leaving while a rebalance is under way reports its partitions lost, not revoked (ConsumerCoordinator.onLeavePrepare, rebalanceInProgress)",
        "actors/consumer/consumer_coordinator.py",
        "        return self.config.lost_on_leave_during_rebalance and m.state is not MemberState.STABLE\n",
        "        return False\n",
        (f"{CLIENT}::test_a_member_leaving_during_a_rebalance_loses_its_partitions_from_2_6",),
    ),
    Mutant(
        "static_member_leaves_on_close",
        "a static member never sends LeaveGroup, on close() either (KIP-345, AbstractCoordinator.maybeLeaveGroup)",
        "actors/consumer/abstract_coordinator.py",
        " or cfg.group_instance_id is not None or m.state is MemberState.UNJOINED:",
        " or m.state is MemberState.UNJOINED:",
        (f"{CLIENT}::test_a_static_member_closing_sends_no_leave_group",),
    ),
    Mutant(
        "no_commit_ignores_auto_offset_reset",
        "a partition without a committed offset starts where auto.offset.reset says (SubscriptionState.resetInitializingPositions)",
        "actors/consumer/commits.py",
        "                    reset.append(tp)\n",
        "                    self.positions.set_position(out, tp, 0, -1, self.config.auto_offset_reset, \"no_committed_offset\")\n",
        (f"{CLIENT}::test_a_position_out_of_range_is_reset_at_once_without_asking_for_the_committed_offset",),
    ),
    Mutant(
        "no_epoch_bump_after_delivery_timeout",
        "an idempotent producer bumps its epoch after a batch it sent expires (KIP-360, TransactionManager.bumpIdempotentEpochAndResetIdIfNeeded)",
        "actors/producer/idempotence.py",
        "        if self.epoch_bump and error != ErrorCode.UNKNOWN_PRODUCER_ID.name:\n",
        "        if error == \"DELIVERY_TIMEOUT\":\n"
        "            return\n"
        "        if self.epoch_bump and error != ErrorCode.UNKNOWN_PRODUCER_ID.name:\n",
        (f"{CLIENT}::test_an_idempotent_producer_bumps_its_epoch_after_a_delivery_timeout",),
    ),
    Mutant(
        "commit_sync_waits_past_its_deadline",
        "commitSync returns at its timer's deadline, also with an attempt in flight (ConsumerCoordinator.commitOffsetsSync, ConsumerNetworkClient.poll(future, timer))",
        "actors/consumer/commits.py",
        "        out.set_timer(\"commit-deadline\", timeout)\n",
        "",
        (f"{CLIENT}::test_commit_sync_sends_nothing_past_its_deadline_and_returns_at_it",),
    ),
    Mutant(
        "kip_580_backoff_never_grows",
        "from 3.7 a retry waits retry.backoff.ms doubled per earlier attempt up to retry.backoff.max.ms, with jitter (KIP-580, ExponentialBackoff)",
        "actors/backoff.py",
        "    term = initial * multiplier ** min(attempts, exp_max)\n",
        "    term = initial * multiplier ** min(0, exp_max)\n",
        (
            f"{CLIENT}::test_commit_sync_retries_back_off_exponentially_from_3_7",
            f"{CLIENT}::test_a_producer_retry_backs_off_exponentially_from_3_7",
        ),
    ),
    Mutant(
        "out_of_range_asks_offset_fetch",
        "a partition awaiting its auto.offset.reset (after OFFSET_OUT_OF_RANGE) is not asked OffsetFetch again (SubscriptionState.requestOffsetReset, initializingPartitions)",
        "actors/consumer/subscription_state.py",
        "            state.awaiting_reset, state.retry_at_ms = reason, 0\n",
        "            state.awaiting_reset, state.retry_at_ms = None, 0\n",
        (f"{CLIENT}::test_a_position_out_of_range_is_reset_at_once_without_asking_for_the_committed_offset",),
    ),
)
