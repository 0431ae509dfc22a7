"""The producer against real brokers: retries, idempotence and ordering (S8's variant, S21,
S22, S23). The script plays the controller; latency is exactly 1 ms, so times are exact."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from actors.addresses import broker_address
from actors.producer.config import ProducerConfig
from protocols.errors import ErrorCode
from protocols.metadata import UpdateMetadataPartition, UpdateMetadataRequest
from protocols.replication import ProducePartitionData, ProduceRequest
from sim.cluster.harness import Cluster
from sim.cluster.scenario import parse_scenario
from sim.engine.disk import CrashKind
from sim.engine.network import FaultKind, LinkFault
from sim.studies.runner import run_scenario
from tests.harness import (
    Script,
    build,
    leader_and_isr,
    partition_view,
    produce_results,
    seeded_disk,
)

B1, B2, B3 = broker_address(1), broker_address(2), broker_address(3)
SEEDED = [(f"m{i}", 0) for i in range(10)]
"""Offsets 0-9, written in epoch 0 before the run: LEO = HW = 10."""


def _producer(*, idempotence: bool, records: int = 1, start_ms: int = 1000, **settings: Any) -> ProducerConfig:
    return ProducerConfig(
        name="producer-1",
        topic="T",
        partitions=1,
        bootstrap=(1,),
        leaders=(1,),
        idempotence=idempotence,
        records=records,
        start_ms=start_ms,
        **settings,
    )


def _events(kernel: Any) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    kernel.observe(events.append)
    return events


def _where(events: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == name]


def _log(kernel: Any, broker: int = 1) -> list[tuple[int, str]]:
    return [(offset, value) for offset, _, value in partition_view(kernel, broker)["log"]]


# ------------------------------------------------------------------------------------- S21


@pytest.mark.parametrize("idempotence", [False, True], ids=["plain", "idempotent"])
def test_s21_a_retry_after_a_lost_answer_writes_twice_unless_idempotent(idempotence: bool) -> None:
    """A batch [r] is appended at offset 10 and committed, but its answer is lost. The
    producer's request (sent at 1000) times out 30 s later, its connection closes, and the batch
    is retried after `retry.backoff.ms` (100 ms), at 31100.
    - Without idempotence r is appended again, at 11: the log holds it twice.
    - With idempotence the broker finds (epoch 0, sequence 0..0) among the producer's cached
      batches: nothing is appended, and the answer is success with base offset 10."""
    script = Script([(0, B1, leader_and_isr(1, 0, (1, 2)), 1), (0, B2, leader_and_isr(1, 0, (1, 2)), 2)])
    disks = {b: seeded_disk(SEEDED, high_watermark=10) for b in (1, 2)}
    kernel = build("3.9", (1, 2), script, disks=disks, producers=(_producer(idempotence=idempotence),))
    events = _events(kernel)
    lost = LinkFault(FaultKind.DROP, 1002, 1100, frozenset({"broker-1"}), frozenset({"producer-1"}))
    kernel.add_link_fault(lost)
    kernel.run(40000)
    t = 1000
    [created] = _where(events, "batch_created")  # the batch's whole life: one batch, two sends
    assert (created["ts_ms"], created["batch"], created["first_record"]) == (t, 1, 0)
    [sent, resent] = _where(events, "batch_sent")
    assert (sent["ts_ms"], resent["ts_ms"], resent["attempt"]) == (t, t + 30100, 2)
    assert sent["batch"] == resent["batch"] == created["batch"]
    [retried] = _where(events, "batch_retried")
    assert (retried["ts_ms"], retried["error"]) == (t + 30000, "REQUEST_TIMED_OUT")
    [done] = _where(events, "produce_completed")
    if idempotence:
        assert (done["error"], done["base_offset"]) == ("NONE", 10)
        [dedup] = _where(events, "batch_deduplicated")
        assert (dedup["ts_ms"], dedup["base_offset"], dedup["base_sequence"]) == (31101, 10, 0)
        assert _log(kernel)[10:] == [(10, "producer-1:0")]
    else:
        assert (done["error"], done["base_offset"]) == ("NONE", 11)
        assert _log(kernel)[10:] == [(10, "producer-1:0"), (11, "producer-1:0")]
    assert _log(kernel, 2) == _log(kernel)
    kernel.shutdown()


# ------------------------------------------------------------------------------------- S22


@pytest.mark.parametrize("idempotence", [False, True], ids=["plain", "idempotent"])
def test_s22_a_refused_batch_retried_after_a_later_one_lands_after_it_unless_idempotent(idempotence: bool) -> None:
    """Three records, one every 10 ms from 200; the producer's link to B1 takes 20 ms, so with
    up to five requests in flight A (record 1, sent 210) and B (record 2, sent 220) are in
    flight together. Record 0 lands at offset 0. The controller shrinks the ISR to {1} (LE 1,
    at 225) before A arrives (230): NOT_ENOUGH_REPLICAS, nothing appended. B2 learns of the new
    epoch at 235, fetches, and B1 adds it back to the ISR at 238, before B arrives (240).
    - Without idempotence B is appended at 1; A, retried after `retry.backoff.ms` (from 231:
      sent at 331), lands at 2. The order is B, A.
    - With idempotence B (sequence 2) is refused OUT_OF_ORDER_SEQUENCE_NUMBER, the broker
      having written sequence 0 last. A goes first at 331 and lands at 1; B, next in line, is
      sent when A is acknowledged (354) and lands at 2. The order is kept."""
    new_epoch = leader_and_isr(1, 1, (1,), partition_epoch=1)
    script = Script(
        [
            (0, B1, leader_and_isr(1, 0, (1, 2)), 1),
            (0, B2, leader_and_isr(1, 0, (1, 2)), 2),
            (224, B1, new_epoch, 3),
            (234, B2, new_epoch, 4),
        ]
    )
    script.partition_epochs[("T", 0)] = 1
    producer = _producer(idempotence=idempotence, records=3, start_ms=200, interval_ms=10)
    kernel = build("3.9", (1, 2), script, producers=(producer,), min_insync_replicas=2)
    slow = LinkFault(FaultKind.DELAY, 0, None, frozenset({"producer-1"}), frozenset({"broker-1"}), delay_ms=19)
    kernel.add_link_fault(slow)
    events = _events(kernel)
    kernel.run(2000)
    refused = [(e["ts_ms"], e["error"]) for e in _where(events, "produce_rejected")]
    [expanded] = _where(events, "isr_expanded")
    assert expanded["ts_ms"] == 238
    if idempotence:
        assert refused == [(230, "NOT_ENOUGH_REPLICAS"), (240, "OUT_OF_ORDER_SEQUENCE_NUMBER")]
        assert _log(kernel) == [(0, "producer-1:0"), (1, "producer-1:1"), (2, "producer-1:2")]
        sent = [(e["ts_ms"], e["records"], e["base_sequence"]) for e in _where(events, "batch_sent")]
        assert sent[-2:] == [(331, [1], 1), (354, [2], 2)]
    else:
        assert refused == [(230, "NOT_ENOUGH_REPLICAS")]
        assert _log(kernel) == [(0, "producer-1:0"), (1, "producer-1:2"), (2, "producer-1:1")]
    outcomes = sorted((e["records"], e["error"], e["base_offset"]) for e in _where(events, "produce_completed"))
    b_offset, a_offset = (2, 1) if idempotence else (1, 2)
    assert outcomes == [([0], "NONE", 0), ([1], "NONE", a_offset), ([2], "NONE", b_offset)]
    kernel.shutdown()


# ------------------------------------------------------------------------------------- S23


def _batch(sequence: int, *, producer_id: int = 4000) -> ProduceRequest:
    """Record `p:sequence`, one per batch, acks=1 (each answered at once)."""
    data = ProducePartitionData("T", 0, (f"p:{sequence}",), producer_id, 0, sequence if producer_id >= 0 else -1)
    return ProduceRequest(1, 30000, (data,))


@pytest.mark.parametrize("idempotence", [False, True], ids=["plain", "idempotent"])
def test_s23_the_broker_remembers_five_batches_per_producer(idempotence: bool) -> None:
    """Batches of sequence 0 to 5 (one record each) land at offsets 0 to 5; the broker keeps
    the last five, sequences 1 to 5. A copy of the sequence-1 batch is a duplicate: answered
    with its offset, 1, and not appended. A copy of the sequence-0 batch is not recognised:
    it must be sequence 6, so OUT_OF_ORDER_SEQUENCE_NUMBER. Without a producer id both copies
    are simply appended, at 6 and 7."""
    pid = 4000 if idempotence else -1
    steps = [(0, B1, leader_and_isr(1, 0, (1,), (1,)), 1)]
    steps += [(100 + 10 * s, B1, _batch(s, producer_id=pid), 10 + s) for s in range(6)]
    steps += [(200, B1, _batch(1, producer_id=pid), 20), (210, B1, _batch(0, producer_id=pid), 21)]
    script = Script(steps)
    kernel = build("3.9", (1,), script)
    kernel.run(300)
    answers = [(error, offset) for _, error, offset in produce_results(script)]
    assert answers[:6] == [(ErrorCode.NONE, s) for s in range(6)]
    if idempotence:
        assert answers[6:] == [(ErrorCode.NONE, 1), (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, -1)]
        assert [v for _, v in _log(kernel)] == [f"p:{s}" for s in range(6)]
    else:
        assert answers[6:] == [(ErrorCode.NONE, 6), (ErrorCode.NONE, 7)]
        assert [v for _, v in _log(kernel)] == [f"p:{s}" for s in (0, 1, 2, 3, 4, 5, 1, 0)]
    kernel.shutdown()


# ------------------------------------------------------------------------------------- S8


@pytest.mark.parametrize("idempotence", [False, True], ids=["plain", "idempotent"])
def test_s8_variant_the_retries_of_an_append_the_isr_left_behind(idempotence: bool) -> None:
    """3.6, min ISR 2, ISR {1,2}: the producer's record lands at 10 (101) just after B2 stopped
    (50). B1 drops B2 from the ISR at 1502, the HW moves to 11 and the answer is
    NOT_ENOUGH_REPLICAS_AFTER_APPEND. Every retry, one per `retry.backoff.ms`, is refused
    NOT_ENOUGH_REPLICAS before the duplicate check, fourteen of them, until B2 is back in the
    ISR (3007). The next retry (3032):
    - without idempotence is appended at 11, a second copy;
    - with idempotence is found a duplicate, answered with base offset 10."""
    script = Script(
        [
            (0, B1, leader_and_isr(1, 0, (1, 2)), 1),
            (0, B2, leader_and_isr(1, 0, (1, 2)), 2),
            (3001, B2, leader_and_isr(1, 0, (1,), partition_epoch=1), 3),
        ]
    )
    disks = {b: seeded_disk(SEEDED, high_watermark=10) for b in (1, 2)}
    producer = _producer(idempotence=idempotence, start_ms=100)
    kernel = build(
        "3.6", (1, 2), script, disks=disks, producers=(producer,), min_insync_replicas=2, replica_lag_time_max_ms=1000
    )
    kernel.schedule(50, "B2 stops", lambda: kernel.crash("broker-2"))
    kernel.schedule(3000, "B2 restarts", lambda: kernel.restart("broker-2"))
    events = _events(kernel)
    kernel.run(10000)
    retried = [(e["ts_ms"], e["error"]) for e in _where(events, "batch_retried")]
    assert retried == [(1503, "NOT_ENOUGH_REPLICAS_AFTER_APPEND")] + [
        (1605 + 102 * i, "NOT_ENOUGH_REPLICAS") for i in range(14)
    ]
    [(expanded, isr)] = [(e["ts_ms"], e["isr"]) for e in _where(events, "isr_expanded")]
    assert (expanded, isr) == (3007, [1, 2])
    [done] = _where(events, "produce_completed")
    if idempotence:
        assert (done["ts_ms"], done["error"], done["base_offset"], done["attempt"]) == (3033, "NONE", 10, 16)
        assert _log(kernel)[10:] == [(10, "producer-1:0")]
    else:
        assert (done["ts_ms"], done["error"], done["base_offset"], done["attempt"]) == (3035, "NONE", 11, 16)
        assert _log(kernel)[10:] == [(10, "producer-1:0"), (11, "producer-1:0")]
    kernel.shutdown()


def test_s8_variant_from_3_7_the_parked_append_times_out() -> None:
    """From 3.7 the HW does not pass min ISR: the append at 10 waits, and the request times out
    after `request.timeout.ms` (sent at 100: 30100), then the retries are refused."""
    script = Script([(0, B1, leader_and_isr(1, 0, (1, 2)), 1), (0, B2, leader_and_isr(1, 0, (1, 2)), 2)])
    disks = {b: seeded_disk(SEEDED, high_watermark=10) for b in (1, 2)}
    producer = _producer(idempotence=True, start_ms=100)
    kernel = build(
        "3.7", (1, 2), script, disks=disks, producers=(producer,), min_insync_replicas=2, replica_lag_time_max_ms=1000
    )
    kernel.schedule(50, "B2 stops", lambda: kernel.crash("broker-2"))
    events = _events(kernel)
    kernel.run(30500)
    retried = [(e["ts_ms"], e["error"]) for e in _where(events, "batch_retried")]
    assert retried[:2] == [(30100, "REQUEST_TIMED_OUT"), (30202, "NOT_ENOUGH_REPLICAS")]
    assert partition_view(kernel, 1)["high_watermark"] == 10
    kernel.shutdown()


# ------------------------------------------------------------------------ a lossy network

LOSSY = """
[run]
"duration.ms" = 20000
[cluster]
brokers = 3
[broker]
"min.insync.replicas" = 2
[[topics]]
name = "T"
partitions = 2
"replication.factor" = 3
[[producers]]
topic = "T"
records = 300
"interval.ms" = 10
"request.timeout.ms" = 1000
"enable.idempotence" = IDEMPOTENCE
[[faults]]
kind = "drop"
dst = ["producer-1"]
probability = 0.2
"at.ms" = 500
"duration.ms" = 2000
"""


@pytest.mark.parametrize("seed", [1, 2])
def test_on_a_lossy_network_retries_write_twice_unless_idempotent(tmp_path: Path, seed: int) -> None:
    """A fifth of the answers to the producer are lost for 2 s. Each loss breaks the
    connection: the requests in flight on it are retried, and the ones the brokers had written
    are written again unless the producer is idempotent. summary.json counts the extra copies
    as `log_duplicates` and names each record written twice; nothing was consumed, so the
    consumption duplicates stay at 0."""
    summaries = {}
    for idempotence in ("false", "true"):
        text = LOSSY.replace("IDEMPOTENCE", idempotence)
        run_scenario(parse_scenario(text, "lossy", [f"run.seed={seed}"]), tmp_path / idempotence)
        summaries[idempotence] = json.loads((tmp_path / idempotence / "summary.json").read_text())
    plain, idempotent = summaries["false"], summaries["true"]
    for s in (plain, idempotent):
        assert (s["produced"], s["acked"], s["lost_acked"], s["duplicates"]) == (300, 300, 0, 0)
    assert plain["log_duplicates"] > 0
    assert plain["log_duplicates"] == sum(len(d["offsets"]) - 1 for d in plain["duplicated_records"])
    assert all(d["value"].startswith("producer-1:") for d in plain["duplicated_records"])
    assert (idempotent["log_duplicates"], idempotent["duplicated_records"]) == (0, [])


# ------------------------------------------------------------------------------ linger.ms

LINGER = """
[run]
"duration.ms" = 6000
[network]
"latency.min.ms" = 1
"latency.max.ms" = 1
[cluster]
brokers = 3
[[topics]]
name = "T"
partitions = 12
"replication.factor" = 3
[[producers]]
topic = "T"
acks = 1
records = 5000
"interval.ms" = 1
"linger.ms" = LINGER
"""


def test_linger_5_sends_five_times_fewer_requests_than_linger_0() -> None:
    """1,000 records a second for 5 s. With `linger.ms` 0 each record leaves at once in a
    request of its own (an answer takes 2 ms, so fewer than five are ever in flight); with 5
    each batch waits 5 ms and leaves with the six records made meanwhile (the record made as
    the linger ends joins it, since the sender runs after the application's tick). With acks=all
    the comparison says less: the broker mutes a connection while a produce waits for the
    followers, so records gather in batches even at linger 0."""
    requests = {}
    for linger in (0, 5):
        with Cluster(parse_scenario(LINGER.replace("LINGER", str(linger)), "linger")) as cluster:
            cluster.run_to_end()
            producer = cluster.state("producer-1", "producer")
            assert producer["acked"] == 5000
            requests[linger] = producer["produce_requests"]
    assert requests[0] >= 4900
    assert requests[0] >= 5 * requests[5]


# ------------------------------------------------------------------ connections and expiry


def test_a_produce_behind_a_waiting_one_on_its_connection_waits_for_its_answer() -> None:
    """Kafka's socket server reads a connection's next request only once the previous one is
    answered. Produce a (acks=all, 1 s timeout) waits in the purgatory, B2 having stopped;
    produce b (acks=1) comes on the same connection at 110 and is read only when a's answer
    leaves at 1101: it is appended then, at offset 1, and answered a millisecond later."""
    a = ProduceRequest(-1, 1000, (ProducePartitionData("T", 0, ("a",)),))
    b = ProduceRequest(1, 1000, (ProducePartitionData("T", 0, ("b",)),))
    script = Script(
        [
            (0, B1, leader_and_isr(1, 0, (1, 2)), 1),
            (0, B2, leader_and_isr(1, 0, (1, 2)), 2),
            (100, B1, a, 3),
            (110, B1, b, 4),
        ]
    )
    kernel = build("3.9", (1, 2), script)
    kernel.schedule(50, "B2 stops", lambda: kernel.crash("broker-2"))
    kernel.run(2000)
    assert produce_results(script) == [(1102, ErrorCode.REQUEST_TIMED_OUT, -1), (1102, ErrorCode.NONE, 1)]
    kernel.shutdown()


def test_a_batch_expires_after_the_delivery_timeout_in_flight_or_queued() -> None:
    """KIP-91: B1 loses power at 50. The record made at 100 is sent at once; its request times
    out at 1100 and it is retried at 1200; its delivery timeout (1500 ms from its creation)
    passes while that retry is in flight: it fails at 1600 with DELIVERY_TIMEOUT, and the late
    request is forgotten. A record made at 1300 waits in the queue behind the full connection
    and expires there at 2800."""
    producer = _producer(
        idempotence=False, records=2, start_ms=100, interval_ms=1200, request_timeout_ms=1000,
        delivery_timeout_ms=1500, max_in_flight=1,
    )
    script = Script([(0, B1, leader_and_isr(1, 0, (1,), (1,)), 1)])
    kernel = build("3.9", (1,), script, producers=(producer,))
    kernel.schedule(50, "B1 loses power", lambda: kernel.crash("broker-1", CrashKind.POWER_LOSS))
    events = _events(kernel)
    kernel.run(4000)
    assert [(e["ts_ms"], e["error"]) for e in _where(events, "batch_retried")] == [(1100, "REQUEST_TIMED_OUT")]
    done = [(e["ts_ms"], e["records"], e["error"], e["attempt"]) for e in _where(events, "produce_completed")]
    assert done == [(1600, [0], "DELIVERY_TIMEOUT", 2), (2800, [1], "DELIVERY_TIMEOUT", 1)]
    kernel.shutdown()


@pytest.mark.parametrize(("version", "expected"), [("2.4", ErrorCode.UNKNOWN_PRODUCER_ID), ("2.5", ErrorCode.NONE)])
def test_a_producer_id_the_broker_has_no_state_for(version: str, expected: ErrorCode) -> None:
    """KIP-360 (2.5): a batch from a producer id the partition has no state for is accepted
    whatever its sequence (its records may have gone with retention); before, only a first
    sequence of 0 was, and another got UNKNOWN_PRODUCER_ID."""
    steps = [(0, B1, leader_and_isr(1, 0, (1,), (1,)), 1), (100, B1, _batch(0, producer_id=7), 2)]
    steps += [(110, B1, _batch(3, producer_id=8), 3)]
    script = Script(steps)
    kernel = build(version, (1,), script)
    kernel.run(200)
    answers = [(error, offset) for _, error, offset in produce_results(script)]
    assert answers == [(ErrorCode.NONE, 0), (expected, 1 if expected is ErrorCode.NONE else -1)]
    kernel.shutdown()


def _metadata(leader: int, leader_epoch: int) -> UpdateMetadataRequest:
    partition = UpdateMetadataPartition("T", 0, 1, leader, leader_epoch, (1, 2), 0, (1, 2))
    return UpdateMetadataRequest(0, 1, -1, (partition,), (1, 2))


def test_a_new_leader_deduplicates_a_retry_of_a_batch_its_predecessor_wrote() -> None:
    """Every replica keeps the producers' state from the batches it appends. The batch lands
    at 10 on B1 and is copied to B2; its answer is lost. At 2000 the controller moves the
    leadership to B2. The request times out at 31000; the producer asks for metadata, learns
    of B2 and retries there: B2 finds the batch among the producer's last five and answers with
    base offset 10. Nothing is written twice."""
    script = Script(
        [
            (0, B1, leader_and_isr(1, 0, (1, 2)), 1),
            (0, B2, leader_and_isr(1, 0, (1, 2)), 2),
            (0, B1, _metadata(1, 0), 3),
            (0, B2, _metadata(1, 0), 4),
            (2000, B1, leader_and_isr(2, 1, (1, 2)), 5),
            (2000, B2, leader_and_isr(2, 1, (1, 2)), 6),
            (2000, B1, _metadata(2, 1), 7),
            (2000, B2, _metadata(2, 1), 8),
        ]
    )
    disks = {b: seeded_disk(SEEDED, high_watermark=10) for b in (1, 2)}
    producer = ProducerConfig(
        name="producer-1", topic="T", partitions=1, bootstrap=(1, 2), idempotence=True, records=1, start_ms=1000
    )
    kernel = build("3.9", (1, 2), script, disks=disks, producers=(producer,))
    kernel.add_link_fault(LinkFault(FaultKind.DROP, 1002, 1100, frozenset({"broker-1"}), frozenset({"producer-1"})))
    events = _events(kernel)
    kernel.run(40000)
    [resent] = [e for e in _where(events, "batch_sent") if e["attempt"] == 2]
    assert resent["broker_id"] == 2
    [dedup] = _where(events, "batch_deduplicated")
    assert (dedup["node"], dedup["base_offset"]) == ("broker-2", 10)
    [done] = _where(events, "produce_completed")
    assert (done["error"], done["base_offset"]) == ("NONE", 10)
    assert _log(kernel, 2)[10:] == _log(kernel, 1)[10:] == [(10, "producer-1:0")]
    kernel.shutdown()


ACKS_0_LEADER_MOVED = """
[run]
name = "acks-0"
"duration.ms" = 60000

[cluster]
brokers = 3

[broker]
"auto.leader.rebalance.enable" = false

[[topics]]
name = "T"
partitions = 1
"replication.factor" = 3
replicas = [[1, 2, 3]]

[[producers]]
topic = "T"
records = 500
"interval.ms" = 100
acks = "0"

[[faults]]
kind = "pause"
node = "broker-1"
"at.ms" = 10000
"duration.ms" = 25000
"""


def test_acks_0_a_failed_append_closes_the_connection_and_the_producer_finds_the_new_leader() -> None:
    """With acks=0 the broker answers nothing, so a producer learns of a failed append only
    because the broker closes its connection (`KafkaApis.handleProduceRequest`). Broker 1 is
    paused while broker 2 takes over the partition; when it resumes, its first refusal
    (NOT_LEADER_OR_FOLLOWER) closes the connection, the producer asks for metadata again, and
    every later batch goes to broker 2."""
    with Cluster(parse_scenario(ACKS_0_LEADER_MOVED, "acks-0.toml")) as cluster:
        events = _events(cluster.kernel)
        cluster.run_to_end()
    [leader] = [e for e in _where(events, "became_leader") if e["node"] == "broker-2"]
    [refused] = _where(events, "produce_rejected")
    assert (refused["node"], refused["error"]) == ("broker-1", "NOT_LEADER_OR_FOLLOWER")
    assert refused["ts_ms"] > 35_000 > leader["ts_ms"]
    later = [e["broker_id"] for e in _where(events, "batch_sent") if e["ts_ms"] > refused["ts_ms"]]
    assert later and set(later) == {2}
