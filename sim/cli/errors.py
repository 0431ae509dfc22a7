"""What every command shares: exit statuses and the errors that become one line."""

from __future__ import annotations

import sys

__all__ = ["EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_USAGE", "RunDirError", "SparkUnavailable", "usage_error"]

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class RunDirError(ValueError):
    """A run directory that is missing or lacks a file a command needs."""


class SparkUnavailable(RuntimeError):
    """The Spark master cannot be reached, or Spark cannot start or run the job."""


def usage_error(message: str) -> int:
    sys.stderr.write(f"kafkasim: {message}\n")
    return EXIT_USAGE
