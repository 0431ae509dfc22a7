"""Segments and retention: when a log rolls a new segment, and which old segments it deletes.

Pure rules, as Kafka states them (3.9):
- `LogSegment.shouldRoll`: roll before an append when the active segment would pass
  `segment.bytes` with it, or when it holds records and its first batch is older than
  `segment.ms` (`log.roll.jitter.ms` is 0, as by default);
- `UnifiedLog.deleteOldSegments`, three passes over the segments from the oldest, each stopping
  at the first segment it keeps: segments wholly below the log start offset, then the oldest
  segments while the log is over `retention.bytes`, then segments whose largest timestamp is
  older than `retention.ms`. A compacted topic (`__consumer_offsets`) runs the first pass only.
  No segment is deleted unless all its records are below the HW (KAFKA-5634, 1.0), and a last
  segment that is empty never is (`deletableSegments`).

Left out: the index-full and offset-overflow rolls, `log.roll.jitter.ms`, tiered storage.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

__all__ = [
    "LogConfig",
    "SegmentView",
    "deletable_segments",
    "log_start_breached",
    "retention_size_breached",
    "retention_time_breached",
    "should_roll",
]

DAY_MS = 24 * 60 * 60 * 1000
OFFSETS_TOPIC_SEGMENT_BYTES = 100 * 1024 * 1024
"""`offsets.topic.segment.bytes`: the segment size of `__consumer_offsets`."""


@dataclass(frozen=True, slots=True)
class LogConfig:
    """A topic's log settings (`LogConfig`), Kafka's defaults unless the scenario sets them."""

    segment_bytes: int = 1024 * 1024 * 1024
    """`segment.bytes` (broker `log.segment.bytes`)."""
    segment_ms: int = 7 * DAY_MS
    """`segment.ms` (broker `log.roll.ms`; `log.roll.hours` = 168)."""
    retention_ms: int = 7 * DAY_MS
    """`retention.ms` (broker `log.retention.ms`; `log.retention.hours` = 168); -1: no limit."""
    retention_bytes: int = -1
    """`retention.bytes` (broker `log.retention.bytes`); -1: no limit."""
    delete: bool = True
    """`cleanup.policy` includes delete; False for a compacted topic (`__consumer_offsets`),
    which the simulator never compacts either."""


class SegmentView(NamedTuple):
    """What the retention rules read of one segment."""

    base_offset: int
    size_bytes: int
    largest_timestamp_ms: int
    """The time its last batch was appended: the largest timestamp it holds."""
    next_offset: int
    """The next segment's base offset; the LEO for the last one."""


def should_roll(config: LogConfig, size_bytes: int, messages_bytes: int, waited_ms: int) -> bool:
    """`shouldRoll` for an append of `messages_bytes` to an active segment of `size_bytes`
    whose first batch was appended `waited_ms` ago."""
    return size_bytes > config.segment_bytes - messages_bytes or (size_bytes > 0 and waited_ms > config.segment_ms)


def deletable_segments(
    segments: Sequence[SegmentView],
    high_watermark: int,
    predicate: Callable[[SegmentView, SegmentView | None], bool],
) -> int:
    """`deletableSegments`: how many segments, from the oldest, the predicate deletes; it is
    given each segment and the next one (None for the last)."""
    count = 0
    for i, segment in enumerate(segments):
        following = segments[i + 1] if i + 1 < len(segments) else None
        if following is None and segment.size_bytes == 0:
            break
        if high_watermark < segment.next_offset or not predicate(segment, following):
            break
        count += 1
    return count


def log_start_breached(log_start_offset: int) -> Callable[[SegmentView, SegmentView | None], bool]:
    """`deleteLogStartOffsetBreachedSegments`: the next segment starts at or below the log start."""
    return lambda _, following: following is not None and following.base_offset <= log_start_offset


def retention_size_breached(config: LogConfig, size_bytes: int) -> Callable[[SegmentView, SegmentView | None], bool]:
    """`deleteRetentionSizeBreachedSegments`: the oldest segments while the log, without them,
    is still at least `retention.bytes`."""
    excess = size_bytes - config.retention_bytes

    def breached(segment: SegmentView, _: SegmentView | None) -> bool:
        nonlocal excess
        if config.retention_bytes < 0 or excess < segment.size_bytes:
            return False
        excess -= segment.size_bytes
        return True

    return breached


def retention_time_breached(config: LogConfig, now_ms: int) -> Callable[[SegmentView, SegmentView | None], bool]:
    """`deleteRetentionMsBreachedSegments`: the segment's largest timestamp is older than `retention.ms`."""
    return lambda segment, _: config.retention_ms >= 0 and now_ms - segment.largest_timestamp_ms > config.retention_ms
