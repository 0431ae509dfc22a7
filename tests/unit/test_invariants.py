"""Invariants on the event stream, and the end-of-run checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from actors.addresses import broker_address
from sim.cluster.invariants import Invariants, Violation
from sim.cluster.log_checks import diverged_replicas, lost_acknowledged
from sim.engine.eventlog import EventLog
from sim.engine.kernel import SimulationFailed
from tests.harness import Script, build, leader_and_isr


def offsets(node: str, ts: int, role: str, epoch: int, leo: int, hw: int) -> dict[str, Any]:
    return {
        "event": "replica_offsets_changed", "ts_ms": ts, "node": node, "topic": "T", "partition": 0,
        "role": role, "leader_epoch": epoch, "log_end_offset": leo, "high_watermark": hw,
    }


def test_hw_above_leo_is_a_violation() -> None:
    check = Invariants()
    assert check(offsets("broker-2", 5, "follower", 0, 3, 3)) == []
    [v] = check(offsets("broker-2", 6, "follower", 0, 3, 4))
    assert (v.invariant, v.ts_ms, v.node) == ("hw_at_most_leo", 6, "broker-2")


def test_a_leaders_hw_never_goes_back_within_its_epoch() -> None:
    check = Invariants()
    check(offsets("broker-1", 1, "leader", 0, 5, 4))
    [v] = check(offsets("broker-1", 2, "leader", 0, 5, 3))
    assert v.invariant == "monotonic_high_watermark"
    # a new epoch (a new leadership) starts afresh; so does a restart
    assert check(offsets("broker-1", 3, "leader", 1, 5, 2)) == []
    check({"event": "node_crashed", "ts_ms": 4, "node": "sim", "target": "broker-1", "kind": "process"})
    assert check(offsets("broker-1", 5, "leader", 1, 5, 1)) == []


def test_follower_hw_may_go_back() -> None:
    """`UnifiedLog.updateHighWatermark`: a follower's HW may go backwards (only a warning in Kafka)."""
    check = Invariants()
    check(offsets("broker-2", 1, "follower", 0, 5, 4))
    assert check(offsets("broker-2", 2, "follower", 0, 5, 1)) == []


def test_leader_in_isr() -> None:
    check = Invariants()
    ok = {"event": "isr_shrunk", "ts_ms": 1, "node": "broker-1", "topic": "T", "partition": 0, "isr": [1], "leader_epoch": 0}
    assert check(ok) == []
    [v] = check({**ok, "isr": [2, 3]})
    assert v.invariant == "leader_in_isr"


def test_strong_isr_reads_the_isr_of_the_newest_epoch_not_a_deposed_leaders() -> None:
    """A deposed leader that wakes from a pause and applies its stale LeaderAndIsr reports the
    ISR of its old epoch; the quorum's ISR is still the new leader's, and a member of the old ISR
    that the new one dropped is not held to the new leader's HW."""
    check = Invariants()

    def leader(node: str, ts: int, epoch: int, isr: list[int]) -> dict[str, Any]:
        return {"event": "became_leader", "ts_ms": ts, "node": node, "topic": "T", "partition": 0,
                "leader_epoch": epoch, "isr": isr}

    check(leader("broker-1", 1, 0, [1, 2]))
    check(offsets("broker-1", 2, "leader", 0, 0, 0))
    check({"event": "records_appended", "ts_ms": 3, "node": "broker-1", "topic": "T", "partition": 0,
           "base_offset": 0, "count": 2, "leader_epoch": 0})
    check(offsets("broker-1", 3, "leader", 0, 2, 0))
    check(offsets("broker-2", 4, "follower", 0, 2, 0))
    check(leader("broker-2", 5, 3, [2]))  # broker-1 paused; broker-2 leads epoch 3 alone
    check({"event": "records_appended", "ts_ms": 6, "node": "broker-2", "topic": "T", "partition": 0,
           "base_offset": 2, "count": 3, "leader_epoch": 3})
    assert check(offsets("broker-2", 6, "leader", 3, 5, 5)) == []
    # broker-1 wakes and applies epoch 2's stale LeaderAndIsr, ISR [1, 2], holding 2 records
    assert check(leader("broker-1", 9, 2, [1, 2])) == []
    assert check(offsets("broker-1", 9, "leader", 2, 2, 0)) == []


def test_s4_diverged_committed_prefixes_are_found() -> None:
    b1 = ([(0, 0, "m0"), (1, 0, "m1")], 2)
    b2 = ([(0, 0, "m0"), (1, 1, "m2")], 2)
    assert diverged_replicas({1: b1, 2: b2}) == [{"replicas": [1, 2], "offset": 1, "values": ["m1", "m2"]}]
    assert diverged_replicas({1: b1, 2: ([(0, 0, "m0")], 1)}) == []


def test_lost_acknowledged_writes_are_found_by_value() -> None:
    """S7: offsets 5-9 were acknowledged; offsets 5-7 now hold other records."""
    acked = [f"p:{i}" for i in range(10)]
    final = [f"p:{i}" for i in range(5)] + ["q:0", "q:1", "q:2"]
    assert lost_acknowledged(acked, final) == [f"p:{i}" for i in range(5, 10)]


def test_a_violation_fails_the_run_with_a_readable_log(tmp_path: Path) -> None:
    """The kernel logs invariant_violated right after the event and stops."""
    kernel = build("3.9", (1,), Script([(0, broker_address(1), leader_and_isr(1, 0, (1,), (1,)), 1)]))
    kernel.event_log = EventLog(tmp_path / "events.jsonl")

    def always(event: dict[str, Any]) -> list[Violation]:
        if event["event"] != "became_leader":
            return []
        return [Violation("test_invariant", event["ts_ms"], event["node"], "x")]

    kernel.observe(always)
    with pytest.raises(SimulationFailed, match="invariant test_invariant"):
        kernel.run(100)
    kernel.event_log.close()
    events = [orjson.loads(line) for line in (tmp_path / "events.jsonl").read_bytes().splitlines()]
    assert [e["event"] for e in events[-2:]] == ["became_leader", "invariant_violated"]
    assert kernel.invariant_violations[0]["invariant"] == "test_invariant"
    kernel.shutdown()


def test_single_controller_per_epoch() -> None:
    check = Invariants()
    elected = {"event": "controller_elected", "ts_ms": 1, "node": "broker-1", "broker_id": 1, "controller_epoch": 7}
    assert check(elected) == []
    assert check({**elected, "ts_ms": 5, "controller_epoch": 8, "broker_id": 2}) == []
    [v] = check({**elected, "ts_ms": 9, "node": "broker-3", "broker_id": 3})
    assert (v.invariant, v.ts_ms) == ("single_controller_per_epoch", 9)


def test_weak_isr_compares_replicas_from_the_higher_of_their_log_starts() -> None:
    """broker-2 held offsets 0-4 of epoch 0, which the leader of epoch 1 never had. Once its log
    starts at 5 (it truncated fully to the leader's log start), those records are deleted and
    no longer count against `weak_isr`; records at or above both log starts still do."""
    def run(log_start: int | None) -> list[Violation]:
        check = Invariants()
        common = {"ts_ms": 1, "topic": "T", "partition": 0}
        check({**common, "event": "became_leader", "node": "broker-1", "leader_epoch": 1, "isr": [1, 2]})
        check({**common, "event": "records_appended", "node": "broker-1", "base_offset": 0, "count": 10, "leader_epoch": 1})
        check({**common, "event": "records_appended", "node": "broker-2", "base_offset": 0, "count": 5, "leader_epoch": 0})
        if log_start is not None:
            check({**common, "event": "log_start_offset_changed", "node": "broker-2", "log_start_offset": log_start})
        check(offsets("broker-2", 2, "follower", 1, 10, 10))
        return check(offsets("broker-1", 3, "leader", 1, 10, 10))

    assert [v.invariant for v in run(None)] == ["weak_isr", "strong_isr"]
    assert run(5) == []
    assert [v.invariant for v in run(4)] == ["weak_isr", "strong_isr"]
