"""`sim.analytics.session.together`: computations side by side, results in order, failures kept."""

from __future__ import annotations

import threading

import pytest

from sim.analytics.session import together


def test_results_come_in_the_order_given_and_the_work_runs_at_once() -> None:
    started = threading.Barrier(3, timeout=10)  # every computation waits for the other two

    def work(value: int) -> int:
        started.wait()
        return value * 10

    assert together(lambda: work(1), lambda: work(2), lambda: work(3)) == [10, 20, 30]


def test_the_first_runs_in_the_callers_thread() -> None:
    caller = threading.get_ident()
    first, second = together(threading.get_ident, threading.get_ident)
    assert first == caller
    assert second != caller


def test_a_failure_of_another_is_raised_once_all_have_ended() -> None:
    failed = threading.Event()
    ended = []

    def fails() -> None:
        failed.set()
        raise ValueError("the second failed")

    def after_the_failure() -> None:
        assert failed.wait(timeout=10)
        ended.append("third")

    with pytest.raises(ValueError, match="the second failed"):
        together(lambda: None, fails, after_the_failure)
    assert ended == ["third"]


def test_the_first_failure_in_order_wins() -> None:
    def fails(message: str) -> None:
        raise RuntimeError(message)

    with pytest.raises(RuntimeError, match="second"):
        together(lambda: 1, lambda: fails("second"), lambda: fails("third"))


def test_nothing_to_do() -> None:
    assert together() == []
