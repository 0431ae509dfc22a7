"""A partition holds TCP traffic (`sim.engine.network`): what a cut link carries waits in its
queue, in order, and goes on when the cut is lifted, unless its connection ended first (a
crash, or a client closing it on its request timeout). `drop`, the lossy fault, still loses.
The script plays the controller; latency is exactly 1 ms, so times are exact."""

from __future__ import annotations

from typing import Any

from actors.addresses import broker_address
from actors.core import Address
from actors.producer.config import ProducerConfig
from protocols.connection import Disconnected
from protocols.errors import ErrorCode
from sim.engine.kernel import Kernel
from sim.engine.network import FaultKind, LinkFault
from tests.harness import Script, build, leader_and_isr, partition_view, produce, produce_results

B1, B2 = broker_address(1), broker_address(2)
CUT_MS, HEAL_MS = 1000, 6000
THREE_RECORDS = [
    (t, B1, produce((v,), acks=1), n)
    for n, (t, v) in enumerate([(2000, "a"), (3000, "b"), (4000, "c")], 10)
]
"""acks=1 records "a", "b" and "c" from the script to B1, at 2000, 3000 and 4000."""


def _leader_b1(*steps: tuple[int, Address, Any, int]) -> Script:
    """B1 leads T-0 with ISR {1, 2} from 0; then `steps`."""
    return Script(
        [(0, B1, leader_and_isr(1, 0, (1, 2)), 1), (0, B2, leader_and_isr(1, 0, (1, 2)), 2), *steps]
    )


def _events(kernel: Kernel) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    kernel.observe(events.append)
    return events


def _where(events: list[dict[str, Any]], name: str, **fields: Any) -> list[dict[str, Any]]:
    return [
        e for e in events if e["event"] == name and all(e.get(k) == v for k, v in fields.items())
    ]


def _cut(
    kernel: Kernel, side_a: list[str], side_b: list[str], *, heal_ms: int = HEAL_MS, one_way: bool = False
) -> None:
    kernel.schedule(CUT_MS, "cut", lambda: kernel.partition(side_a, side_b, one_way=one_way))
    kernel.schedule(heal_ms, "heal", kernel.heal)


def _producer() -> ProducerConfig:
    """An acks=all producer of one record, at 2000, to B1."""
    return ProducerConfig(
        name="producer-1", topic="T", partitions=1, bootstrap=(1,), leaders=(1,), records=1, start_ms=2000
    )


def _log(kernel: Kernel, broker: int = 1) -> list[tuple[int, str]]:
    return [(offset, value) for offset, _, value in partition_view(kernel, broker)["log"]]


def test_a_5s_cut_between_leader_and_follower_costs_the_follower_5s_not_30s() -> None:
    """B1 and B2 are cut apart from 1000 to 6000, while B2's fetch waits in B1's purgatory
    (`replica.fetch.wait.max.ms`, 500 ms): B1's empty answer is held. An acks=all record
    reaches B1 at 2001 and waits for B2. At 6000 the held answer goes on (6001); B2 fetches at
    once and has the record at 6003; its next fetch moves B1's HW at 6004, which answers the
    producer at 6005, and B2 learns the HW from that fetch's answer when its wait ends (6505).
    The follower lost the 5 s of the cut. When a cut lost the answer instead, B2 fetched again
    only after `replica.socket.timeout.ms` (30 s from its fetch, sent before 1000)."""
    producer = _producer()
    kernel = build("3.9", (1, 2), _leader_b1(), producers=(producer,))
    events = _events(kernel)
    _cut(kernel, ["broker-1"], ["broker-2"])
    kernel.run(10_000)
    follower = _where(events, "replica_offsets_changed", node="broker-2", role="follower")
    offsets = [(e["ts_ms"], e["log_end_offset"], e["high_watermark"]) for e in follower]
    assert offsets == [(6003, 1, 0), (6505, 1, 1)]
    [done] = _where(events, "produce_completed")
    assert (done["ts_ms"], done["error"], done["base_offset"]) == (6005, "NONE", 0)
    [healed] = _where(events, "network_healed")
    assert healed["released"] == 1  # B1's answer: B2 sent nothing while its fetch was out
    assert not _where(events, "message_dropped")
    assert not _where(events, "isr_shrunk")
    kernel.shutdown()


def test_what_a_cut_link_held_is_delivered_in_order_when_it_heals() -> None:
    """The script's link to B1 is cut from 1000 to 6000; it sends three acks=1 records at 2000,
    3000 and 4000. At 6000 the three requests go on in the order they were sent, each one
    latency away (6001): B1 appends them at offsets 0, 1 and 2 and answers at 6002."""
    script = _leader_b1(*THREE_RECORDS)
    kernel = build("3.9", (1, 2), script)
    events = _events(kernel)
    _cut(kernel, ["harness"], ["broker-1"])
    kernel.run(8000)
    assert produce_results(script) == [
        (6002, ErrorCode.NONE, 0), (6002, ErrorCode.NONE, 1), (6002, ErrorCode.NONE, 2),
    ]
    assert _log(kernel) == [(0, "a"), (1, "b"), (2, "c")]
    appended = _where(events, "records_appended", node="broker-1")
    assert [e["ts_ms"] for e in appended] == [6001, 6001, 6001]
    assert [e["released"] for e in _where(events, "network_healed")] == [3]
    kernel.shutdown()


def test_a_one_way_cut_holds_one_direction_only() -> None:
    """Only B1's link to the script is cut: the records reach B1 and are appended at once
    (2001, 3001, 4001), and the answers wait for the heal, in order."""
    script = _leader_b1(*THREE_RECORDS)
    kernel = build("3.9", (1, 2), script)
    events = _events(kernel)
    _cut(kernel, ["broker-1"], ["harness"], one_way=True)
    kernel.run(8000)
    appended = _where(events, "records_appended", node="broker-1")
    assert [e["ts_ms"] for e in appended] == [2001, 3001, 4001]
    assert produce_results(script) == [
        (6001, ErrorCode.NONE, 0), (6001, ErrorCode.NONE, 1), (6001, ErrorCode.NONE, 2),
    ]
    kernel.shutdown()


def test_a_request_timeout_during_the_cut_closes_the_connection_and_loses_what_it_held() -> None:
    """The producer's link to B1 is cut from 1000 to 40000; its record, sent at 2000, is held.
    `request.timeout.ms` (30 s) passes at 32000: the producer closes the connection, as
    `NetworkClient` does, and the batch fails with it (REQUEST_TIMED_OUT, Kafka's timed-out
    disconnect), to be retried; the held request dies with the connection. The retry (32100,
    after `retry.backoff.ms`) is held in its turn and is all that goes on at the heal: B1
    writes the record once, at 40001, and the producer has its answer at 40004. Had the old
    request gone on too, the record would be in the log twice."""
    producer = _producer()
    kernel = build("3.9", (1, 2), _leader_b1(), producers=(producer,))
    events = _events(kernel)
    _cut(kernel, ["producer-1"], ["broker-1"], heal_ms=40_000)
    kernel.run(45_000)
    [retried] = _where(events, "batch_retried")
    assert (retried["ts_ms"], retried["error"]) == (32_000, "REQUEST_TIMED_OUT")
    dropped = _where(events, "message_dropped")
    assert [(e["ts_ms"], e["src"], e["dst"], e["reason"]) for e in dropped] == [
        (32_000, "producer-1/producer", "broker-1/broker", "connection_closed")
    ]
    assert [e["ts_ms"] for e in _where(events, "batch_sent")] == [2000, 32_100]
    assert [e["released"] for e in _where(events, "network_healed")] == [1]
    [done] = _where(events, "produce_completed")
    assert (done["ts_ms"], done["error"], done["base_offset"]) == (40_004, "NONE", 0)
    assert done["attempt"] == 2
    assert _log(kernel) == [(0, "producer-1:0")]
    kernel.shutdown()


def test_a_follower_whose_fetch_times_out_in_the_cut_closes_the_connection() -> None:
    """B1 and B2 are cut apart from 1000 to 40000. B2's last fetch before the cut left at 503;
    `replica.socket.timeout.ms` (30 s) passes at 30503: the fetcher closes the connection, so
    B1's held answer to that fetch is lost, and fetches again from scratch (a full fetch); that
    request is held and is all that goes on at the heal. B2 has the record written during the
    cut at 40002, and its HW from the next fetch's answer, when its wait ends."""
    script = _leader_b1((2000, B1, produce(("a",), acks=1), 10))
    kernel = build("3.9", (1, 2), script)
    events = _events(kernel)
    _cut(kernel, ["broker-1"], ["broker-2"], heal_ms=40_000)
    kernel.run(41_000)
    dropped = _where(events, "message_dropped")
    assert [(e["ts_ms"], e["src"], e["dst"], e["reason"]) for e in dropped] == [
        (30_503, "broker-1/broker", "broker-2/broker", "connection_closed")
    ]
    assert [e["released"] for e in _where(events, "network_healed")] == [1]
    follower = _where(events, "replica_offsets_changed", node="broker-2", role="follower")
    offsets = [(e["ts_ms"], e["log_end_offset"], e["high_watermark"]) for e in follower]
    assert offsets == [(40_002, 1, 0), (40_504, 1, 1)]
    kernel.shutdown()


def test_a_crash_in_the_cut_ends_what_its_connections_held_and_the_close_comes_at_the_heal() -> None:
    """The script's link to B1 is cut both ways from 1000 to 6000. Its record sent at 2000 is
    held; B1's process dies at 3000 and restarts at 4000: the held request is lost with the
    connection at 3000. The script had a connection to B1, so it is told of the close, but the
    notice crosses the cut too: it arrives one latency after the heal, at 6001, though B1 has
    restarted by then."""
    script = _leader_b1((2000, B1, produce(("a",), acks=1), 10))
    kernel = build("3.9", (1, 2), script)
    events = _events(kernel)
    _cut(kernel, ["harness"], ["broker-1"])
    kernel.schedule(3000, "crash B1", lambda: kernel.crash("broker-1"))
    kernel.schedule(4000, "restart B1", lambda: kernel.restart("broker-1"))
    kernel.run(8000)
    dropped = _where(events, "message_dropped")
    assert [(e["ts_ms"], e["src"], e["dst"], e["reason"]) for e in dropped] == [
        (3000, "harness/script", "broker-1/broker", "connection_reset")
    ]
    after_cut = [(t, src, msg) for t, src, msg in script.received if t > CUT_MS]
    assert after_cut == [(6001, Address("broker-1", "connection"), Disconnected("broker-1"))]
    assert not _where(events, "records_appended", node="broker-1")
    kernel.shutdown()


def test_a_drop_fault_still_loses_what_it_drops() -> None:
    """`drop` is the lossy fault, not a cut: the record the script sends at 2000 through a
    link dropping everything is lost, and nothing brings it back when the fault ends."""
    script = _leader_b1((2000, B1, produce(("a",), acks=1), 10))
    kernel = build("3.9", (1, 2), script)
    events = _events(kernel)
    lossy = LinkFault(FaultKind.DROP, CUT_MS, HEAL_MS, frozenset({"harness"}), frozenset({"broker-1"}))
    kernel.add_link_fault(lossy)
    kernel.run(8000)
    dropped = _where(events, "message_dropped")
    assert [(e["ts_ms"], e["reason"]) for e in dropped] == [(2000, "dropped")]
    assert produce_results(script) == []
    assert _log(kernel) == []
    kernel.shutdown()
