"""Holds and processed ranges: the data the group accounting keeps per consumer and partition.

A *hold* is one consumer's ownership of one partition, from its assignment to the first event
that ends it, which gives it its label. Per group and partition, the accounting keeps the
offset ranges processed so far, each with the leader epoch its records were written in and the
hold that processed it last: sorted, disjoint, and merged where one hold read on in order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Hold", "Member", "Range", "replace_range", "rewound"]


@dataclass(slots=True)
class Hold:
    """One consumer's hold on one partition, from its assignment to its end."""

    node: str
    member_id: str
    ended: str | None = None
    """The label of the first event that ended it; None while it lasts."""
    rewound: tuple[int, int, str] | None = None
    """[s, c) and why: it began at a reset to `s` below the group's committed offset `c`, so
    what it reads again there is re-read because of the reset (`log_truncation_or_reset`), or
    because `c` had expired (`offsets_expired_reset`)."""

    def end(self, label: str) -> None:
        if self.ended is None:
            self.ended = label


@dataclass(slots=True)
class Member:
    """What the accounting knows of one consumer node."""

    group: str
    auto_commit: bool = True
    listener_commits: bool = False
    """The application commits in `onPartitionsRevoked` (`commit = on_revoke`)."""
    last_commit_error: str = "NONE"
    holds: dict[str, Hold] = field(default_factory=dict)
    released: dict[str, Hold] = field(default_factory=dict)
    """The hold each partition had when the member last gave it up: records the application
    still had in hand then (the consumer protocol revokes or loses partitions on its background
    thread, while the application processes) are processed under it, a zombie's processing."""


def rewound(lo: int, hi: int, rewound: tuple[int, int, str] | None, label: str) -> list[tuple[int, int, str]]:
    """[lo, hi) in pieces with their label: the rewind's inside its [s, c), `label` elsewhere."""
    if rewound is None or rewound[1] <= lo or rewound[0] >= hi:
        return [(lo, hi, label)]
    start, end, why = rewound
    inside = (max(lo, start), min(hi, end))
    pieces = [(lo, inside[0], label), (*inside, why), (inside[1], hi, label)]
    return [piece for piece in pieces if piece[1] > piece[0]]


Range = tuple[int, int, int, Hold]
"""[start, end), the leader epoch the records were written in, the hold that processed them."""


def replace_range(ranges: list[Range], new: Range) -> list[Range]:
    """The ranges with `new`'s offsets now last processed by its hold; neighbours of the same
    hold and epoch merge, so a partition read in order keeps one range per hold and epoch."""
    start, end = new[0], new[1]
    kept: list[Range] = []
    for s, t, epoch, h in ranges:
        if t <= start or s >= end:
            kept.append((s, t, epoch, h))
            continue
        if s < start:
            kept.append((s, start, epoch, h))
        if t > end:
            kept.append((end, t, epoch, h))
    kept.append(new)
    kept.sort(key=lambda r: r[0])
    merged: list[Range] = []
    for s, t, epoch, h in kept:
        last = merged[-1] if merged else None
        if last is not None and last[3] is h and last[2] == epoch and last[1] == s:
            merged[-1] = (last[0], t, epoch, h)
        else:
            merged.append((s, t, epoch, h))
    return merged
