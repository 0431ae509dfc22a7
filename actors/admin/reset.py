"""The reset tool's arithmetic as pure functions (`ConsumerGroupCommand.prepareOffsetsToReset`
and `checkOffsetsRange`, 3.6).

- `--to-earliest`: each partition's log start offset; `--to-latest`: its log end offset (the
  HW, as ListOffsets latest answers a client); neither is clamped.
- `--to-datetime`: the first offset whose record's timestamp is at or after the time
  (ListOffsets by timestamp); a partition with no such record falls back to its log end offset
  (the tool prints "Partition ... is empty. Falling back to latest known offset.").
- `--shift-by n`: the committed offset plus n, clamped to [log start, log end]
  (`checkOffsetsRange`); a partition without a committed offset fails the whole command
  (IllegalArgumentException: "Cannot shift offset for partition ... since there is no current
  committed offset").
"""

from __future__ import annotations

from collections.abc import Mapping

from protocols.types import TopicPartition

__all__ = ["UNKNOWN_OFFSET", "check_offsets_range", "datetime_offsets", "shifted_offsets"]

UNKNOWN_OFFSET = -1


def check_offsets_range(
    requested: Mapping[TopicPartition, int], log_start: Mapping[TopicPartition, int], log_end: Mapping[TopicPartition, int]
) -> dict[TopicPartition, int]:
    """`checkOffsetsRange`: above the log end, the log end; below the log start, the log start."""
    clamped = {}
    for tp, offset in sorted(requested.items()):
        if offset > log_end[tp]:
            clamped[tp] = log_end[tp]
        elif offset < log_start[tp]:
            clamped[tp] = log_start[tp]
        else:
            clamped[tp] = offset
    return clamped


def shifted_offsets(committed: Mapping[TopicPartition, int], partitions: list[TopicPartition], shift_by: int) -> dict[TopicPartition, int] | list[TopicPartition]:
    """The committed offsets moved by `shift_by`, or the partitions that have none."""
    missing = [tp for tp in partitions if tp not in committed]
    if missing:
        return missing
    return {tp: committed[tp] + shift_by for tp in partitions}


def datetime_offsets(by_time: Mapping[TopicPartition, int], log_end: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    """The offsets found by timestamp; UNKNOWN_OFFSET falls back to the log end."""
    return {tp: log_end[tp] if offset == UNKNOWN_OFFSET else offset for tp, offset in sorted(by_time.items())}
