"""Consumed records and duplicates by cause, on Spark, from the events alone.

The rules are `sim/cluster/accounting.py`'s (its module docstring has the table): every processing of a
record (group, partition, offset, the leader epoch it was written in) after the first is one
duplicate, labelled by the hold that processed it before, once that hold has ended, else by
the hold processing now (a zombie), else `unexplained`. A hold is one consumer's ownership of
one partition; the first event that ends it gives its label.

What is sequential per consumer is done with windows ordered by the log's line number `ln`
(`sim.analytics.events`): per consumer (the settings of its incarnation, since its last
start, and the incarnation's last commit error), then per consumer and partition (which event
starts a hold, which ends it). That second window sees the few changes of a partition's
ownership (assignments, revocations, resets, crashes, restarts) and, of the processings
between two of them, only the first: the others neither start nor end a hold, so each takes
the hold of the first of its stretch, found by a broadcast range join. Causes that come from
the coordinator (a removal, a generation without the member) are range joins of the holds
with those events. Processings stay offset ranges: each that overlaps another is cut at every
range boundary of its partition's overlapping ranges, so that each piece was processed whole or
not at all, and the previous processing of a piece is a `lag` over the pieces.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention
from pyspark.sql.types import ArrayType, StringType

from sim.analytics.events import NEVER
from sim.analytics.claims import thrown_away_claims
from sim.analytics.rewinds import rewinds

__all__ = ["duplicates_by_run", "group_duplicates"]

COORDINATOR_FAILURES = ("NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS", "DISCONNECTED", "TIMEOUT")
REMOVALS = {
    "session_timeout": "expelled_session_timeout",
    "not_rejoined": "poll_interval_exceeded",
    "rebalance_timeout": "poll_interval_exceeded",
    "replaced": "commit_failed_or_fenced",
}
REMOVAL_EVENTS = ("group_member_removed", "consumer_member_removed")
"""The classic coordinator's removals and the consumer protocol's (KIP-848)."""
CONSUMER_EVENTS = (
    "consumer_started",
    "partitions_assigned",
    "partitions_revoked",
    "partitions_lost",
    "poll_timeout_expired",
    "offset_commit_answered",
    "fetch_position_set",
)
"""A consumer's events but its processings: few, and what decides which hold each processing
falls in."""
CONSUMER_COLUMNS = (
    "run", "ln", "event", "node", "group_id", "member_id", "enable_auto_commit", "commit", "error", "reason",
    "partitions", "topic", "partition", "source", "static", "offset", "generation_id",
)
"""What the rules read of those events: selected before anything else, so that a scan reads
these columns only and nothing wider is sorted or kept."""

# Kinds of a consumer's per-partition timeline.
ASSIGN, REVOKE, RESET, PROCESS, CRASH, STARTED = "assign", "revoke", "reset", "process", "crash", "started"


def _consumer_events(events: DataFrame) -> DataFrame:
    """Each consumer's events (its node's crash among them), with what its current
    incarnation (since its last `consumer_started`) knows: group, auto-commit, whether
    `onPartitionsRevoked` commits, and its last commit's outcome. Events before a consumer's
    first start are dropped, as the simulator ignores them."""
    own = events.where(F.col("event").isin(*CONSUMER_EVENTS)).select(*CONSUMER_COLUMNS)
    crashes = events.where(F.col("event") == "node_crashed").withColumn("node", F.col("target")).select(*CONSUMER_COLUMNS)
    rows = own.unionByName(crashes).join(F.broadcast(_join_prepare_bugs(events)), "run", "left")
    # One window over each node's events: an incarnation's settings are those of the last
    # start so far, and its last commit's outcome is forgotten at a start. Rows before a
    # node's first start (every row of a node that is not a consumer) have no settings.
    upto = Window.partitionBy("run", "node").orderBy("ln").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    started = F.col("event") == "consumer_started"
    settings = F.struct(
        F.col("group_id").alias("c_group"),
        F.col("enable_auto_commit").alias("auto_commit"),
        F.col("commit").isin("on_revoke", "processed").alias("listener"),
    )
    outcome = F.when(F.col("event") == "offset_commit_answered", F.col("error")).when(started, F.lit("NONE"))
    return (
        rows.withColumn("settings", F.last(F.when(started, settings), ignorenulls=True).over(upto))
        .withColumn("commit_error", F.coalesce(F.last(outcome, ignorenulls=True).over(upto), F.lit("NONE")))
        .where(F.col("settings").isNotNull())
        .select("*", "settings.*")
        .drop("settings")
    )


def _join_prepare_bugs(events: DataFrame) -> DataFrame:
    """Each run's bug of the pre-rebalance auto-commit, by its Kafka version (`run_started`):
    3.2.0 does not wait for the commit (KAFKA-14024); 3.2.1 and 3.2.2 wait while polls go on
    returning records of the partitions about to be revoked (KAFKA-14196); null otherwise. And
    the consumer protocol's (`reconcile_bug`): 3.7 to 3.9 commit before marking the revoked
    partitions pending revocation (KAFKA-16460)."""
    version = r"^(\d+)\.(\d+)(?:\.(\d+))?$"  # '3.2' is 3.2.0
    major, minor, patch = (
        F.coalesce(F.nullif(F.regexp_extract("kafka_version", version, i), F.lit("")), F.lit("0")).cast("int") for i in (1, 2, 3)
    )
    in_3_2 = (major == 3) & (minor == 2)
    bug = F.when(in_3_2 & (patch == 0), "kafka_14024").when(in_3_2 & patch.isin(1, 2), "kafka_14196")
    reconcile_bug = F.when((major == 3) & minor.between(7, 9), "kafka_16460")
    return events.where(F.col("event") == "run_started").select("run", bug.alias("bug"), reconcile_bug.alias("reconcile_bug"))


def _stuck_in_join_prepare(events: DataFrame) -> DataFrame:
    """(run, group, member, generation) of each pre-rebalance auto-commit in a 3.2.0 run: its
    `onJoinPrepare` sends the commit at every poll and goes on to JoinGroup only once nothing
    is left to commit, so a member removed for not rejoining after one never sent JoinGroup."""
    in_3_2_0 = _join_prepare_bugs(events).where(F.col("bug") == "kafka_14024").select("run")
    return (
        events.where((F.col("event") == "offset_commit_sent") & (F.col("kind") == "join_prepare"))
        .join(F.broadcast(in_3_2_0), "run")
        .select("run", "group_id", "member_id", "generation_id", F.lit(True).alias("stuck"))
        .distinct()
    )


def _release_label() -> Column:
    """A revocation's or loss's label: the first row of the table that holds."""
    revoked_plain = (F.col("event") == "partitions_revoked") & ~F.col("listener")
    eager_auto_commit = (F.col("event") == "partitions_revoked") & (F.col("reason") == "rebalance") & F.col("auto_commit")
    same_round = (F.col("event") == "partitions_revoked") & (F.col("reason") == "cooperative") & F.col("thrown_away")
    reconciled = (F.col("event") == "partitions_revoked") & (F.col("reason") == "reconciliation") & F.col("auto_commit")
    return (
        F.when(F.col("reason") == "unsubscribe", "unsubscribe_without_commit")
        .when(eager_auto_commit & F.col("bug").isNotNull(), F.col("bug"))
        .when(reconciled & F.col("reconcile_bug").isNotNull(), F.col("reconcile_bug"))
        .when(same_round, "kafka_14639")
        .when(F.col("commit_error").isin(*COORDINATOR_FAILURES), "coordinator_failover")
        .when(F.col("commit_error") != "NONE", "commit_failed_or_fenced")
        .when(revoked_plain & F.col("auto_commit") & (F.col("reason") == "cooperative"), "cooperative_revocation_gap")
        .when(revoked_plain & ~F.col("auto_commit"), "revoked_without_commit")
        .otherwise("commit_failed_or_fenced")
    )


def _tp() -> Column:
    return F.concat_ws("-", F.col("topic"), F.col("partition").cast("string")).alias("tp")


def _processings(events: DataFrame) -> DataFrame:
    """Every `records_processed`, with the columns the rules read of it."""
    return events.where(F.col("event") == "records_processed").select(
        "run", "node", "ln", _tp(), "group_id", "member_id", "leader_epoch", "first_offset", "end_offset"
    )


def _changes(consumers: DataFrame, processings: DataFrame, thrown_away: DataFrame) -> DataFrame:
    """One row per (consumer, partition) fact but processings, in log order: assignments,
    revocations and losses, position resets; a crash or restart of the node is a row for each
    partition the consumer ever touched."""
    names = F.explode(F.from_json("partitions", ArrayType(StringType()))).alias("tp")
    keep = ["run", "node", "ln", "c_group", "member_id"]
    assigned = consumers.where(F.col("event") == "partitions_assigned").select(
        *keep, names, F.lit(ASSIGN).alias("kind"), F.lit(None).cast("string").alias("exit_label")
    )
    own_claim = (
        (F.col("r.run") == F.col("t.run"))
        & (F.col("r.c_group") == F.col("t_group"))
        & (F.col("r.generation_id") == F.col("t_generation"))
        & (F.col("r.member_id") == F.col("t_member"))
        & (F.col("r.tp") == F.col("t.tp"))
    )
    released = (
        consumers.where(F.col("event").isin("partitions_revoked", "partitions_lost"))
        .select("*", names)
        .alias("r")
        .join(F.broadcast(thrown_away).alias("t"), own_claim, "left")
        .select("r.*", F.coalesce(F.col("thrown_away"), F.lit(False)).alias("thrown_away"))
        .select(*keep, "tp", F.lit(REVOKE).alias("kind"), _release_label().alias("exit_label"))
    )
    reset = consumers.where((F.col("event") == "fetch_position_set") & (F.col("source") != "committed")).select(
        *keep, _tp(), F.lit(RESET).alias("kind"), F.lit("log_truncation_or_reset").alias("exit_label")
    )
    facts = assigned.unionByName(released).unionByName(reset)
    touched = facts.select("run", "node", "tp").unionByName(processings.select("run", "node", "tp")).distinct()
    node_wide = (
        consumers.where(F.col("event").isin("node_crashed", "consumer_started"))
        .join(F.broadcast(touched), ["run", "node"])
        .select(
            *keep,
            "tp",
            F.when(F.col("event") == "node_crashed", CRASH).otherwise(STARTED).alias("kind"),
            F.when(F.col("event") == "node_crashed", "crash_before_commit").alias("exit_label"),
        )
    )
    return facts.unionByName(node_wide)


def _between(changes: DataFrame) -> DataFrame:
    """The lines of each (consumer, partition) between two changes, [since, until): a stretch
    in which nothing but processings happen to the partition. `since` is -1 before the first."""
    firsts = changes.select("run", "node", "tp").distinct().select("run", "node", "tp", F.lit(-1).cast("long").alias("since"))
    order = Window.partitionBy("run", "node", "tp").orderBy("since")
    return (
        changes.select("run", "node", "tp", F.col("ln").alias("since"))
        .unionByName(firsts)
        .withColumn("until", F.coalesce(F.lead("since").over(order), F.lit(NEVER)))
    )


def _in_stretch(processings: DataFrame, stretches: DataFrame) -> DataFrame:
    """Processings with the stretch each falls in (`since`): a broadcast range join, the
    stretches being few."""
    p, s = processings.alias("p"), F.broadcast(stretches).alias("s")
    on = [F.col(f"p.{k}") == F.col(f"s.{k}") for k in ("run", "node", "tp")]
    on += [F.col("p.ln") >= F.col("s.since"), F.col("p.ln") < F.col("s.until")]
    return p.join(s, on).select("p.*", "s.since")


def _timeline(changes: DataFrame, located: DataFrame) -> DataFrame:
    """The changes and, of the processings, the first of each stretch: the others neither start
    a hold nor end one (the first takes a hold if there was none, and keeps it)."""
    stretch = ["run", "node", "tp", "since"]
    first = located.groupBy(*stretch).agg(F.min("ln").alias("ln"))
    firsts = located.join(F.broadcast(first), [*stretch, "ln"]).select(
        "run", "node", "ln", F.col("group_id").alias("c_group"), "member_id", "tp",
        F.lit(PROCESS).alias("kind"), F.lit(None).cast("string").alias("exit_label"), "since",
    )
    return changes.withColumn("since", F.lit(None).cast("long")).unionByName(firsts)


def _holds(timeline: DataFrame) -> DataFrame:
    """Which timeline rows start a hold, which end one, and where each hold ends. A consumer
    holds a partition after an assignment or a processing (which takes one if it had none,
    unless the partition was just revoked or lost: then it is the ended hold's), until a
    revocation, a crash or a restart; a reset while holding ends the hold and starts another."""
    by_tp = Window.partitionBy("run", "node", "tp").orderBy("ln")
    before = by_tp.rowsBetween(Window.unboundedPreceding, -1)
    upto = by_tp.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    after = by_tp.rowsBetween(1, Window.unboundedFollowing)
    kind = F.col("kind")
    # Records processed right after a revocation or loss were in the application's hands when
    # the consumer gave the partition up: they are processed under the hold that ended then.
    prior = F.last(F.when(kind != RESET, kind), ignorenulls=True).over(before)
    t = timeline.withColumn("zombie", (kind == PROCESS) & F.coalesce(prior == REVOKE, F.lit(False)))
    zombie = F.col("zombie")
    status = F.when(kind == ASSIGN, 1).when((kind == PROCESS) & ~zombie, 1).when(kind.isin(REVOKE, CRASH, STARTED), 0)
    t = t.withColumn("held_before", F.coalesce(F.last(status, ignorenulls=True).over(before), F.lit(0)) == 1)
    held = F.col("held_before")
    starts = (kind == ASSIGN) | ((kind == RESET) & held) | ((kind == PROCESS) & ~held & ~zombie)
    t = (
        t.withColumn("starts", starts)
        .withColumn("hold", F.last(F.when(F.col("starts"), F.col("ln")), ignorenulls=True).over(upto))
        # A reset's new hold keeps the member id of the one it replaces.
        .withColumn("hold_member", F.last(F.when(F.col("starts") & (kind != RESET), F.col("member_id")), ignorenulls=True).over(upto))
        .withColumn("ends", held & kind.isin(ASSIGN, REVOKE, CRASH, STARTED, RESET))
        # The first end after a start ends its hold: no hold starts in between.
        .withColumn("exit", F.first(F.when(F.col("ends"), F.struct("ln", "exit_label")), ignorenulls=True).over(after))
    )
    return t


def _hold_labels(t: DataFrame, events: DataFrame, consumers: DataFrame, thrown_away: DataFrame) -> DataFrame:
    """Each hold (run, node, tp, hold) with the line and label of the first event that ended it."""
    holds = t.where("starts").select(
        "run",
        "node",
        "tp",
        "hold",
        F.col("c_group").alias("group"),
        F.col("hold_member").alias("member"),
        F.coalesce(F.col("exit.ln"), F.lit(NEVER)).alias("exit_ln"),
        F.col("exit.exit_label").alias("exit_label"),
    )
    h = holds.alias("h")
    inside = lambda e: (F.col("e.ln") > F.col("h.hold")) & (F.col("e.ln") < F.col("h.exit_ln"))  # noqa: E731
    polls = consumers.where(F.col("event") == "poll_timeout_expired").select(
        "run",
        "node",
        "ln",
        F.when(F.col("static"), "static_poll_timeout_self_replay").otherwise("poll_interval_exceeded").alias("label"),
    ).alias("e")
    removal = F.lit(None).cast("string")
    for reason, label in REMOVALS.items():
        removal = F.when(F.col("reason") == reason, label).otherwise(removal)
    # 3.2.0: a member removed for not rejoining after a pre-rebalance commit in that generation
    # was stuck sending it again at every poll (KAFKA-14024).
    removal = F.when((F.col("reason") == "not_rejoined") & F.col("stuck").isNotNull(), "kafka_14024").otherwise(removal)
    member = ["run", "group_id", "member_id", "generation_id"]
    removed = (
        events.where(F.col("event").isin(*REMOVAL_EVENTS))
        .join(F.broadcast(_stuck_in_join_prepare(events)), member, "left")
        .select("run", "ln", "group_id", "member_id", removal.alias("label"))
        .where(F.col("label").isNotNull())
        .alias("e")
    )
    generations = events.where(F.col("event") == "generation_started").select("run", "ln", "group_id", "members").alias("e")
    # Another member assigned the partition while this hold lasts: its member had not rejoined.
    names = F.explode(F.from_json("partitions", ArrayType(StringType()))).alias("tp")
    given = (
        consumers.where(F.col("event") == "partitions_assigned")
        .select("run", "ln", "node", "c_group", "generation_id", names)
        .alias("e")
    )
    # ... unless the assignor threw its claim away for its older generation (KAFKA-14639).
    lost_claim = (
        (F.col("h.run") == F.col("t.run"))
        & (F.col("e.c_group") == F.col("t_group"))
        & (F.col("e.generation_id") == F.col("t_generation"))
        & (F.col("h.member") == F.col("t_member"))
        & (F.col("h.tp") == F.col("t.tp"))
    )
    given_label = F.when(F.col("thrown_away"), "kafka_14639").otherwise("poll_interval_exceeded")
    key = ["run", "node", "tp", "hold"]
    found = [
        holds.where(F.col("exit_label").isNotNull()).select(*key, F.col("exit_ln").alias("at"), F.col("exit_label").alias("label")),
        h.join(polls, (F.col("h.run") == F.col("e.run")) & (F.col("h.node") == F.col("e.node")) & inside("e"))
        .select(*[F.col(f"h.{k}") for k in key], F.col("e.ln").alias("at"), F.col("e.label").alias("label")),
        h.join(
            removed,
            (F.col("h.run") == F.col("e.run"))
            & (F.col("h.group") == F.col("e.group_id"))
            & (F.col("h.member") == F.col("e.member_id"))
            & inside("e"),
        ).select(*[F.col(f"h.{k}") for k in key], F.col("e.ln").alias("at"), F.col("e.label").alias("label")),
        h.join(
            generations,
            (F.col("h.run") == F.col("e.run"))
            & (F.col("h.group") == F.col("e.group_id"))
            & ~F.array_contains(F.col("e.members"), F.col("h.member"))
            & inside("e"),
        ).select(*[F.col(f"h.{k}") for k in key], F.col("e.ln").alias("at"), F.lit("coordinator_failover").alias("label")),
        h.join(
            given,
            (F.col("h.run") == F.col("e.run"))
            & (F.col("h.group") == F.col("e.c_group"))
            & (F.col("h.tp") == F.col("e.tp"))
            & (F.col("h.node") != F.col("e.node"))
            & inside("e"),
        )
        .join(F.broadcast(thrown_away).alias("t"), lost_claim, "left")
        .select(*[F.col(f"h.{k}") for k in key], F.col("e.ln").alias("at"), given_label.alias("label")),
    ]
    labels = found[0]
    for more in found[1:]:
        labels = labels.unionByName(more)
    first = labels.groupBy(*key).agg(F.min(F.struct("at", "label")).alias("first"))
    return first.select(*key, F.col("first.at").alias("label_at"), F.col("first.label").alias("label"))


def group_duplicates(events: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(consumed per run, duplicates per run and cause) from events with columns `run` and `ln`."""
    # Checkpoints cut the plan: each stage is read by several later ones, and without them the
    # plan repeats its whole history in every branch (planning time grows past the job's).
    consumers = _consumer_events(events).localCheckpoint()
    processings = _processings(events)
    thrown_away = thrown_away_claims(events).localCheckpoint()
    changes = _changes(consumers, processings, thrown_away)
    stretches = _between(changes).localCheckpoint()
    located = _in_stretch(processings, stretches).localCheckpoint()
    t = _holds(_timeline(changes, located).localCheckpoint()).localCheckpoint()
    labels = _hold_labels(t, events, consumers, thrown_away).localCheckpoint()
    # Every processing of a stretch is in the hold its first one is in.
    holds = t.where(F.col("kind") == PROCESS).select("run", "node", "tp", "since", "hold")
    processed = located.join(F.broadcast(holds), ["run", "node", "tp", "since"]).select(
        "run", F.col("group_id").alias("group"), "tp", "node", "ln", "hold",
        F.col("leader_epoch").alias("epoch"), F.col("first_offset").alias("lo"), F.col("end_offset").alias("hi"),
    )
    consumed = processed.groupBy("run").agg(F.sum(F.col("hi") - F.col("lo")).alias("consumed"))
    part = ["run", "group", "tp"]
    # Only a range that overlaps another of its partition can hold a duplicate; in offset
    # order, one overlaps an earlier range if an earlier one reaches past its start, and a
    # later one if the next starts before its end.
    by_lo = Window.partitionBy(*part).orderBy("lo", "hi", "ln")
    ranges = (
        processed.where(F.col("hi") > F.col("lo"))
        .withColumn("reach", F.max("hi").over(by_lo.rowsBetween(Window.unboundedPreceding, -1)))
        .withColumn("next_lo", F.lead("lo").over(by_lo))
        .where((F.col("reach") > F.col("lo")) | (F.col("next_lo") < F.col("hi")))
        .drop("reach", "next_lo")
        .localCheckpoint()
    )
    # Every boundary of the partition's ranges, numbered: a range covers pieces [i(lo), i(hi)).
    rewound = rewinds(events, consumers, t).localCheckpoint()
    # The pieces are also cut where an expired offset's replay ends.
    bounds = (
        ranges.select(*part, F.col("lo").alias("at"))
        .unionByName(ranges.select(*part, F.col("hi").alias("at")))
        .unionByName(rewound.select(*part, F.col("hi").alias("at")))
        .distinct()
    )
    order = Window.partitionBy(*part).orderBy("at")
    bounds = bounds.withColumn("i", F.row_number().over(order)).withColumn("next", F.lead("at").over(order)).localCheckpoint()
    lo = bounds.select(*part, F.col("at").alias("lo"), F.col("i").alias("i_lo"))
    hi = bounds.select(*part, F.col("at").alias("hi"), F.col("i").alias("i_hi"))
    pieces = (
        ranges.join(F.broadcast(lo), [*part, "lo"])
        .join(F.broadcast(hi), [*part, "hi"])
        .select("run", "group", "tp", "node", "ln", "hold", "epoch", F.explode(F.sequence("i_lo", F.col("i_hi") - 1)).alias("i"))
        .join(F.broadcast(bounds.select(*part, "i", "at", "next")), [*part, "i"])
    )
    by_piece = Window.partitionBy(*part, "i").orderBy("ln")
    again = (
        pieces.withColumn("prev_epoch", F.lag("epoch").over(by_piece))
        .withColumn("prev_node", F.lag("node").over(by_piece))
        .withColumn("prev_hold", F.lag("hold").over(by_piece))
        .where(F.col("prev_epoch") == F.col("epoch"))
    )
    before = labels.select(
        "run", F.col("node").alias("prev_node"), "tp", F.col("hold").alias("prev_hold"),
        F.col("label_at").alias("before_at"), F.col("label").alias("before_label"),
    )
    now = labels.select("run", "node", "tp", "hold", F.col("label_at").alias("now_at"), F.col("label").alias("now_label"))
    replayed = F.col("rw.lo").isNotNull() & (F.col("at") >= F.col("rw.lo")) & (F.col("next") <= F.col("rw.hi"))
    cause = (
        F.when(replayed, F.col("rw.why"))
        .when(F.col("before_at") < F.col("ln"), F.col("before_label"))
        .when(F.col("now_at") < F.col("ln"), F.col("now_label"))
        .otherwise("unexplained")
    )
    duplicates = (
        again.join(F.broadcast(before), ["run", "prev_node", "tp", "prev_hold"], "left")
        .join(F.broadcast(now), ["run", "node", "tp", "hold"], "left")
        .join(F.broadcast(rewound.drop("group")).alias("rw"), ["run", "node", "tp", "hold"], "left")
        .groupBy("run", cause.alias("cause"))
        .agg(F.sum(F.col("next") - F.col("at")).alias("duplicates"))
    )
    return consumed, duplicates


def duplicates_by_run(events: DataFrame, runs: int) -> list[dict[str, Any]]:
    """`consumed`, `duplicates` and `duplicates_by_cause` for runs 0 .. runs-1."""
    consumed, duplicates = group_duplicates(events)
    out: list[dict[str, Any]] = [{"consumed": 0, "duplicates": 0, "duplicates_by_cause": {}} for _ in range(runs)]
    for row in consumed.collect():
        out[row["run"]]["consumed"] = row["consumed"]
    for row in duplicates.collect():
        out[row["run"]]["duplicates_by_cause"][row["cause"]] = row["duplicates"]
    for figures in out:
        figures["duplicates_by_cause"] = dict(sorted(figures["duplicates_by_cause"].items()))
        figures["duplicates"] = sum(figures["duplicates_by_cause"].values())
    return out
