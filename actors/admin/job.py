"""One command of the admin client under way: its step and what the steps found so far."""

from __future__ import annotations

from dataclasses import dataclass, field

from protocols.admin import AdminCommand, DescribedGroup, ListedGroup
from protocols.group import PartitionError
from protocols.types import TopicPartition

__all__ = ["Job"]


@dataclass(slots=True)
class Job:
    """One command under way."""

    command: AdminCommand
    step: str = ""
    attempt: int = 0
    coordinator: int = -1
    waiting: int = 0
    """Answers the step still waits for."""
    partitions: list[TopicPartition] = field(default_factory=list)
    committed: dict[TopicPartition, int] = field(default_factory=dict)
    leaders: dict[TopicPartition, int] = field(default_factory=dict)
    specs: list[tuple[str, tuple[TopicPartition, ...]]] = field(default_factory=list)
    """The ListOffsets still to make: (spec, partitions), spec `earliest`, `latest` or `time`."""
    offsets: dict[str, dict[TopicPartition, int]] = field(default_factory=dict)
    """What ListOffsets answered, by spec."""
    reset_to: dict[TopicPartition, int] = field(default_factory=dict)
    listed: dict[int, tuple[ListedGroup, ...]] = field(default_factory=dict)
    """ListGroups' answers, by broker."""
    list_errors: dict[int, str] = field(default_factory=dict)
    described: DescribedGroup | None = None
    deleted: tuple[PartitionError, ...] = ()
    """OffsetDelete's answer per partition."""
