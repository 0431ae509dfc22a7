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
            try:
                self._file.write(data)
            except OSError as exc:
                raise self._named(exc) from None

    def flush(self) -> None:
        if self._file is not None:
            try:
                self._file.flush()
            except OSError as exc:
                raise self._named(exc) from None

    def close(self) -> None:
        if self._file is not None:
            file, self._file = self._file, None
            try:
                file.close()
            except OSError as exc:
                raise self._named(exc) from None

    def _named(self, exc: OSError) -> OSError:
        """A write error (a full disk) with the log's path, which the buffered file leaves out."""
        return OSError(exc.errno, exc.strerror, str(self.path))

    @property
    def digest(self) -> str:
        """sha256 of every byte written: equal to `sha256sum` of the file."""
        return self._digest.hexdigest()
