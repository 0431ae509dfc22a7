"""A follower back from a power loss while still in the ISR (ZooKeeper mode): Kafka's known gap,
which KIP-966 closes in KRaft, reported as a finding rather than an invariant violation.

broker-2 is paused from 1000 to 7800 (`replica.lag.time.max.ms` 5000), so broker-1 drops it
from T-0's ISR at 7805 and adds it back at 7818, once it has caught up. broker-3 lost power at
7600: it is still in both ISRs (its leaders would drop it only from 12600, the controller only
once its old session expires) and comes back at 8500 with no records, below both HWs. The
expansion at 7818, which adds broker-2, says nothing of broker-3: it stays out of the ISR
checks, and its return is told as Kafka's behaviour (`kip_966`), once per partition and
invariant.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from sim.cluster.scenario import parse_scenario
from sim.studies.runner import run_scenario
from tests.scenarios.test_cluster import KAFKA

FAULTS = """
[[faults]]
kind = "pause"
node = "broker-2"
"at.ms" = 1000
"duration.ms" = 6800

[[faults]]
kind = "crash"
node = "broker-3"
"at.ms" = 7600
"crash.kind" = "power_loss"
"restart.after.ms" = 900
"""


def _finding(invariant: str, partition: int, leader: int, hw: int) -> dict[str, object]:
    detail = f"T-{partition}: broker-3 lost unflushed records and is back with 0, below broker-{leader}'s HW {hw}, still in the ISR"
    return {"invariant": invariant, "label": "kip_966", "ts_ms": 8500, "node": "broker-3", "detail": detail}


def test_a_follower_back_from_a_power_loss_in_the_isr_is_kafkas_known_gap_not_a_violation(tmp_path: Path) -> None:
    text = KAFKA.replace("20000", "9000").replace('"replica.lag.time.max.ms" = 2000', '"replica.lag.time.max.ms" = 5000')
    summary = run_scenario(parse_scenario(text + FAULTS, "kip966"), tmp_path)
    events = [orjson.loads(line) for line in (tmp_path / "events.jsonl").read_bytes().splitlines()]
    isr = [(e["ts_ms"], e["event"], e["partition"], e["isr"]) for e in events if e["event"] in ("isr_shrunk", "isr_expanded")]
    assert isr == [(7805, "isr_shrunk", 0, [1, 3]), (7818, "isr_expanded", 0, [1, 2, 3])]
    assert summary["invariant_violations"] == []
    assert summary["known_bug_findings"] == [
        _finding("weak_isr", 0, 1, 6),
        _finding("strong_isr", 0, 1, 6),
        _finding("weak_isr", 1, 2, 5),
        _finding("strong_isr", 1, 2, 5),
    ]
    assert summary["lost_acked"] == 0
