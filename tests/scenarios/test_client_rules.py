"""Client rules end to end: where a consumer's position comes from after OFFSET_OUT_OF_RANGE,
commitSync's timer, and the retry back-off of consumers and producers by version (KIP-580).
Each test states one rule through the event log, with the requests the clients sent where the
log alone cannot tell."""

from __future__ import annotations

from typing import Any

import pytest

from protocols.codec import decode_frame
from sim.cluster.harness import Cluster
from sim.cluster.scenario import parse_scenario
from sim.engine.kernel import HostKind
from tests.scenarios.test_retention import CONSUMER, SCENARIO


def where(events: list[dict[str, Any]], name: str, **match: Any) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == name and all(e.get(k) == v for k, v in match.items())]


def run_spying(
    text: str, overrides: list[str], *, until_ms: int, clients: tuple[str, ...] = ("consumer-",), skip: tuple[str, ...] = ()
) -> tuple[list[dict[str, Any]], list[tuple[int, str, str]]]:
    """Run a scenario and note every request the clients send but those named in `skip`:
    (time, destination node, request type)."""
    sent: list[tuple[int, str, str]] = []
    with Cluster(parse_scenario(text, "s.toml", overrides), host=HostKind.DIRECT) as cluster:
        transmit = cluster.kernel.network.transmit

        def spy(now_ms: int, src: str, dst: str, frame: bytes) -> Any:
            if src.startswith(clients):
                kind = type(decode_frame(frame).message).__name__
                if kind not in skip:
                    sent.append((now_ms, dst.split("/")[0], kind))
            return transmit(now_ms, src, dst, frame)

        cluster.kernel.network.transmit = spy  # type: ignore[method-assign]
        events: list[dict[str, Any]] = []
        cluster.kernel.observe(events.append)
        cluster.run(until_ms=until_ms)
        assert cluster.kernel.invariant_violations == []
    return events, sent


# ---------------------------------------------------------------------- positions

RETENTION = [
    "topics.1.retention.bytes=2000",
    "broker.group.initial.rebalance.delay.ms=0",
    "broker.offsets.topic.num.partitions=1",
    "cluster.metadata.mode=zookeeper",
    "producers.1.start.ms=500",
]


@pytest.mark.parametrize(
    ("policy", "positions", "requests"),
    [
        ("earliest", [(511, 0, "no_committed_offset"), (2017, 85, "out_of_range")], [507, 509, 2015]),
        ("latest", [(511, 1, "no_committed_offset"), (2018, 100, "out_of_range")], [507, 509, 2016]),
    ],
)
def test_a_position_out_of_range_is_reset_at_once_without_asking_for_the_committed_offset(
    policy: str, positions: list[tuple[int, int, str]], requests: list[int]
) -> None:
    """A partition whose position needs `auto.offset.reset` awaits its reset (`AWAIT_RESET`,
    `SubscriptionState.requestOffsetReset`): the consumer sends ListOffsets and never asks
    OffsetFetch for it (`initializingPartitions` leaves it out). Consumer 1 gets T-0 at 507 ms;
    OffsetFetch finds no committed offset, and one ListOffsets (509 ms) sets the position by
    the policy: 0 (earliest) or the HW, 1 (latest). Retention moves the log start to 85 at
    2000 ms; the fetch at offset ~30 is answered OFFSET_OUT_OF_RANGE, and the consumer sends
    one ListOffsets, no OffsetFetch, and seeks to 85 (earliest) or 100 (latest) with reason
    `out_of_range`."""
    events, sent = run_spying(
        SCENARIO + CONSUMER,
        [*RETENTION, f"consumers.1.auto.offset.reset={policy}"],
        until_ms=8000,
        skip=("FetchRequest", "HeartbeatRequest", "FindCoordinatorRequest"),
    )
    got = [(e["ts_ms"], e["offset"], e["reason"]) for e in where(events, "fetch_position_set")]
    assert got == positions
    assert {e["source"] for e in where(events, "fetch_position_set")} == {policy}
    first, reset, again = requests
    assert [s for s in sent if 500 <= s[0] < 2100] == [
        (first, "broker-1", "OffsetFetchRequest"),
        (reset, "broker-1", "ListOffsetsRequest"),
        (again, "broker-1", "ListOffsetsRequest"),
    ]


# ---------------------------------------------------------------------- commitSync's timer

SYNC_COMMITTER = """
[[consumers]]
"group.id" = "my-group"
topics = ["T"]
"session.timeout.ms" = 30000
"enable.auto.commit" = false
commit = "sync"
"max.poll.records" = 20
"process.record.ms" = 1
"auto.offset.reset" = "earliest"
"request.timeout.ms" = 3000
"default.api.timeout.ms" = {api_timeout}
"""
ZOMBIE = '\n[[faults]]\nkind = "zombie"\nnode = "consumer-1"\n"at.ms" = 10000\n"duration.ms" = 12000\n'


def _sync_calls(events: list[dict[str, Any]]) -> list[tuple[list[Any], list[int]]]:
    """Each commitSync call of consumer 1: its offsets and the times its attempts were sent."""
    calls: list[tuple[list[Any], list[int]]] = []
    for e in where(events, "offset_commit_sent", node="consumer-1", kind="sync"):
        if calls and calls[-1][0] == e["offsets"]:
            calls[-1][1].append(e["ts_ms"])
        else:
            calls.append((e["offsets"], [e["ts_ms"]]))
    return calls


@pytest.mark.parametrize(
    ("api_timeout", "attempts", "resumed", "processed", "late_answer"),
    [
        # The deadline (16350) falls in the back-off after the failure at 16300: the sleep is
        # cut short to 50 ms and no retry goes out at 16400.
        (6350, [10000, 13100, 13200, 16300], 16350, 16352, None),
        # The deadline (17000) falls while the attempt sent at 16400 is in flight: the call
        # returns then; that attempt fails at 19400 and nothing is sent again for it.
        (7000, [10000, 13100, 13200, 16300, 16400], 17000, 17002, (19400, "DISCONNECTED")),
    ],
)
def test_commit_sync_sends_nothing_past_its_deadline_and_returns_at_it(
    api_timeout: int, attempts: list[int], resumed: int, processed: int, late_answer: tuple[int, str] | None
) -> None:
    """commitSync's `Timer` (`commitOffsetsSync`): a retriable failure sleeps `retry.backoff.ms`
    (3.6: constant 100 ms) but never past the deadline (`Timer.sleep`), no attempt is sent from
    the deadline on, and at the deadline the call throws TimeoutException to the application,
    which goes on polling. From 10 s consumer 1 is cut off from its coordinator (broker 3) for
    12 s, with `request.timeout.ms` 3000: the commitSync made at 10000 ms fails by timeouts
    (DISCONNECTED) and, while the coordinator is unknown, in the client
    (COORDINATOR_NOT_AVAILABLE), 100 ms apart; its timer is `default.api.timeout.ms`."""
    from tests.scenarios.test_consumer_groups import run, scenario  # noqa: PLC0415

    text = SYNC_COMMITTER.format(api_timeout=api_timeout)
    events, _ = run(scenario(text, ZOMBIE, records=2000, duration=30_000, version="3.6"))
    calls = _sync_calls(events)
    [call] = [c for c in calls if c[1][0] == 10000]
    assert call[1] == attempts
    assert resumed == 10000 + api_timeout
    # The application polls again at the deadline, processes the records the poll returns (the
    # two its last fetch brought, 1 ms each) and commits them.
    after = [e for e in where(events, "records_processed", node="consumer-1") if e["ts_ms"] > 10000]
    following = calls[calls.index(call) + 1]
    assert after[0]["ts_ms"] == following[1][0] == processed
    answered = {e["commit_id"]: (e["ts_ms"], e["error"]) for e in where(events, "offset_commit_answered", node="consumer-1")}
    sent = {e["ts_ms"]: e["commit_id"] for e in where(events, "offset_commit_sent", node="consumer-1", kind="sync")}
    if late_answer is not None:
        assert answered[sent[attempts[-1]]] == late_answer


# ---------------------------------------------------------------------- KIP-580's back-off


def _band(attempts: int, initial: int = 100, cap: int = 1000) -> tuple[int, int]:
    """The range of `ExponentialBackoff.backoff(attempts)`: the term capped at `cap`, times
    0.8 to 1.2, never above `cap`."""
    term = min(initial * 2**attempts, cap)
    return int(0.8 * term), min(int(1.2 * term), cap)


@pytest.mark.parametrize(
    ("version", "attempts", "failures"),
    [
        ("3.6", [10000, 13100, 13200, 16300, 16400, 19500, 19600], [13000, 13100, 16200, 16300, 19400, 19500]),
        ("3.9", [10000, 13091, 13318, 16591, 20174], [13000, 13091, 16190, 19489]),
    ],
)
def test_commit_sync_retries_back_off_exponentially_from_3_7(version: str, attempts: list[int], failures: list[int]) -> None:
    """KIP-580: from 3.7 commitSync's n-th retry waits `retryBackoff.backoff(n - 1)`:
    `retry.backoff.ms` (100) doubled for each earlier retry, up to `retry.backoff.max.ms`
    (1000), times a jitter factor from 0.8 to 1.2 drawn from the consumer's seeded stream;
    before 3.7 each waits `retry.backoff.ms`. The commitSync made at 10000 ms while consumer 1
    is cut off from its coordinator (as in the test above, with a 12 s timer): 3.6 sends again
    exactly 100 ms after each failure; 3.9 after 91, 227, 401 and 685 ms, each in its band."""
    from tests.scenarios.test_consumer_groups import run, scenario  # noqa: PLC0415

    text = SYNC_COMMITTER.format(api_timeout=12_000)
    events, _ = run(scenario(text, ZOMBIE, records=2000, duration=30_000, version=version))
    [call] = [c for c in _sync_calls(events) if c[1][0] == 10000]
    assert call[1] == attempts
    sent = {e["ts_ms"]: e["commit_id"] for e in where(events, "offset_commit_sent", node="consumer-1", kind="sync")}
    answered = {e["commit_id"]: e["ts_ms"] for e in where(events, "offset_commit_answered", node="consumer-1")}
    assert [answered[sent[t]] for t in attempts[:-1]] == failures
    waits = [retry - failed for failed, retry in zip(failures, attempts[1:], strict=True)]
    for n, wait in enumerate(waits):
        low, high = _band(n) if version == "3.9" else (100, 100)
        assert low <= wait <= high, (n, wait)


PRODUCER_REFUSED = """
[run]
"duration.ms" = 12000
[kafka]
version = "{version}"
[network]
"latency.min.ms" = 1
"latency.max.ms" = 1
[cluster]
brokers = 2
[broker]
"min.insync.replicas" = 2
"replica.lag.time.max.ms" = 1000
[[topics]]
name = "T"
"replication.factor" = 2
[[producers]]
topic = "T"
records = 1
"start.ms" = 1000
"request.timeout.ms" = 1500
[[faults]]
kind = "crash"
node = "broker-2"
"at.ms" = 100
"""


@pytest.mark.parametrize(
    ("version", "backoffs", "first"),
    [
        ("3.6", [100] * 12, (1505, "NOT_ENOUGH_REPLICAS_AFTER_APPEND")),
        ("3.9", [98, 192, 434, 913, 1000, 1000, 1000, 1000, 1000, 918, 1000, 877], (2500, "REQUEST_TIMED_OUT")),
    ],
)
def test_a_producer_retry_backs_off_exponentially_from_3_7(version: str, backoffs: list[int], first: tuple[int, str]) -> None:
    """KIP-580 for the producer: a batch's n-th retry waits `retryBackoff.backoff(n - 1)`
    (`RecordAccumulator`, with the batch's attempts), 100 ms doubled per earlier retry up to
    `retry.backoff.max.ms` (1000) with a ±20% jitter from the producer's seeded stream; before
    3.7, `retry.backoff.ms` each time. Broker 2 is down from 100 ms, so with min ISR 2 the
    record sent at 1000 ms is refused until the run ends (3.6: its append is answered
    NOT_ENOUGH_REPLICAS_AFTER_APPEND once the ISR shrinks; 3.9: it parks until its request times
    out, KAFKA-15583), then every retry NOT_ENOUGH_REPLICAS, 2 ms after it is sent. Each retry
    goes out exactly its back-off after the failure; from the fifth on, 3.9's back-off is
    capped: 800 to 1000 ms."""
    with Cluster(parse_scenario(PRODUCER_REFUSED.format(version=version), "p.toml"), host=HostKind.DIRECT) as cluster:
        events: list[dict[str, Any]] = []
        cluster.kernel.observe(events.append)
        cluster.run_to_end()
    retried = where(events, "batch_retried")
    assert (retried[0]["ts_ms"], retried[0]["error"]) == first
    assert [e["backoff_ms"] for e in retried[:12]] == backoffs
    sends = [e["ts_ms"] for e in where(events, "batch_sent")]
    assert [s - r["ts_ms"] for r, s in zip(retried, sends[1:], strict=False)][:12] == backoffs
    for n, backoff in enumerate(backoffs):
        low, high = _band(n) if version == "3.9" else (100, 100)
        assert low <= backoff <= high, (n, backoff)


# ---------------------------------------------------------------------- rules guarded by mutants

COOPERATIVE_SYNC = """
[[consumers]]
"group.id" = "my-group"
topics = ["T"]
count = {count}
"session.timeout.ms" = 10000
"max.poll.records" = 20
"process.record.ms" = 1
"auto.offset.reset" = "earliest"
"partition.assignment.strategy" = ["cooperative-sticky"]
"enable.auto.commit" = false
commit = "sync"
{extra}
"""


def test_a_member_sends_no_commit_while_it_rejoins() -> None:
    """A commit carries the generation only while the member is STABLE
    (`generationIfStable`): while it rejoins (a JoinGroup or SyncGroup in flight) commitSync
    fails in the client, RebalanceInProgressException from 2.5 (CommitFailedException before),
    and nothing reaches the coordinator. Two cooperative members commit after each poll;
    consumer 3 starts at 12 s. Consumer 2 learns of the rebalance first and rejoins at once
    (it keeps its partitions and goes on processing): its commitSync calls from 12104 to 12162
    ms fail locally with REBALANCE_IN_PROGRESS, and the coordinator completes no commit of its
    while the group is CompletingRebalance."""
    from tests.scenarios.test_consumer_groups import run, scenario  # noqa: PLC0415

    text = COOPERATIVE_SYNC.format(count=2, extra="") + COOPERATIVE_SYNC.format(count=1, extra='"start.ms" = 12000')
    events, checks = run(scenario(text, records=2000, duration=25_000))
    refused = [(e["node"], e["ts_ms"]) for e in where(events, "offset_commit_answered") if e["error"] != "NONE"]
    assert refused == [("consumer-2", t) for t in (12104, 12109, 12115, 12121, 12133, 12144, 12152, 12162)]
    assert {e["error"] for e in where(events, "offset_commit_answered") if e["error"] != "NONE"} == {"REBALANCE_IN_PROGRESS"}
    assert [e for e in where(events, "offset_commit_completed") if e["group_state"] == "CompletingRebalance"] == []
    assert checks["duplicates"] == 0


def test_a_static_member_closing_sends_no_leave_group() -> None:
    """KIP-345: a static member (`group.instance.id`) never sends LeaveGroup, on `close()`
    either (`maybeLeaveGroup`): consumer 1 closes at 15 s, revoking its partitions, and the
    coordinator removes it only when its session times out (10 s after its last heartbeat),
    then rebalances its partitions to consumer 2."""
    from tests.scenarios.test_consumer_groups import TWO, run, scenario  # noqa: PLC0415

    static = TWO.replace('"auto.offset.reset" = "earliest"', '"auto.offset.reset" = "earliest"\n"group.instance.id" = "app"')
    close = '\n[[faults]]\nkind = "close"\nnode = "consumer-1"\n"at.ms" = 15000\n'
    events, _ = run(scenario(static, close, records=2000, duration=30_000))
    [revoked] = where(events, "partitions_revoked", node="consumer-1")
    assert (revoked["ts_ms"], revoked["reason"], revoked["partitions"]) == (15_019, "close", ["T-0", "T-1"])
    assert [(e["ts_ms"], e["reason"]) for e in where(events, "group_member_removed")] == [(25_003, "session_timeout")]
    [second] = [e for e in where(events, "generation_started") if e["generation_id"] == 2]
    assert second["ts_ms"] == 27_108 and len(second["members"]) == 1


def test_an_idempotent_producer_bumps_its_epoch_after_a_delivery_timeout() -> None:
    """KIP-360 (2.5+): a batch that expires (`delivery.timeout.ms`) after it was sent may or may
    not have been written, so its partition's sequence numbering is broken: the producer bumps
    its epoch (`TransactionManager.bumpIdempotentEpochAndResetIdIfNeeded`) and its next batch
    starts again at sequence 0 in epoch 1, which the broker accepts. The producer's requests to
    broker 1 are lost from 1000 to 2600 ms; record 0 (sent at 1000, again at 2100) expires at
    2500; record 1 goes at 4000 with epoch 1, sequence 0, and is written at offset 10."""
    from sim.engine.network import FaultKind, LinkFault  # noqa: PLC0415
    from tests.harness import Script, build, leader_and_isr, seeded_disk  # noqa: PLC0415
    from tests.scenarios.test_producer import B1, B2, SEEDED, _events, _producer  # noqa: PLC0415

    script = Script([(0, B1, leader_and_isr(1, 0, (1, 2)), 1), (0, B2, leader_and_isr(1, 0, (1, 2)), 2)])
    disks = {b: seeded_disk(SEEDED, high_watermark=10) for b in (1, 2)}
    producer = _producer(
        idempotence=True, records=2, start_ms=1000, interval_ms=3000, request_timeout_ms=1000, delivery_timeout_ms=1500
    )
    kernel = build("3.9", (1, 2), script, disks=disks, producers=(producer,))
    events = _events(kernel)
    kernel.add_link_fault(LinkFault(FaultKind.DROP, 1000, 2600, frozenset({"producer-1"}), frozenset({"broker-1"})))
    kernel.run(8000)
    kernel.shutdown()
    sent = [(e["ts_ms"], e["records"], e["producer_epoch"], e["base_sequence"]) for e in where(events, "batch_sent")]
    assert sent == [(1000, [0], 0, 0), (2100, [0], 0, 0), (4000, [1], 1, 0)]
    done = [(e["ts_ms"], e["error"], e["base_offset"]) for e in where(events, "produce_completed")]
    assert done == [(2500, "DELIVERY_TIMEOUT", -1), (4004, "NONE", 10)]


@pytest.mark.parametrize(("version", "how"), [("2.5", "revoked"), ("3.9", "lost")])
def test_a_member_leaving_during_a_rebalance_loses_its_partitions_from_2_6(version: str, how: str) -> None:
    """`onLeavePrepare`: from 2.6 a member that leaves while a rebalance is under way
    (`rebalanceInProgress`: its JoinGroup or SyncGroup in flight) reports its partitions lost
    (`onPartitionsLost`), not revoked, since another member may own them already; before 2.6
    only a member out of its generation did. Consumer 3 starts at 12 s and consumer 2, which
    keeps T-1 and T-3 during the cooperative rebalance, rejoins at once; its application calls
    `close()` at 12110 ms, with its JoinGroup (2.5) or SyncGroup (3.9) in flight."""
    from tests.scenarios.test_consumer_groups import run, scenario  # noqa: PLC0415

    text = COOPERATIVE_SYNC.format(count=2, extra="") + COOPERATIVE_SYNC.format(count=1, extra='"start.ms" = 12000')
    close = '\n[[faults]]\nkind = "close"\nnode = "consumer-2"\n"at.ms" = 12110\n'
    events, _ = run(scenario(text, close, records=2000, duration=25_000, version=version))
    [left] = [e for e in events if e["node"] == "consumer-2" and e["event"] in ("partitions_lost", "partitions_revoked")]
    assert (left["ts_ms"], left["event"], left["reason"], left["partitions"]) == (12_110, f"partitions_{how}", "close", ["T-1", "T-3"])
    assert [e["reason"] for e in where(events, "group_member_removed")] == ["leave"]
