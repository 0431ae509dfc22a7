"""Delayed operations watched by partition (`DelayedOperationPurgatory`).

Kafka parks a delayed produce or fetch under a key per partition it waits on
(`TopicPartitionOperationKey`) and, when a partition's HW or LEO moves, checks only the
operations watching that partition (`checkAndComplete(key)`). A change to one partition can
complete only operations that include it, so checking the others would find nothing new; it
would only cost, and a broker whose follower is down holds thousands of produces for 30 s.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from protocols.types import TopicPartition

__all__ = ["Purgatory"]

Op = TypeVar("Op")


@dataclass(slots=True)
class Purgatory(Generic[Op]):
    """Operations by id, each watched by the partitions it waits on."""

    _ops: dict[int, tuple[Op, tuple[TopicPartition, ...]]] = field(default_factory=dict)
    _watchers: dict[TopicPartition, dict[int, None]] = field(default_factory=dict)

    def add(self, op_id: int, op: Op, keys: Iterable[TopicPartition]) -> None:
        watched = tuple(dict.fromkeys(keys))
        self._ops[op_id] = (op, watched)
        watchers = self._watchers
        for key in watched:
            ops = watchers.get(key)
            if ops is None:
                watchers[key] = {op_id: None}
            else:
                ops[op_id] = None

    def watch(self, op_id: int, key: TopicPartition) -> None:
        """Operation `op_id` waits on `key` too from now on."""
        op, watched = self._ops[op_id]
        if key in watched:
            return
        self._ops[op_id] = (op, (*watched, key))
        ops = self._watchers.get(key)
        if ops is None:
            self._watchers[key] = {op_id: None}
        else:
            ops[op_id] = None

    def pop(self, op_id: int) -> Op | None:
        entry = self._ops.pop(op_id, None)
        if entry is None:
            return None
        op, watched = entry
        watchers = self._watchers
        for key in watched:
            del watchers[key][op_id]  # an emptied entry stays: a partition's next fetch parks soon
        return op

    def get(self, op_id: int) -> Op:
        return self._ops[op_id][0]

    def watching(self, keys: Iterable[TopicPartition]) -> list[int]:
        """The ids of the operations watching any of `keys`, in id order, which is the order
        they were parked in."""
        found: set[int] = set()
        for key in keys:
            found.update(self._watchers.get(key, ()))
        return sorted(found)

    def __len__(self) -> int:
        return len(self._ops)
