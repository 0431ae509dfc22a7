"""The producer's partitioners: Kafka's murmur2, and which partition each version picks."""

from __future__ import annotations

import random

import pytest

from actors.producer.partitioner import (
    Partitioner,
    Partitioning,
    murmur2,
    partition_for_key,
    to_positive,
)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"21", -973932308),
        (b"foobar", -790332482),
        (b"a-little-bit-long-string", -985981536),
        (b"a-little-bit-longer-string", -1486304829),
        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        (b"abc", 479470107),
    ],
)
def test_murmur2_matches_the_java_client(data: bytes, expected: int) -> None:
    """The vectors of Kafka's `UtilsTest.testMurmur2`: one per tail length and more."""
    assert murmur2(data) == expected


def test_a_key_goes_to_to_positive_of_its_hash_modulo_the_partitions() -> None:
    assert to_positive(-1) == 0x7FFFFFFF and to_positive(-973932308) == 1173551340
    assert partition_for_key("21", 12) == 1173551340 % 12 == 0
    for version in ((2, 0, 0), (2, 4, 0), (3, 9, 0)):
        p = Partitioner(Partitioning.default_for(version), 12, 16384, random.Random(1))
        assert p.partition("21", list(range(12))) == 0  # every default partitioner hashes keys


def test_the_default_for_unkeyed_records_by_version() -> None:
    assert Partitioning.default_for((2, 3, 0)) is Partitioning.ROUND_ROBIN_DEFAULT
    assert Partitioning.default_for((2, 4, 0)) is Partitioning.STICKY  # KIP-480
    assert Partitioning.default_for((3, 2, 0)) is Partitioning.STICKY
    assert Partitioning.default_for((3, 3, 0)) is Partitioning.UNIFORM_STICKY  # KIP-794


def test_round_robin_cycles_the_available_partitions_from_zero() -> None:
    p = Partitioner(Partitioning.ROUND_ROBIN, 4, 16384, random.Random(1))
    assert [p.partition(None, [0, 1, 2, 3]) for _ in range(6)] == [0, 1, 2, 3, 0, 1]
    assert [p.partition("k", [1, 3]) for _ in range(3)] == [1, 3, 1]  # keys too; counter 6, 7, 8


def test_the_old_default_round_robin_starts_at_a_random_counter() -> None:
    picks = [Partitioner(Partitioning.ROUND_ROBIN_DEFAULT, 12, 16384, random.Random(s)).partition(None, list(range(12))) for s in range(20)]
    assert len(set(picks)) > 1
    p = Partitioner(Partitioning.ROUND_ROBIN_DEFAULT, 12, 16384, random.Random(3))
    first = p.partition(None, list(range(12)))
    assert [p.partition(None, list(range(12))) for _ in range(3)] == [(first + i) % 12 for i in (1, 2, 3)]


def test_sticky_stays_until_a_new_batch_is_needed_then_moves_elsewhere() -> None:
    p = Partitioner(Partitioning.STICKY, 6, 16384, random.Random(5))
    available = list(range(6))
    first = p.partition(None, available)
    assert all(p.partition(None, available) == first for _ in range(10))
    moved = p.on_new_batch(first, available)
    assert moved != first and p.partition(None, available) == moved
    assert p.on_new_batch(first, available) == moved  # a stale partition does not move it again


def test_uniform_sticky_switches_after_batch_size_bytes() -> None:
    """KIP-794: switch once `batch.size` bytes went to the partition and a new batch was
    created, or at twice that size whatever happens."""
    p = Partitioner(Partitioning.UNIFORM_STICKY, 6, 1000, random.Random(7))
    available = list(range(6))
    first = p.partition(None, available)
    for _ in range(9):
        p.appended(first, 108, new_batch=False)
    assert p.partition(None, available) == first  # 972 bytes
    p.appended(first, 108, new_batch=False)
    assert p.partition(None, available) == first  # 1080 bytes, but no new batch
    p.appended(first, 108, new_batch=True)
    assert p.sticky is None  # the next record chooses again
    p.partition(None, available)
    chosen = p.sticky
    for _ in range(19):
        p.appended(chosen, 108, new_batch=False)
    assert p.sticky is None  # 2052 bytes >= 2 * batch.size


def test_uniform_sticky_prefers_shorter_queues() -> None:
    """With unequal queues the chance is proportional to (longest + 1 - queue length)."""
    p = Partitioner(Partitioning.UNIFORM_STICKY, 3, 1000, random.Random(11))
    counts = [0, 0, 0]
    for _ in range(3000):
        p.sticky, p.queue_sizes = None, (0, 3, 3)
        counts[p.partition(None, [0, 1, 2])] += 1
    assert [round(c / 3000, 1) for c in counts] == [0.7, 0.2, 0.2]  # weights 4, 1, 1 of 6
