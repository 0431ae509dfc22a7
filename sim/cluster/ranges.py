"""Offset ranges [lo, hi) as sorted, disjoint lists: the arithmetic of skipped records."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

__all__ = ["Span", "add_range", "intersect", "spans_of", "subtract"]

Span = tuple[int, int]


def add_range(ranges: list[Span], lo: int, hi: int) -> None:
    """Adds [lo, hi) to sorted, disjoint, merged ranges, in place."""
    if hi <= lo:
        return
    if not ranges or lo > ranges[-1][1]:
        ranges.append((lo, hi))
        return
    if lo >= ranges[-1][0]:  # the common case: reading on in order
        ranges[-1] = (ranges[-1][0], max(hi, ranges[-1][1]))
        return
    i = bisect_left(ranges, lo, key=lambda r: r[1])  # the first range ending at or after lo
    j = bisect_right(ranges, hi, key=lambda r: r[0])  # past the last range starting at or before hi
    if i < j:
        lo, hi = min(lo, ranges[i][0]), max(hi, ranges[j - 1][1])
    ranges[i:j] = [(lo, hi)]


def subtract(pieces: Sequence[Span], ranges: Sequence[Span]) -> list[Span]:
    """`pieces` (sorted, disjoint) without the offsets of `ranges` (sorted, disjoint)."""
    out: list[Span] = []
    for lo, hi in pieces:
        i = bisect_right(ranges, lo, key=lambda r: r[1])  # the first range ending after lo
        at = lo
        while i < len(ranges) and ranges[i][0] < hi:
            if ranges[i][0] > at:
                out.append((at, ranges[i][0]))
            at = max(at, ranges[i][1])
            i += 1
        if at < hi:
            out.append((at, hi))
    return out


def intersect(pieces: Sequence[Span], ranges: Sequence[Span]) -> list[Span]:
    """The offsets in both (each sorted and disjoint)."""
    out: list[Span] = []
    for lo, hi in pieces:
        i = bisect_right(ranges, lo, key=lambda r: r[1])
        while i < len(ranges) and ranges[i][0] < hi:
            a, b = max(lo, ranges[i][0]), min(hi, ranges[i][1])
            if a < b:
                out.append((a, b))
            i += 1
    return out


def spans_of(base: int, indexes: Sequence[int]) -> list[Span]:
    """Offsets `base + i` for the sorted indexes, as ranges."""
    out: list[Span] = []
    for i in indexes:
        add_range(out, base + i, base + i + 1)
    return out
