"""Helpers of the producer's folded ticks: the command list that notes when each timer is due,
and the count of the next records that a tick could place quietly. The fold itself, and when a
tick is quiet, are described with `Producer._begin` (`actors.producer.behavior`). The fold is
the simulator's, not Kafka's: it changes the producer's wake-ups, never its records or log.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from actors.core import Out
from actors.producer.accumulator import RecordAccumulator
from actors.producer.config import ProducerConfig
from actors.producer.partitioner import Partitioner, Partitioning, partition_for_key

__all__ = ["MAX_FOLDED_TICKS", "NEVER", "Room", "TimerCommands"]

NEVER = 2**62
"""Later than any simulated time."""
MAX_FOLDED_TICKS = 64
"""The most ticks one fold looks ahead: beyond it the producer wakes once more and folds again."""


class TimerCommands(Out):
    """A producer handler's commands, noting when each timer it sets is due (the tick fold
    must stop before every one of them)."""

    def __init__(self, now_ms: int, timers_due: dict[str, int]) -> None:
        super().__init__()
        self._now_ms = now_ms
        self._timers_due = timers_due

    def set_timer(self, key: str, after_ms: int) -> None:
        self._timers_due[key] = self._now_ms + after_ms
        super().set_timer(key, after_ms)

    def cancel_timer(self, key: str) -> None:
        self._timers_due.pop(key, None)
        super().cancel_timer(key)


class Room:
    """How many of the next records would each be placed without a random draw into an open
    batch with room, for a broker that can take no request now (see `Producer._fold`).
    `leader_of` gives a partition's leader (-1: none), `in_flight` each broker's requests in
    flight."""

    def __init__(  # noqa: PLR0913 - what placing a record reads
        self,
        config: ProducerConfig,
        partitioner: Partitioner | None,
        accumulator: RecordAccumulator,
        leader_of: Callable[[int], int],
        in_flight: Mapping[int, int],
    ) -> None:
        self._config = config
        self._partitioner = partitioner
        self._accumulator = accumulator
        self._leader_of = leader_of
        self._in_flight = in_flight

    def records(self, first: int, limit: int) -> int:
        """Of the records numbered from `first`, how many in a row (at most `limit`)."""
        partitioner = self._partitioner
        assert partitioner is not None
        if self._config.keys:
            return self._keyed(first, limit)
        sticky = partitioner.sticky if partitioner.kind in _STICKY_KINDS else None
        if sticky is None:
            return 0
        size = self._accumulator.record_size
        count = min(limit, self._fits(sticky) // size)
        if partitioner.kind is Partitioning.UNIFORM_STICKY:
            # KIP-794: the record that reaches twice `batch.size` is placed, then the next one
            # chooses again, at random.
            left = 2 * partitioner.batch_size - partitioner.produced_bytes
            count = min(count, max(1, -(-left // size)))
        return count

    def _keyed(self, first: int, limit: int) -> int:
        cfg, size = self._config, self._accumulator.record_size
        partitioner = self._partitioner
        if partitioner is None or partitioner.kind is Partitioning.ROUND_ROBIN:
            return 0
        fits: dict[int, int] = {}
        for count in range(limit):
            partition = partition_for_key(f"key-{(first + count) % cfg.keys}", cfg.partitions)
            room = fits[partition] if partition in fits else self._fits(partition)
            if room < size:
                return count
            fits[partition] = room - size
        return limit

    def _fits(self, partition: int) -> int:
        """Bytes the partition's open batch can still take, 0 if none can be used now."""
        leader = self._leader_of(partition)
        if leader < 0 or self._in_flight.get(leader, 0) < self._config.max_in_flight:
            return 0
        acc = self._accumulator
        queue = acc.queues.get(partition)
        if not queue or queue[-1].closed:
            return 0
        return acc.batch_size - queue[-1].size_bytes


_STICKY_KINDS = frozenset({Partitioning.STICKY, Partitioning.UNIFORM_STICKY})
