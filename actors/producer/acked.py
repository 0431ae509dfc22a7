"""The records a producer had acknowledged, kept for the end-of-run checks as runs.

A run is (partition, offset, first record number, count): records numbered consecutively at
consecutive offsets of one partition. A batch of the sticky partitioner is one run; a run
merges with the one before it when it continues it. The runs are machine integers in one array,
so a long run's acknowledgements cost a few bytes per batch, not per record.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence

__all__ = ["AckedRecords", "Run"]

Run = tuple[int, int, int, int]
"""(partition, offset of the first record, its number, count)."""


class AckedRecords:
    __slots__ = ("_runs", "count")

    def __init__(self) -> None:
        self._runs = array("q")
        """The runs, four integers each."""
        self.count = 0

    def add(self, partition: int, base_offset: int, numbers: Sequence[int]) -> None:
        """A batch acknowledged at `base_offset`: its records' numbers, in offset order."""
        self.count += len(numbers)
        start = 0
        for i in range(1, len(numbers) + 1):
            if i == len(numbers) or numbers[i] != numbers[i - 1] + 1:
                self._add_run(partition, base_offset + start, numbers[start], i - start)
                start = i

    def _add_run(self, partition: int, offset: int, first: int, count: int) -> None:
        runs = self._runs
        if runs and runs[-4] == partition and (runs[-3], runs[-2]) == (offset - runs[-1], first - runs[-1]):
            runs[-1] += count  # it continues the last run
        else:
            runs.extend((partition, offset, first, count))

    def runs(self) -> Iterator[Run]:
        runs = self._runs
        for i in range(0, len(runs), 4):
            yield runs[i], runs[i + 1], runs[i + 2], runs[i + 3]

    def copy(self) -> AckedRecords:
        other = AckedRecords()
        other._runs = array("q", self._runs)
        other.count = self.count
        return other

    def __len__(self) -> int:
        return self.count
