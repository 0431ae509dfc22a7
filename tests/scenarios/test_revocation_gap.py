"""An application that polls at fixed instants (`poll.every.ms`), the setting that lets a
scenario state exactly which poll returned which records, as a study of KIP-429's revocation
gap under auto-commit needs: which polls of the old owner returned records after its last
commit before `onPartitionsRevoked`."""

from __future__ import annotations

from typing import Any

import pytest

from actors.consumer.config import ConsumerConfig
from sim.cluster.harness import Cluster
from sim.cluster.scenario import ScenarioError, parse_scenario

CADENCE = """
[run]
name = "cadence"
"duration.ms" = 2000

[network]
"latency.min.ms" = 10
"latency.max.ms" = 10

[cluster]
brokers = 1

[broker]
"offsets.topic.num.partitions" = 1
"group.initial.rebalance.delay.ms" = 0

[[topics]]
name = "T"

[[producers]]
topic = "T"
records = 25
"interval.ms" = 100
"start.ms" = 10

[[consumers]]
"group.id" = "g"
topics = ["T"]
"auto.offset.reset" = "earliest"
"poll.timeout.ms" = 30
"poll.every.ms" = 100
"process.record.ms" = 40
"start.ms" = 50
"""


def _run(text: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    with Cluster(parse_scenario(text, "cadence.toml")) as cluster:
        cluster.kernel.observe(events.append)
        cluster.run_to_end()
        assert cluster.kernel.invariant_violations == []
    return events


def test_an_application_with_a_cadence_polls_only_at_its_instants() -> None:
    """Every message takes 10 ms; record k is appended at 100k + 20. The application polls at
    50 + 100k, waits up to 30 ms in `poll()` (a fetch's round trip is 20 ms) and takes 40 ms a
    record. Its first records come at 570 (the six written so far): 240 ms of work, so the
    instants 650 and 750 are skipped and it polls at 850, whose fetch brings three records at
    870, done at 990; at 1050 two (done 1150, an instant itself, at which it polls again at
    once); from then on one record a poll, returned 20 ms after the instant and done 40 ms
    later, the application idle until its next instant."""
    events = _run(CADENCE)
    processed = [
        (e["ts_ms"], e["first_offset"], e["end_offset"])
        for e in events
        if e["event"] == "records_processed" and e["node"] == "consumer-1"
    ]
    assert processed[:7] == [
        (810, 0, 6),
        (990, 6, 9),
        (1150, 9, 11),
        (1210, 11, 12),
        (1310, 12, 13),
        (1410, 13, 14),
        (1510, 14, 15),
    ]
    [assigned] = [e for e in events if e["event"] == "partitions_assigned"]
    assert assigned["ts_ms"] == 450  # the SyncGroup answer, taken at the poll of 450


@pytest.mark.parametrize(
    ("last_poll", "now", "expected"),
    [
        (50, 50, 150),  # a poll returned at once with nothing to do: the next instant
        (550, 570, 650),
        (550, 810, 850),  # an overrun skips the instants it passed
        (1050, 1150, 1150),  # done exactly at an instant: polls at it
        (0, 0, 50),  # a process restarted before start.ms keeps the cadence's phase
    ],
)
def test_the_next_poll_is_the_first_instant_after_the_last_one_not_before_now(last_poll: int, now: int, expected: int) -> None:
    config = ConsumerConfig("consumer-1", "g", ("T",), (("T", 1),), (1,), start_ms=50, poll_every_ms=100)
    assert config.next_poll_ms(last_poll, now) == expected


def test_without_a_cadence_the_application_polls_again_at_once() -> None:
    config = ConsumerConfig("consumer-1", "g", ("T",), (("T", 1),), (1,), start_ms=50)
    assert config.next_poll_ms(550, 810) == 810


def test_a_negative_cadence_is_one_line_naming_the_key() -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(CADENCE.replace('"poll.every.ms" = 100', '"poll.every.ms" = -5'), "cadence.toml")
    assert str(caught.value) == "cadence.toml: [[consumers]] #1: poll.every.ms: must be at least 0, got -5"
