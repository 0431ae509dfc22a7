"""ActorRuntime: one behaviour through one window, without threads."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import pytest

from actors.core import Address, Ctx, Inbound, Out
from actors.runtime import ActorRuntime, Delivery, HandlerError
from protocols import encode_frame
from protocols.workload import PingRequest, PingResponse
from sim.engine.trace import ActorLog, TraceContext

ME = Address("n1", "a")
PEER = Address("n2", "b")


@dataclass
class Recorder:
    """Logs what it handles, in order, with the time it saw."""

    seen: list[tuple[int, str]] = field(default_factory=list)
    on_start_out: Out = field(default_factory=Out)

    def on_start(self, ctx: Ctx) -> Out:
        self.seen.append((ctx.now_ms, "start"))
        return self.on_start_out

    def on_message(self, ctx: Ctx, inbound: Inbound) -> Out:
        self.seen.append((ctx.now_ms, type(inbound.message).__name__))
        out = Out()
        if isinstance(inbound.message, PingRequest):
            if inbound.message.sent_ms < 0:
                raise ValueError("negative time")
            out.reply(inbound, PingResponse(sent_ms=inbound.message.sent_ms))
        return out

    def on_timer(self, ctx: Ctx, key: str) -> Out:
        self.seen.append((ctx.now_ms, f"timer:{key}"))
        out = Out()
        if key == "again":
            out.set_timer("again", 3)
        return out

    def snapshot(self) -> dict[str, Any]:
        return {"seen": list(self.seen)}


def _runtime(behavior: Recorder, start_ms: int = 0) -> ActorRuntime:
    return ActorRuntime(
        ME,
        behavior,
        rng=random.Random(1),
        log_factory=lambda clock: ActorLog(TraceContext("t", 1), ME.node, ME.actor, clock),
        start_ms=start_ms,
        disk={},
    )


def _delivery(ts: int, seq: int, msg: Any, correlation_id: int = 0) -> Delivery:
    return Delivery(ts, seq, PEER, encode_frame(msg, correlation_id))


def test_start_runs_first_then_events_in_time_order_timers_first_on_ties() -> None:
    b = Recorder()
    b.on_start_out.set_timer("t5", 5)
    b.on_start_out.set_timer("t2", 2)
    rt = _runtime(b)
    result = rt.run_window(0, 10, [_delivery(2, 1, PingRequest(sent_ms=0)), _delivery(7, 2, PingResponse(sent_ms=0))])
    assert b.seen == [(0, "start"), (2, "timer:t2"), (2, "PingRequest"), (5, "timer:t5"), (7, "PingResponse")]
    assert (result.delivered, result.timers) == (2, 2)
    assert result.next_timer_ms is None


def test_reply_goes_back_with_the_request_correlation_id_stamped_at_handling_time() -> None:
    rt = _runtime(Recorder())
    result = rt.run_window(0, 10, [_delivery(4, 1, PingRequest(sent_ms=3), correlation_id=99)])
    [send] = result.sends
    assert send.ts_ms == 4
    assert send.dst == PEER
    assert send.frame == encode_frame(PingResponse(sent_ms=3), 99)


def test_timer_set_within_the_window_fires_within_it_and_next_one_is_reported() -> None:
    b = Recorder()
    b.on_start_out.set_timer("again", 3)
    rt = _runtime(b)
    result = rt.run_window(0, 8, [])
    assert b.seen == [(0, "start"), (3, "timer:again"), (6, "timer:again")]
    assert result.next_timer_ms == 9


def test_setting_a_timer_again_replaces_it_and_cancel_removes_it() -> None:
    b = Recorder()
    b.on_start_out.set_timer("x", 2)
    b.on_start_out.set_timer("x", 5)
    b.on_start_out.set_timer("y", 1)
    b.on_start_out.cancel_timer("y")
    rt = _runtime(b)
    rt.run_window(0, 10, [])
    assert b.seen == [(0, "start"), (5, "timer:x")]


def test_cancelled_timers_do_not_pile_up_and_the_live_ones_fire_in_order() -> None:
    """Ten thousand 30 s timeouts set and cancelled (a busy client's requests, each answered)
    leave the heap bounded; the live timers still fire in (due, set) order."""
    from actors.runtime import COMPACT_TIMERS_ABOVE

    b = Recorder()
    for i in range(10_000):
        b.on_start_out.set_timer(f"timeout:{i}", 30_000)
        b.on_start_out.cancel_timer(f"timeout:{i}")
    b.on_start_out.set_timer("late", 9)
    b.on_start_out.set_timer("early", 3)
    b.on_start_out.set_timer("tie", 9)
    rt = _runtime(b)
    rt.run_window(0, 1, [])
    assert len(rt._timers) <= 3 + COMPACT_TIMERS_ABOVE + 1  # noqa: SLF001 - the bound itself
    rt.run_window(1, 20, [])
    assert b.seen == [(0, "start"), (3, "timer:early"), (9, "timer:late"), (9, "timer:tie")]


def test_overdue_events_are_handled_at_the_window_start() -> None:
    """A paused node's overdue work happens when it resumes, not in the past."""
    b = Recorder()
    b.on_start_out.set_timer("x", 2)
    rt = _runtime(b)
    rt.run_window(0, 1, [])
    rt.run_window(50, 60, [_delivery(3, 1, PingResponse(sent_ms=0))])
    assert b.seen == [(0, "start"), (50, "timer:x"), (50, "PingResponse")]


def test_a_bad_frame_is_rejected_and_logged_and_the_actor_goes_on() -> None:
    b = Recorder()
    rt = _runtime(b)
    bad = Delivery(1, 1, PEER, b"\x93\x01\x02")
    result = rt.run_window(0, 10, [bad, _delivery(2, 2, PingResponse(sent_ms=0))])
    assert result.rejected == 1
    assert [line.event["event"] for line in result.lines] == ["frame_rejected"]
    assert result.lines[0].event["reason"] == "checksum mismatch"
    assert b.seen[-1] == (2, "PingResponse")


def test_a_handler_exception_names_the_actor_time_and_event() -> None:
    rt = _runtime(Recorder())
    with pytest.raises(HandlerError, match=r"n1/a failed at 4 ms while handling PingRequest: ValueError: negative time"):
        rt.run_window(0, 10, [_delivery(4, 1, PingRequest(sent_ms=-1))])
