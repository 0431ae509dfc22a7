"""Closed and refused connections (`protocols.connection`): a crashed process on a live machine
closes its connections and refuses new ones, so clients learn within a round trip; a machine
that lost power says nothing, and clients wait for their own timeouts."""

from __future__ import annotations

from typing import Any

from sim.cluster.harness import Cluster
from sim.cluster.scenario import parse_scenario

SCENARIO = """
[run]
"duration.ms" = 40000
[network]
"latency.min.ms" = 1
"latency.max.ms" = 5
[cluster]
brokers = 3
[[topics]]
name = "T"
replicas = [[1, 2, 3]]
"replication.factor" = 3
[[producers]]
topic = "T"
acks = "all"
records = 300
"interval.ms" = 100
"start.ms" = 1000
"request.timeout.ms" = 30000
retries = 0
"""
CRASH_MS = 3050
ROUND_TRIP_MS = 2 * 5


def _run(kind: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Broker 1, the leader of T-0, crashes between two sends; the producer's results after."""
    events: list[dict[str, Any]] = []
    with Cluster(parse_scenario(SCENARIO, "test", [])) as cluster:
        cluster.kernel.observe(events.append)
        cluster.run(until_ms=CRASH_MS)
        cluster.crash("broker-1", kind)
        cluster.run_to_end()
    after = [e for e in events if e["event"] == "produce_completed" and e["ts_ms"] >= CRASH_MS]
    return events, after


def test_a_produce_to_a_crashed_process_fails_within_a_round_trip() -> None:
    """The first record sent to broker 1 after its process died (at 3100) fails with
    NETWORK_EXCEPTION within a round trip. Then broker 1 is not ready for a back-off that doubles
    from `reconnect.backoff.ms` (50 ms) to `reconnect.backoff.max.ms` (1 s): records for it wait,
    each attempt is refused, and every failure comes within a round trip of an attempt. Once
    the controller has moved the leadership (broker 1's session expires 18 s after its last
    ping) and a failed attempt has refreshed the metadata, the waiting records go to the new
    leader and are acknowledged."""
    events, after = _run("process")
    [closed] = [e for e in events if e["event"] == "connections_closed"]
    assert closed["target"] == "broker-1" and "producer-1/producer" in closed["peers"]
    failed = [e for e in after if e["error"] == "NETWORK_EXCEPTION"]
    # Record 21 (made at 3100) waits out the back-off the closed connection started, then is
    # refused: it fails within a round trip of being sent.
    [sent] = [e for e in events if e["event"] == "batch_sent" and e["records"] == [21]]
    assert failed[0]["records"] == [21] and sent["ts_ms"] <= CRASH_MS + ROUND_TRIP_MS + 50
    assert failed[0]["ts_ms"] - sent["ts_ms"] <= ROUND_TRIP_MS
    refused = sorted({
        e["ts_ms"] for e in events
        if e["event"] == "message_dropped" and e["reason"] == "connection_refused"
        and e["src"] == "producer-1/producer" and e["dst"] == "broker-1/broker"
    })
    # An attempt is what was sent before its refusal came back: refusals a round trip apart.
    attempts = [t for i, t in enumerate(refused) if i == 0 or t - refused[i - 1] > ROUND_TRIP_MS]
    gaps = [b - a for a, b in zip(attempts, attempts[1:], strict=False)]
    assert all(gap >= min(50 * 2**i, 1000) for i, gap in enumerate(gaps)), gaps
    assert len(attempts) <= 6 + 18  # the back-off doubles 5 times, then one a second for 18 s
    assert all(any(0 <= e["ts_ms"] - t <= ROUND_TRIP_MS for t in refused) for e in failed)
    assert {e["error"] for e in after} <= {"NETWORK_EXCEPTION", "NONE"}
    [election] = [e for e in events if e["event"] == "leader_elected" and e["ts_ms"] > CRASH_MS]
    assert election["leader"] == 2
    acked_after = [e for e in after if e["error"] == "NONE"]
    assert acked_after and acked_after[0]["ts_ms"] > election["ts_ms"]
    # until a failed attempt refreshes its metadata, the producer still names broker 1: at most
    # one more back-off
    assert failed[-1]["ts_ms"] <= election["ts_ms"] + 1000 + ROUND_TRIP_MS


def test_a_machine_without_power_says_nothing_and_the_produce_times_out() -> None:
    """The same crash as a power loss: no connection closes, so the first record sent to
    broker 1 fails only after `request.timeout.ms` (30 s), with REQUEST_TIMED_OUT. The timeout
    closes the connection, so the other four requests in flight on it (five at most) fail with
    it; the records queued behind them meanwhile go, as two full batches, to the new leader."""
    events, after = _run("power_loss")
    assert not [e for e in events if e["event"] == "connections_closed"]
    errors = [e for e in after if e["error"] != "NONE"]
    assert [(e["ts_ms"], e["records"], e["error"]) for e in errors] == [
        (1000 + 100 * 21 + 30000, [n], "REQUEST_TIMED_OUT") for n in range(21, 26)
    ]
    acked = [e for e in after if e["error"] == "NONE"]
    assert [r for e in acked for r in e["records"]] == list(range(26, 300))
    assert all(e["ts_ms"] > errors[0]["ts_ms"] for e in acked)


def test_a_follower_whose_leader_process_died_retries_after_the_fetch_backoff() -> None:
    """B2 follows B1 (exact 1 ms latency). B1's process dies at 100 with B2's fetch parked in
    its purgatory: B2 hears the connection close at 101 and backs off `replica.fetch.backoff.ms`
    (1000 ms). Its attempt at 1101 is refused on arrival at 1102 and B2 is told at 1103; the
    next attempt leaves at 2103, and so on: one every 1002 ms, instead of one every
    `replica.socket.timeout.ms` (30 s)."""
    from actors.addresses import broker_address  # noqa: PLC0415
    from tests.harness import Script, build, leader_and_isr  # noqa: PLC0415

    b1, b2 = broker_address(1), broker_address(2)
    script = Script([(0, b1, leader_and_isr(1, 0, (1, 2)), 1), (0, b2, leader_and_isr(1, 0, (1, 2)), 2)])
    kernel = build("3.9", (1, 2), script)
    events: list[dict[str, Any]] = []
    kernel.observe(events.append)
    kernel.schedule(100, "B1's process dies", lambda: kernel.crash("broker-1"))
    kernel.run(3500)
    refused = [
        e["ts_ms"] for e in events
        if e["event"] == "message_dropped" and e["src"] == "broker-2/broker" and e["reason"] == "connection_refused"
    ]
    assert refused == [1102, 2104, 3106]  # sent at 1101, 2103, 3105: each one latency on the way
    kernel.shutdown()
