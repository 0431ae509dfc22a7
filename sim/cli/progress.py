"""What a command is doing while it works, on stderr (stdout keeps `--json` clean).

On a terminal a run redraws one line (simulated time of the total, the wall time left) and a
sweep a bar of its runs. Off a terminal nothing is redrawn: a run or a sweep prints a line each
time another tenth is done, and only once it has taken `QUIET_S` of wall time, so a short run
prints nothing it did not print before. The wall clock is read here, never by the simulation:
a run's hook compares the kernel's simulated time with the next whole second before anything
else, so it costs one comparison a window, and it writes nothing but stderr.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

__all__ = ["QUIET_S", "RunProgress", "RunsProgress", "phase", "run_line", "time_left_s"]

QUIET_S = 5.0
"""Off a terminal, what takes less wall time than this prints no progress."""
REDRAW_S = 0.25
"""On a terminal, the shortest time between two redraws of a line."""


def time_left_s(done: float, total: float, elapsed_s: float) -> float | None:
    """The wall time left at the pace so far; None before anything is done."""
    if done <= 0 or total <= 0:
        return None
    return max(0.0, elapsed_s * (total - done) / done)


def _duration(seconds: float) -> str:
    if seconds < 60:  # noqa: PLR2004 - a minute
        return f"{seconds:.0f} s"
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes} min {secs:02d} s"


def run_line(now_ms: int, total_ms: int, elapsed_s: float) -> str:
    """`simulated 60.0 s of 120.0 s (50%), 6 s so far, about 6 s left`."""
    share = min(100, now_ms * 100 // max(1, total_ms))
    left = time_left_s(now_ms, total_ms, elapsed_s)
    tail = "" if left is None or now_ms >= total_ms else f", about {_duration(left)} left"
    return f"simulated {now_ms / 1000:.1f} s of {total_ms / 1000:.1f} s ({share}%), {_duration(elapsed_s)} so far{tail}"


class _Ticker:
    """What the two renderers share: the stream, the clock, the tenths printed off a terminal."""

    def __init__(self, *, tty: bool, stream: TextIO | None, clock: Callable[[], float]) -> None:
        self.tty = tty
        self.stream = stream or sys.stderr
        self.clock = clock
        self.started = clock()
        self._drawn_at: float | None = None
        self._tenth = 0
        self._width = 0

    def show(self, done: float, total: float, line: Callable[[float], str], *, final: bool = False) -> None:
        now = self.clock()
        elapsed = now - self.started
        if self.tty:
            if final or self._drawn_at is None or now - self._drawn_at >= REDRAW_S:
                self._drawn_at = now
                text = line(elapsed)
                self.stream.write(f"\r  {text}{' ' * max(0, self._width - len(text))}{chr(10) if final else ''}")
                self._width = len(text)
                self.stream.flush()
            return
        tenth = int(min(done, total) * 10 // max(1, total))
        if tenth > self._tenth:
            self._tenth = tenth
            if elapsed >= QUIET_S:
                self.stream.write(f"  {line(elapsed)}\n")
                self.stream.flush()


class RunProgress:
    """`run_scenario`'s progress hook for a run of `total_ms` simulated milliseconds."""

    def __init__(
        self, total_ms: int, *, tty: bool, stream: TextIO | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.total_ms = total_ms
        self._ticker = _Ticker(tty=tty, stream=stream, clock=clock)
        self._next_ms = 1000

    def __call__(self, kernel: Any) -> None:
        now_ms = kernel.now_ms
        if now_ms < self._next_ms:  # at most once a simulated second
            return
        self._next_ms = (now_ms // 1000 + 1) * 1000
        self._ticker.show(now_ms, self.total_ms, lambda elapsed: run_line(now_ms, self.total_ms, elapsed))

    def finish(self, now_ms: int) -> None:
        """The last state, on a terminal (its line ends); off a terminal, nothing more."""
        if self._ticker.tty:
            self._ticker.show(now_ms, self.total_ms, lambda e: run_line(now_ms, self.total_ms, e), final=True)


class RunsProgress:
    """A sweep's runs: `progress(done, total)`, called about twice a second while they run."""

    def __init__(
        self, *, tty: bool, width: int = 30, stream: TextIO | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.width = width
        self._tty, self._stream, self._clock = tty, stream, clock
        self._ticker: _Ticker | None = None  # started by the first call: the runs', not Spark's, time
        self._last = (0, 0)

    def _line(self, done: int, total: int, elapsed: float) -> str:
        if self._tty:
            filled = self.width * done // max(1, total)
            return f"[{'#' * filled}{'.' * (self.width - filled)}] {done}/{total} runs, {_duration(elapsed)}"
        return f"{done} of {total} runs done, {_duration(elapsed)} so far"

    def __call__(self, done: int, total: int) -> None:
        self._last = (done, total)
        if self._ticker is None:
            self._ticker = _Ticker(tty=self._tty, stream=self._stream, clock=self._clock)
        self._ticker.show(done, total, lambda elapsed: self._line(done, total, elapsed))

    def finish(self) -> None:
        """On a terminal, the bar's last state and the end of its line (once)."""
        if self._ticker is not None and self._tty and self._last[1]:
            done, total = self._last
            self._ticker.show(done, total, lambda elapsed: self._line(done, total, elapsed), final=True)
        self._last = (0, 0)


def phase(text: str, *, step: bool = True, stream: TextIO | None = None) -> None:
    """A command's title (`step=False`) or the phase it begins, one line each."""
    out = stream or sys.stderr
    out.write(f"{'  ' if step else ''}{text}\n")
    out.flush()
