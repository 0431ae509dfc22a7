"""Replication rules through the real brokers, each a rule that is also a pure function
(`truncation_state`, `high_watermark`, `can_join_isr`, the min-ISR checks): the functions are
unit-tested elsewhere; these tests check that the broker calls them where Kafka does.

Latency is exactly 1 ms and the script plays the controller (tests/harness.py), so every time
below is exact. The invariants run after every event.
"""

from __future__ import annotations

from typing import Any

import pytest

from actors.addresses import broker_address
from protocols.errors import ErrorCode
from protocols.replication import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
)
from sim.cluster.log_checks import diverged_replicas
from sim.engine.kernel import Kernel
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


def recorded(kernel: Kernel) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    kernel.observe(events.append)
    return events


# ------------------------------------------------------------------ KIP-279: the truncation loop

# Two histories that share only offsets 0-1 (epoch 0). The follower led epochs 1, 3 and 5, the
# leader epochs 2, 4 and 6, each writing two or three records nobody else kept:
#   follower B1: epoch cache [(0,0), (1,2), (3,4), (5,6)], LEO 8
#   leader   B2: epoch cache [(0,0), (2,3), (4,5), (6,7)], LEO 8; it leads epoch 7 from offset 8
FOLLOWER_LOG = [("a0", 0), ("a1", 0), ("f2", 1), ("f3", 1), ("f4", 3), ("f5", 3), ("f6", 5), ("f7", 5)]
LEADER_LOG = [("a0", 0), ("a1", 0), ("l2", 0), ("l3", 2), ("l4", 2), ("l5", 4), ("l6", 4), ("l7", 6)]


def _diverged_histories(version: str) -> tuple[Kernel, list[dict[str, Any]]]:
    script = Script(
        [(0, B2, leader_and_isr(2, 7, (2,)), 1), (0, B1, leader_and_isr(2, 7, (2,)), 2)]
    )
    disks = {
        1: seeded_disk(FOLLOWER_LOG, high_watermark=2),
        2: seeded_disk(LEADER_LOG, high_watermark=3),
    }
    kernel = build(version, (1, 2), script, disks=disks)
    return kernel, recorded(kernel)


def _truncations(events: list[dict[str, Any]]) -> list[tuple[int, int, str]]:
    return [
        (e["from_offset"], e["to_offset"], e["reason"])
        for e in events
        if e["event"] == "log_truncated" and e["node"] == "broker-1"
    ]


@pytest.mark.parametrize(
    ("version", "reason"),
    [("2.0", "leader_epoch"), ("2.4", "leader_epoch"), ("2.8", "diverging_epoch"), ("3.9", "diverging_epoch")],
)
def test_kip_279_the_follower_asks_again_until_its_epochs_meet_the_leaders(version: str, reason: str) -> None:
    """Each round the leader answers its end of the largest epoch it has at or below the asked
    one, and the follower, lacking that epoch, truncates to the end of its own largest epoch
    below it and asks again with its new latest epoch:
      ask 5: leader (4, 7);  follower's end of epoch 3 is 6 -> truncate to 6, ask 3
      ask 3: leader (2, 5);  follower's end of epoch 1 is 4 -> truncate to 4, ask 1
      ask 1: leader (0, 3);  follower has epoch 0, ending at 2 -> min(2, 3, 4) = 2, done.
    From 2.8 the same answers come as `diverging_epoch` on Fetch (KAFKA-10554)."""
    kernel, events = _diverged_histories(version)
    kernel.run(100)
    assert _truncations(events) == [(8, 6, reason), (6, 4, reason), (4, 2, reason)]
    leader_values = [v for v, _ in LEADER_LOG]
    assert log_values(kernel, 1) == log_values(kernel, 2) == leader_values
    follower, leader = partition_view(kernel, 1), partition_view(kernel, 2)
    # the leader cached (7, 8) on becoming leader; the follower learns it with the first record
    # written in epoch 7
    assert follower["epochs"] == [(0, 0), (2, 3), (4, 5), (6, 7)]
    assert leader["epochs"] == [(0, 0), (2, 3), (4, 5), (6, 7), (7, 8)]
    assert leader["isr"] == [1, 2] and follower["high_watermark"] == 8
    assert diverged_replicas(final_replicas(kernel, (1, 2))) == []
    kernel.shutdown()


def test_kip_101_as_shipped_in_0_11_truncates_once_and_the_replicas_diverge() -> None:
    """0.11's answer is only an offset: the start of the leader's first epoch after the asked
    one (epoch 6 starts at 7). The follower truncates once, to 7, and keeps f2-f6: the
    divergence that KIP-279 (2.0) fixed."""
    kernel, events = _diverged_histories("0.11.0")
    kernel.run(100)
    assert _truncations(events) == [(8, 7, "leader_epoch")]
    assert log_values(kernel, 1) == ["a0", "a1", "f2", "f3", "f4", "f5", "f6", "l7"]
    assert log_values(kernel, 2) == [v for v, _ in LEADER_LOG]
    assert diverged_replicas(final_replicas(kernel, (1, 2))) == [
        {"replicas": [1, 2], "offset": 2, "values": ["f2", "l2"]}
    ]
    kernel.shutdown()


# ------------------------------------------------------------------ the HW in a fetch answer


def test_an_immediate_fetch_answer_carries_the_hw_from_before_the_fetch() -> None:
    """S1 with data waiting: `Partition.readRecords` captures the HW before
    `updateFollowerFetchState` raises it, so a fetch answered at once tells the follower the
    old HW even though the same fetch moved it.
      t=101  m0 appended; B2's parked Fetch(0) completes with m0, HW 0
      t=102  m1 appended (LEO 2); B2 appends m0 and sends Fetch(1)
      t=103  Fetch(1): read m1 with HW 0, then remote LEO 1 -> HW 1 (m0 committed);
             m1 was there, so the answer leaves at once carrying HW 0
      t=104  B2 appends m1: LEO 2, HW min(0, 2) = 0; sends Fetch(2)
      t=105  Fetch(2): remote LEO 2 -> HW 2; nothing to read, parked until 605
      t=606  the expired fetch's answer brings HW 2."""
    script = Script(
        [
            (0, B1, leader_and_isr(1, 0, (1, 2)), 1),
            (0, B2, leader_and_isr(1, 0, (1, 2)), 2),
            (100, B1, produce(("m0",), acks=1), 3),
            (101, B1, produce(("m1",), acks=1), 4),
        ]
    )
    kernel = build("3.9", (1, 2), script)

    def at(t: int) -> tuple[int, int, int, int]:
        kernel.run(t + 1)
        leader, follower = partition_view(kernel, 1), partition_view(kernel, 2)
        return (leader["log_end_offset"], leader["high_watermark"], follower["log_end_offset"], follower["high_watermark"])

    # (leader LEO, leader HW, follower LEO, follower HW)
    assert at(102) == (2, 0, 1, 0)
    assert at(103) == (2, 1, 1, 0)
    assert at(104) == (2, 1, 2, 0)  # the answer carried HW 0, not 1
    assert at(105) == (2, 2, 2, 0)
    assert at(605) == (2, 2, 2, 0)
    assert at(606) == (2, 2, 2, 2)
    assert produce_results(script) == [(102, ErrorCode.NONE, 0), (103, ErrorCode.NONE, 1)]
    kernel.shutdown()


# ------------------------------------------------------------------ KAFKA-7128: the ISR join


def _remote_leo_at_isr_join(version: str) -> int:
    """B1 becomes leader at epoch 1 holding r0-r4 (HW 2: its ISR partner B3 has not fetched,
    so the HW cannot move); B2 holds r0-r1. B2's first fetch is at offset 2 = the HW, its
    second at 5 = the start of epoch 1. The leader's view of B2's LEO when B2 first shows in
    the ISR (the committed or the pending one)."""
    script = Script(
        [
            (0, B1, leader_and_isr(1, 1, (1, 3), (1, 2, 3)), 1),
            (0, B2, leader_and_isr(1, 1, (1, 3), (1, 2, 3)), 2),
        ]
    )
    disks = {
        1: seeded_disk([(f"r{i}", 0) for i in range(5)], high_watermark=2),
        2: seeded_disk([("r0", 0), ("r1", 0)], high_watermark=2),
    }
    kernel = build(version, (1, 2), script, disks=disks)
    leader = None
    for t in range(1, 50):
        kernel.run(t)
        leader = partition_view(kernel, 1)
        if 2 in leader["isr"] or 2 in leader["maximal_isr"]:
            break
    kernel.shutdown()
    assert leader is not None and leader["high_watermark"] == 2
    return leader["remote_log_end_offsets"][2]


@pytest.mark.parametrize(("version", "joined_at"), [("2.0", 2), ("2.1", 5), ("2.4", 5), ("3.9", 5)])
def test_kafka_7128_a_follower_joins_the_isr_only_once_it_reaches_the_leaders_epoch(version: str, joined_at: int) -> None:
    """Before 2.1 a follower joins once its LEO reaches the HW (2); since KAFKA-7128 it must
    also reach the start offset of the leader's epoch (5), or committed data between the new
    leader's HW and LEO could be lost."""
    assert _remote_leo_at_isr_join(version) == joined_at


# ------------------------------------------------------------------ min.insync.replicas


def _leader_with(isr: tuple[int, ...], replicas: tuple[int, ...], version: str = "3.9") -> tuple[Kernel, Script]:
    followers = [b for b in isr if b != 1]
    script = Script(
        [(0, broker_address(b), leader_and_isr(1, 0, isr, replicas), b) for b in (1, *followers)]
        + [(100, B1, produce(("x",)), 9)]
    )
    kernel = build(version, tuple(sorted({1, *followers})), script, min_insync_replicas=2)
    return kernel, script


def test_acks_all_with_the_isr_exactly_at_min_isr_is_appended_and_acknowledged() -> None:
    """`isr.size < effectiveMinIsr` rejects; an ISR of exactly min.insync.replicas (2 of 3)
    accepts: x lands at 0 and is acknowledged once B2's next fetch (t=103) moves the HW."""
    kernel, script = _leader_with((1, 2), (1, 2, 3))
    kernel.run(200)
    assert produce_results(script) == [(104, ErrorCode.NONE, 0)]
    kernel.shutdown()


def test_min_isr_is_capped_by_the_replication_factor() -> None:
    """`effectiveMinIsr = min(min.insync.replicas, replicationFactor)`: with one replica and
    min.insync.replicas 2, acks=all writes are accepted and acknowledged at once (HW 1)."""
    kernel, script = _leader_with((1,), (1,))
    kernel.run(200)
    assert produce_results(script) == [(102, ErrorCode.NONE, 0)]
    assert partition_view(kernel, 1)["high_watermark"] == 1
    kernel.shutdown()


def test_acks_all_one_replica_short_of_min_isr_is_rejected_before_the_append() -> None:
    kernel, script = _leader_with((1,), (1, 2, 3))
    kernel.run(200)
    assert produce_results(script) == [(102, ErrorCode.NOT_ENOUGH_REPLICAS, -1)]
    assert partition_view(kernel, 1)["log_end_offset"] == 0
    kernel.shutdown()


# ------------------------------------------------------------------ KIP-207 and KIP-320: ListOffsets


def _list_offsets(version: str, *queries: tuple[int, int, int]) -> list[tuple[ErrorCode, int]]:
    """Broker 2 leads T-0 in epoch 1 with a log of 10 records and an HW of 8 it cannot advance
    (its follower, broker 1, never fetches): its epoch starts at 10, above the HW. Each query
    `(replica_id, timestamp, current_leader_epoch)` is one ListOffsets; (error, offset) of each."""
    script = Script()
    script.steps.append((0, B2, leader_and_isr(2, 1, (1, 2)), 1))
    for i, (replica, timestamp, epoch) in enumerate(queries):
        request = ListOffsetsRequest(replica, (ListOffsetsPartition("T", 0, timestamp, epoch),))
        script.steps.append((10 + i, B2, request, 10 + i))
    disk = seeded_disk([(f"m{i}", 0) for i in range(10)], high_watermark=8)
    kernel = build(version, (2,), script, disks={2: disk})
    kernel.run(50)
    answers = [m.partitions[0] for _, _, m in script.received if isinstance(m, ListOffsetsResponse)]
    return [(a.error_code, a.offset) for a in answers]


LATEST, EARLIEST = LATEST_TIMESTAMP, EARLIEST_TIMESTAMP
CONSUMER, BROKER = -1, 1
"""ListOffsets' `replica_id`: a consumer's, or broker 1's."""


@pytest.mark.parametrize(
    ("version", "latest"),
    [("2.2", (ErrorCode.OFFSET_NOT_AVAILABLE, -1)), ("2.1", (ErrorCode.NONE, 8))],
)
def test_kip_207_a_consumers_latest_offset_waits_for_the_hw_to_reach_the_epochs_start(
    version: str, latest: tuple[ErrorCode, int]
) -> None:
    """From 2.2 a consumer's latest offset is OFFSET_NOT_AVAILABLE while the new leader's HW is
    below the start of its epoch; before, it got the stale HW. A broker's latest is the LEO,
    and earliest the log start, either way."""
    answers = _list_offsets(version, (CONSUMER, LATEST, 1), (BROKER, LATEST, 1), (CONSUMER, EARLIEST, 1))
    assert answers == [latest, (ErrorCode.NONE, 10), (ErrorCode.NONE, 0)]


def test_kip_320_list_offsets_is_fenced_by_the_leader_epoch() -> None:
    """ListOffsets carries the sender's leader epoch (2.1+): an older one is fenced, a newer one
    unknown, and none (-1) is not checked."""
    answers = _list_offsets("3.9", (CONSUMER, EARLIEST, 0), (CONSUMER, EARLIEST, 2), (CONSUMER, EARLIEST, -1))
    assert answers == [(ErrorCode.FENCED_LEADER_EPOCH, -1), (ErrorCode.UNKNOWN_LEADER_EPOCH, -1), (ErrorCode.NONE, 0)]
