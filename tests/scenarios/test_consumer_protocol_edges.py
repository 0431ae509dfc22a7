"""KIP-848's consumer protocol end to end at its edges: commits fenced by the member epoch, the
rebalance timeout of a revocation that never completes, and the 3.7-3.9 client's two bugs
(KAFKA-16460, KAFKA-18641) against 4.0, all through real brokers and coordinators."""

from __future__ import annotations

from typing import Any

from sim.cluster.scenario import parse_scenario
from tests.scenarios.test_consumer_groups import BASE, run, where

PROTOCOLS = '[broker]\n"group.coordinator.rebalance.protocols" = ["classic", "consumer"]\n'
"""3.7 to 3.9 serve the consumer protocol only when the brokers' rebalance protocols name it."""


def scn(consumers: str, faults: str = "", *, version: str = "4.0", records: int = 3000, duration: int = 30_000) -> Any:
    text = BASE.format(seed=1, duration=duration, records=records, version=version).replace("[broker]\n", PROTOCOLS, 1)
    return parse_scenario(text + consumers + faults, "edges.toml")


def member(**settings: Any) -> str:
    lines = {"group.id": "my-group", "topics": ["T"], "group.protocol": "consumer", "auto.offset.reset": "earliest", "max.poll.records": 20, "process.record.ms": 1}
    lines.update({k.replace("_", "."): v for k, v in settings.items()})
    body = "\n".join(f'"{k}" = {_toml(v)}' for k, v in lines.items())
    return f"\n[[consumers]]\n{body}\n"


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return str(value)


def fault(kind: str, node: str, at_ms: int, **keys: Any) -> str:
    extra = "".join(f'"{k.replace("_", ".")}" = {_toml(v)}\n' for k, v in keys.items())
    return f'\n[[faults]]\nkind = "{kind}"\nnode = "{node}"\n"at.ms" = {at_ms}\n{extra}'


CLOSE_2 = fault("close", "consumer-2", 12_000)


def test_a_commit_sent_before_the_epoch_moved_on_is_stale_and_changes_nothing_else() -> None:
    """consumer-2 closes at 12 s; consumer-1's heartbeat moves it from epoch 2 to 3 (it gains
    every partition). Its commits sent at epoch 2 while that heartbeat's change was being written
    reach the coordinator after it: STALE_MEMBER_EPOCH (`ConsumerGroup.validateOffsetCommit`).
    The 4.0 client fails those commits and nothing else (`CommitRequestManager`: only the
    commit before a revocation is retried with the newest epoch); its next commits carry epoch 3
    and succeed, and the membership is untouched."""
    text = BASE.format(seed=6, duration=30_000, records=2000, version="4.0").replace("[broker]\n", PROTOCOLS, 1)
    events, checks = run(parse_scenario(text + member(commit="async") * 2 + CLOSE_2, "edges.toml"))
    sent = {e["commit_id"]: (e["ts_ms"], e["kind"], e["generation_id"]) for e in where(events, "offset_commit_sent", node="consumer-1")}
    stale = [(e["ts_ms"], e["commit_id"], e["kind"]) for e in where(events, "offset_commit_answered", node="consumer-1", error="STALE_MEMBER_EPOCH")]
    assert stale[1:] == [(15674, 2613, "async"), (15689, 2616, "async"), (15689, 2618, "auto")]
    assert [sent[c] for _, c, _ in stale[1:]] == [(15668, "async", 2), (15681, "async", 2), (15681, "auto", 2)]
    moved = [(e["ts_ms"], e["previous_member_epoch"], e["member_epoch"]) for e in where(events, "consumer_member_changed") if e["ts_ms"] > 12_000]
    assert moved == [(15684, 2, 3)]
    later = [e for e in where(events, "offset_commit_answered", node="consumer-1") if e["ts_ms"] > 15689][:2]
    assert [(e["ts_ms"], e["error"], sent[e["commit_id"]][2]) for e in later] == [(15708, "NONE", 3), (15714, "NONE", 3)]
    assert not where(events, "member_reset")
    assert (checks["duplicates"], checks["consumed"], checks["acked"]) == (0, 2000, 2000)


def test_a_fenced_members_commit_is_unknown_member_id_and_only_its_heartbeat_fences_it() -> None:
    """consumer-1 (auto-commit only) is paused 47 s, past the coordinator's 45 s session:
    removed at 50173. On waking, its auto-commit (epoch 2) is answered UNKNOWN_MEMBER_ID, which
    fails the commit (CommitFailedException) and nothing else; its heartbeat's answer, just
    after it in the same millisecond, fences it (partitions lost, rejoin at epoch 0). What it
    had processed since its last auto-commit consumer-2 processes again: 93 records."""
    events, checks = run(scn(member() * 2, fault("pause", "consumer-1", 8000, duration_ms=47_000), records=2000, duration=70_000))
    assert [(e["ts_ms"], e["reason"]) for e in where(events, "consumer_member_removed")] == [(50173, "session_timeout")]
    failed = [(e["ts_ms"], e["kind"], e["error"]) for e in where(events, "offset_commit_answered", node="consumer-1") if e["error"] != "NONE"]
    assert failed == [(55006, "auto", "UNKNOWN_MEMBER_ID")]
    answered = [e["event"] for e in events if e["node"] == "consumer-1" and e["event"] in ("offset_commit_answered", "member_reset") and e["ts_ms"] == 55006]
    assert answered == ["offset_commit_answered", "member_reset"]
    assert [(e["ts_ms"], e["reason"]) for e in where(events, "member_reset")] == [(55006, "UNKNOWN_MEMBER_ID")]
    lost = where(events, "partitions_lost", node="consumer-1")
    assert [(e["ts_ms"], e["reason"]) for e in lost] == [(55006, "fenced")]
    assert (checks["duplicates_by_cause"], checks["consumed"], checks["acked"]) == ({"expelled_session_timeout": 93}, 2093, 2000)


REVOKING = member(commit="on_revoke", enable_auto_commit=False, max_poll_interval_ms=10_000)


def test_a_revocation_that_outlasts_the_rebalance_timeout_fences_the_member() -> None:
    """consumer-2 joins at 10 s: consumer-1 must give up T-2 and T-3 (the coordinator's
    rebalance timeout, its 10 s `max.poll.interval.ms`, starts at 10216). Its listener commits
    them in `poll()` at 10219, and a stall then keeps its application from finishing the
    callback: at 20214 the coordinator removes it (`rebalance_timeout`), before its own poll
    timer (20219). It had committed nothing of T-0 (no auto-commit), so consumer-2, given every
    partition, processes T-0's first 304 records again: `poll_interval_exceeded`."""
    second = member(commit="on_revoke", max_poll_interval_ms=10_000, start_ms=10_000)
    events, checks = run(scn(REVOKING + second, fault("stall", "consumer-1", 10_225, duration_ms=15_000), duration=40_000))
    unrevoked = [e["ts_ms"] for e in where(events, "consumer_member_changed", state="unrevoked_partitions")]
    assert unrevoked[0] == 10216
    assert [(e["ts_ms"], e["reason"], e["member_epoch"]) for e in where(events, "consumer_member_removed")][0] == (20214, "rebalance_timeout", 1)
    assert [e["ts_ms"] for e in where(events, "poll_timeout_expired", node="consumer-1")] == [20219]
    assert not where(events, "partitions_revoked", node="consumer-1")
    taken = [(e["ts_ms"], e["assignment"]) for e in where(events, "partitions_assigned", node="consumer-2")]
    assert taken[0] == (25100, ["T-0", "T-1", "T-2", "T-3"])
    spans = [(s["consumer"], s["partition"], s["first_offset"], s["end_offset"], s["cause"]) for s in checks["duplicate_spans"]]
    assert spans == [("consumer-2", "T-0", 0, 304, "poll_interval_exceeded")]
    assert (checks["duplicates_by_cause"], checks["consumed"], checks["acked"]) == ({"poll_interval_exceeded": 304}, 3304, 3000)


TWO = member() + member(start_ms=10_000)


def test_kafka_16460_in_3_9_returns_revoked_records_after_the_commit_snapshot_and_not_in_4_0() -> None:
    """consumer-2 joins at 10 s and consumer-1 revokes T-2 and T-3 with auto-commit. In 3.9 its
    commit before the revocation goes before the partitions are marked pending revocation, so a
    poll returns T-3's records 100 and 101 after that commit's offsets, and consumer-2 processes
    them again (`kafka_16460`); 4.0 marks them first: nothing twice."""
    events, checks = run(scn(TWO, version="3.9"))
    spans = [(s["consumer"], s["partition"], s["first_offset"], s["end_offset"], s["cause"]) for s in checks["duplicate_spans"]]
    assert spans == [("consumer-2", "T-3", 100, 102, "kafka_16460")]
    assert (checks["duplicates_by_cause"], checks["consumed"], checks["acked"]) == ({"kafka_16460": 2}, 3001, 2999)
    _, checks = run(scn(TWO, version="4.0"))
    assert (checks["duplicates"], checks["consumed"], checks["acked"]) == (0, 2999, 2999)


SLOW = member(max_poll_records=100, process_record_ms=20, auto_commit_interval_ms=1000)


def test_kafka_18641_in_3_9_auto_commits_unprocessed_records_which_a_crash_skips_and_not_in_4_0() -> None:
    """Two consumers processing 100-record polls at 20 ms a record, auto-committing every
    second; consumer-1 crashes at 5.5 s. In 3.9 the background thread's auto-commit had
    committed the positions of a poll it was still processing, so consumer-2 starts past T-0's
    records 95 to 126, which nobody processed (`committed_before_processed`); from 4.0 the
    auto-commit runs in `poll()` with what earlier polls returned: nothing is skipped."""
    crash = fault("crash", "consumer-1", 5500)
    _, checks = run(scn(SLOW * 2, crash, version="3.9", records=600, duration=70_000))
    spans = [(s["consumer"], s["partition"], s["first_offset"], s["end_offset"], s["cause"]) for s in checks["skip_spans"]]
    assert spans == [("consumer-1", "T-0", 95, 127, "committed_before_processed")]
    assert (checks["skipped_by_cause"], checks["consumed"], checks["acked"]) == ({"committed_before_processed": 32}, 568, 600)
    _, checks = run(scn(SLOW * 2, crash, version="4.0", records=600, duration=70_000))
    assert (checks["skipped"], checks["duplicates"], checks["consumed"], checks["acked"]) == (0, 0, 600, 600)
