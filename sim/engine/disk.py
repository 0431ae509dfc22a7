"""A broker's disk: what is flushed, what sits in the page cache, and what a crash keeps.

Kafka does not fsync on acknowledge (`log.flush.interval.messages` is Long.MAX_VALUE), so the
kind of crash decides what survives (Kafka does not fsync on acknowledge):
- `process`: the process died, the OS lived; the page cache is written out later, nothing lost;
- `power_loss`: everything not flushed is gone;
- `disk_loss`: everything is gone.

Two kinds of file: logs (append-only records, truncatable) and whole-value files such as
checkpoints (Kafka writes them to a temporary file, fsyncs and renames, so `sync=True`).
Truncation, and the deletion of a log's oldest records (retention deleting segment files), are
taken as durable at once: metadata changes that Kafka follows with a checkpoint write. Records and values must be immutable; the disk keeps references.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from actors.core import Append, DeleteHead, DiskCommand, Flush, Truncate, WriteFile

__all__ = ["CrashKind", "Disk"]


class CrashKind(StrEnum):
    PROCESS = "process"
    POWER_LOSS = "power_loss"
    DISK_LOSS = "disk_loss"


@dataclass(slots=True)
class _LogFile:
    records: list[Any] = field(default_factory=list)
    flushed: int = 0


@dataclass(slots=True)
class _ValueFile:
    value: Any = None
    durable: Any = None
    has_durable: bool = False


class Disk:
    """The files of one node, surviving its restarts."""

    def __init__(self) -> None:
        self._logs: dict[str, _LogFile] = {}
        self._values: dict[str, _ValueFile] = {}

    def apply(self, command: DiskCommand) -> None:
        match command:
            case Append(file, records):
                self._logs.setdefault(file, _LogFile()).records.extend(records)
            case Truncate(file, length):
                log = self._logs.setdefault(file, _LogFile())
                del log.records[length:]
                log.flushed = min(log.flushed, length)
            case DeleteHead(file, count):
                log = self._logs.setdefault(file, _LogFile())
                del log.records[:count]
                log.flushed = max(0, log.flushed - count)
            case WriteFile(file, value, sync):
                entry = self._values.setdefault(file, _ValueFile())
                entry.value = value
                if sync:
                    entry.durable, entry.has_durable = value, True
            case Flush(file):
                if file in self._logs:
                    log = self._logs[file]
                    log.flushed = len(log.records)
                elif file in self._values:
                    entry = self._values[file]
                    entry.durable, entry.has_durable = entry.value, True

    def crash(self, kind: CrashKind) -> None:
        """Keep what this kind of crash keeps."""
        if kind is CrashKind.DISK_LOSS:
            self._logs.clear()
            self._values.clear()
        elif kind is CrashKind.POWER_LOSS:
            for log in self._logs.values():
                del log.records[log.flushed :]
            for name in sorted(self._values):
                entry = self._values[name]
                if entry.has_durable:
                    entry.value = entry.durable
                else:
                    del self._values[name]

    def view(self) -> dict[str, Any]:
        """Every file's current content: a tuple of records for a log, the value otherwise."""
        files: dict[str, Any] = {name: tuple(log.records) for name, log in self._logs.items()}
        files.update({name: entry.value for name, entry in self._values.items()})
        return dict(sorted(files.items()))

    def flushed_length(self, file: str) -> int:
        log = self._logs.get(file)
        return 0 if log is None else log.flushed
