"""Record values held compactly: a producer's batch as a run of numbered values.

A simulated producer's record value names the producer and the record's number
(`producer-1:17`), and a batch holds numbers in order, most often consecutive (the sticky
partitioner) or evenly spaced (round robin). Held as strings, a long run keeps millions of them;
held as a run (`producer-1:`, first number, count, step) a batch costs the same whatever its
size. A run is a read-only sequence of the same strings: it goes on the wire as the list of
them, so the wire and the event log do not change, and is turned into strings only where
something reads a value (an encoder, a check, a test).

`LogEntries` shows a log of batches as its records, `(offset, leader epoch, value)`, made one by
one as they are read: a replica's view for the end-of-run checks and the tests, which costs a
reference per batch however long the log.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from itertools import accumulate
from sys import intern
from typing import Protocol, overload

__all__ = ["Batch", "BatchRuns", "LogEntries", "Run", "ValueRun", "compact_values", "numbered", "producer_records"]

_DIGITS = "0123456789"


class ValueRun(Sequence[str]):
    """The values `prefix + str(n)` for n in `first, first + step, ...`, `count` of them. The
    prefix never ends in a digit, so equal runs are equal fields (see `numbered`)."""

    __slots__ = ("count", "first", "prefix", "step")

    def __init__(self, prefix: str, first: int, count: int, step: int = 1) -> None:
        self.prefix, self.first, self.count, self.step = prefix, first, count, step

    def numbers(self) -> range:
        return range(self.first, self.first + self.count * self.step, self.step)

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[str]:
        return map(self.prefix.__add__, map(str, self.numbers()))

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> ValueRun: ...
    def __getitem__(self, index: int | slice) -> str | ValueRun:
        if isinstance(index, slice):
            numbers = self.numbers()[index]
            return ValueRun(self.prefix, numbers.start, len(numbers), numbers.step)
        return self.prefix + str(self.numbers()[index])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ValueRun):
            if self.count != other.count:
                return False
            same = self.prefix == other.prefix and self.numbers() == other.numbers()
            return self.count == 0 or same
        if isinstance(other, tuple | list):
            return len(other) == self.count and tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"ValueRun({self.prefix!r}, {self.first}, {self.count}, {self.step})"


def numbered(value: str) -> tuple[str, int] | None:
    """(prefix, number) of a value that ends in a number written without leading zeros."""
    prefix = value.rstrip(_DIGITS)
    digits = value[len(prefix) :]
    if not digits or (digits[0] == "0" and len(digits) > 1):
        return None
    return prefix, int(digits)


def producer_records(values: Sequence[str]) -> tuple[str, list[int]] | None:
    """The producer and the record numbers of one producer's values (`producer-1:17`); None for
    values that are not (written through the API, or mixed)."""
    if type(values) is ValueRun:
        return (values.prefix[:-1], list(values.numbers())) if values.prefix.endswith(":") and values.count else None
    named = [numbered(v) for v in values]
    if not named or named[0] is None or not named[0][0].endswith(":"):
        return None
    prefix = named[0][0]
    if any(n is None or n[0] != prefix for n in named):
        return None
    return prefix[:-1], [n[1] for n in named if n is not None]


def compact_values(values: Sequence[str]) -> Sequence[str]:
    """`values` as a `ValueRun` when they are one (the same prefix, evenly spaced numbers);
    otherwise as a tuple of strings shared across the process (`sys.intern`)."""
    if type(values) is ValueRun or not values:
        return values if values else ()
    head = numbered(values[0])
    if head is not None:
        prefix, first = head
        step = 1
        if len(values) > 1:
            second = numbered(values[1])
            step = second[1] - first if second is not None and second[0] == prefix else 0
        if step:
            run = ValueRun(intern(prefix), first, len(values), step)
            if tuple(run) == tuple(values):
                return run
    return tuple(map(intern, values))



class Batch(Protocol):
    """What `LogEntries` reads of a batch (`protocols.replication.RecordBatch`)."""

    @property
    def base_offset(self) -> int: ...
    @property
    def leader_epoch(self) -> int: ...
    @property
    def values(self) -> Sequence[str]: ...


Entry = tuple[int, int, str]
"""(offset, leader epoch, value)."""


Run = tuple[int, int, Sequence[str]]
"""(base offset, leader epoch, values)."""


class BatchRuns(Sequence[Run]):
    """Batches as runs, made as they are read."""

    __slots__ = ("_batches",)

    def __init__(self, batches: tuple[Batch, ...]) -> None:
        self._batches = batches

    def __len__(self) -> int:
        return len(self._batches)

    def __getitem__(self, index: int) -> Run:  # type: ignore[override] - no slices
        batch = self._batches[index]
        return batch.base_offset, batch.leader_epoch, batch.values


class LogEntries(Sequence[Entry]):
    """A log's records, `(offset, leader epoch, value)` by offset, read from its batches, which
    follow each other from the log start offset (`start`; the offsets below it were deleted).
    Its length is the log end offset, `end`, which an empty log gives explicitly."""

    __slots__ = ("_ends", "batches", "end", "start")

    def __init__(self, batches: Sequence[Batch], end: int | None = None) -> None:
        self.batches: tuple[Batch, ...] = tuple(batches)
        last = self.batches[-1] if self.batches else None
        self.end = last.base_offset + len(last.values) if last is not None else end or 0
        self.start = self.batches[0].base_offset if self.batches else self.end
        self._ends: array[int] | None = None
        """Each batch's end offset, made when an entry is first read by offset."""

    def runs(self) -> BatchRuns:
        """The records batch by batch: (base offset, leader epoch, values)."""
        return BatchRuns(self.batches)

    def __len__(self) -> int:
        return self.end

    def __iter__(self) -> Iterator[Entry]:
        for batch in self.batches:
            base, epoch = batch.base_offset, batch.leader_epoch
            for i, value in enumerate(batch.values):
                yield base + i, epoch, value

    @overload
    def __getitem__(self, index: int) -> Entry: ...
    @overload
    def __getitem__(self, index: slice) -> list[Entry]: ...
    def __getitem__(self, index: int | slice) -> Entry | list[Entry]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not self.start <= index < len(self):
            raise IndexError(index)
        if self._ends is None:
            self._ends = array("q", accumulate((len(b.values) for b in self.batches), initial=self.start))[1:]
        batch = self.batches[bisect_right(self._ends, index)]
        return index, batch.leader_epoch, batch.values[index - batch.base_offset]

    def __eq__(self, other: object) -> bool:
        """Equal records; for another `LogEntries`, also the same start and end."""
        if isinstance(other, LogEntries):
            return (self.start, self.end) == (other.start, other.end) and list(self) == list(other)
        if isinstance(other, list | tuple):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment] - compared by content, like a list

    def __repr__(self) -> str:
        return f"LogEntries({list(self)!r})"
