"""Processing on worker threads (`processing = "workers"`), end to end: the poll thread hands
what `poll()` returned to a bounded queue and polls on, pausing the partitions whose records
wait while the queue is full; workers log records as processed when they finish them. Each test
checks one rule through the event log (and the consumer's fetches) with exact values."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from actors.consumer.fetcher import Fetcher
from tests.scenarios.test_consumer_groups import run, scenario, where

Fetch = tuple[int, int, list[tuple[int, int]]]

ONE = """
[[consumers]]
"group.id" = "g"
topics = ["T"]
"session.timeout.ms" = 6000
"max.poll.interval.ms" = 1000
"max.poll.records" = 20
"process.record.ms" = 20
"auto.offset.reset" = "earliest"
processing = "workers"
"worker.threads" = 1
"worker.queue.records" = 40
"""


@pytest.fixture
def fetches(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Fetch]]:
    """(time, broker, [(partition, offset)]) of every Fetch a consumer sends."""
    sent: list[Fetch] = []
    original = Fetcher.send_fetches

    def send_fetches(self: Fetcher, out: Any, network: Any) -> None:
        for leader, request in self.fetch_requests(network.ready):
            sent.append((network.clock.now_ms, leader, [(p.partition, p.fetch_offset) for p in request.partitions]))
        original(self, out, network)

    monkeypatch.setattr(Fetcher, "send_fetches", send_fetches)
    yield sent


def _pauses(events: list[dict[str, Any]], until_ms: int) -> list[tuple[int, str, list[str], int]]:
    return [
        (e["ts_ms"], e["event"].removeprefix("partitions_"), e["partitions"], e["count"])
        for e in events
        if e["event"] in ("partitions_paused", "partitions_resumed") and e["ts_ms"] <= until_ms
    ]


def _processed(events: list[dict[str, Any]], node: str, partition: int) -> list[tuple[int, int, int]]:
    return [(e["ts_ms"], e["first_offset"], e["end_offset"]) for e in where(events, "records_processed", node=node, partition=partition)]


def test_a_full_queue_pauses_the_waiting_partitions_and_poll_goes_on(fetches: list[Fetch]) -> None:
    """One worker at 20 ms a record against 100 records a second, a queue of 40 records. The
    hand-off at 3132 ms leaves 40 records of T-2 waiting: T-2 is paused; at 3133 ms T-0's nine
    records join them, and T-0 is paused too, just after that poll() sent T-0's next fetch, from
    offset 9 (`poll()` sends the next fetches before it returns). No fetch goes out for a paused
    partition. The worker takes the queue's last task (T-0's) at 4332 ms; the next poll()
    (4333 ms, the poll loop's 100 ms cadence) resumes both, and the records buffered meanwhile
    (kept since KAFKA-7548) are returned at once, which fills the queue again: both are paused
    again. A stall of the workers from 5000 ms for 3000 ms holds T-2's task begun at 4912 ms
    until 8312 ms (4912 + 20 x 20 + 3000), while the poll thread polls on: with
    `max.poll.interval.ms` = 1000 the member is never timed out, and the group never rebalances."""
    stall = '\n[[faults]]\nkind = "stall"\nnode = "consumer-1"\n"at.ms" = 5000\n"duration.ms" = 3000\n'
    events, checks = run(scenario(ONE, stall, records=600, duration=20_000))
    assert _pauses(events, 8340) == [
        (3132, "paused", ["T-2"], 40),
        (3133, "paused", ["T-0"], 49),
        (4333, "resumed", ["T-0", "T-2"], 0),
        (4333, "paused", ["T-2"], 40),
        (4333, "paused", ["T-0"], 41),
        (8333, "resumed", ["T-0", "T-2"], 0),
        (8333, "paused", ["T-2"], 40),
    ]
    # Fetches stop for a paused partition and start again after its resume.
    paused = {0: [(3133, 4333), (4333, 8333)], 2: [(3132, 4333), (4333, 8333)]}
    for ts, _, parts in fetches:
        for partition, _ in parts:
            assert not any(lo < ts < hi for lo, hi in paused.get(partition, [])), (ts, partition)
    t0 = [(ts, broker, offset) for ts, broker, parts in fetches for p, offset in parts if p == 0]
    assert [f for f in t0 if 3100 <= f[0] <= 4700] == [(3125, 1, 0), (3133, 1, 9)]
    # The worker's tasks of T-2, one at a time; the stall holds the one in hand.
    assert _processed(events, "consumer-1", 2)[:5] == [
        (3532, 0, 20), (3932, 20, 40), (4332, 40, 60), (4912, 60, 80), (8312, 80, 100)
    ]
    assert where(events, "poll_timeout_expired") == where(events, "group_member_removed") == []
    assert (checks["consumed"], checks["acked"], checks["duplicates"], checks["rebalances"]) == (600, 600, 0, 1)


def test_before_2_4_a_paused_partitions_fetched_records_are_dropped_and_fetched_again(fetches: list[Fetch]) -> None:
    """The same consumer on 2.3 (whose producer spreads records round robin): every partition
    is paused by 3143 ms; records fetched beyond what poll() returned are dropped (before
    KAFKA-7548, `fetchRecords` discards a paused partition's completed fetch). So at the resume
    (5143 ms) poll() has nothing buffered to return, and every partition is fetched again at
    once from its position: T-0 from 60, the others from 20. From 2.4 the buffered records
    would be returned without a fetch (the test above: T-2 paused again at the resume)."""
    events, checks = run(scenario(ONE, records=600, duration=20_000, version="2.3"))
    assert _pauses(events, 5149) == [
        (3143, "paused", ["T-0"], 40),
        (3143, "paused", ["T-3"], 60),
        (3143, "paused", ["T-2"], 80),
        (3143, "paused", ["T-1"], 100),
        (5143, "resumed", ["T-0", "T-1", "T-2", "T-3"], 0),
        (5149, "paused", ["T-0"], 40),
        (5149, "paused", ["T-3"], 60),
        (5149, "paused", ["T-1"], 80),
        (5149, "paused", ["T-2"], 100),
    ]
    assert [f for f in fetches if f[0] <= 5143] == [
        (3137, 2, [(1, 0)]),
        (3137, 1, [(0, 0), (3, 0)]),
        (3138, 3, [(2, 0)]),
        (5143, 1, [(0, 60), (3, 20)]),
        (5143, 2, [(1, 20)]),
        (5143, 3, [(2, 20)]),
    ]
    assert _processed(events, "consumer-1", 0)[:4] == [(3543, 0, 20), (3943, 20, 40), (4343, 40, 60), (5943, 60, 80)]
    assert (checks["consumed"], checks["acked"], checks["duplicates"]) == (600, 600, 0)


TWO_WORKERS = """
[[consumers]]
"group.id" = "g"
topics = ["T"]
count = 2
"session.timeout.ms" = 6000
"auto.commit.interval.ms" = 1000
"enable.auto.commit" = {auto}
commit = "{commit}"
"max.poll.records" = 20
"process.record.ms" = 20
"auto.offset.reset" = "earliest"
processing = "workers"
"worker.threads" = 1
"worker.queue.records" = 60
"""
CRASH = '\n[[faults]]\nkind = "crash"\nnode = "consumer-1"\n"at.ms" = 9200\n'


def _never_processed(events: list[dict[str, Any]], acked_ends: dict[int, int]) -> dict[int, list[tuple[int, int]]]:
    """Per partition, the offset ranges below its log end that no consumer processed."""
    gaps: dict[int, list[tuple[int, int]]] = {}
    for partition, log_end in sorted(acked_ends.items()):
        ranges = sorted((e["first_offset"], e["end_offset"]) for e in where(events, "records_processed", partition=partition))
        end = 0
        for first, last in ranges + [(log_end, log_end)]:
            if first > end:
                gaps.setdefault(partition, []).append((end, first))
            end = max(end, last)
    return gaps


def _log_ends(events: list[dict[str, Any]]) -> dict[int, int]:
    ends: dict[int, int] = {}
    for e in where(events, "records_processed"):
        ends[e["partition"]] = max(ends.get(e["partition"], 0), e["end_offset"])
    return ends


def test_auto_commit_with_workers_skips_what_was_returned_but_not_processed() -> None:
    """Auto-commit commits the positions, what poll() returned, whatever the workers finished.
    consumer-1's last auto-commit, at 9125 ms, commits T-2 at 200 while its worker had finished
    T-2 up to 140 (the task [120, 140) done at 8925 ms); it finishes nothing more before its
    crash at 9200 ms, so the queue and the task in hand die with it. Generation 2 gives T-2 to
    consumer-2 from 200: [140, 200) is never processed. consumer-2 loses records too: its
    pre-rebalance auto-commit commits T-0 at its position, 511, and `onPartitionsRevoked` drops
    its queued T-0 records [442, 511), which it gets back from 511."""
    events, checks = run(scenario(TWO_WORKERS.format(auto="true", commit="none"), CRASH, records=2000, duration=60_000))
    commits = {e["commit_id"]: e for e in where(events, "offset_commit_sent", node="consumer-1")}
    answered = [a for a in where(events, "offset_commit_answered", node="consumer-1", error="NONE") if a["ts_ms"] < 9200]
    last = commits[answered[-1]["commit_id"]]
    assert (last["ts_ms"], last["kind"], last["offsets"]) == (9125, "auto", [["T", 2, 200], ["T", 3, 0]])
    assert _processed(events, "consumer-1", 2)[-2:] == [(8525, 100, 120), (8925, 120, 140)]
    taken = {e["partition"]: (e["offset"], e["source"]) for e in where(events, "fetch_position_set", node="consumer-2", generation_id=2)}
    assert taken == {0: (511, "committed"), 1: (152, "committed"), 2: (200, "committed"), 3: (0, "committed")}
    ends = _log_ends(events)
    assert sum(ends.values()) == checks["acked"] == 2000
    assert _never_processed(events, ends) == {0: [(442, 511)], 2: [(140, 200)]}
    assert checks["consumed"] == 2000 - 69 - 60
    assert checks["duplicates"] == 0
    # Both gaps are skipped: commits moved the group past records the workers never finished.
    assert checks["skipped_by_cause"] == {"committed_before_processed": 69 + 60}
    spans = sorted((s["partition"], s["first_offset"], s["end_offset"], s["consumer"]) for s in checks["skip_spans"])
    assert spans == [("T-0", 442, 511, "consumer-2"), ("T-2", 140, 200, "consumer-1")]


def test_committing_what_the_workers_processed_skips_nothing() -> None:
    """The same crash with `commit = "processed"` and no auto-commit: before each poll the
    application commits the offsets after the records its workers finished (consumer-1's last,
    at 8925 ms, T-2 at 140, as its worker finished [120, 140)), so consumer-2 takes T-2 over
    from 140. consumer-2's `onPartitionsRevoked` (the group rebalances from 15091 ms, once
    consumer-1's session expired; consumer-2's heartbeat learns it at 15098 ms) waits for its
    worker to finish what it was given of T-1 and T-0, [101, 121) and [342, 343), then commits
    343 and 121 (15421 ms) before the revocation (15440 ms). Every record is processed, none
    twice: consumer-1 finished nothing after its last commit."""
    events, checks = run(scenario(TWO_WORKERS.format(auto="false", commit="processed"), CRASH, records=2000, duration=60_000))
    commits = {e["commit_id"]: e for e in where(events, "offset_commit_sent", node="consumer-1")}
    answered = [a for a in where(events, "offset_commit_answered", node="consumer-1", error="NONE") if a["ts_ms"] < 9200]
    last = commits[answered[-1]["commit_id"]]
    assert (last["ts_ms"], last["kind"], last["offsets"]) == (8925, "async", [["T", 2, 140]])
    taken = {e["partition"]: e["offset"] for e in where(events, "fetch_position_set", node="consumer-2", generation_id=2)}
    assert taken[2] == 140
    rebalance = [e["ts_ms"] for e in where(events, "group_state_changed", group_id="g", state="PreparingRebalance")]
    assert rebalance == [86, 15091]
    during = [
        (e["ts_ms"], e["partition"], e["first_offset"], e["end_offset"])
        for e in where(events, "records_processed", node="consumer-2")
        if 15091 <= e["ts_ms"] <= 15421
    ]
    assert during == [(15401, 1, 101, 121), (15421, 0, 342, 343)]
    revoke = [(e["ts_ms"], e["offsets"]) for e in where(events, "offset_commit_sent", node="consumer-2", kind="revoke")]
    assert revoke == [(15421, [["T", 0, 343], ["T", 1, 121]])]
    [revoked] = where(events, "partitions_revoked", node="consumer-2")
    assert (revoked["ts_ms"], revoked["partitions"]) == (15440, ["T-0", "T-1"])
    ends = _log_ends(events)
    assert sum(ends.values()) == checks["acked"] == 2000
    assert _never_processed(events, ends) == {}
    assert (checks["consumed"], checks["duplicates"], checks["skipped"]) == (2000, 0, 0)
