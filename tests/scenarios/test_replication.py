"""The canonical replication scenarios (docs/canonical-scenarios.md), reproduced by the broker actors.

Latency is exactly 1 ms, so every time below is exact. The script plays client and controller
(tests/harness.py): LeaderAndIsr is driven directly, the script playing the controller.
"""

from __future__ import annotations

import pytest

from actors.addresses import broker_address
from protocols.errors import ErrorCode
from protocols.replication import AlterPartitionRequest, ProduceResponse
from sim.cluster.log_checks import diverged_replicas, lost_acknowledged
from tests.harness import (
    Script,
    build,
    final_replicas,
    leader_and_isr,
    log_values,
    partition_view,
    produce,
    produce_results,
    seeded_disk,
)

B1, B2 = broker_address(1), broker_address(2)


def test_s1_two_fetch_hw_propagation_step_by_step() -> None:
    """S1: the follower learns the HW one fetch round trip after the leader."""
    script = Script(
        [
            (0, B1, leader_and_isr(1, 0, (1, 2)), 1),
            (0, B2, leader_and_isr(1, 0, (1, 2)), 2),
            (100, B1, produce(("m0",)), 3),
        ]
    )
    kernel = build("3.9", (1, 2), script)

    def at(t: int) -> tuple[int, int, int, int, int]:
        kernel.run(t + 1)  # everything up to and including t
        p1, p2 = partition_view(kernel, 1), partition_view(kernel, 2)
        return (p1["log_end_offset"], p1["remote_log_end_offsets"][2], p1["high_watermark"],
                p2["log_end_offset"], p2["high_watermark"])

    # (leader LEO, remote LEO, leader HW, follower LEO, follower HW)
    assert at(100) == (0, 0, 0, 0, 0)  # B2's Fetch(0) is parked in B1's purgatory
    assert at(101) == (1, 0, 0, 0, 0)  # append at offset 0; HW stays min(1, 0) = 0
    assert at(102) == (1, 0, 0, 1, 0)  # the parked fetch returned m0 with HW 0
    assert at(103) == (1, 1, 1, 1, 0)  # Fetch(1): remote LEO 1, HW 1; that fetch is parked
    kernel.run(105)
    acks = [(t, m.partitions[0]) for t, _, m in script.received if isinstance(m, ProduceResponse)]
    assert [(t, p.error_code, p.base_offset) for t, p in acks] == [(104, ErrorCode.NONE, 0)]
    assert at(603) == (1, 1, 1, 1, 0)  # still parked: the follower's HW lags
    assert at(604) == (1, 1, 1, 1, 1)  # the fetch expired at 603 and carried HW 1
    kernel.shutdown()


B3 = broker_address(3)
PRE_EPOCHS = "0.10.2"
WITH_EPOCHS = ("0.11.0", "2.0", "2.8", "3.9")


def _s2(version: str, crash_b1_at: int = 2):
    """S2's state: B1 [m0, m1] HW 2; B2 [m0, m1] HW 1 (the response with HW 2 not arrived)."""
    script = Script(
        [
            # 1. B2 goes through a become-follower transition while in the ISR.
            (0, B2, leader_and_isr(1, 1, (1, 2)), 1),
            # 2. B1 has crashed; the controller elects B2 (live and in the ISR): LE 2, ISR {2}.
            (crash_b1_at + 1, B2, leader_and_isr(2, 2, (2,)), 2),
            # 3. B1 restarts as a follower of B2.
            (30, B1, leader_and_isr(2, 2, (2,)), 3),
            # afterwards a producer writes m2 to the new leader.
            (60, B2, produce(("m2",), acks=1), 4),
        ]
    )
    disks = {
        1: seeded_disk([("m0", 0), ("m1", 0)], high_watermark=2),
        2: seeded_disk([("m0", 0), ("m1", 0)], high_watermark=1),
    }
    kernel = build(version, (1, 2), script, disks=disks)
    kernel.schedule(crash_b1_at, "crash B1", lambda: kernel.crash("broker-1"))
    kernel.schedule(20, "restart B1", lambda: kernel.restart("broker-1"))
    return kernel, script


def test_s2_pre_kip_101_truncation_to_hw_loses_the_acknowledged_record() -> None:
    kernel, _ = _s2(PRE_EPOCHS)
    kernel.run(50)
    # B2 truncated to its HW, became leader without m1; B1 got OFFSET_OUT_OF_RANGE and followed.
    assert log_values(kernel, 2) == ["m0"]
    assert log_values(kernel, 1) == ["m0"]
    kernel.run(100)
    assert log_values(kernel, 2) == ["m0", "m2"]  # the next write reuses offset 1
    assert log_values(kernel, 1) == ["m0", "m2"]
    # the end-of-run check: m1 was acknowledged (its HW was 2 on the leader) and is gone
    assert lost_acknowledged(["m0", "m1", "m2"], log_values(kernel, 2)) == ["m1"]
    assert diverged_replicas(final_replicas(kernel, (1, 2))) == []
    kernel.shutdown()


@pytest.mark.parametrize("version", WITH_EPOCHS)
def test_s3_with_leader_epochs_nothing_is_lost(version: str) -> None:
    kernel, _ = _s2(version)
    kernel.run(100)
    assert log_values(kernel, 2) == ["m0", "m1", "m2"]
    assert log_values(kernel, 1) == ["m0", "m1", "m2"]
    assert lost_acknowledged(["m0", "m1", "m2"], log_values(kernel, 2)) == []
    kernel.shutdown()


@pytest.mark.parametrize("version", ["0.11.0", "2.0"])
def test_s3_step_1_leader_answers_the_end_of_epoch_0_and_nothing_is_truncated(version: str) -> None:
    """With B1 alive, B2's OffsetsForLeaderEpoch(0) gets (0, 2): truncate to min(2, 2, 2)."""
    kernel, script = _s2(version, crash_b1_at=10)
    kernel.run(10)
    view = partition_view(kernel, 2)
    assert (view["log_end_offset"], view["epochs"]) == (2, [(0, 0)])
    kernel.shutdown()


def _s4(version: str):
    """S4's state after the double power loss: B1 kept [m0, m1] (HW checkpoint 2); B2 kept
    only the flushed m0 ([m0], LEO 1)."""
    script = Script(
        [
            (0, B2, leader_and_isr(2, 1, (2,)), 1),  # B2 starts first and is elected
            (5, B2, produce(("m2",), acks=1), 2),  # m2 lands on B2 at offset 1
            (20, B1, leader_and_isr(2, 1, (2,)), 3),  # B1 restarts as a follower
        ]
    )
    disks = {
        1: seeded_disk([("m0", 0), ("m1", 0)], high_watermark=2),
        2: seeded_disk([("m0", 0)], high_watermark=1),
    }
    return build(version, (1, 2), script, disks=disks)


def test_s4_pre_kip_101_double_failure_leaves_replicas_diverged_forever() -> None:
    kernel = _s4(PRE_EPOCHS)
    kernel.run(5000)
    assert log_values(kernel, 1) == ["m0", "m1"]
    assert log_values(kernel, 2) == ["m0", "m2"]
    # both HWs reached 2, so the committed prefixes disagree at offset 1
    assert diverged_replicas(final_replicas(kernel, (1, 2))) == [
        {"replicas": [1, 2], "offset": 1, "values": ["m1", "m2"]}
    ]
    kernel.shutdown()


@pytest.mark.parametrize("version", WITH_EPOCHS)
def test_s5_with_epochs_the_follower_truncates_the_diverged_record(version: str) -> None:
    kernel = _s4(version)
    kernel.run(100)
    assert log_values(kernel, 1) == ["m0", "m2"]
    assert log_values(kernel, 2) == ["m0", "m2"]
    assert partition_view(kernel, 2)["epochs"] == [(0, 0), (1, 1)]
    assert diverged_replicas(final_replicas(kernel, (1, 2))) == []
    kernel.shutdown()


def test_s7_unclean_leader_loses_acknowledged_records_and_reuses_offsets() -> None:
    """S7: B1 leads at LE 5 with offsets 0-9 (HW 10); B2 fell out of the ISR at LEO 5. B1
    crashes; B2 is elected uncleanly (LE 6); three new records take offsets 5-7; B1 returns,
    Fetch(10, 5) gets diverging (5, 5), truncates to 5 and replicates 5-7."""
    old = [(f"old{i}", 5) for i in range(10)]
    script = Script(
        [
            (0, B2, leader_and_isr(2, 6, (2,)), 1),
            (5, B2, produce(("new0", "new1", "new2"), acks=1), 2),
            (20, B1, leader_and_isr(2, 6, (2,)), 3),
        ]
    )
    disks = {1: seeded_disk(old, high_watermark=10), 2: seeded_disk(old[:5], high_watermark=5)}
    kernel = build("3.9", (1, 2), script, disks=disks)
    kernel.run(100)
    expected = [f"old{i}" for i in range(5)] + ["new0", "new1", "new2"]
    assert log_values(kernel, 2) == expected
    assert log_values(kernel, 1) == expected
    assert partition_view(kernel, 2)["epochs"] == [(5, 0), (6, 5)]
    acknowledged = [f"old{i}" for i in range(10)]  # HW was 10 on B1
    assert lost_acknowledged(acknowledged, log_values(kernel, 2)) == [f"old{i}" for i in range(5, 10)]
    assert diverged_replicas(final_replicas(kernel, (1, 2))) == []
    kernel.shutdown()


def _s8(version: str, acks: int) -> tuple[object, Script]:
    script = Script(
        [
            (0, B1, leader_and_isr(1, 0, (1,), (1, 2, 3)), 1),
            (10, B1, produce(("x",), acks=acks), 2),
        ]
    )
    disks = {1: seeded_disk([(f"r{i}", 0) for i in range(10)], high_watermark=10)}
    kernel = build(version, (1,), script, disks=disks, min_insync_replicas=2)
    return kernel, script


def test_s8_acks_all_under_min_isr_is_rejected_before_append() -> None:
    kernel, script = _s8("3.9", acks=-1)
    kernel.run(50)
    assert produce_results(script) == [(12, ErrorCode.NOT_ENOUGH_REPLICAS, -1)]
    assert partition_view(kernel, 1)["log_end_offset"] == 10
    kernel.shutdown()


@pytest.mark.parametrize(("version", "hw"), [("3.7", 10), ("3.9", 10), ("3.6", 11)])
def test_s8_acks_1_under_min_isr_appends_but_37_holds_the_hw(version: str, hw: int) -> None:
    kernel, script = _s8(version, acks=1)
    kernel.run(50)
    assert produce_results(script) == [(12, ErrorCode.NONE, 10)]
    view = partition_view(kernel, 1)
    assert (view["log_end_offset"], view["high_watermark"]) == (11, hw)
    kernel.shutdown()


@pytest.mark.parametrize(
    ("version", "expected"),
    [("3.6", ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND), ("3.7", ErrorCode.REQUEST_TIMED_OUT)],
)
def test_s8_variant_isr_shrinks_after_the_append(version: str, expected: ErrorCode) -> None:
    """ISR {1,2}, min.isr 2: an acks=all write lands at 10, then broker 2 stops and is dropped
    from the ISR (lag 1000 ms here, so the shrink comes before the 30 s produce timeout)."""
    script = Script(
        [
            (0, B1, leader_and_isr(1, 0, (1, 2)), 1),
            (0, B2, leader_and_isr(1, 0, (1, 2)), 2),
            (100, B1, produce(("x",), acks=-1), 3),
        ]
    )
    disks = {b: seeded_disk([(f"r{i}", 0) for i in range(10)], high_watermark=10) for b in (1, 2)}
    kernel = build(version, (1, 2), script, disks=disks, min_insync_replicas=2, replica_lag_time_max_ms=1000)
    kernel.schedule(50, "B2 stops", lambda: kernel.crash("broker-2"))
    kernel.run(31000)
    [(_, error, offset)] = produce_results(script)
    assert error is expected
    view = partition_view(kernel, 1)
    assert view["isr"] == [1]
    assert view["high_watermark"] == (11 if version == "3.6" else 10)
    kernel.shutdown()


def test_s9_isr_shrink_timing() -> None:
    """B2 stops fetching at t=1000; the leader keeps appending; the isr-expiration task runs
    every 15000 ms from t=0: B2 is kept at 15000 and 30000 and removed at 45000, by an
    AlterPartition that bumps the partition epoch and leaves the leader epoch alone."""
    steps = [(0, B1, leader_and_isr(1, 0, (1, 2)), 1), (0, B2, leader_and_isr(1, 0, (1, 2)), 2)]
    steps += [(t, B1, produce((f"v{t}",), acks=1), 10 + i) for i, t in enumerate(range(2000, 50000, 4000))]
    script = Script(steps)
    kernel = build("3.9", (1, 2), script)
    kernel.schedule(1000, "B2 stops", lambda: kernel.crash("broker-2"))
    for t, isr in ((15001, [1, 2]), (30001, [1, 2]), (45002, [1, 2]), (45003, [1])):
        kernel.run(t)
        assert partition_view(kernel, 1)["isr"] == isr, t
    [(sent_at, alter)] = [(t, m) for t, _, m in script.received if isinstance(m, AlterPartitionRequest)]
    assert (sent_at, alter.partitions[0].new_isr) == (45001, (1,))  # sent by the 45000 check
    view = partition_view(kernel, 1)
    assert (view["leader_epoch"], view["partition_epoch"]) == (0, 1)
    kernel.shutdown()


def test_s9_a_follower_at_the_leaders_leo_is_never_removed() -> None:
    script = Script([(0, B1, leader_and_isr(1, 0, (1, 2)), 1), (0, B2, leader_and_isr(1, 0, (1, 2)), 2)])
    kernel = build("3.9", (1, 2), script)
    kernel.schedule(1000, "B2 stops", lambda: kernel.crash("broker-2"))
    kernel.run(200_000)
    assert partition_view(kernel, 1)["isr"] == [1, 2]
    kernel.shutdown()


def _s2_from_scratch(version: str):
    """S2 through the protocol itself: m0 and m1 are produced with acks=all and acknowledged;
    B2 holds [m0, m1] with HW 1 on disk (the 5000 ms checkpoint) when it goes through a fast
    restart, and becomes follower again; then B1 crashes and B2 is elected."""
    script = Script(
        [
            (0, B1, leader_and_isr(1, 0, (1, 2)), 1),
            (0, B2, leader_and_isr(1, 0, (1, 2)), 2),
            (100, B1, produce(("m0",)), 3),
            (6000, B1, produce(("m1",)), 4),
            (6006, B2, leader_and_isr(1, 0, (1, 2)), 5),  # to the restarted B2
            (6009, B2, leader_and_isr(2, 1, (2,)), 6),
            (6110, B1, leader_and_isr(2, 1, (2,)), 7),
            (6200, B2, produce(("m2",), acks=1), 8),
        ]
    )
    kernel = build(version, (1, 2), script, fail_on_violation=False)
    kernel.schedule(6005, "crash B2", lambda: kernel.crash("broker-2"))
    kernel.schedule(6006, "restart B2", lambda: kernel.restart("broker-2"))
    kernel.schedule(6008, "crash B1", lambda: kernel.crash("broker-1"))
    kernel.schedule(6100, "restart B1", lambda: kernel.restart("broker-1"))
    return kernel, script


def test_s2_from_scratch_pre_kip_101_breaks_weak_and_strong_isr_and_loses_m1() -> None:
    kernel, script = _s2_from_scratch(PRE_EPOCHS)
    kernel.run(6005)
    assert (partition_view(kernel, 2)["high_watermark"], log_values(kernel, 2)) == (1, ["m0", "m1"])
    kernel.run(8000)
    acked = [t for t, _, m in script.received if isinstance(m, ProduceResponse) and m.partitions[0].error_code is ErrorCode.NONE]
    assert acked == [104, 6004, 6202]  # m0, m1 acknowledged with acks=all; m2 with acks=1
    violated = [(v["invariant"], v["ts_ms"], v["node"]) for v in kernel.invariant_violations]
    # B2 truncated to its checkpointed HW at 6007 while B1, the presumed leader with HW 2,
    # counted it in its ISR
    assert violated[:2] == [("weak_isr", 6007, "broker-2"), ("strong_isr", 6007, "broker-2")]
    assert log_values(kernel, 2) == ["m0", "m2"]
    assert log_values(kernel, 1) == ["m0", "m2"]
    assert lost_acknowledged(["m0", "m1", "m2"], log_values(kernel, 2)) == ["m1"]
    kernel.shutdown()


@pytest.mark.parametrize("version", WITH_EPOCHS)
def test_s2_from_scratch_with_epochs_keeps_everything_and_the_invariants(version: str) -> None:
    kernel, _ = _s2_from_scratch(version)
    kernel.run(8000)
    assert kernel.invariant_violations == []
    assert log_values(kernel, 2) == ["m0", "m1", "m2"]
    assert log_values(kernel, 1) == ["m0", "m1", "m2"]
    kernel.shutdown()
