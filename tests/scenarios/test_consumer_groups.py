"""Consumer groups end to end: real brokers, the controller, group coordinators on
`__consumer_offsets` and consumers with their poll loop. Each test states one rule of the
classic protocol and checks it through the event log and the summary's duplicate accounting."""

from __future__ import annotations

from typing import Any

import pytest

from actors.group.placement import partition_for
from actors.group.records import group_record
from actors.group.state import ClassicGroup
from sim.cluster.harness import Cluster
from sim.cluster.scenario import parse_scenario
from tests.harness import seeded_disk

BASE = """
[run]
name = "groups"
seed = {seed}
"duration.ms" = {duration}

[kafka]
version = "{version}"

[network]
"latency.min.ms" = 2
"latency.max.ms" = 4

[cluster]
brokers = 3

[broker]
"min.insync.replicas" = 2
"offsets.topic.num.partitions" = 5

[[topics]]
name = "T"
partitions = 4
"replication.factor" = 3

[[producers]]
topic = "T"
acks = "all"
records = {records}
"interval.ms" = 10
"start.ms" = 0
"""


def scenario(consumers: str, faults: str = "", *, seed: int = 1, duration: int = 40_000, records: int = 3000, version: str = "3.9") -> Any:
    text = BASE.format(seed=seed, duration=duration, records=records, version=version) + consumers + faults
    return parse_scenario(text, "groups.toml")


def run(scn: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    with Cluster(scn) as cluster:
        events: list[dict[str, Any]] = []
        cluster.kernel.observe(events.append)
        cluster.run_to_end()
        checks = cluster.final_checks()
        assert cluster.kernel.invariant_violations == [], cluster.kernel.invariant_violations[:3]
    return events, checks


def where(events: list[dict[str, Any]], name: str, **match: Any) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == name and all(e.get(k) == v for k, v in match.items())]


TWO = """
[[consumers]]
"group.id" = "my-group"
topics = ["T"]
count = 2
"session.timeout.ms" = 10000
"auto.commit.interval.ms" = 1000
"max.poll.records" = 20
"process.record.ms" = 1
"auto.offset.reset" = "earliest"
"""


def test_two_members_share_the_partitions_and_process_every_record_once() -> None:
    """A stable group of two splits T's four partitions by range (two each) and, without
    faults, processes each acknowledged record exactly once."""
    events, checks = run(scenario(TWO, records=1000, duration=30_000))
    final = {}
    for e in where(events, "partitions_assigned"):
        final[e["node"]] = e["assignment"]
    assert sorted(len(v) for v in final.values()) == [2, 2]
    assert sorted(sum(final.values(), [])) == ["T-0", "T-1", "T-2", "T-3"]
    assert checks["duplicates"] == 0
    assert checks["consumed"] == checks["acked"] == 1000
    assert checks["rebalances"] >= 1


def test_a_graceful_close_with_auto_commit_duplicates_nothing() -> None:
    """close() commits the positions synchronously before it leaves: the partitions' next
    owner starts where the closed member stopped."""
    close = '\n[[faults]]\nkind = "close"\nnode = "consumer-1"\n"at.ms" = 12000\n'
    events, checks = run(scenario(TWO, close, records=2000, duration=40_000))
    assert where(events, "consumer_closed", node="consumer-1")
    assert [e["kind"] for e in where(events, "offset_commit_sent", node="consumer-1")][-1] == "close"
    assert checks["duplicates"] == 0
    assert checks["consumed"] == checks["acked"] == 2000


def test_a_crash_duplicates_exactly_what_was_processed_since_the_last_successful_commit() -> None:
    """A consumer process crash: its partitions move once its session expires, and the new
    owner re-processes, per partition, the records from the last successful commit to what the
    crashed member had processed, each labelled crash_before_commit."""
    crash = '\n[[faults]]\nkind = "crash"\nnode = "consumer-1"\n"at.ms" = 12500\n'
    events, checks = run(scenario(TWO, crash, records=3000, duration=45_000))
    crash_ms = 12500
    processed: dict[str, int] = {}
    for e in where(events, "records_processed", node="consumer-1"):
        if e["ts_ms"] < crash_ms:
            tp = f"{e['topic']}-{e['partition']}"
            processed[tp] = max(processed.get(tp, 0), e["end_offset"])
    commits = {e["commit_id"]: e for e in where(events, "offset_commit_sent", node="consumer-1")}
    committed: dict[str, int] = {}
    for answer in where(events, "offset_commit_answered", node="consumer-1", error="NONE"):
        for topic, partition, offset in commits[answer["commit_id"]]["offsets"]:
            committed[f"{topic}-{partition}"] = offset
    expected = sum(end - committed.get(tp, 0) for tp, end in processed.items())
    assert expected > 0
    # Where: per partition, consumer-2 processing again from the last commit to where the
    # crashed consumer had got.
    spans = sorted((s["partition"], s["consumer"], s["first_offset"], s["end_offset"], s["cause"]) for s in checks["duplicate_spans"])
    assert spans == sorted(
        (tp, "consumer-2", committed.get(tp, 0), end, "crash_before_commit") for tp, end in processed.items() if end > committed.get(tp, 0)
    )
    assert checks["duplicates"] == expected
    assert checks["duplicates_by_cause"] == {"crash_before_commit": expected}
    assert checks["consumed"] == checks["acked"] + expected


def test_a_stalled_member_leaves_and_its_late_commit_is_rejected() -> None:
    """A poll later than max.poll.interval.ms: the heartbeat thread sends LeaveGroup, the
    partitions move, and the zombie's next commit is refused; the group's committed offset
    does not move back, and what the zombie had processed since its last commit is processed
    again by the next owner (poll_interval_exceeded)."""
    stalled = TWO.replace('"session.timeout.ms" = 10000', '"session.timeout.ms" = 10000\n"max.poll.interval.ms" = 8000')
    stall = '\n[[faults]]\nkind = "stall"\nnode = "consumer-1"\n"at.ms" = 12000\n"duration.ms" = 15000\n'
    events, checks = run(scenario(stalled, stall, records=3000, duration=45_000))
    assert where(events, "poll_timeout_expired", node="consumer-1", static=False)
    assert where(events, "group_member_removed", reason="leave")
    rejected = [e for e in where(events, "offset_commit_answered", node="consumer-1") if e["error"] not in ("NONE",)]
    assert rejected, "the zombie's commit after the stall is not accepted"
    assert checks["duplicates"] > 0
    assert set(checks["duplicates_by_cause"]) == {"poll_interval_exceeded"}
    _committed_never_moves_back(events)


def _committed_never_moves_back(events: list[dict[str, Any]]) -> None:
    latest: dict[tuple[str, str, int], int] = {}
    for e in where(events, "offset_commit_completed", error="NONE"):
        for topic, partition, offset in e["offsets"]:
            key = (e["group_id"], topic, partition)
            assert offset >= latest.get(key, 0), (key, offset, latest.get(key))
            latest[key] = offset


UNSUBSCRIBE_OR_CLOSE = """
[run]
name = "unsubscribe-or-close"
"duration.ms" = 40000
[network]
"latency.min.ms" = 10
"latency.max.ms" = 10
[cluster]
brokers = 3
[broker]
"min.insync.replicas" = 2
"offsets.topic.num.partitions" = 5
[[topics]]
name = "T"
partitions = 2
"replication.factor" = 3
[[producers]]
topic = "T"
acks = "all"
records = 3000
"interval.ms" = 10
[[consumers]]
"group.id" = "my-group"
topics = ["T"]
count = 2
"partition.assignment.strategy" = ["range"]
"max.poll.records" = 20
"process.record.ms" = 2
"auto.offset.reset" = "earliest"
commit = "{commit}"
[[faults]]
kind = "{call}"
node = "consumer-1"
"at.ms" = 15000
"""


def run_spying_fetches(text: str) -> tuple[list[dict[str, Any]], dict[str, Any], list[tuple[int, str, str]]]:
    """Run a scenario and note every Fetch a consumer sends: (time, consumer, "T-p")."""
    from protocols.codec import decode_frame  # noqa: PLC0415
    from protocols.replication import FetchRequest  # noqa: PLC0415

    fetches: list[tuple[int, str, str]] = []
    with Cluster(parse_scenario(text, "s.toml")) as cluster:
        transmit = cluster.kernel.network.transmit

        def spy(now_ms: int, src: str, dst: str, frame: bytes) -> Any:
            message = decode_frame(frame).message if src.startswith("consumer-") else None
            if isinstance(message, FetchRequest):
                fetches.extend((now_ms, src, f"{p.topic}-{p.partition}") for p in message.partitions)
            return transmit(now_ms, src, dst, frame)

        cluster.kernel.network.transmit = spy  # type: ignore[method-assign]
        events: list[dict[str, Any]] = []
        cluster.kernel.observe(events.append)
        cluster.run_to_end()
        checks = cluster.final_checks()
        assert cluster.kernel.invariant_violations == []
    return events, checks, fetches


@pytest.mark.parametrize(
    ("call", "commit", "committed", "duplicates", "position"),
    [("unsubscribe", "none", 515, 216, 731), ("close", "none", 731, 0, 731), ("unsubscribe", "sync", 719, 0, 719)],
)
def test_unsubscribe_without_a_commit_duplicates_what_close_would_have_committed(
    call: str, commit: str, committed: int, duplicates: int, position: int
) -> None:
    """T has two partitions; two dynamic members with the range assignor (EAGER) and
    auto-commit every 5000 ms share them in a stable generation: consumer 1, the leader, owns
    T-0, consumer 2 owns T-1. Consumer 1 has processed records since its last auto-commit when
    its application calls unsubscribe() or close(), while a batch is in hand (or, with
    commitSync after each batch, while it waits for that commit): the call is made once that is
    done, between two polls.

    unsubscribe() (`ClassicKafkaConsumer.unsubscribe`) commits nothing: onPartitionsRevoked,
    LeaveGroup. close() (`ConsumerCoordinator.close`) first commits the position synchronously.
    Either way the group goes Stable -> PreparingRebalance, consumer 2 learns it by heartbeat,
    rejoins and leads generation N+1 alone with both partitions, the one rebalance; nobody
    fetches T-0 until its OffsetFetch, which answers the last auto-commit after unsubscribe()
    (consumer 2 processes again every record consumer 1 processed since, each labelled
    unsubscribe_without_commit) and consumer 1's position after close(), or after a
    commitSync() made before unsubscribe() (nothing is processed twice)."""
    events, checks, fetches = run_spying_fetches(UNSUBSCRIBE_OR_CLOSE.format(call=call, commit=commit))
    [called] = where(events, "application_called", action=call)
    call_ms = called["ts_ms"]
    member = {e["node"]: e["member_id"] for e in where(events, "partitions_assigned", generation_id=1)}
    c1, c2 = member["consumer-1"], member["consumer-2"]

    # Generation N = 1: consumer 1 leads and owns T-0, consumer 2 owns T-1.
    [first, second] = where(events, "generation_started")
    assert (first["generation_id"], first["leader_member_id"], first["members"]) == (1, c1, sorted([c1, c2]))
    assert {e["node"]: e["assignment"] for e in where(events, "partitions_assigned", generation_id=1)} == {
        "consumer-1": ["T-0"],
        "consumer-2": ["T-1"],
    }

    # The batch in hand at the call is processed before it; then consumer 1 processes no more.
    processed = where(events, "records_processed", node="consumer-1")
    in_hand = [e for e in processed if e["ts_ms"] >= call_ms]
    assert [(e["ts_ms"], e["end_offset"]) for e in in_hand] == ([] if commit == "sync" else [(15004, 731)])
    assert max(e["end_offset"] for e in processed) == position
    [revoked] = where(events, "partitions_revoked", node="consumer-1")
    assert (revoked["partitions"], revoked["reason"], revoked["generation_id"]) == (["T-0"], call, 1)
    assert all(revoked["ts_ms"] >= e["ts_ms"] for e in in_hand)

    # What consumer 1 committed: auto-commits, and close()'s or the application's commitSync.
    sent = {e["commit_id"]: e for e in where(events, "offset_commit_sent", node="consumer-1")}
    answered = [sent[e["commit_id"]] for e in where(events, "offset_commit_answered", node="consumer-1", error="NONE")]
    last_auto = [o for e in answered if e["kind"] == "auto" for _, _, o in e["offsets"]][-1]
    assert last_auto == (515 if commit == "none" else 507)
    kinds_after = [e["kind"] for e in answered if e["ts_ms"] >= call_ms]
    assert kinds_after == {"unsubscribe": [], "close": ["close"]}[call]
    if commit == "sync":
        # The call came while the application waited for its commitSync, which it makes first.
        assert (answered[-1]["kind"], answered[-1]["offsets"]) == ("sync", [["T", 0, position]])

    # Exactly one rebalance: the group goes to PreparingRebalance when consumer 1 leaves, and
    # generation N+1 = 2 has consumer 2 alone, leading, with both partitions.
    [left] = where(events, "group_member_removed", member_id=c1)
    assert left["reason"] == "leave"
    states = [(e["previous_state"], e["state"], e["generation_id"]) for e in where(events, "group_state_changed") if e["ts_ms"] >= call_ms]
    assert states == [("Stable", "PreparingRebalance", 1), ("PreparingRebalance", "CompletingRebalance", 2), ("CompletingRebalance", "Stable", 2)]
    assert (second["generation_id"], second["leader_member_id"], second["members"]) == (2, c2, [c2])
    assert second["ts_ms"] > left["ts_ms"]
    [rejoin] = [e for e in where(events, "partitions_revoked", node="consumer-2") if e["ts_ms"] >= call_ms]
    assert (rejoin["partitions"], rejoin["reason"], rejoin["generation_id"]) == (["T-1"], "rebalance", 1)
    [assigned] = where(events, "partitions_assigned", node="consumer-2", generation_id=2)
    assert assigned["assignment"] == ["T-0", "T-1"]
    assert checks["rebalances"] == 2

    # Consumer 2's OffsetFetch answers the last commit of T-0; nobody fetched T-0 before it.
    [start] = [e for e in where(events, "fetch_position_set", node="consumer-2", generation_id=2) if e["partition"] == 0]
    assert (start["source"], start["offset"]) == ("committed", committed)
    assert committed == (last_auto if (call, commit) == ("unsubscribe", "none") else position)
    # (The poll that returned the batch in hand sent the next fetch at the call's instant.)
    assert [f for f in fetches if f[2] == "T-0" and call_ms < f[0] < start["ts_ms"]] == []

    # Consumer 2 processes again exactly what consumer 1 processed since that commit.
    assert duplicates == position - committed
    assert checks["duplicates"] == duplicates
    assert checks["duplicates_by_cause"] == ({"unsubscribe_without_commit": duplicates} if duplicates else {})
    assert checks["consumed"] == checks["acked"] + duplicates == 3000 + duplicates


@pytest.mark.parametrize(("call", "kinds"), [("unsubscribe", ["revoke"]), ("close", ["close", "revoke"])])
def test_a_listener_that_commits_on_revocation_commits_when_the_application_leaves(call: str, kinds: list[str]) -> None:
    """The same setting with `commit = on_revoke`: the application's `onPartitionsRevoked`
    calls commitSync for the revoked partitions. unsubscribe() and close() both call it
    (`ConsumerCoordinator.onLeavePrepare`, the member still in its generation), and the
    application waits for that commit before LeaveGroup goes; close() commits its positions
    first, as with any auto-commit. So consumer 2 starts T-0 at consumer 1's position, 731:
    nothing is processed twice."""
    events, checks, _ = run_spying_fetches(UNSUBSCRIBE_OR_CLOSE.format(call=call, commit="on_revoke"))
    [called] = where(events, "application_called", action=call)
    sent = {e["commit_id"]: e for e in where(events, "offset_commit_sent", node="consumer-1")}
    after = [(sent[e["commit_id"]], e) for e in where(events, "offset_commit_answered", node="consumer-1") if e["ts_ms"] >= called["ts_ms"]]
    assert [(s["kind"], s["offsets"], a["error"]) for s, a in after] == [(kind, [["T", 0, 731]], "NONE") for kind in kinds]
    [revoked] = where(events, "partitions_revoked", node="consumer-1")
    [left] = where(events, "group_member_removed", reason="leave")
    assert after[-1][1]["ts_ms"] <= revoked["ts_ms"] < left["ts_ms"]
    assert revoked["reason"] == call
    [start] = [e for e in where(events, "fetch_position_set", node="consumer-2", generation_id=2) if e["partition"] == 0]
    assert (start["source"], start["offset"]) == ("committed", 731)
    assert (checks["duplicates"], checks["consumed"], checks["rebalances"]) == (0, 3000, 2)


FAILOVER = """
[run]
name = "coordinator-failover"
"duration.ms" = 30000
[network]
"latency.min.ms" = 2
"latency.max.ms" = 4
[cluster]
brokers = 3
[broker]
"min.insync.replicas" = 2
"offsets.topic.num.partitions" = 5
"zookeeper.session.timeout.ms" = 6000
[[topics]]
name = "T"
partitions = 3
"replication.factor" = 3
[[producers]]
topic = "T"
acks = "all"
records = 2000
"interval.ms" = 10
[[consumers]]
"group.id" = "my-group"
topics = ["T"]
count = 2
"session.timeout.ms" = 10000
"auto.commit.interval.ms" = 1000
"max.poll.records" = 20
"process.record.ms" = 1
"auto.offset.reset" = "earliest"
[[consumers]]
"group.id" = "my-group"
topics = ["T"]
"session.timeout.ms" = 10000
"auto.commit.interval.ms" = 1000
"max.poll.records" = 20
"process.record.ms" = 1
"auto.offset.reset" = "earliest"
"start.ms" = 10000
[[faults]]
kind = "crash"
node = "broker-3"
"at.ms" = 10500
"""


def test_a_coordinator_failover_during_a_rebalance_ends_stable_at_a_higher_generation() -> None:
    """`my-group` hashes to `__consumer_offsets-2` of 5 (`abs(hashCode) % 5`), whose replicas
    are [3, 1, 2]: broker 3 coordinates it. Consumers 1 and 2 form generation 1; consumer 3
    joins at 10 s, which starts a rebalance, and broker 3 crashes at 10.5 s with the group
    PreparingRebalance. When broker 3's ZooKeeper session expires, the controller elects broker
    1 for the partition (leader epoch 1), and broker 1 loads the group from its last group
    record (`GroupMetadataManager.loadGroupsAndOffsets`): generation 1, Stable, consumers 1 and
    2, and every commit broker 3 acknowledged, since each was replicated (acks=-1) before its
    answer. The rebalance under way is lost: consumer 3's member id is unknown to broker 1, so
    it joins again from scratch, and the group ends Stable at generation 2 on broker 1, each
    member starting from the last acknowledged commit of its partition: nothing is processed
    twice and no invariant breaks."""
    assert partition_for("my-group", 5) == 2
    events: list[dict[str, Any]] = []
    with Cluster(parse_scenario(FAILOVER, "failover.toml")) as cluster:
        cluster.kernel.observe(events.append)
        cluster.run(until=lambda: bool(where(events, "group_coordinator_loaded", node="broker-1", partition=2)))
        loaded = cluster.state("broker-1", "group-coordinator")["groups"]["my-group"]
        cluster.run_to_end()
        final = cluster.state("broker-1", "group-coordinator")["groups"]["my-group"]
        checks = cluster.final_checks()
        assert cluster.kernel.invariant_violations == []
    member = {e["node"]: e["member_id"] for e in where(events, "partitions_assigned")}
    c1, c2, c3 = member["consumer-1"], member["consumer-2"], member["consumer-3"]

    # Before the crash: broker 3 coordinates; generation 1 is stored; consumer 3's join starts
    # a rebalance that is still under way at 10500.
    assert {e["coordinator"] for e in where(events, "coordinator_discovered") if e["ts_ms"] < 10_500} == {3}
    [stored] = where(events, "group_assignment_stored", node="broker-3")
    assert (stored["generation_id"], stored["assignments"]) == (1, sorted([[c2, ["T-0", "T-1"]], [c1, ["T-2"]]]))
    states = [(e["ts_ms"], e["state"], e["generation_id"]) for e in where(events, "group_state_changed", node="broker-3")]
    assert states[-2:] == [(6108, "Stable", 1), (10016, "PreparingRebalance", 1)]
    [lost_join] = [e["member_id"] for e in where(events, "group_member_added", node="broker-3", generation_id=1)]
    assert where(events, "node_crashed", target="broker-3")[0]["ts_ms"] == 10_500

    # Every commit acknowledged before the crash, as the consumers were told.
    acknowledged = _acknowledged(events, before_ms=10_500)
    assert acknowledged == {"T-0": 152, "T-1": 558, "T-2": 304}

    # Broker 1 takes over and resumes the last stored generation with those offsets.
    [moved] = where(events, "leader_elected", topic="__consumer_offsets", partition=2, election="offline")
    assert (moved["ts_ms"], moved["leader"], moved["leader_epoch"], moved["isr"]) == (16_030, 1, 1, [1, 2])
    [load] = where(events, "group_coordinator_loaded", node="broker-1", partition=2)
    assert (load["ts_ms"], load["leader_epoch"], load["groups"]) == (16_038, 1, ["my-group"])
    assert (loaded["state"], loaded["generation_id"], sorted(loaded["members"])) == ("Stable", 1, sorted([c1, c2]))
    assert loaded["offsets"] == acknowledged
    assert lost_join != c3 and lost_join not in final["members"]

    # It ends Stable at generation 2 on broker 1, with the three consumers.
    [started] = where(events, "generation_started", node="broker-1")
    assert (started["ts_ms"], started["generation_id"], started["members"]) == (16_783, 2, sorted([c1, c2, c3]))
    assert not [e for e in where(events, "generation_started") if e["generation_id"] > 2]
    assignment = {m: v["assignment"] for m, v in final["members"].items()}
    assert (final["state"], final["generation_id"], assignment) == ("Stable", 2, {c1: ["T-1"], c2: ["T-0"], c3: ["T-2"]})
    assert {e["node"]: e["coordinator"] for e in where(events, "coordinator_discovered")} == dict.fromkeys(["consumer-1", "consumer-2", "consumer-3"], 1)

    # Each new owner starts from the last commit acknowledged before its OffsetFetch: broker 3's
    # for T-2, and for T-0 and T-1 the commits broker 1 acknowledged once it took over.
    started_at = {f"{e['topic']}-{e['partition']}": (e["ts_ms"], e["offset"]) for e in where(events, "fetch_position_set", generation_id=2)}
    assert {tp: offset for tp, (_, offset) in started_at.items()} == {"T-0": 457, "T-1": 750, "T-2": 304}
    for tp, (ts, offset) in started_at.items():
        assert offset == _acknowledged(events, before_ms=ts)[tp]
    assert (checks["consumed"], checks["acked"], checks["duplicates"], checks["rebalances"]) == (2000, 2000, 0, 2)


def _acknowledged(events: list[dict[str, Any]], before_ms: int) -> dict[str, int]:
    """The last offset per partition of the commits the consumers were answered NONE for."""
    sent = {(e["node"], e["commit_id"]): e["offsets"] for e in where(events, "offset_commit_sent")}
    last: dict[str, int] = {}
    for e in where(events, "offset_commit_answered", error="NONE"):
        if e["ts_ms"] < before_ms:
            for topic, partition, offset in sent[(e["node"], e["commit_id"])]:
                last[f"{topic}-{partition}"] = offset
    return last


def test_a_commit_sync_that_fails_while_the_coordinator_moves_is_retried_until_it_lands() -> None:
    """commitSync retries retriable failures until `default.api.timeout.ms`
    (`commitOffsetsSync`), looking the coordinator up when it is unknown. Broker 3, the
    coordinator, crashes while commits are in flight: each attempt fails (DISCONNECTED, or
    COORDINATOR_NOT_AVAILABLE in the client while no coordinator is known) and is sent again
    after `retry.backoff.ms`, until broker 1 loads the group and accepts it; the application
    then goes on, and every record is processed exactly once."""
    sync = FAILOVER.replace('"auto.commit.interval.ms" = 1000', '"enable.auto.commit" = false\ncommit = "sync"')
    sync = sync[: sync.index("[[consumers]]", sync.index("[[consumers]]") + 1)] + sync[sync.index("[[faults]]") :]
    events: list[dict[str, Any]] = []
    with Cluster(parse_scenario(sync, "failover.toml")) as cluster:
        cluster.kernel.observe(events.append)
        cluster.run_to_end()
        checks = cluster.final_checks()
        assert cluster.kernel.invariant_violations == []
    sent = {(e["node"], e["commit_id"]): e for e in where(events, "offset_commit_sent", kind="sync")}
    failed = [e for e in where(events, "offset_commit_answered", kind="sync") if e["error"] != "NONE"]
    assert {e["error"] for e in failed} == {"DISCONNECTED", "COORDINATOR_NOT_AVAILABLE"}
    assert failed, "a commitSync was in flight when the coordinator crashed"
    for node in sorted({e["node"] for e in failed}):
        retried = [e for e in failed if e["node"] == node]
        offsets = sent[(node, retried[0]["commit_id"])]["offsets"]
        assert all(sent[(node, e["commit_id"])]["offsets"] == offsets for e in retried)
        landings = [
            e for e in where(events, "offset_commit_answered", node=node, error="NONE")
            if e["ts_ms"] > retried[-1]["ts_ms"] and sent[(node, e["commit_id"])]["offsets"] == offsets
        ]
        assert landings, f"{node}'s commitSync of {offsets} never lands"
        landed = landings[0]
        accepted = where(events, "offset_commit_completed", node="broker-1", error="NONE", offsets=offsets)
        assert accepted and accepted[0]["ts_ms"] < landed["ts_ms"]
        assert landed["ts_ms"] - sent[(node, retried[0]["commit_id"])]["ts_ms"] < 60_000
        assert [e for e in where(events, "records_processed", node=node) if e["ts_ms"] > landed["ts_ms"]]
    assert (checks["consumed"], checks["acked"], checks["duplicates"]) == (2000, 2000, 0)


COOPERATIVE = """
[[consumers]]
"group.id" = "my-group"
topics = ["T"]
count = 2
"session.timeout.ms" = 10000
"partition.assignment.strategy" = ["cooperative-sticky"]
"max.poll.records" = 20
"process.record.ms" = 5
"auto.offset.reset" = "earliest"
{commits}
[[consumers]]
"group.id" = "my-group"
topics = ["T"]
"session.timeout.ms" = 10000
"partition.assignment.strategy" = ["cooperative-sticky"]
"max.poll.records" = 20
"process.record.ms" = 5
"auto.offset.reset" = "earliest"
"start.ms" = 12000
{commits}
"""


@pytest.mark.parametrize(
    ("commits", "causes"),
    [
        ('"enable.auto.commit" = false\ncommit = "on_revoke"', set()),
        ('"enable.auto.commit" = true', {"cooperative_revocation_gap"}),
    ],
)
def test_a_cooperative_revocation_is_committed_only_by_the_listener(commits: str, causes: set[str]) -> None:
    """KIP-429: a third member joins a group of two that share T's four partitions, and the
    cooperative-sticky assignor moves one of consumer 2's partitions to it in two rebalances,
    revoking it with no auto-commit. Consumer 1's slow processing holds the first rebalance
    open for 2 s, while consumer 2 keeps processing the partition it is about to lose. A
    listener that commits in `onPartitionsRevoked` hands it over at consumer 2's position, so
    nothing is processed twice; with auto-commit alone, what consumer 2 processed after its
    commit before the rebalance is processed again by the new owner
    (`cooperative_revocation_gap`)."""
    stall = '\n[[faults]]\nkind = "stall"\nnode = "consumer-1"\n"at.ms" = 11900\n"duration.ms" = 2000\n'
    events, checks = run(scenario(COOPERATIVE.format(commits=commits), stall, records=3000, duration=40_000))
    [revoked] = where(events, "partitions_revoked", reason="cooperative")
    [moved] = revoked["partitions"]
    [(taken_by, start)] = [
        (e["node"], e["offset"])
        for e in where(events, "fetch_position_set", node="consumer-3")
        if f"{e['topic']}-{e['partition']}" == moved
    ]
    assert taken_by == "consumer-3"
    if not causes:
        sent = {e["commit_id"]: e for e in where(events, "offset_commit_sent", node=revoked["node"], kind="revoke")}
        [answer] = [e for e in where(events, "offset_commit_answered", node=revoked["node"], kind="revoke") if e["commit_id"] in sent]
        [(topic, partition, offset)] = sent[answer["commit_id"]]["offsets"]
        assert (f"{topic}-{partition}", answer["error"], answer["ts_ms"]) == (moved, "NONE", revoked["ts_ms"])
        processed = max(e["end_offset"] for e in where(events, "records_processed", node=revoked["node"]) if f"{e['topic']}-{e['partition']}" == moved)
        assert start == offset == processed
    else:
        commits = [e for e in where(events, "offset_commit_sent", node=revoked["node"], kind="join_prepare") if e["ts_ms"] < revoked["ts_ms"]]
        committed = {f"{t}-{p}": o for t, p, o in commits[-1]["offsets"]}[moved]
        processed = max(e["end_offset"] for e in where(events, "records_processed", node=revoked["node"]) if f"{e['topic']}-{e['partition']}" == moved)
        assert start == committed < processed
        assert checks["duplicates"] == processed - committed
    assert set(checks["duplicates_by_cause"]) == causes
    assert checks["consumed"] == checks["acked"] + checks["duplicates"] == 3000 + checks["duplicates"]


CONTROLLED_FAILOVER = """
[run]
name = "coordinator-shutdown"
"duration.ms" = 30000
[network]
"latency.min.ms" = 10
"latency.max.ms" = 10
[cluster]
brokers = 3
[broker]
"min.insync.replicas" = 2
[[topics]]
name = "T"
partitions = 3
"replication.factor" = 3
[[producers]]
topic = "T"
acks = "all"
records = 2500
"interval.ms" = 10
[[consumers]]
"group.id" = "my-group"
topics = ["T"]
"auto.offset.reset" = "earliest"
"process.record.ms" = 1
[[consumers]]
"group.id" = "my-group"
topics = ["T"]
"auto.offset.reset" = "earliest"
"process.record.ms" = 1
"heartbeat.interval.ms" = 3300
[[consumers]]
"group.id" = "my-group"
topics = ["T"]
"auto.offset.reset" = "earliest"
"process.record.ms" = 1
"start.ms" = 12000
[[faults]]
kind = "shutdown"
node = "broker-1"
"at.ms" = 13000
"exit.after.ms" = 3000
"""


def test_a_coordinator_moved_by_a_controlled_shutdown_loses_the_rebalance_under_way() -> None:
    """Kafka 3.9 defaults; every message takes 10 ms. `my-group` maps to
    `__consumer_offsets-12` of 50, replicas [1, 2, 3]: broker 1 coordinates. The partition holds
    the group's last record, Empty at generation 6, so C1 and C2 form generation 7 (C1 the
    leader). C3 joins at 12000 (MEMBER_ID_REQUIRED, then added: the group is
    PreparingRebalance); C1 learns it by heartbeat at 12300, auto-commits in `onJoinPrepare`
    (acknowledged after its acks=-1 append), revokes and rejoins: its JoinGroup is parked, C2's
    next heartbeat (every 3.3 s) not being due before 13190.

    At 13000 broker 1's operator stops it. The controller moves partition 12 to broker 2 by the
    controlled-shutdown rule (leader epoch 1): broker 1 unloads the group and answers the
    parked JoinGroups of C1 and C3 NOT_COORDINATOR; broker 2 loads the last stored group record,
    generation 7 Stable with C1 and C2. The rebalance under way is lost: C3's member id is
    unknown there (UNKNOWN_MEMBER_ID), so it joins from scratch with a new id; C1's JoinGroup
    starts a rebalance on broker 2 without a second commit or revocation. Broker 1 keeps
    answering until it exits at 16030, so C2's heartbeat at 13190 gets NOT_COORDINATOR from it
    and is retried `retry.backoff.ms` later, jittered by KIP-580, on broker 2
    (REBALANCE_IN_PROGRESS): C2 commits in
    its `onJoinPrepare` there and rejoins. Generation 8 forms on broker 2 with the three
    members; no generation number is issued twice, every acknowledged commit is there, and
    nothing is processed twice."""
    assert partition_for("my-group", 50) == 12
    history = group_record(ClassicGroup("my-group", generation_id=6, protocol_type="consumer", state_timestamp_ms=0), {})
    disks = {f"broker-{b}": seeded_disk([(history, 0)], high_watermark=1, tp="__consumer_offsets-12") for b in (1, 2, 3)}
    events: list[dict[str, Any]] = []
    with Cluster(parse_scenario(CONTROLLED_FAILOVER, "controlled-failover.toml"), disks=disks) as cluster:
        cluster.kernel.observe(events.append)
        cluster.run_to_end()
        checks = cluster.final_checks()
        assert cluster.kernel.invariant_violations == []
    c1, c2 = (e["member_id"] for e in sorted(where(events, "partitions_assigned", generation_id=7), key=lambda e: e["node"]))
    # C3's two member ids: KIP-394's first answer on broker 1, and again on broker 2.
    required = where(events, "join_group_failed", node="consumer-3", error="MEMBER_ID_REQUIRED")
    (c3a_at, c3a), (_, c3b) = [(e["ts_ms"], e["assigned_member_id"]) for e in required]
    assert c3a_at == 12040

    # Broker 1, before the shutdown: generation 7 stored; C3's arrival starts a rebalance.
    assert {e["coordinator"] for e in where(events, "coordinator_discovered") if e["ts_ms"] < 13000} == {1}
    [stored] = where(events, "group_assignment_stored", node="broker-1")
    assert (stored["ts_ms"], stored["generation_id"], stored["assignments"]) == (3330, 7, [[c2, ["T-0", "T-1"]], [c1, ["T-2"]]])
    [added] = where(events, "group_member_added", node="broker-1", member_id=c3a)
    assert added["ts_ms"] == 12050
    states = [(e["ts_ms"], e["state"], e["generation_id"]) for e in where(events, "group_state_changed", node="broker-1")]
    assert states[-2:] == [(12050, "PreparingRebalance", 7), (13050, "Dead", 7)]
    [prepare] = where(events, "offset_commit_sent", node="consumer-1", kind="join_prepare")
    assert (prepare["ts_ms"], prepare["offsets"]) == (12300, [["T", 2, 304]])
    assert [e["ts_ms"] for e in where(events, "offset_commit_answered", node="consumer-1", commit_id=prepare["commit_id"], error="NONE")] == [12360]
    assert [e["ts_ms"] for e in where(events, "partitions_revoked", node="consumer-1")] == [12360]

    # The controlled shutdown moves the group's partition; broker 2 resumes generation 7.
    [moved] = where(events, "leader_elected", topic="__consumer_offsets", partition=12)[-1:]
    assert (moved["ts_ms"], moved["election"], moved["leader"], moved["leader_epoch"], moved["isr"]) == (13030, "controlled_shutdown", 2, 1, [2, 3])
    loaded = [(e["ts_ms"], e["member_id"], e["generation_id"]) for e in where(events, "group_member_added", node="broker-2")]
    assert loaded[:2] == [(13050, c2, 7), (13050, c1, 7)]
    assert [(e["ts_ms"], e["state"], e["generation_id"]) for e in where(events, "group_state_changed", node="broker-2")][:2] == [
        (13050, "Stable", 7),
        (13090, "PreparingRebalance", 7),
    ]

    # The answers the rule gives: NOT_COORDINATOR for the parked joins and for C2's heartbeat at
    # broker 1; UNKNOWN_MEMBER_ID for C3's old id at broker 2, which then joins with a new one.
    failed = [(e["ts_ms"], e["node"], e["member_id"], e["error"]) for e in where(events, "join_group_failed") if e["ts_ms"] >= 13000]
    assert failed == [
        (13060, "consumer-1", c1, "NOT_COORDINATOR"),
        (13060, "consumer-3", c3a, "NOT_COORDINATOR"),
        (13100, "consumer-3", c3a, "UNKNOWN_MEMBER_ID"),
        (13120, "consumer-3", "", "MEMBER_ID_REQUIRED"),
    ]
    assert c3b not in (c3a, "")
    [lost] = where(events, "coordinator_lost", node="consumer-2")
    assert (lost["ts_ms"], lost["coordinator"], lost["reason"], lost["request"]) == (13200, 1, "NOT_COORDINATOR", "Heartbeat")
    [c2_prepare] = where(events, "offset_commit_sent", node="consumer-2", kind="join_prepare")
    # The heartbeat retried 87 ms later (KIP-580: `retry.backoff.ms` with a jitter from 0.8 to
    # 1.2), at 13287 on broker 2: REBALANCE_IN_PROGRESS.
    assert c2_prepare["ts_ms"] == 13307
    assert [e["ts_ms"] for e in where(events, "node_stopped", target="broker-1")] == [16030]
    # C1 rejoins broker 2 without a second onJoinPrepare: no commit, no revocation.
    assert len(where(events, "offset_commit_sent", node="consumer-1", kind="join_prepare")) == 1

    # Generation 8 on broker 2, by range over the sorted member ids; no number issued twice.
    assert [(e["ts_ms"], e["node"], e["generation_id"]) for e in where(events, "generation_started")] == [
        (3270, "broker-1", 7),
        (13380, "broker-2", 8),
    ]
    members = sorted([c1, c2, c3b])
    [stored2] = where(events, "group_assignment_stored", node="broker-2")
    assert (stored2["ts_ms"], stored2["generation_id"]) == (13440, 8)
    assert stored2["assignments"] == [[m, [f"T-{i}"]] for i, m in enumerate(members)]

    # Every new owner starts at the last acknowledged commit of its partition.
    started = {f"{e['topic']}-{e['partition']}": (e["ts_ms"], e["offset"]) for e in where(events, "fetch_position_set", generation_id=8)}
    assert {tp: offset for tp, (_, offset) in started.items()} == {"T-0": 456, "T-1": 539, "T-2": 304}
    for tp, (ts, offset) in started.items():
        assert offset == _acknowledged(events, before_ms=ts)[tp]
    assert (checks["consumed"], checks["acked"], checks["duplicates"], checks["rebalances"]) == (2500, 2500, 0, 2)


ONE_BROKER = """
[network]
"latency.min.ms" = 1
"latency.max.ms" = 5

[cluster]
brokers = 1

[broker]
"offsets.topic.num.partitions" = 1
"group.initial.rebalance.delay.ms" = 100
"""
"""One broker, one `__consumer_offsets` partition, a short initial rebalance delay; the
[broker] section stays open for more keys."""


EXPIRY = """
[run]
name = "expiry"
seed = 1
"duration.ms" = 100000
""" + ONE_BROKER + """"offsets.retention.minutes" = 1
"offsets.retention.check.interval.ms" = 5000

[[topics]]
name = "T"
partitions = 1

[[producers]]
topic = "T"
records = {records}
"interval.ms" = 10

[[consumers]]
"group.id" = "g"
topics = ["T"]
"auto.offset.reset" = "earliest"
"session.timeout.ms" = 6000

[[consumers]]
"group.id" = "g"
topics = ["T"]
"auto.offset.reset" = "earliest"
"start.ms" = 85000

[[faults]]
kind = "{fault}"
node = "consumer-1"
"at.ms" = {at}
"""
EXPIRED_CLOSE = {"records": 200, "fault": "close", "at": 10_000}
"""consumer-1 processes all 200 records, commits them and closes at 10 s."""
EXPIRED_CRASH = {"records": 1000, "fault": "crash", "at": 8000}
"""consumer-1 crashes at 8 s with records processed past its last auto-commit."""


@pytest.mark.parametrize("story", [EXPIRED_CLOSE, EXPIRED_CRASH], ids=["close", "crash"])
def test_a_group_whose_offsets_expired_is_created_again_and_replays_from_the_log_start(story: dict[str, Any]) -> None:
    """The group is Empty from the close, or from the crashed member's session expiry, so its
    offsets expire a minute later, at the first retention sweep after (75 s), and the group
    goes Dead (KIP-211). A member that joins at 85 s creates it again: generation 1 once more,
    a new owner of T-0 in it (no owner of the dead group's generation 1 stands against it), and
    no committed offset, so `auto.offset.reset=earliest` starts at 0. It processes again the
    offsets below the expired commit `c` because of the expiry (`offsets_expired_reset`), and
    those from `c` to where consumer-1 stopped because of what stopped it."""
    events, checks = run(parse_scenario(EXPIRY.format(**story), "expiry.toml"))
    [expired] = where(events, "offsets_expired", group_id="g")
    assert (expired["ts_ms"], expired["partitions"]) == (75_000, ["T-0"])
    [dead] = where(events, "group_state_changed", group_id="g", state="Dead")
    assert (dead["ts_ms"], dead["previous_state"]) == (75_000, "Empty")
    generations = [(e["generation_id"], e["members"]) for e in where(events, "generation_started", group_id="g")]
    assert [g for g, members in generations if members] == [1, 1]
    [again] = where(events, "fetch_position_set", node="consumer-2")
    assert (again["generation_id"], again["offset"], again["source"]) == (1, 0, "earliest")
    c = [e for e in where(events, "offset_commit_completed", error="NONE") if e["ts_ms"] < 75_000][-1]["offsets"][0][2]
    h = max(e["end_offset"] for e in where(events, "records_processed", node="consumer-1"))
    assert checks["consumed"] == story["records"] + h
    if story["fault"] == "close":
        assert c == h == 200
        assert checks["duplicates_by_cause"] == {"offsets_expired_reset": 200}
    else:
        assert 0 < c < h
        assert checks["duplicates_by_cause"] == {"offsets_expired_reset": c, "crash_before_commit": h - c}


def test_a_group_created_again_with_latest_skips_what_nobody_read_past_the_expired_commit() -> None:
    """The crash story, with the member that creates the group again at 85 s on `latest`: it
    starts at the log end (1000). consumer-1 had processed up to `h` past its last commit `c`
    before it crashed; the records from `h` to the end nobody in the group ever processes. The
    expired commit was the group's last position, so they are skipped because of the expiry."""
    text = EXPIRY.format(**EXPIRED_CRASH).replace(
        '"auto.offset.reset" = "earliest"\n"start.ms" = 85000', '"auto.offset.reset" = "latest"\n"start.ms" = 85000'
    )
    events, checks = run(parse_scenario(text, "expiry.toml"))
    [again] = where(events, "fetch_position_set", node="consumer-2")
    assert (again["offset"], again["source"], again["reason"]) == (1000, "latest", "no_committed_offset")
    h = max(e["end_offset"] for e in where(events, "records_processed", node="consumer-1"))
    assert checks["consumed"] == h
    assert checks["skipped"] == 1000 - h > 0
    assert checks["skipped_by_cause"] == {"offsets_expired_reset": 1000 - h}
    [span] = checks["skip_spans"]
    assert (span["consumer"], span["first_offset"], span["end_offset"], span["from_ms"]) == ("consumer-2", h, 1000, again["ts_ms"])
    assert checks["duplicates"] == 0


def test_a_group_starting_late_on_latest_skips_what_was_written_before_its_positions() -> None:
    """Two members start 5 s after the producer, with no committed offsets and `latest`: each
    partition starts at its log end then, and everything below it is skipped, nothing else."""
    late = '\n[[consumers]]\n"group.id" = "g"\ntopics = ["T"]\ncount = 2\n"auto.offset.reset" = "latest"\n"start.ms" = 5000\n'
    events, checks = run(scenario(late, records=2000, duration=40_000))
    starts = {f"{e['topic']}-{e['partition']}": (e["offset"], e["node"], e["ts_ms"]) for e in where(events, "fetch_position_set")}
    assert len(starts) == 4 and all(e["reason"] == "no_committed_offset" for e in where(events, "fetch_position_set"))
    skipped = sum(offset for offset, _, _ in starts.values())
    assert checks["skipped_by_cause"] == {"reset_latest_no_commit": skipped}
    assert checks["consumed"] + skipped == checks["acked"] == 2000
    spans = {s["partition"]: (s["end_offset"], s["consumer"], s["from_ms"]) for s in checks["skip_spans"] if s["first_offset"] == 0}
    assert spans == starts


FENCED = """
[run]
name = "fenced"
seed = 1
"duration.ms" = 20000
""" + ONE_BROKER + """
[[topics]]
name = "T"
partitions = 2

[[producers]]
topic = "T"
records = 2000
"interval.ms" = 10

"""
SAME_INSTANCE = """
[[consumers]]
"group.id" = "g"
topics = ["T"]
"group.instance.id" = "s"
"auto.offset.reset" = "earliest"
"auto.commit.interval.ms" = 1000
"enable.auto.commit" = {auto}
commit = "{commit}"
"start.ms" = {start}
"""


@pytest.mark.parametrize(("auto", "commit"), [("true", "none"), ("false", "sync"), ("false", "async")])
def test_a_second_process_with_the_same_instance_id_fences_the_first(auto: str, commit: str) -> None:
    """consumer-2 joins with consumer-1's `group.instance.id`: the coordinator replaces the old
    member id (KIP-345) without a rebalance, and consumer-1's next commit is answered
    FENCED_INSTANCE_ID in its own generation. That is fatal: commitSync throws it at once, an
    auto-commit's or commitAsync's failure is thrown by the next `poll()`. Whatever consumer-1
    processed that consumer-2 processes again is labelled as fenced."""
    text = FENCED + "".join(SAME_INSTANCE.format(auto=auto, commit=commit, start=start) for start in (0, 10_000))
    events, checks = run(parse_scenario(text, "fenced.toml"))
    [replaced] = where(events, "group_member_removed", reason="replaced")
    fenced = where(events, "offset_commit_answered", node="consumer-1", error="FENCED_INSTANCE_ID")
    assert fenced and fenced[0]["ts_ms"] > replaced["ts_ms"] and fenced[0]["member_id"] == replaced["member_id"]
    assert fenced[0]["kind"] == {"none": "auto"}.get(commit, commit)
    [failed] = where(events, "consumer_failed", node="consumer-1")
    assert failed["error"] == "OffsetCommit: FENCED_INSTANCE_ID"
    if commit == "sync":
        assert failed["ts_ms"] == fenced[0]["ts_ms"]
    assert failed["ts_ms"] >= fenced[0]["ts_ms"]
    assert not [e for e in where(events, "records_processed", node="consumer-1") if e["ts_ms"] > failed["ts_ms"]]
    assert checks["duplicates"] > 0
    assert checks["duplicates_by_cause"] == {"commit_failed_or_fenced": checks["duplicates"]}


JOINER = """
[run]
name = "joiner"
seed = 1
"duration.ms" = 40000

[kafka]
version = "{version}"

[network]
"latency.min.ms" = 20
"latency.max.ms" = 60

[cluster]
brokers = 1

[broker]
"offsets.topic.num.partitions" = 1
"group.initial.rebalance.delay.ms" = 100

[[topics]]
name = "T"
partitions = 4

[[producers]]
topic = "T"
records = 20000
"interval.ms" = 10
"records.per.interval" = 8
partitioner = "round_robin"

[[consumers]]
"group.id" = "g"
topics = ["T"]
count = 2
"auto.offset.reset" = "earliest"
"max.poll.records" = 20
"process.record.ms" = 1

[[consumers]]
"group.id" = "g"
topics = ["T"]
"auto.offset.reset" = "earliest"
"start.ms" = 20000
"""


@pytest.mark.parametrize(("version", "bug"), [("3.1", None), ("3.2.1", "kafka_14196"), ("3.2.2", "kafka_14196"), ("3.2.3", None)])
def test_records_returned_while_the_pre_rebalance_commit_is_awaited(version: str, bug: str | None) -> None:
    """A third member joins a busy eager group with auto-commit, so both members revoke
    everything. Up to 3.1 the pre-rebalance commit blocks the poll; from 3.2.3 the partitions
    are pending revocation while it is awaited: nothing is duplicated. In 3.2.1 and 3.2.2 the
    polls go on returning their records while it is awaited (KAFKA-14196): the next owners
    process again exactly the records returned after the commit's snapshot, labelled with the
    bug."""
    events, checks = run(parse_scenario(JOINER.format(version=version), "joiner.toml"))
    after_snapshot = 0
    for at, commit in enumerate(events):
        if commit["event"] != "offset_commit_sent" or commit["kind"] != "join_prepare":
            continue
        node = commit["node"]
        until, revoked = next((i, e) for i, e in enumerate(events) if i > at and e["event"] == "partitions_revoked" and e["node"] == node)
        assert revoked["reason"] == "rebalance"
        after_snapshot += sum(
            e["end_offset"] - e["first_offset"]
            for e in events[at:until]
            if e["event"] == "records_processed" and e["node"] == node and f"{e['topic']}-{e['partition']}" in revoked["partitions"]
        )
    if bug is None:
        assert (checks["duplicates"], after_snapshot) == (0, 0)
    else:
        assert checks["duplicates"] == after_snapshot > 0
        assert checks["duplicates_by_cause"] == {bug: after_snapshot}


TRUNCATED = """
[run]
name = "truncated"
"duration.ms" = 40000

[kafka]
version = "{version}"

[cluster]
brokers = 3

[broker]
"replica.lag.time.max.ms" = 2000
"zookeeper.session.timeout.ms" = 6000
"unclean.leader.election.enable" = true

[[topics]]
name = "T"
partitions = 1
"replication.factor" = 2
replicas = [[1, 2]]

[[producers]]
topic = "T"
records = 300
"interval.ms" = 100
acks = "1"

[[consumers]]
"group.id" = "g"
topics = ["T"]
"auto.offset.reset" = "earliest"

[[consumers]]
"group.id" = "g"
topics = ["T"]
"auto.offset.reset" = "{reset}"
"start.ms" = 4800

[[faults]]
kind = "close"
node = "consumer-1"
"at.ms" = 4500

[[faults]]
kind = "pause"
node = "broker-2"
"at.ms" = 5000
"duration.ms" = 8000

[[faults]]
kind = "crash"
node = "broker-1"
"at.ms" = 12000
"""
"""consumer-1 reads from the start and commits on close; consumer-2 goes on from its commit.
Broker 2 falls out of the ISR while paused, broker 1 crashes, and broker 2 is elected
uncleanly: its log ends below consumer-2's position and the group's committed offset."""


@pytest.mark.parametrize("version", ["2.2", "2.3", "3.9"])
def test_a_consumer_after_an_unclean_election_finds_the_divergence_from_2_3(version: str) -> None:
    """From 2.3 (KIP-320's consumer side, KAFKA-7747) a new leader epoch sends the position to
    validation: OffsetsForLeaderEpoch says where the position's epoch ends on the new leader,
    and the consumer seeks there and re-reads nothing unchanged. Before, its fetch past the new
    log's end is OFFSET_OUT_OF_RANGE and `earliest` replays the log from 0: every record below
    the new leader's end is processed again, labelled by the reset that rewound the position
    below the group's commit."""
    events, checks = run(parse_scenario(TRUNCATED.format(version=version, reset="earliest"), "truncated.toml"))
    [elected] = [e for e in where(events, "became_leader", topic="T") if e["node"] == "broker-2"]
    end = elected["log_end_offset"]
    positions = [(e["offset"], e["source"]) for e in where(events, "fetch_position_set", node="consumer-2")]
    if version == "2.2":
        assert positions[-1] == (0, "earliest")
        assert checks["duplicates_by_cause"] == {"log_truncation_or_reset": end}
    else:
        assert positions[-1] == (end, "truncation")
        assert checks["duplicates"] == 0
    assert checks["consumed"] == 300 + checks["duplicates"]


def test_a_truncated_position_without_a_reset_policy_throws_log_truncation() -> None:
    """With `auto.offset.reset=none` the truncation found by validation is thrown to the
    application (LogTruncationException), which stops."""
    events, _ = run(parse_scenario(TRUNCATED.format(version="3.9", reset="none"), "truncated.toml"))
    [failed] = where(events, "consumer_failed", node="consumer-2")
    assert failed["error"] == "LogTruncationException: T-0"
    assert not where(events, "fetch_position_set", node="consumer-2", source="truncation")


def _joiner_with_lost_answer(version: str, drop_at: int, *, max_poll_interval_ms: int = 300_000) -> Any:
    """JOINER for 80 s, with every message from the broker to consumer-1 lost for 200 ms from
    `drop_at`: the answer to its pre-rebalance commit, sent just before, among them."""
    text = JOINER.format(version=version).replace('"duration.ms" = 40000', '"duration.ms" = 80000')
    text = text.replace('"process.record.ms" = 1\n', f'"process.record.ms" = 1\n"max.poll.interval.ms" = {max_poll_interval_ms}\n')
    text += f'[[faults]]\nkind = "drop"\nprobability = 1.0\nsrc = ["broker-1"]\ndst = ["consumer-1"]\n"at.ms" = {drop_at}\n"duration.ms" = 200\n'
    return parse_scenario(text, "joiner.toml")


def test_before_3_2_the_pre_rebalance_commit_is_retried_while_the_poll_blocks() -> None:
    """Up to 3.1 `onJoinPrepare` commits synchronously (`maybeAutoCommitOffsetsSync`, bounded by
    the rebalance timeout): when its answer is lost the request times out (30 s), and the commit
    is sent again, the same offsets, while the poll stays blocked. Nothing is processed
    meanwhile, so the revocation that follows gives nothing to be processed again."""
    events, checks = run(_joiner_with_lost_answer("3.1", 22_597))
    prepares = where(events, "offset_commit_sent", node="consumer-1", kind="join_prepare")
    assert len(prepares) >= 2 and all(p["offsets"] == prepares[0]["offsets"] for p in prepares)
    [timed_out] = [e for e in where(events, "offset_commit_answered", node="consumer-1", kind="join_prepare") if e["error"] != "NONE"][:1]
    assert timed_out["ts_ms"] == prepares[0]["ts_ms"] + 30_000
    [revoked] = [e for e in where(events, "partitions_revoked", node="consumer-1") if e["ts_ms"] > prepares[0]["ts_ms"]][:1]
    assert revoked["ts_ms"] > prepares[-1]["ts_ms"]
    assert not [e for e in where(events, "records_processed", node="consumer-1") if prepares[0]["ts_ms"] < e["ts_ms"] < revoked["ts_ms"]]
    assert checks["duplicates"] == 0


def test_from_3_2_1_the_wait_for_the_pre_rebalance_commit_ends_at_the_rebalance_timeout() -> None:
    """From 3.2.1 the pre-rebalance commit is asynchronous and awaited, bounded by one
    `joinPrepareTimer` per rebalance (the rebalance timeout, `max.poll.interval.ms`): with its
    answer lost, the member revokes and rejoins once that timer expires (at its next poll), not
    when the request times out 30 s after it was sent."""
    events, _ = run(_joiner_with_lost_answer("3.9", 22_501, max_poll_interval_ms=10_000))
    [prepare] = where(events, "offset_commit_sent", node="consumer-1", kind="join_prepare")[:1]
    [revoked] = [e for e in where(events, "partitions_revoked", node="consumer-1") if e["ts_ms"] > prepare["ts_ms"]][:1]
    assert 10_000 <= revoked["ts_ms"] - prepare["ts_ms"] < 10_000 + 100  # the poll comes back within poll timeout
    [answered] = [e for e in where(events, "offset_commit_answered", node="consumer-1") if e["commit_id"] == prepare["commit_id"]]
    assert answered["ts_ms"] == prepare["ts_ms"] + 30_000 > revoked["ts_ms"]


POLL_TIMEOUT_UNSEEN = """
[run]
name = "poll-timeout-unseen"
"duration.ms" = 170000

[network]
"latency.min.ms" = 1
"latency.max.ms" = 5

[cluster]
brokers = 2

[broker]
"offsets.topic.num.partitions" = 1
"group.initial.rebalance.delay.ms" = 100

[[topics]]
name = "T"
partitions = 2
"replication.factor" = 2

[[producers]]
topic = "T"
records = 3000
"interval.ms" = 100
"records.per.interval" = 2
partitioner = "round_robin"

[[consumers]]
"group.id" = "g"
topics = ["T"]
count = 2
"max.poll.interval.ms" = 60000
"auto.offset.reset" = "earliest"

[[faults]]
kind = "stall"
node = "consumer-1"
"at.ms" = 10000
"duration.ms" = 140000

[[faults]]
kind = "partition"
between = [["broker-1"], ["consumer-1"]]
"one.way" = true
"at.ms" = 12000
"duration.ms" = 68000
"""


def test_a_poll_timeout_that_passed_while_the_coordinator_was_unknown_counts_once_it_is_found() -> None:
    """consumer-1 stalls from 10 s and stops hearing from broker 1, its coordinator, from 12 s:
    it loses the coordinator when its requests time out, and its poll deadline (about 70 s)
    passes while none is known, when the heartbeat thread does not check it. Its lookup goes to
    broker 1 too and times out 30 s later; the next, through broker 2 at 72.4 s, finds broker 1
    again (the cut, one way, lasts until 80 s), and the thread's next check finds the deadline
    long past: the member leaves (`maybeLeaveGroup`)."""
    events, _ = run(parse_scenario(POLL_TIMEOUT_UNSEEN, "poll-timeout-unseen.toml"))
    [lost] = where(events, "coordinator_lost", node="consumer-1")
    found = [e for e in where(events, "coordinator_discovered", node="consumer-1") if e["ts_ms"] > lost["ts_ms"]]
    [expired] = where(events, "poll_timeout_expired", node="consumer-1")
    assert lost["ts_ms"] < 70_000 < found[0]["ts_ms"] == expired["ts_ms"] == 72_393
    assert expired["static"] is False


EMPTY_GROUP_ID = """
[[consumers]]
"group.id" = ""
topics = ["T"]
"""


def test_a_consumer_with_the_empty_group_id_is_refused_its_join_and_stops() -> None:
    """The coordinator answers a JoinGroup for group "" INVALID_GROUP_ID (`isValidGroupId`),
    which the consumer throws from `poll()` (`InvalidGroupIdException`): it stops, having
    joined nothing and processed nothing."""
    events, checks = run(scenario(EMPTY_GROUP_ID, duration=10_000, records=100))
    [refused] = where(events, "join_group_failed", node="consumer-1")
    assert (refused["ts_ms"], refused["group_id"], refused["error"]) == (84, "", "INVALID_GROUP_ID")
    [failed] = where(events, "consumer_failed", node="consumer-1")
    assert (failed["ts_ms"], failed["error"]) == (84, "JoinGroup: INVALID_GROUP_ID")
    assert where(events, "group_state_changed") == []
    assert (checks["consumed"], checks["rebalances"]) == (0, 0)


def test_the_client_id_is_the_member_ids_prefix_and_orders_the_members() -> None:
    """KIP-394: the coordinator names a new member `<client.id>-<uuid>` from its request's
    client id, so `client.id` decides the order in which the range assignor deals T's four
    partitions: `a` first (T-0 and T-1), then `b`, then the one left unset, which keeps Java's
    `consumer-<group>-1`, whatever the uuids."""
    named = TWO.replace("count = 2\n", "").replace('topics = ["T"]\n', 'topics = ["T"]\n"client.id" = "{name}"\n')
    events, _ = run(scenario(named.format(name="b") + named.format(name="a") + TWO.replace("count = 2", "count = 1"), duration=12_000))
    [*_, last] = where(events, "group_assignment_stored")
    owners = {member.split("-")[0]: parts for member, parts in last["assignments"]}
    assert owners == {"a": ["T-0", "T-1"], "b": ["T-2"], "consumer": ["T-3"]}
    started = {e["node"]: e["client_id"] for e in where(events, "consumer_started")}
    assert started == {"consumer-1": "b", "consumer-2": "a", "consumer-3": "consumer-my-group-1"}
