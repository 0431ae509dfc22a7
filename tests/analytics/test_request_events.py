"""Spark reads a log with the request events of `[run] "log.requests" = true`: its figures are
those of the same run without them, its counts by type include them, and their fields read with
their documented types."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from sim.analytics.events import read_events
from sim.analytics.jobs import analyze_runs
from sim.cluster.scenario import parse_scenario
from sim.engine.kernel import HostKind
from sim.studies.runner import run_scenario
from tests.scenarios.test_request_log import ONE_CONSUMER

pytestmark = pytest.mark.spark

CRASH = """
[[faults]]
kind = "crash"
"at.ms" = 6000
node = "consumer-1"
"restart.after.ms" = 1000
"""


def test_request_events_change_no_figure(spark: Any, tmp_path: Path) -> None:
    runs = {}
    for name, log in (("on", '"log.requests" = true'), ("off", "")):
        runs[name] = tmp_path / name
        text = ONE_CONSUMER.format(log=log).replace('"duration.ms" = 12000', '"duration.ms" = 20000') + CRASH
        run_scenario(parse_scenario(text, "requests"), runs[name], host=HostKind.DIRECT)
    on, off = analyze_runs(spark, [runs["on"], runs["off"]])
    counts = Counter(orjson.loads(line)["event"] for line in (runs["on"] / "events.jsonl").read_bytes().splitlines())
    assert on["events_by_type"] == dict(sorted(counts.items()))
    assert counts["request_sent"] > counts["response_received"] > 0
    assert {k: v for k, v in on["events_by_type"].items() if k not in ("request_sent", "response_received")} == off["events_by_type"]
    assert {k: v for k, v in on.items() if k != "events_by_type"} == {k: v for k, v in off.items() if k != "events_by_type"}
    beats = (
        read_events(spark, [runs["on"]])
        .where("event = 'response_received' AND api = 'Heartbeat' AND node = 'consumer-1'")
        .select("ts_ms", "correlation_id", "src", "error")
        .orderBy("ts_ms")
        .collect()
    )
    assert [(r.ts_ms, r.src, r.error) for r in beats[:2]] == [
        (3008, "broker-1/group-coordinator", "NONE"),
        (5008, "broker-1/group-coordinator", "NONE"),
    ]
    assert all(type(r.correlation_id) is int for r in beats)
