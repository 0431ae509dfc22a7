"""Progress on stderr: what it shows on a terminal and off one, how seldom it looks at the clock,
and that it never touches the event log."""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from sim.cli.progress import RunProgress, RunsProgress, run_line, time_left_s
from sim.studies.builtin import load_study
from sim.engine.kernel import HostKind
from sim.studies.runner import run_scenario
from tests.cli.test_cli import QUICK, ROOT


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now


def _drive(progress: RunProgress, clock: FakeClock, total_ms: int, wall_per_sim_s: float, window_ms: int = 1) -> None:
    """The kernel's windows, `window_ms` apart, the wall clock moving `wall_per_sim_s` a
    simulated second."""
    kernel = SimpleNamespace(now_ms=0)
    for now_ms in range(window_ms, total_ms + 1, window_ms):
        kernel.now_ms = now_ms
        clock.now = 100.0 + now_ms / 1000 * wall_per_sim_s
        progress(kernel)


def test_the_wall_time_left_is_the_pace_so_far() -> None:
    assert time_left_s(30_000, 120_000, 3.0) == 9.0
    assert time_left_s(0, 120_000, 3.0) is None
    assert run_line(60_000, 120_000, 6.2) == "simulated 60.0 s of 120.0 s (50%), 6 s so far, about 6 s left"
    assert run_line(120_000, 120_000, 125.0) == "simulated 120.0 s of 120.0 s (100%), 2 min 05 s so far"


def test_off_a_terminal_a_long_run_prints_a_line_every_tenth_once_past_five_seconds() -> None:
    clock, out = FakeClock(), io.StringIO()
    progress = RunProgress(100_000, tty=False, stream=out, clock=clock)
    _drive(progress, clock, 100_000, wall_per_sim_s=0.2, window_ms=250)  # 20 s of wall time
    progress.finish(100_000)
    assert out.getvalue().splitlines() == [
        "  simulated 30.0 s of 100.0 s (30%), 6 s so far, about 14 s left",
        "  simulated 40.0 s of 100.0 s (40%), 8 s so far, about 12 s left",
        "  simulated 50.0 s of 100.0 s (50%), 10 s so far, about 10 s left",
        "  simulated 60.0 s of 100.0 s (60%), 12 s so far, about 8 s left",
        "  simulated 70.0 s of 100.0 s (70%), 14 s so far, about 6 s left",
        "  simulated 80.0 s of 100.0 s (80%), 16 s so far, about 4 s left",
        "  simulated 90.0 s of 100.0 s (90%), 18 s so far, about 2 s left",
        "  simulated 100.0 s of 100.0 s (100%), 20 s so far",
    ]


def test_off_a_terminal_a_short_run_prints_nothing() -> None:
    clock, out = FakeClock(), io.StringIO()
    progress = RunProgress(100_000, tty=False, stream=out, clock=clock)
    _drive(progress, clock, 100_000, wall_per_sim_s=0.049, window_ms=100)  # 4.9 s of wall time
    progress.finish(100_000)
    assert out.getvalue() == ""


def test_progress_reads_the_clock_at_most_once_a_simulated_second() -> None:
    """Windows a millisecond apart: 60,000 calls, 60 reads of the clock (and one to start)."""
    clock = FakeClock()
    progress = RunProgress(60_000, tty=True, stream=io.StringIO(), clock=clock)
    _drive(progress, clock, 60_000, wall_per_sim_s=0.1)
    assert clock.reads == 1 + 60


def test_on_a_terminal_the_line_is_redrawn_in_place_and_ended() -> None:
    clock, out = FakeClock(), io.StringIO()
    progress = RunProgress(4_000, tty=True, stream=out, clock=clock)
    _drive(progress, clock, 4_000, wall_per_sim_s=0.5, window_ms=500)
    progress.finish(4_000)
    assert out.getvalue().split("\r")[1:] == [
        "  simulated 1.0 s of 4.0 s (25%), 0 s so far, about 2 s left",
        "  simulated 2.0 s of 4.0 s (50%), 1 s so far, about 1 s left",
        "  simulated 3.0 s of 4.0 s (75%), 2 s so far, about 0 s left",
        "  simulated 4.0 s of 4.0 s (100%), 2 s so far               ",  # what the last line held is cleared
        "  simulated 4.0 s of 4.0 s (100%), 2 s so far\n",
    ]


def test_a_sweeps_runs_off_a_terminal_are_counted_every_tenth() -> None:
    clock, out = FakeClock(), io.StringIO()
    progress = RunsProgress(tty=False, stream=out, clock=clock)
    for done, at in ((0, 0), (1, 6), (1, 7), (2, 9), (4, 12)):
        clock.now = 100.0 + at
        progress(done, 4)
    progress.finish()
    assert out.getvalue().splitlines() == [
        "  1 of 4 runs done, 6 s so far",
        "  2 of 4 runs done, 9 s so far",
        "  4 of 4 runs done, 12 s so far",
    ]
    bar = io.StringIO()
    on_tty = RunsProgress(tty=True, width=10, stream=bar, clock=FakeClock())
    on_tty(2, 4)
    on_tty.finish()
    on_tty.finish()  # once
    assert bar.getvalue() == "\r  [#####.....] 2/4 runs, 0 s\r  [#####.....] 2/4 runs, 0 s\n"


def test_progress_never_changes_the_event_log(tmp_path: Path) -> None:
    scenario = load_study(None, ["run.duration.ms=3000"])
    quiet = run_scenario(scenario, tmp_path / "quiet", host=HostKind.DIRECT)
    shown, ticks = io.StringIO(), iter(range(1000))
    progress = RunProgress(3000, tty=True, stream=shown, clock=lambda: float(next(ticks)))  # a second a read
    loud = run_scenario(scenario, tmp_path / "loud", host=HostKind.DIRECT, progress=progress)
    assert "simulated 2.0 s of 3.0 s" in shown.getvalue()
    assert loud["events_digest"] == quiet["events_digest"]
    assert (tmp_path / "loud" / "events.jsonl").read_bytes() == (tmp_path / "quiet" / "events.jsonl").read_bytes()


def test_run_on_a_terminal_shows_its_progress_on_stderr_and_keeps_json_on_stdout(tmp_path: Path) -> None:
    main, side = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "sim.cli", "run", *QUICK, "--out", str(tmp_path / "run"), "--json", "--no-report"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=side,
        text=True,
    )
    os.close(side)
    stdout, _ = proc.communicate(timeout=120)
    shown = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the terminal's other end is closed: all read
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    assert proc.returncode == 0
    assert json.loads(stdout)["sim_ms"] == 3000  # one JSON object, nothing else
    assert b"\r  simulated 1.0 s of 3.0 s (33%)" in shown
    last = shown.rsplit(b"\r  ", 1)[1]
    assert last.startswith(b"simulated 3.0 s of 3.0 s (100%), ") and last.endswith(b"\r\n")  # the line ends
