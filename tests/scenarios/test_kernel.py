"""The kernel end to end, on the gossip stand-in: determinism, actors, faults, failures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
import pykka
import pytest

from actors.core import Address
from actors.workload import GossipActor
from sim.cluster.harness import Cluster
from sim.cluster.scenario import Scenario, parse_scenario
from sim.engine.kernel import HostKind, SimulationFailed, StopReason
from sim.studies.runner import run_scenario

FAULTY = """
[run]
"duration.ms" = 6000
[network]
"latency.min.ms" = 2
"latency.max.ms" = 9
[workload]
nodes = 4
"actors.per.node" = 2
"tokens.per.actor" = 2
"ping.interval.ms" = 200
"report.interval.ms" = 1000
[[faults]]
kind = "partition"
"at.ms" = 1000
isolate = ["node-0"]
"duration.ms" = 800
[[faults]]
kind = "crash"
"at.ms" = 2000
node = "node-1"
"crash.kind" = "power_loss"
"restart.after.ms" = 500
[[faults]]
kind = "pause"
"at.ms" = 3000
node = "node-2"
"duration.ms" = 700
[[faults]]
kind = "corrupt"
"at.ms" = 3500
probability = 0.05
"duration.ms" = 1000
[[faults]]
kind = "duplicate"
"at.ms" = 4000
probability = 0.2
"duration.ms" = 500
[[faults]]
kind = "reorder"
"at.ms" = 4500
probability = 0.3
"delay.ms" = 20
[[faults]]
kind = "drop"
"at.ms" = 5000
probability = 0.1
"""


def _scenario(seed: int, extra: str = "", text: str = FAULTY) -> Scenario:
    return parse_scenario(text + extra, "test", [f"run.seed={seed}"])


def _digest(seed: int, host: HostKind = HostKind.PYKKA) -> str:
    with Cluster(_scenario(seed), host=host) as cluster:
        cluster.run_to_end()
        return cluster.kernel.event_log.digest


def test_same_seed_same_digest_and_different_seeds_differ_over_20_seeds() -> None:
    """Determinism with every fault kind enabled: the backbone of the product."""
    first = {seed: _digest(seed) for seed in range(20)}
    again = {seed: _digest(seed) for seed in range(20)}
    assert first == again
    assert len(set(first.values())) == 20


def test_pykka_host_and_direct_executor_write_the_same_log() -> None:
    """Threads change nothing the simulation can see."""
    for seed in (3, 11):
        assert _digest(seed, HostKind.PYKKA) == _digest(seed, HostKind.DIRECT)


def test_pykka_registry_lists_one_live_actor_per_simulated_actor() -> None:
    with Cluster(_scenario(1)) as cluster:
        cluster.run(for_ms=500)
        assert len(cluster.actors()) == 8
        assert len(pykka.ActorRegistry.get_all()) == 8
        cluster.crash("node-3")
        assert len(pykka.ActorRegistry.get_all()) == 6
        cluster.run(for_ms=100)
        cluster.restart("node-3")
        assert len(pykka.ActorRegistry.get_all()) == 8
        cluster.run(for_ms=100)
    assert pykka.ActorRegistry.get_all() == []


def test_corrupt_fault_rejects_frames_counts_them_and_the_run_completes(tmp_path: Path) -> None:
    summary = run_scenario(_scenario(5), tmp_path)
    assert summary["rejected_frames"] > 0
    assert summary["sim_ms"] == 6000
    assert not summary["interrupted"]
    events = [orjson.loads(line) for line in (tmp_path / "events.jsonl").read_bytes().splitlines()]
    rejected = [e for e in events if e["event"] == "frame_rejected"]
    assert len(rejected) == summary["rejected_frames"]
    assert all(e["reason"] == "checksum mismatch" for e in rejected)
    assert all(3500 <= e["ts_ms"] < 4600 for e in rejected)
    assert json.loads((tmp_path / "summary.json").read_text()) == summary


def test_every_event_has_the_required_fields_first_and_time_never_goes_back(tmp_path: Path) -> None:
    run_scenario(_scenario(2), tmp_path)
    lines = (tmp_path / "events.jsonl").read_bytes().splitlines()
    events = [orjson.loads(line) for line in lines]
    assert events[0]["event"] == "run_started"
    times = [e["ts_ms"] for e in events]
    assert times == sorted(times)
    for event in events:
        assert list(event)[:6] == ["ts_ms", "run_id", "seed", "node", "actor", "event"]
        assert event["seed"] == 2


def _answered(cluster: Cluster, node: str) -> int:
    return cluster.state(node, "gossip-0")["pings_answered"]


QUIET = """
[workload]
nodes = 2
"tokens.per.actor" = 0
"ping.interval.ms" = 100
"""


def test_power_loss_rolls_back_to_the_last_flush_and_a_process_crash_does_not() -> None:
    """The stand-in flushes its counter every 5 answers (actors/workload.py)."""
    for kind, expected in (("process", 7), ("power_loss", 5)):
        with Cluster(_scenario(1, text=QUIET)) as cluster:
            cluster.run(until=lambda c=cluster: _answered(c, "node-0") == 7)
            cluster.crash("node-0", kind)
            cluster.restart("node-0")
            cluster.run(for_ms=1)
            assert _answered(cluster, "node-0") == expected


def test_a_paused_node_handles_nothing_until_it_resumes(tmp_path: Path) -> None:
    scenario = _scenario(1, '[[faults]]\nkind = "pause"\nnode = "node-1"\n"at.ms" = 1000\n"duration.ms" = 2000\n', QUIET)
    run_scenario(scenario, tmp_path)
    events = [orjson.loads(line) for line in (tmp_path / "events.jsonl").read_bytes().splitlines()]
    by_node1 = [e["ts_ms"] for e in events if e["node"] == "node-1"]
    assert by_node1
    assert not [t for t in by_node1 if 1000 <= t < 3000]
    resumed = [e for e in events if e["event"] == "node_resumed"]
    assert [(e["ts_ms"], e["target"]) for e in resumed] == [(3000, "node-1")]
    # node-0's pings to node-1 were answered late, not lost: RTTs include the pause
    rtts = [e["rtt_ms"] for e in events if e["event"] == "ping_answered" and e["node"] == "node-0"]
    assert max(rtts) > 1000


def test_partition_stops_traffic_both_ways_until_heal() -> None:
    with Cluster(_scenario(1, text=QUIET)) as cluster:
        cluster.run(for_ms=1000)
        cluster.isolate("node-1")
        before = _answered(cluster, "node-0")
        cluster.run(for_ms=1000)
        assert _answered(cluster, "node-0") == before
        cluster.heal()
        cluster.run(for_ms=1000)
        assert _answered(cluster, "node-0") > before


def test_run_until_a_condition_or_an_event_limit() -> None:
    with Cluster(_scenario(1, text=QUIET)) as cluster:
        assert cluster.run(until=lambda: _answered(cluster, "node-1") >= 3) is StopReason.CONDITION
        assert _answered(cluster, "node-1") == 3
        handled = cluster.kernel.handled
        assert cluster.run(for_ms=10**9, max_events=handled + 10) is StopReason.EVENT_LIMIT
        assert handled + 10 <= cluster.kernel.handled < handled + 20


_ASK_EVERYONE = """
import sys, threading
from sim.cluster.harness import Cluster
from sim.cluster.scenario import parse_scenario
from tests.scenarios.test_kernel import FAULTY
threads = set()
def ask_everyone(cluster):
    threads.add(threading.get_ident())
    return not all(cluster.state(a.node, a.actor) is not None for a in cluster.actors())
with Cluster(parse_scenario(FAULTY, "test", ["run.seed=3"])) as cluster:
    cluster.run(until=lambda: ask_everyone(cluster))
    print(cluster.kernel.event_log.digest, len(threads - {threading.get_ident()}))
"""


def test_windows_run_on_actor_threads_and_a_condition_may_ask_any_actor() -> None:
    """Under Pykka the actor that finishes a window last runs the kernel's next step, stop
    conditions included: a condition asking every actor for its state (the relay's own actor
    among them) neither waits forever nor changes the log. In a child process, so that a
    wait forever fails the test instead of hanging it."""
    done = subprocess.run(
        [sys.executable, "-c", _ASK_EVERYONE], capture_output=True, text=True, timeout=120, check=True
    )
    digest, actor_threads = done.stdout.split()
    assert digest == _digest(3, HostKind.DIRECT)
    assert int(actor_threads) >= 2  # the condition ran on actors' threads


def test_a_run_stopped_at_any_window_and_resumed_writes_the_same_log() -> None:
    """An exception from a stop condition reaches `run`'s caller from whichever thread ran
    it, between two windows; running on from there gives the log of a run never stopped."""
    calls = 0

    def stop_every_100th() -> bool:
        nonlocal calls
        calls += 1
        if calls % 100 == 0:
            raise LookupError(calls)
        return False

    stops = 0
    with Cluster(_scenario(5)) as cluster:
        end = cluster.scenario.get("run", "duration.ms")
        while True:
            try:
                cluster.run(until_ms=end, until=stop_every_100th)
                break
            except LookupError:
                stops += 1
        digest = cluster.kernel.event_log.digest
    assert stops >= 5
    assert digest == _digest(5)


def test_a_handler_exception_fails_the_run_with_seed_and_event_and_a_readable_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = GossipActor.on_timer

    def broken(self: GossipActor, ctx, key):  # type: ignore[no-untyped-def]
        if ctx.address == Address("node-1", "gossip-0") and ctx.now_ms >= 450:
            raise RuntimeError("boom")
        return original(self, ctx, key)

    monkeypatch.setattr(GossipActor, "on_timer", broken)
    summary = run_scenario(_scenario(9, text=QUIET), tmp_path)
    assert summary["failure"] == (
        "simulation failed (seed 9) at 500 ms in node-1/gossip-0 handling timer 'ping': "
        "RuntimeError: boom"
    )
    events = [orjson.loads(line) for line in (tmp_path / "events.jsonl").read_bytes().splitlines()]
    assert events[-1]["event"] == "simulation_failed"
    assert events[-1]["ts_ms"] == 500
    assert all(e["ts_ms"] <= 500 for e in events)
    assert "RuntimeError: boom" in (tmp_path / "failure.txt").read_text()
    with pytest.raises(SimulationFailed):
        with Cluster(_scenario(9, text=QUIET)) as cluster:
            cluster.run_to_end()
