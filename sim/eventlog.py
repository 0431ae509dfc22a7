"""The events log file: JSON lines, written in merge order, digested as written."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import BinaryIO

__all__ = ["EventLog"]


class EventLog:
    """Appends rendered lines to a file (or to nothing) and keeps their sha256."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._file: BinaryIO | None = path.open("wb") if path is not None else None
        self._digest = hashlib.sha256()
        self.count = 0

    def write(self, line: bytes) -> None:
        data = line + b"\n"
        self._digest.update(data)
        self.count += 1
        if self._file is not None:
            self._file.write(data)

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    @property
    def digest(self) -> str:
        """sha256 of every byte written: equal to `sha256sum` of the file."""
        return self._digest.hexdigest()
