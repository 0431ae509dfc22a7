"""The purgatory by partition (`DelayedOperationPurgatory`'s watchers)."""

from __future__ import annotations

from actors.broker.purgatory import Purgatory
from protocols.types import TopicPartition

T0, T1, T2 = (TopicPartition("T", p) for p in range(3))


def test_a_change_checks_only_the_operations_watching_its_partition_in_parking_order() -> None:
    purgatory: Purgatory[str] = Purgatory()
    purgatory.add(3, "produce to T-0 and T-1", (T0, T1))
    purgatory.add(1, "produce to T-1", (T1,))
    purgatory.add(2, "fetch of T-2", (T2,))
    assert purgatory.watching((T1,)) == [1, 3]
    assert purgatory.watching((T0, T2)) == [2, 3]
    assert purgatory.watching((T0, T1, T2)) == [1, 2, 3]
    assert purgatory.get(3) == "produce to T-0 and T-1"


def test_a_completed_operation_leaves_every_watch_list() -> None:
    purgatory: Purgatory[str] = Purgatory()
    purgatory.add(1, "a", (T0, T1, T0))
    assert purgatory.pop(1) == "a"
    assert purgatory.pop(1) is None  # completed and expired in the same window: the second is a no-op
    assert (purgatory.watching((T0, T1)), len(purgatory)) == ([], 0)
