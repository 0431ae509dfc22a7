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
    "consumers.1.auto.offset.reset=earliest",
    "cluster.metadata.mode=zookeeper",
    "producers.1.start.ms=500",
]


def test_a_position_out_of_range_is_reset_at_once_without_asking_for_the_committed_offset() -> None:
    """A partition whose position needs `auto.offset.reset` awaits its reset (`AWAIT_RESET`,
    `SubscriptionState.requestOffsetReset`): the consumer sends ListOffsets and never asks
    OffsetFetch for it (`initializingPartitions` leaves it out). Consumer 1 (earliest) gets T-0
    at 507 ms; OffsetFetch finds no committed offset, and one ListOffsets (509 ms) sets the
    position to 0. Retention moves the log start to 85 at 2000 ms; the fetch at offset ~30 is
    answered OFFSET_OUT_OF_RANGE at 2021 ms, and the consumer sends one ListOffsets, no
    OffsetFetch, and seeks to 85 at 2023 ms with reason `out_of_range`."""
    events, sent = run_spying(
        SCENARIO + CONSUMER, RETENTION, until_ms=8000, skip=("FetchRequest", "HeartbeatRequest", "FindCoordinatorRequest")
    )
    positions = [(e["ts_ms"], e["offset"], e["source"], e["reason"]) for e in where(events, "fetch_position_set")]
    assert positions == [(511, 0, "earliest", "no_committed_offset"), (2023, 85, "earliest", "out_of_range")]
    assert [s for s in sent if 500 <= s[0] < 2100] == [
        (507, "broker-1", "OffsetFetchRequest"),
        (509, "broker-1", "ListOffsetsRequest"),
        (2021, "broker-1", "ListOffsetsRequest"),
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
        # The deadline (16336) falls in the back-off after the failure at 16286: the sleep is
        # cut short to 50 ms and no retry goes out at 16386.
        (6350, [9986, 13086, 13186, 16286], 16336, 16360, None),
        # The deadline (16986) falls while the attempt sent at 16386 is in flight: the call
        # returns then; that attempt fails at 19386 and nothing is sent again for it.
        (7000, [9986, 13086, 13186, 16286, 16386], 16986, 17013, (19386, "DISCONNECTED")),
    ],
)
def test_commit_sync_sends_nothing_past_its_deadline_and_returns_at_it(
    api_timeout: int, attempts: list[int], resumed: int, processed: int, late_answer: tuple[int, str] | None
) -> None:
    """commitSync's `Timer` (`commitOffsetsSync`): a retriable failure sleeps `retry.backoff.ms`
    (3.6: constant 100 ms) but never past the deadline (`Timer.sleep`), no attempt is sent from
    the deadline on, and at the deadline the call throws TimeoutException to the application,
    which goes on polling. From 10 s consumer 1 is cut off from its coordinator (broker 3) for
    12 s, with `request.timeout.ms` 3000: the commitSync made at 9986 ms fails by timeouts
    (DISCONNECTED) and, while the coordinator is unknown, in the client
    (COORDINATOR_NOT_AVAILABLE), 100 ms apart; its timer is `default.api.timeout.ms`."""
    from tests.scenarios.test_consumer_groups import run, scenario  # noqa: PLC0415

    text = SYNC_COMMITTER.format(api_timeout=api_timeout)
    events, _ = run(scenario(text, ZOMBIE, records=2000, duration=30_000, version="3.6"))
    calls = _sync_calls(events)
    [call] = [c for c in calls if c[1][0] == 9986]
    assert call[1] == attempts
    assert resumed == 9986 + api_timeout
    # The application polls again at the deadline, processes the 20 records the poll returns
    # (1 ms each) and commits them.
    after = [e for e in where(events, "records_processed", node="consumer-1") if e["ts_ms"] > 9986]
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
        ("3.6", [9986, 13086, 13186, 16286, 16386, 19486, 19586], [12986, 13086, 16186, 16286, 19386, 19486]),
        ("3.9", [9986, 13077, 13304, 16577, 20160], [12986, 13077, 16176, 19475]),
    ],
)
def test_commit_sync_retries_back_off_exponentially_from_3_7(version: str, attempts: list[int], failures: list[int]) -> None:
    """KIP-580: from 3.7 commitSync's n-th retry waits `retryBackoff.backoff(n - 1)`:
    `retry.backoff.ms` (100) doubled for each earlier retry, up to `retry.backoff.max.ms`
    (1000), times a jitter factor from 0.8 to 1.2 drawn from the consumer's seeded stream;
    before 3.7 each waits `retry.backoff.ms`. The commitSync made at 9986 ms while consumer 1
    is cut off from its coordinator (as in the test above, with a 12 s timer): 3.6 sends again
    exactly 100 ms after each failure; 3.9 after 91, 227, 401 and 685 ms, each in its band."""
    from tests.scenarios.test_consumer_groups import run, scenario  # noqa: PLC0415

    text = SYNC_COMMITTER.format(api_timeout=12_000)
    events, _ = run(scenario(text, ZOMBIE, records=2000, duration=30_000, version=version))
    [call] = [c for c in _sync_calls(events) if c[1][0] == 9986]
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
