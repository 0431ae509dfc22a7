"""Which partition a record goes to: Kafka's partitioners, by version.

- A keyed record goes to `toPositive(murmur2(key)) % numPartitions` (`Utils.murmur2`), in every
  version, unless the round-robin partitioner was chosen.
- An unkeyed record, by the default partitioner of the version:
  - before 2.4, round robin over the partitions that have a leader, from a counter that
    starts at a random value (`DefaultPartitioner`);
  - 2.4 to 3.2, KIP-480's sticky partitioner: one partition until a new batch must be created
    for it, then another one at random (`StickyPartitionCache`, `onNewBatch`);
  - from 3.3, KIP-794's uniform sticky partitioner: one partition until `batch.size` bytes were
    produced to it (switching when the next batch is created, or at twice that size), then
    another, weighted towards partitions with shorter queues when their queues differ
    (`BuiltInPartitioner`, adaptive partitioning on by default).
- `RoundRobinPartitioner`, when chosen (`partitioner = "round_robin"`): every record, keyed or
  not, to the next partition with a leader, from a counter starting at 0.

Random choices come from the producer's seeded stream, so a run is reproducible.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from enum import StrEnum

__all__ = ["Partitioner", "Partitioning", "murmur2", "partition_for_key", "to_positive"]

_MASK = 0xFFFFFFFF


def _signed(value: int) -> int:
    value &= _MASK
    return value - (1 << 32) if value & 0x80000000 else value


def murmur2(data: bytes) -> int:
    """Kafka's `Utils.murmur2`: the 32-bit hash, as the signed int Java returns."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * m) & _MASK
        k ^= k >> r
        k = (k * m) & _MASK
        h = ((h * m) & _MASK) ^ k
    tail = length & ~3
    rest = length % 4
    if rest == 3:  # noqa: PLR2004 - the switch's fall-through, written out
        h ^= data[tail + 2] << 16
    if rest >= 2:  # noqa: PLR2004
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * m) & _MASK
    h ^= h >> 13
    h = (h * m) & _MASK
    h ^= h >> 15
    return _signed(h)


def to_positive(number: int) -> int:
    """`Utils.toPositive`: clear the sign bit (not the absolute value)."""
    return number & 0x7FFFFFFF


def partition_for_key(key: str, partitions: int) -> int:
    return to_positive(murmur2(key.encode())) % partitions


def _java_int(rng: random.Random) -> int:
    """A uniformly drawn Java int."""
    return _signed(rng.getrandbits(32))


class Partitioning(StrEnum):
    ROUND_ROBIN_DEFAULT = "default_round_robin"
    """The default partitioner before 2.4."""
    STICKY = "sticky"
    """The default partitioner from 2.4 to 3.2 (KIP-480)."""
    UNIFORM_STICKY = "uniform_sticky"
    """The built-in partitioner from 3.3 (KIP-794)."""
    ROUND_ROBIN = "round_robin"
    """`RoundRobinPartitioner`, when configured."""

    @classmethod
    def default_for(cls, version: tuple[int, int, int]) -> Partitioning:
        if version >= (3, 3, 0):
            return cls.UNIFORM_STICKY
        return cls.STICKY if version >= (2, 4, 0) else cls.ROUND_ROBIN_DEFAULT


class Partitioner:
    """The partitioner of one producer for one topic."""

    def __init__(self, kind: Partitioning, partitions: int, batch_size: int, rng: random.Random) -> None:
        self.kind = kind
        self.partitions = partitions
        self.batch_size = batch_size
        self.rng = rng
        self.counter: int | None = 0 if kind is Partitioning.ROUND_ROBIN else None
        self.sticky: int | None = None
        self.produced_bytes = 0
        """Bytes produced to the sticky partition since it was chosen (KIP-794)."""
        self.queue_sizes: Sequence[int] = ()
        """Each available partition's queued batches, as the accumulator last saw them."""

    def partition(self, key: str | None, available: Sequence[int]) -> int:
        """The partition for a record; `available` lists the partitions with a known leader."""
        if self.kind is Partitioning.ROUND_ROBIN:
            return self._next_round_robin(available)
        if key is not None:
            return partition_for_key(key, self.partitions)
        if self.kind is Partitioning.ROUND_ROBIN_DEFAULT:
            return self._next_round_robin(available)
        if self.sticky is None:
            self.sticky = self._next_sticky(available, previous=None)
        return self.sticky

    def on_new_batch(self, partition: int, available: Sequence[int]) -> int:
        """KIP-480: the sticky partition needed a new batch; switch and say where to append."""
        if self.kind is Partitioning.STICKY and self.sticky == partition:
            self.sticky = self._next_sticky(available, previous=partition)
        return self.sticky if self.sticky is not None else partition

    def appended(self, partition: int, size: int, *, new_batch: bool) -> None:
        """KIP-794 (`updatePartitionInfo`): switch after `batch.size` bytes when a batch is
        created, or after twice that in any case, so switches rarely split a lingering batch."""
        if self.kind is not Partitioning.UNIFORM_STICKY or partition != self.sticky:
            return
        self.produced_bytes += size
        if self.produced_bytes >= 2 * self.batch_size or (self.produced_bytes >= self.batch_size and new_batch):
            self.sticky = None  # the next record chooses again

    # ------------------------------------------------------------------ choices

    def _next_round_robin(self, available: Sequence[int]) -> int:
        if self.counter is None:
            self.counter = _java_int(self.rng)  # DefaultPartitioner's counter starts at random
        value = to_positive(self.counter)
        self.counter = _signed(self.counter + 1)
        return available[value % len(available)] if available else value % self.partitions

    def _next_sticky(self, available: Sequence[int], previous: int | None) -> int:
        if self.kind is Partitioning.UNIFORM_STICKY:
            self.produced_bytes = 0
            return self._uniform_choice(available)
        # StickyPartitionCache.nextPartition: a random available partition other than the last.
        if not available:
            return to_positive(_java_int(self.rng)) % self.partitions
        if len(available) == 1:
            return available[0]
        while True:
            choice = available[to_positive(_java_int(self.rng)) % len(available)]
            if choice != previous:
                return choice

    def _uniform_choice(self, available: Sequence[int]) -> int:
        """`BuiltInPartitioner.nextPartition`: uniform while the queues are equal, else weighted
        by how much shorter each partition's queue is than the longest (plus one)."""
        if not available:
            return to_positive(_java_int(self.rng)) % self.partitions
        sizes = self.queue_sizes
        if len(sizes) != len(available) or len(set(sizes)) <= 1:
            return available[to_positive(_java_int(self.rng)) % len(available)]
        top = max(sizes) + 1
        cumulative, total = [], 0
        for size in sizes:
            total += top - size
            cumulative.append(total)
        weight = to_positive(_java_int(self.rng)) % total
        for partition, bound in zip(available, cumulative, strict=True):
            if weight < bound:
                return partition
        return available[-1]
