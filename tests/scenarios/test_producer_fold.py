"""The producer's folded ticks: it wakes only for the ticks that do something, and the run is
the one it would be if it woke at every tick (the same log, byte for byte, and the same counts,
however the snapshot falls between windows)."""

from __future__ import annotations

from typing import Any

import pytest

from actors.producer.behavior import Producer
from sim.cluster.harness import Cluster
from sim.cluster.scenario import parse_scenario
from sim.engine.kernel import HostKind

CLUSTER = """\
[run]
name = "fold"
seed = 3
"duration.ms" = 8000
[kafka]
version = "{version}"
[network]
"latency.min.ms" = 1
"latency.max.ms" = 4
[cluster]
brokers = 3
[broker]
"min.insync.replicas" = 2
[[topics]]
name = "T"
partitions = 6
"replication.factor" = 3
[[producers]]
topic = "T"
acks = "all"
records = 6000
{producer}
[[faults]]
kind = "crash"
"at.ms" = 3000
node = "broker-2"
"restart.after.ms" = 2000
"""

PRODUCERS = {
    "uniform_sticky": ('"interval.ms" = 1', "3.9"),
    "keyed_lingering": ('"interval.ms" = 1\nkeys = 5\n"linger.ms" = 60\n"batch.size" = 400', "3.9"),
    "bursts": ('"interval.ms" = 2\n"records.per.interval" = 3\n"burst.ms" = 40\n"pause.ms" = 25', "3.9"),
    "sticky_one_in_flight": ('"interval.ms" = 1\n"max.in.flight.requests.per.connection" = 1', "2.8"),
    "round_robin": ('"interval.ms" = 1', "2.3"),
    "paused": ('"interval.ms" = 1\n[[faults]]\nkind = "pause"\nnode = "producer-1"\n"at.ms" = 1500\n"duration.ms" = 700', "3.9"),
}


SENT = {
    "uniform_sticky": [2501, 5003, 6000],
    "keyed_lingering": [2501, 5003, 6000],
    "bursts": [2328, 4620, 6000],
    "sticky_one_in_flight": [2501, 5003, 6000],
    "round_robin": [2501, 5003, 6000],
    "paused": [1801, 4303, 6000],
}
"""Records made before each stop: one a millisecond from 0 (three every 2 ms in bursts); a\nproducer paused for 700 ms makes one record when it resumes, for the ticks it slept through."""


def _run(text: str, *, fold: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[str, int, list[dict[str, Any]]]:
    """The log's digest, the windows opened and the producer's counts at three stops."""
    with monkeypatch.context() as patch:
        if not fold:
            patch.setattr(Producer, "_fold", lambda self, out: None)  # a wake-up at every tick
        with Cluster(parse_scenario(text, "test"), host=HostKind.DIRECT) as cluster:
            counts = []
            for until in (2501, 5003, 8000):
                cluster.run(until_ms=until)
                state = cluster.state("producer-1", "producer")
                counts.append({k: state[k] for k in ("sent", "acked", "queued", "in_flight", "produce_requests")})
            return cluster.kernel.event_log.digest, cluster.kernel.windows, counts


@pytest.mark.parametrize("name", sorted(PRODUCERS))
def test_a_folded_producer_runs_as_one_that_wakes_at_every_tick(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    producer, version = PRODUCERS[name]
    text = CLUSTER.format(producer=producer, version=version)
    every_tick = _run(text, fold=False, monkeypatch=monkeypatch)
    folded = _run(text, fold=True, monkeypatch=monkeypatch)
    assert folded[0] == every_tick[0]
    assert folded[2] == every_tick[2]
    assert [c["sent"] for c in folded[2]] == SENT[name]
    if name != "round_robin":  # a round-robin record is never placed without the counter
        assert folded[1] < every_tick[1]
    else:
        assert folded[1] == every_tick[1]
