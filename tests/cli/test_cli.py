"""The `kafkasim` command as a user meets it: a real process, its output and exit status."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parents[2]
QUICK = ["--set", "run.duration.ms=3000"]


def kafkasim(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sim.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=300,
        check=False,
    )


def test_run_writes_the_run_directory_and_prints_the_summary_as_json(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = kafkasim("run", *QUICK, "--seed", "4", "--out", str(out), "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    required = {
        "seed", "sim_ms", "wall_s", "events_digest", "produced", "acked", "lost_acked",
        "log_duplicates", "consumed", "duplicates", "duplicates_by_cause", "rebalances",
        "invariant_violations", "rejected_frames", "interrupted",
    }
    assert required <= set(summary)
    assert (summary["seed"], summary["sim_ms"], summary["interrupted"]) == (4, 3000, False)
    import hashlib

    assert summary["events_digest"] == hashlib.sha256((out / "events.jsonl").read_bytes()).hexdigest()
    assert json.loads((out / "summary.json").read_text()) == summary
    rerun = kafkasim("run", str(out / "scenario.toml"), "--out", str(tmp_path / "again"), "--json")
    assert json.loads(rerun.stdout)["events_digest"] == summary["events_digest"]


GROUP = '[run]\n"duration.ms" = 3000\n[cluster]\nbrokers = 1\n[broker]\n"offsets.topic.num.partitions" = 1\n[[topics]]\nname = "T"\n[[consumers]]\ntopics = ["T"]\n'
"""One broker, a topic and a consumer group: add a consumer's settings at the end."""


@pytest.mark.parametrize(
    ("files", "args", "expected"),
    [
        ({}, ["run", "missing.toml"], "kafkasim: missing.toml: no such scenario file"),
        (
            {"bad.toml": "[run]\nseed = 1\nname = \n"},
            ["run", "bad.toml"],
            "kafkasim: bad.toml: TOML syntax error at line 3, column 8: Invalid value",
        ),
        (
            {"s.toml": "[network]\n\"latency.max.mss\" = 3\n"},
            ["run", "s.toml"],
            "kafkasim: s.toml: [network]: unknown key 'latency.max.mss' (did you mean 'latency.max.ms'?)",
        ),
        (
            {"s.toml": "[run]\n\"duration.ms\" = \"long\"\n"},
            ["run", "s.toml"],
            "kafkasim: s.toml: [run]: duration.ms: expected an integer, got 'long' (a string)",
        ),
        (
            {"s.toml": "[workload]\nnodes = 5000\n"},
            ["run", "s.toml"],
            "kafkasim: s.toml: [workload]: nodes: must be at most 1000, got 5000",
        ),
        (
            {"s.toml": "[cluster]\nbrokers = 2\n[[faults]]\nkind = \"crash\"\nnode = \"broker-9\"\n"},
            ["run", "s.toml"],
            "kafkasim: s.toml: [[faults]] #1: node: no node named 'broker-9' (the nodes are broker-1, broker-2, zookeeper)",
        ),
        (
            {"s.toml": "[cluster]\nbrokers = 2\n[[faults]]\nkind = \"shutdown\"\nnode = \"zookeeper\"\n"},
            ["run", "s.toml"],
            "kafkasim: s.toml: [[faults]] #1: node: a shutdown stops a broker, got 'zookeeper'",
        ),
        (
            {"s.toml": "[cluster]\nbrokers = 3\n[zookeeper]\nenabled = false\n"},
            ["run", "s.toml"],
            'kafkasim: s.toml: [zookeeper] enabled = false, but [cluster] metadata.mode = "zookeeper" '
            "needs the coordination service",
        ),
        (
            {"s.toml": "[cluster]\nbrokers = 3\n\"metadata.mode\" = \"kraft\"\n"},
            ["run", "s.toml"],
            "kafkasim: s.toml: [cluster]: metadata.mode: 'kraft' is not one of zookeeper, static",
        ),
        ({}, ["run", "--set", "run.seeed=3"], "kafkasim: --set 'run.seeed=3': [run]: unknown key 'seeed' (did you mean 'seed'?)"),
        ({}, ["run", "--seed", "x"], "kafkasim: argument --seed: invalid int value: 'x'"),
        ({}, ["run", "--seed", "-3"], "kafkasim: --seed must be at least 0, got -3"),
        ({}, ["frobnicate"], "kafkasim: argument command: invalid choice: 'frobnicate'"),
        ({}, ["run", "--out", "/proc/kafkasim"], "kafkasim: --out /proc/kafkasim: cannot write there"),
        (
            {"notes/a.txt": "mine"},
            ["run", "--out", "notes"],
            "kafkasim: --out notes: not empty and holds no run (found a.txt); choose another directory",
        ),
        ({}, ["run", "--set", "faults.0.at.ms=5"], "kafkasim: --set 'faults.0.at.ms=5': expected faults.N.KEY"),
        (
            {"s.toml": "[cluster]\nbrokers = 2\n[[topics]]\nname = \"T\"\n\"replication.factor\" = 3\n"},
            ["run", "s.toml"],
            "kafkasim: s.toml: [[topics]] #1 (T): replication.factor 3 is above the broker count 2",
        ),
        (
            {"s.toml": "[cluster]\nbrokers = 2\n[[topics]]\nname = \"T\"\nreplicas = [[3]]\n"},
            ["run", "s.toml"],
            "kafkasim: s.toml: [[topics]] #1 (T): replicas: partition 0 names broker 3, but the brokers are 1 to 2",
        ),
        (
            {"s.toml": "[cluster]\nbrokers = 1\n[[topics]]\nname = \"T\"\n[[producers]]\ntopic = \"T\"\nacks = 5\n"},
            ["run", "s.toml"],
            "kafkasim: s.toml: [[producers]] #1: acks: 5 is not one of 0, 1, all, -1",
        ),
        (
            {"s.toml": "[cluster]\nbrokers = 1\n[[topics]]\nname = \"T\"\n[[producers]]\ntopic = \"T\"\nacks = 1\n\"enable.idempotence\" = true\n"},
            ["run", "s.toml"],
            "kafkasim: s.toml: [[producers]] #1: enable.idempotence = true requires acks = all (got 1)",
        ),
        (
            {"s.toml": "[cluster]\nbrokers = 1\n[[topics]]\nname = \"T\"\n[[producers]]\ntopic = \"T\"\n\"linger.ms\" = -5\n"},
            ["run", "s.toml"],
            "kafkasim: s.toml: [[producers]] #1: linger.ms: must be at least 0, got -5",
        ),
        (
            {"s.toml": "[cluster]\nbrokers = 1\n[[topics]]\nname = \"T\"\n[[producers]]\ntopic = \"T\"\n\"delivery.timeout.ms\" = 1000\n"},
            ["run", "s.toml"],
            "kafkasim: s.toml: [[producers]] #1: delivery.timeout.ms (1000) must be at least linger.ms + request.timeout.ms (0 + 30000)",
        ),
        (
            {"s.toml": GROUP + "\"partition.assignment.strategy\" = [\"rnage\"]\n"},
            ["run", "s.toml"],
            "kafkasim: s.toml: [[consumers]] #1: partition.assignment.strategy: 'rnage' is not one of range, roundrobin, sticky, cooperative-sticky (did you mean 'range'?)",
        ),
        (
            {"s.toml": GROUP + "\"heartbeat.interval.ms\" = 10000\n\"session.timeout.ms\" = 6000\n"},
            ["run", "s.toml"],
            "kafkasim: s.toml: [[consumers]] #1: heartbeat.interval.ms (10000) must be lower than session.timeout.ms (6000)",
        ),
        (
            {"s.toml": GROUP.replace('topics = ["T"]', 'topics = ["orders"]')},
            ["run", "s.toml"],
            "kafkasim: s.toml: [[consumers]] #1: topics: 'orders' is not a topic of [[topics]] (defined: T)",
        ),
        (
            {"s.toml": GROUP + '[[faults]]\nkind = "rolling_restart"\nnodes = ["consumer-1", "zookeeper"]\n'},
            ["run", "s.toml"],
            "kafkasim: s.toml: [[faults]] #1: nodes: 'zookeeper' is not a consumer or a broker (the consumers are consumer-1)",
        ),
        (
            {"s.toml": GROUP + '[[faults]]\nkind = "rolling_restart"\ngroup = "orders"\n'},
            ["run", "s.toml"],
            "kafkasim: s.toml: [[faults]] #1: group: no consumer has group.id 'orders' (the groups are group-1)",
        ),
        (
            {"s.toml": GROUP + '[[faults]]\nkind = "zombie"\nnode = "consumer-1"\n'},
            ["run", "s.toml", "--set", "faults.1.duration.ms=-5"],
            "kafkasim: --set 'faults.1.duration.ms=-5': [[faults]] #1: duration.ms: must be at least 1, got -5",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2_no_traceback(
    tmp_path: Path, files: dict[str, str], args: list[str], expected: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "keep.txt").write_text("earlier work")
    result = kafkasim(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith(expected), result.stderr
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    assert (tmp_path / "runs" / "keep.txt").read_text() == "earlier work"


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (
            '"session.timeout.ms" = 5000\ncount = 2\n',
            "kafkasim: s.toml: [[consumers]] #1: session.timeout.ms: 5000 is outside the broker's "
            "group.min.session.timeout.ms (6000) to group.max.session.timeout.ms (1800000): the coordinator "
            "answered JoinGroup with INVALID_SESSION_TIMEOUT and consumer-1, consumer-2 stopped\n",
        ),
        (
            '"session.timeout.ms" = 30000\n',
            "kafkasim: s.toml: [[consumers]] #1: session.timeout.ms: 30000 is outside the broker's "
            "group.min.session.timeout.ms (6000) to group.max.session.timeout.ms (20000): the coordinator "
            "answered JoinGroup with INVALID_SESSION_TIMEOUT and consumer-1 stopped\n",
        ),
    ],
)
def test_a_session_timeout_the_coordinator_refuses_is_one_line_and_exit_2(tmp_path: Path, settings: str, expected: str) -> None:
    """The coordinator answers the JoinGroup INVALID_SESSION_TIMEOUT, the consumers stop as
    Kafka's do (the exception is fatal), the run directory keeps what happened, and the user
    gets one line naming the file, the key, the value and the broker's range, with exit 2."""
    text = GROUP.replace('"offsets.topic.num.partitions" = 1', '"offsets.topic.num.partitions" = 1\n"group.max.session.timeout.ms" = 20000')
    (tmp_path / "s.toml").write_text((text if "30000" in settings else GROUP) + settings)
    result = kafkasim("run", "s.toml", "--out", "run", "--json", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == expected
    summary = json.loads(result.stdout)
    stopped = [(f["node"], f["error"]) for f in summary["consumer_failures"]]
    assert stopped == [(node, "JoinGroup: INVALID_SESSION_TIMEOUT") for node in ("consumer-1", "consumer-2")[: len(stopped)]]
    assert len(stopped) == ("count = 2" in settings) + 1
    events = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    failed = [e for e in events if e["event"] == "consumer_failed"]
    assert [(e["node"], e["error"]) for e in failed] == stopped
    assert json.loads((tmp_path / "run" / "summary.json").read_text()) == summary


def test_a_reused_run_directory_starts_clean(tmp_path: Path) -> None:
    """A second run into the same `--out` removes the first run's analysis and report (they
    would describe another run; the run writes its own report) and keeps files that are not
    kafkasim's."""
    out = tmp_path / "run"
    assert kafkasim("run", *QUICK, "--out", str(out)).returncode == 0
    for name in ("analysis.json", "report.html", "failure.txt"):
        (out / name).write_text("from the first run")
    (out / "notes.txt").write_text("mine")
    second = kafkasim("run", "--set", "run.duration.ms=2000", "--out", str(out), "--json")
    assert second.returncode == 0, second.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "events.jsonl",
        "notes.txt",
        "report.html",
        "scenario.toml",
        "summary.json",
    ]
    assert json.loads((out / "summary.json").read_text())["sim_ms"] == 2000
    assert "kafkasim run default-seed1" in (out / "report.html").read_text()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
def test_a_full_disk_is_one_line_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The event log written to /dev/full, where every write fails as on a full disk. The run
    gives back what it took: the actors' threads, and the CPU and policy it pinned itself to."""
    from sim.cli import main
    from sim.engine.eventlog import EventLog

    opened = EventLog.__init__
    monkeypatch.setattr(EventLog, "__init__", lambda log, path=None: opened(log, path and Path("/dev/full")))
    cpus, policy, threads = os.sched_getaffinity(0), os.sched_getscheduler(0), threading.active_count()
    assert main(["run", *QUICK, "--out", str(tmp_path / "run"), "--no-report"]) == 1
    assert capsys.readouterr().err == "kafkasim: /dev/full: No space left on device\n"
    assert (os.sched_getaffinity(0), os.sched_getscheduler(0), threading.active_count()) == (cpus, policy, threads)


def test_plain_kafkasim_prints_its_usage_and_version_prints_the_version() -> None:
    plain = kafkasim()
    assert (plain.returncode, plain.stdout) == (2, "")
    assert " ".join(plain.stderr.split()).startswith("usage: kafkasim [-h] [--version] {run,analyze,report,study,sweep,check,bench}")
    assert "run a scenario" in plain.stderr
    version = kafkasim("--version")
    assert (version.returncode, version.stdout) == (0, "kafkasim 0.1.0\n")


def test_interrupt_keeps_a_complete_log_and_marks_the_summary(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "sim.cli", "run", "--set", "run.duration.ms=100000000", "--out", str(out)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    events = out / "events.jsonl"
    deadline = time.monotonic() + 60
    # Interrupt once a produce has completed, so the summary has something to count.
    while (not events.exists() or b'"produce_completed"' not in events.read_bytes()) and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted at" in stderr
    assert "Traceback" not in stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True
    assert 0 < summary["sim_ms"] < 100_000_000
    data = events.read_bytes()
    assert data.endswith(b"\n")
    lines = [orjson.loads(line) for line in data.splitlines()]
    assert len(lines) == summary["events"]
    import hashlib

    assert hashlib.sha256(data).hexdigest() == summary["events_digest"]
    # The summary counts what happened up to the interrupt (the default study's producer sends
    # from the start), not zeros.
    sent = sum(len(e["records"]) for e in lines if e["event"] == "batch_sent" and e["attempt"] == 1)
    acked = sum(len(e["records"]) for e in lines if e["event"] == "produce_completed" and e["error"] == "NONE")
    assert summary["produced"] >= sent > 0, (sent, summary["produced"])
    assert summary["acked"] == acked > 0


def test_bench_prints_the_kernel_figures_as_json() -> None:
    """Not a timing test: checks the contract of the figures on a small workload."""
    from sim.studies.bench import BenchConfig, run_kernel_bench

    figures = run_kernel_bench(BenchConfig(nodes=5, actors_per_node=2, min_deliveries=3000, rounds=1))
    assert set(figures) >= {"pykka_deliveries_per_s", "direct_deliveries_per_s", "ratio"}
    assert figures["same_digest"] is True
    assert figures["ratio"] == pytest.approx(
        figures["pykka_deliveries_per_s"] / figures["direct_deliveries_per_s"], abs=0.01
    )


def test_bench_std_figures_are_consistent_with_each_other() -> None:
    """Not a timing test: the standard workload's figures on five simulated seconds (crash at
    2 s, restart at 3 s), each derived from the others as documented."""
    from sim.studies.bench import std_figures

    f = std_figures(("run.duration.ms=5000", "faults.1.at.ms=2000", "faults.1.restart.after.ms=1000"))
    assert (f["simulated_s"], f["segment_s"], len(f["wall_per_segment_s"])) == (5.0, 1.0, 5)
    assert f["invariant_violations"] == 0 and f["deliveries"] > 0
    # wall_s is rounded to 10 ms, and five simulated seconds take well under a second
    assert f["realtime_factor"] == pytest.approx(f["simulated_s"] / f["wall_s"], rel=0.03)
    assert f["us_per_delivery"] == pytest.approx(f["wall_s"] / f["deliveries"] * 1e6, rel=0.03)
    assert f["events_per_delivery"] == pytest.approx(f["events"] / f["deliveries"], abs=0.001)
    # The producer's quiet ticks are folded: one window a millisecond would be 5,000.
    assert (f["windows"], f["deliveries"]) == (2238, 2288)
    # Each segment's figure is rounded to 1 ms and the ratio to 0.001, from the exact figures:
    # a quiet segment of 12 ms is only known to 4%.
    def ratio_of(ratio: float, later: float, first: float, h: float = 0.0005) -> bool:
        return (later - h) / (first + h) - h <= ratio <= (later + h) / (first - h) + h

    walls = f["wall_per_segment_s"]
    assert ratio_of(f["minute5_vs_minute1"], walls[4], walls[0])
    cpus = f["cpu_per_segment_s"]
    assert len(cpus) == 5 and ratio_of(f["cpu_minute5_vs_minute1"], cpus[4], cpus[0])
    c = f["consumers"]  # the group of four: in 5 s it has barely formed (a 3 s join delay)
    assert set(c) == {"consumed", "duplicates", "rebalances"} and c["consumed"] <= p_records(f)
    assert f["floor_ratio"] == pytest.approx(f["us_per_delivery"] / f["floor_us_per_delivery"], rel=0.01)
    p = f["producer"]
    assert p["records"] == 5000 and p["acked"] <= p["records"]  # 1,000 records a second
    assert p["records_per_request"] == pytest.approx(p["records"] / p["produce_requests"], abs=0.01)
    assert p["records_per_wall_s"] == pytest.approx(p["records"] / f["wall_s"], rel=0.03)


def test_bench_protocols_compares_the_standard_workload_under_both_protocols() -> None:
    """Not a timing test: eight simulated seconds on 4.0 under each protocol, in child
    processes; the ratio is the consumer protocol's wall time over the classic one's, and both
    groups formed with every invariant kept."""
    from sim.studies.bench import run_protocols_bench

    f = run_protocols_bench(rounds=1, overrides=("run.duration.ms=8000", "faults.1.at.ms=2000", "faults.1.restart.after.ms=1000"))
    assert f["simulated_s"] == 8.0 and f["invariant_violations"] == 0
    assert f["consumer_vs_classic"] == pytest.approx(f["consumer_wall_s"] / f["classic_wall_s"], rel=0.03)
    # Four consumers: the classic group forms one generation after its 3 s join delay; the
    # consumer protocol computes a target assignment for each member's join.
    assert (f["classic_rebalances"], f["consumer_rebalances"]) == (1, 4)


def p_records(figures: dict) -> int:
    return figures["producer"]["records"]
