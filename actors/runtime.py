"""Running one behaviour through one lookahead window.

The kernel advances virtual time in windows no longer than the network's minimum latency: nothing
an actor sends inside a window can arrive inside it. So within a window every actor is
independent, and each can be handed *all* of its events for the window at once: the deliveries
the kernel routed to it, and its own timers (which only it can set, so it keeps them). The
runtime processes them in `(time, timers first, sequence)` order, collects the commands, encodes
every outgoing message to msgpack, and hands back a `WindowResult` that the kernel merges in a
fixed actor order. The outcome depends on the scenario and the seed alone, never on which thread
ran first.

`ActorRuntime` is pure Python with no threading. The Pykka host (`actors.host`) runs it inside a
`ThreadingActor`; the direct executor runs it in the caller's thread, as the reference that the
Pykka path is measured against.
"""

from __future__ import annotations

import heapq
import random
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple, Protocol

from actors.core import (
    Address,
    Append,
    Behavior,
    CancelTimer,
    Ctx,
    DeleteHead,
    Disconnect,
    DiskCommand,
    Emit,
    Exit,
    Flush,
    Inbound,
    Out,
    Send,
    SetTimer,
    Truncate,
    WriteFile,
)
from protocols.codec import FrameError, decode_frame, encode_frame

__all__ = ["ActorRuntime", "Delivery", "HandlerError", "OutboundFrame", "WindowResult"]

_DISK_COMMANDS = frozenset({Append, Truncate, DeleteHead, WriteFile, Flush})

_START, _TIMER, _MESSAGE = "start", "timer", "message"
"""What a handler was called for; described only if it fails (`_what`)."""

COMPACT_TIMERS_ABOVE = 32
"""Dead timer entries tolerated beyond the live ones before the heap is rebuilt. Small: every
push and pop pays for the heap's depth, while a rebuild, coming after at least as many drops as
there are live timers, costs a few entries per drop whatever this is."""


class Delivery(NamedTuple):
    """An envelope the network delivers: at `ts_ms`, in global order `seq`."""

    ts_ms: int
    seq: int
    src: Address
    frame: bytes


class OutboundFrame(NamedTuple):
    """A frame sent at `ts_ms`; it names its sender, so the kernel merges a window's sends as
    they are. A frame of None is the sender closing its connection to `dst` (`Disconnect`),
    kept among the sends so that what it sent before and after the close stays apart."""

    ts_ms: int
    dst: Address
    frame: bytes | None
    src: Address


# A NamedTuple's own constructor runs a Python `__new__`; these build one in C, from a tuple of
# its fields, for what is built per message.
_new_outbound = partial(tuple.__new__, OutboundFrame)
_new_inbound = partial(tuple.__new__, Inbound)


class Log(Protocol):
    def emit(self, event: str, fields: dict[str, Any]) -> None: ...

    def take(self) -> list[Any]: ...


@dataclass(slots=True)
class WindowResult:
    """What one actor did in one window, in the order it did it."""

    sends: list[OutboundFrame] = field(default_factory=list)
    lines: list[Any] = field(default_factory=list)
    disk: list[DiskCommand] = field(default_factory=list)
    next_timer_ms: int | None = None
    delivered: int = 0
    timers: int = 0
    rejected: int = 0
    exited: int | None = None
    """When the actor's process exited on purpose (`Out.exit`), if it did."""
    disconnected: bool = False
    """Whether `sends` holds a closed connection (`Disconnect`)."""


class HandlerError(Exception):
    """A handler raised: the run fails with the actor, the event and the partial window."""

    def __init__(self, address: Address, ts_ms: int, what: str, detail: str, partial: WindowResult):
        super().__init__(f"{address} failed at {ts_ms} ms while handling {what}: {detail}")
        self.address = address
        self.ts_ms = ts_ms
        self.what = what
        self.detail = detail
        self.partial = partial


def _what(kind: str, args: tuple[Any, ...]) -> str:
    """The event a failed handler was handling: `start`, `timer 'key'` or the message's type."""
    if kind == _TIMER:
        return f"timer {args[0]!r}"
    if kind == _MESSAGE:
        return type(args[0].message).__name__
    return kind


class ActorRuntime:
    """One behaviour, its timers and its clock. Not thread-safe: one caller at a time."""

    def __init__(
        self,
        address: Address,
        behavior: Behavior,
        *,
        rng: random.Random,
        log_factory: Callable[[Callable[[], int]], Log],
        start_ms: int,
        disk: dict[str, Any],
    ) -> None:
        self.address = address
        self.behavior = behavior
        self.now_ms = start_ms
        self._ctx = Ctx(address, start_ms, rng, disk)
        self._log = log_factory(lambda: self.now_ms)
        self._start_pending = True
        self._timers: list[tuple[int, int, str]] = []  # heap of (due_ms, seq, key)
        self._live_timers: dict[str, int] = {}  # key -> seq of its live entry
        self._dead_timers = 0  # entries still in the heap whose timer was cancelled or reset
        self._timer_seq = 0
        self._result = WindowResult()

    @property
    def next_timer_ms(self) -> int | None:
        """When this actor next has something of its own to do (its start, or a timer)."""
        if self._start_pending:
            return self.now_ms
        self._drop_dead_timers()
        return self._timers[0][0] if self._timers else None

    def run_window(self, start_ms: int, end_ms: int, deliveries: list[Delivery]) -> WindowResult:
        """Process every event before `end_ms`: the deliveries given and this actor's timers.

        `start_ms` is the window's start; an event already overdue (a paused node) is handled
        then, not in the past.
        """
        result = self._result = WindowResult()
        if start_ms > self.now_ms:
            self.now_ms = start_ms
        if self._start_pending:
            self._start_pending = False
            self._handle(_START, self.behavior.on_start)
        timers = self._timers  # compacted in place (`_timer_dropped`): this stays the heap
        live = self._live_timers
        ctx, behavior = self._ctx, self.behavior
        i, count = 0, len(deliveries)
        # Frames are decoded and handlers called here, not through `_handle`: this runs for
        # every event.
        while True:
            if timers and live.get(timers[0][2]) != timers[0][1]:
                self._drop_dead_timers()
            due = timers[0][0] if timers and timers[0][0] < end_ms else end_ms
            if i < count and deliveries[i].ts_ms < due:  # at equal times, timers first
                delivery = deliveries[i]
                i += 1
                if delivery.ts_ms > self.now_ms:
                    self.now_ms = delivery.ts_ms
                result.delivered += 1
                try:
                    frame = decode_frame(delivery.frame)
                except FrameError as exc:
                    self._reject(delivery, exc)
                    continue
                inbound = _new_inbound(
                    (delivery.src, frame.message, frame.correlation_id, frame.version)
                )
                ctx.now_ms = self.now_ms
                try:
                    self._apply(behavior.on_message(ctx, inbound))
                except Exception as exc:
                    raise self._failed(_MESSAGE, (inbound,), exc) from exc
            elif due < end_ms:
                _, _, key = heapq.heappop(timers)
                del live[key]
                if due > self.now_ms:
                    self.now_ms = due
                result.timers += 1
                ctx.now_ms = self.now_ms
                try:
                    self._apply(behavior.on_timer(ctx, key))
                except Exception as exc:
                    raise self._failed(_TIMER, (key,), exc) from exc
            else:
                break
        result.next_timer_ms = timers[0][0] if timers else None  # the dead were dropped above
        result.lines = self._log.take()
        return result

    def pausing(self, now_ms: int) -> int | None:
        """The node is paused from `now_ms` (between windows): a behaviour that defers work
        (`pausing`) brings it up to date and may set timers; returns the next timer's time."""
        pausing = getattr(self.behavior, "pausing", None)
        if pausing is not None:
            self.now_ms = max(self.now_ms, now_ms)
            self._apply(pausing(now_ms))
        return self.next_timer_ms

    def snapshot(self, now_ms: int) -> dict[str, Any]:
        """The behaviour's state as of `now_ms` (the kernel's time, between windows): a
        behaviour that defers work it can do silently (`settle`) does it first."""
        settle = getattr(self.behavior, "settle", None)
        if settle is not None:
            settle(now_ms)
        return self.behavior.snapshot()

    def _reject(self, delivery: Delivery, error: FrameError) -> None:
        """A bad frame is the sender's or the wire's fault; the actor never sees it."""
        self._result.rejected += 1
        self._emit(
            Emit(
                "frame_rejected",
                {"src": str(delivery.src), "bytes": len(delivery.frame), "reason": str(error)},
            )
        )

    def _handle(self, kind: str, handler: Callable[..., Out], *args: Any) -> None:
        self._ctx.now_ms = self.now_ms
        try:
            out = handler(self._ctx, *args)
            self._apply(out)
        except Exception as exc:
            raise self._failed(kind, args, exc) from exc

    def _failed(self, kind: str, args: tuple[Any, ...], exc: Exception) -> HandlerError:
        self._result.lines = self._log.take()
        detail = "".join(traceback.format_exception_only(exc)).strip()
        return HandlerError(self.address, self.now_ms, _what(kind, args), detail, self._result)

    def _apply(self, out: Out) -> None:
        # Tested by exact type, the commonest first: this runs for every command of every event.
        for command in out:
            kind = type(command)
            if kind is Emit:
                self._log.emit(command.event, command.fields)
            elif kind is Send:
                frame = encode_frame(command.message, command.correlation_id, command.version)
                self._result.sends.append(
                    _new_outbound((self.now_ms, command.dst, frame, self.address))
                )
            elif kind is SetTimer:
                self._set_timer(command.key, command.after_ms)
            elif kind is CancelTimer:
                if self._live_timers.pop(command.key, None) is not None:
                    self._timer_dropped()
            elif kind in _DISK_COMMANDS:
                self._result.disk.append(command)
            elif kind is Exit:
                self._result.exited = self.now_ms
            elif kind is Disconnect:
                closed = _new_outbound((self.now_ms, command.dst, None, self.address))
                self._result.sends.append(closed)
                self._result.disconnected = True
            else:
                msg = f"unknown command {command!r}"
                raise TypeError(msg)

    def _emit(self, command: Emit) -> None:
        self._log.emit(command.event, command.fields)

    def _set_timer(self, key: str, after_ms: int) -> None:
        if after_ms < 0:
            msg = f"timer {key!r} set {after_ms} ms in the past"
            raise ValueError(msg)
        seq = self._timer_seq = self._timer_seq + 1
        live = self._live_timers
        if key in live:
            self._timer_dropped()  # the earlier entry of this key is dead
        live[key] = seq
        heapq.heappush(self._timers, (self.now_ms + after_ms, seq, key))

    def _timer_dropped(self) -> None:
        """A heap entry died (its timer was cancelled or set again). Dead entries are skipped
        when they reach the top; when they outnumber the live ones, the heap is rebuilt from the
        live ones, so a busy actor's cancelled 30 s timeouts do not pile up. Entries are ordered
        by (due, sequence), a total order, so the rebuilt heap fires in the same order."""
        self._dead_timers += 1
        if self._dead_timers > len(self._live_timers) + COMPACT_TIMERS_ABOVE:
            live = self._live_timers
            self._timers[:] = [entry for entry in self._timers if live.get(entry[2]) == entry[1]]
            heapq.heapify(self._timers)
            self._dead_timers = 0

    def _drop_dead_timers(self) -> None:
        timers = self._timers
        while timers and self._live_timers.get(timers[0][2]) != timers[0][1]:
            heapq.heappop(timers)
            self._dead_timers -= 1
