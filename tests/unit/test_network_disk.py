"""The network's order and faults, and the disk's crash kinds."""

from __future__ import annotations

import random

from actors.core import Append, Flush, Truncate, WriteFile
from sim.engine.disk import CrashKind, Disk
from sim.engine.network import HELD, FaultKind, LinkFault, Network, NetworkConfig


def _net(seed: int = 1, low: int = 1, high: int = 20) -> Network:
    return Network(NetworkConfig(low, high), random.Random(seed))


def test_a_connection_keeps_fifo_order_despite_random_latency() -> None:
    net = _net()
    due = [net.transmit(t, "a", "b", b"x")[0].deliver_ms for t in range(200)]  # type: ignore[index]
    assert due == sorted(due)
    assert all(d - t >= 1 for t, d in enumerate(due))


def test_latency_stays_within_the_configured_bounds() -> None:
    net = _net(low=3, high=7)
    lat = {net.transmit(0, "a", f"n{i}", b"x")[0].deliver_ms for i in range(500)}  # type: ignore[index]
    assert lat == {3, 4, 5, 6, 7}


def test_a_partition_holds_frames_and_keeps_the_connections_until_heal() -> None:
    net = _net()
    before = net.connection("a", "b")
    net.partition(["a"], ["b", "c"])
    assert net.transmit(0, "a", "b", b"x") == HELD
    assert net.transmit(0, "c", "a", b"x") == HELD
    assert net.connection("a", "b") == before  # a cut closes nothing
    assert net.transmit(0, "b", "c", b"x") != HELD
    assert net.heal() == [("a", "b"), ("a", "c"), ("b", "a"), ("c", "a")]
    assert isinstance(net.transmit(0, "a", "b", b"x"), list)


def test_a_link_holds_its_entries_in_order_and_gives_them_back_once() -> None:
    net = _net()
    for entry in ("first", "second", "third"):
        net.hold("a", "b", entry)
    net.hold("b", "a", "answer")
    assert net.holding("a") == [("a", "b"), ("b", "a")]
    assert net.discard(("a", "b"), lambda e: e == "second") == ["second"]
    assert net.release(("a", "b")) == ["first", "third"]
    assert net.release(("a", "b")) == []
    assert net.holding("b") == [("b", "a")]


def test_lifting_one_partition_keeps_the_links_another_one_cut() -> None:
    net = _net()
    net.partition(["a"], ["b", "c"])
    net.partition(["a"], ["b"])
    assert net.lift(["a"], ["b", "c"]) == [("a", "c"), ("c", "a")]
    assert net.transmit(0, "a", "b", b"x") == HELD
    assert net.transmit(0, "c", "a", b"x") != HELD
    assert net.lift(["a"], ["b"]) == [("a", "b"), ("b", "a")]
    assert isinstance(net.transmit(0, "b", "a", b"x"), list)


def test_one_way_partition_blocks_one_direction_only() -> None:
    net = _net()
    net.partition(["a"], ["b"], one_way=True)
    assert net.transmit(0, "a", "b", b"x") == HELD
    assert isinstance(net.transmit(0, "b", "a", b"x"), list)


def test_link_faults_apply_only_in_their_window_and_to_their_links() -> None:
    net = _net()
    net.add_fault(LinkFault(FaultKind.DROP, start_ms=10, end_ms=20, src=frozenset({"a"})))
    assert isinstance(net.transmit(5, "a", "b", b"x"), list)
    assert net.transmit(10, "a", "b", b"x") == "dropped"
    assert isinstance(net.transmit(10, "b", "a", b"x"), list)
    assert isinstance(net.transmit(20, "a", "b", b"x"), list)


def test_duplicate_delay_and_corrupt() -> None:
    net = _net(low=5, high=5)
    net.add_fault(LinkFault(FaultKind.DUPLICATE, start_ms=0))
    net.add_fault(LinkFault(FaultKind.DELAY, start_ms=0, delay_ms=100))
    net.add_fault(LinkFault(FaultKind.CORRUPT, start_ms=0))
    first, second = net.transmit(0, "a", "b", b"abcdef")  # type: ignore[misc]
    assert (first.deliver_ms, second.deliver_ms) == (105, 106)
    assert first.frame != b"abcdef"
    assert len(first.frame) == 6


def test_drop_probability_is_honoured_statistically_and_deterministically() -> None:
    def drops(seed: int) -> list[bool]:
        net = _net(seed)
        net.add_fault(LinkFault(FaultKind.DROP, start_ms=0, probability=0.3))
        return [net.transmit(0, "a", "b", b"x") == "dropped" for _ in range(2000)]

    assert drops(4) == drops(4)
    assert 500 < sum(drops(4)) < 700


def _disk() -> Disk:
    disk = Disk()
    disk.apply(Append("log", (0, 1, 2)))
    disk.apply(Flush("log"))
    disk.apply(Append("log", (3, 4)))
    disk.apply(WriteFile("hw-checkpoint", 2))
    disk.apply(WriteFile("scratch", "a", sync=False))
    return disk


def test_process_crash_keeps_the_page_cache() -> None:
    disk = _disk()
    disk.crash(CrashKind.PROCESS)
    assert disk.view() == {"hw-checkpoint": 2, "log": (0, 1, 2, 3, 4), "scratch": "a"}


def test_power_loss_keeps_only_what_was_flushed() -> None:
    disk = _disk()
    disk.crash(CrashKind.POWER_LOSS)
    assert disk.view() == {"hw-checkpoint": 2, "log": (0, 1, 2)}


def test_disk_loss_keeps_nothing() -> None:
    disk = _disk()
    disk.crash(CrashKind.DISK_LOSS)
    assert disk.view() == {}


def test_truncation_below_the_flushed_point_survives_power_loss() -> None:
    disk = _disk()
    disk.apply(Truncate("log", 1))
    disk.apply(Append("log", (9,)))
    disk.crash(CrashKind.POWER_LOSS)
    assert disk.view()["log"] == (0,)
