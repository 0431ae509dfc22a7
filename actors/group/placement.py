"""Which `__consumer_offsets` partition, and so which broker, coordinates a group.

Models `GroupMetadataManager.partitionFor`: `Utils.abs(groupId.hashCode) % offsets.topic.num.partitions`,
with Java's `String.hashCode` (`h = 31 * h + c` over the UTF-16 code units, in 32-bit signed
arithmetic) and Kafka's `Utils.abs`, which maps `Integer.MIN_VALUE` to 0 where `Math.abs` would
leave it negative. The coordinator is the leader of that partition. The consumer computes the
same partition only to name it in its logs; it asks a broker (FindCoordinator) for the leader.
"""

from __future__ import annotations

__all__ = ["OFFSETS_TOPIC", "java_string_hash_code", "partition_for", "utils_abs"]

OFFSETS_TOPIC = "__consumer_offsets"
"""`Topic.GROUP_METADATA_TOPIC_NAME`."""

_INT_MIN = -(2**31)
_MASK = 2**32 - 1


def java_string_hash_code(text: str) -> int:
    """`String.hashCode`: over UTF-16 code units (a character outside the BMP counts as its
    two surrogates), wrapping at 32 bits, as a signed int."""
    data = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & _MASK
    return h - 2**32 if h > 2**31 - 1 else h


def utils_abs(n: int) -> int:
    """`org.apache.kafka.common.utils.Utils.abs`: |n|, with `Integer.MIN_VALUE` mapped to 0."""
    return 0 if n == _INT_MIN else abs(n)


def partition_for(group_id: str, partitions: int) -> int:
    """The `__consumer_offsets` partition of `group_id` among `partitions`."""
    assert partitions > 0, "offsets.topic.num.partitions is at least 1"
    return utils_abs(java_string_hash_code(group_id)) % partitions
