"""Where two event logs part: the first line at which they differ, and what differs there.

Two runs of the same scenario and seed must write byte-identical logs (the determinism promise).
When they do not, the first differing line is the one to read: everything after it may differ
only because of it. The comparison streams both logs a line at a time, so it holds two lines in
memory however long the runs were, and it is pure: lines in, a `Divergence` (or None) out, for
`kafkasim run --check-determinism` and for any study that compares two runs.

Lines are compared as bytes; only the diverging pair is parsed, to name its event and its first
differing field. Values are compared by their JSON text, so 1 and 1.0, or 1 and true, differ as
they do in the file.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path
from typing import Any

__all__ = ["Divergence", "EventHead", "LogComparison", "compare_logs", "describe", "first_divergence"]


@dataclass(frozen=True, slots=True)
class EventHead:
    """The fields that place an event: when, where, what. Any of them is None on a line that
    is not a JSON object or lacks it."""

    ts_ms: Any
    node: Any
    actor: Any
    event: Any

    def __str__(self) -> str:
        if (self.ts_ms, self.node, self.actor, self.event) == (None, None, None, None):
            return "a line that is not a logged event"
        return f"{self.ts_ms} ms {self.node}/{self.actor} {self.event}"


@dataclass(frozen=True, slots=True)
class Divergence:
    """The first line at which two logs differ. `line` counts from 1 and is the same in both
    logs, since every line before it is equal; `a` or `b` is None where that log ended before
    it. `field` is the first field (in `a`'s order, then `b`'s new ones) whose JSON text
    differs, with both texts (None where the field is absent); it is None when a log ended, or
    when the lines hold the same fields and values written differently (order, spacing)."""

    line: int
    a: EventHead | None
    b: EventHead | None
    field: str | None = None
    value_a: str | None = None
    value_b: str | None = None


@dataclass(frozen=True, slots=True)
class LogComparison:
    """Two log files compared: `events` equal lines before the divergence (all of them when
    there is none), and the logs' common sha256 when they are identical (None otherwise)."""

    events: int
    digest: str | None
    divergence: Divergence | None


def first_divergence(lines_a: Iterable[bytes | str], lines_b: Iterable[bytes | str]) -> Divergence | None:
    """The first pair of lines that differ, or None when both give the same lines. The shorter
    of two logs that agree as far as it goes diverges where it ends."""
    for item in _walk(lines_a, lines_b):
        if isinstance(item, Divergence):
            return item
    return None


def compare_logs(path_a: Path, path_b: Path) -> LogComparison:
    """`first_divergence` of two files, read a line at a time, with the sha256 of the first."""
    digest, count = hashlib.sha256(), 0
    with path_a.open("rb") as file_a, path_b.open("rb") as file_b:
        for item in _walk(file_a, file_b):
            if isinstance(item, Divergence):
                return LogComparison(count, None, item)
            digest.update(item)
            count += 1
    return LogComparison(count, digest.hexdigest(), None)


def _walk(lines_a: Iterable[Any], lines_b: Iterable[Any]) -> Iterator[Any]:
    """Each line the two logs share, in turn, then their divergence if they have one."""
    for number, (a, b) in enumerate(zip_longest(lines_a, lines_b), start=1):
        if a != b:
            yield _diverging(number, a, b)
            return
        yield a


def describe(divergence: Divergence, label_a: str, label_b: str) -> list[str]:
    """The divergence in words, a line each: the line number, each side's event (or its end),
    the first differing field with both values."""
    width = max(len(label_a), len(label_b))
    lines = [f"the event logs first differ at line {divergence.line:,}"]
    for label, head in ((label_a, divergence.a), (label_b, divergence.b)):
        seen = f"ended after line {divergence.line - 1:,}" if head is None else str(head)
        lines.append(f"  {label:<{width}}  {seen}")
    if divergence.field is not None:
        lines.append(
            f"  first differing field: {divergence.field}: {_shown(divergence.value_a)} under {label_a}, "
            f"{_shown(divergence.value_b)} under {label_b}"
        )
    elif divergence.a is not None and divergence.b is not None:
        lines.append("  the same fields and values, written differently (their order or spacing)")
    return lines


def _shown(value: str | None) -> str:
    return "(absent)" if value is None else value


def _diverging(number: int, a: bytes | str | None, b: bytes | str | None) -> Divergence:
    event_a, event_b = _parsed(a), _parsed(b)
    field, value_a, value_b = _first_field(event_a, event_b)
    return Divergence(number, _head(a, event_a), _head(b, event_b), field, value_a, value_b)


def _parsed(line: bytes | str | None) -> dict[str, Any] | None:
    if line is None:
        return None
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _head(line: bytes | str | None, event: dict[str, Any] | None) -> EventHead | None:
    if line is None:
        return None
    if event is None:
        return EventHead(None, None, None, None)
    return EventHead(event.get("ts_ms"), event.get("node"), event.get("actor"), event.get("event"))


def _first_field(a: dict[str, Any] | None, b: dict[str, Any] | None) -> tuple[str | None, str | None, str | None]:
    if a is None or b is None:
        return None, None, None
    for name in (*a, *(name for name in b if name not in a)):
        text_a, text_b = _text(a, name), _text(b, name)
        if text_a != text_b:
            return name, text_a, text_b
    return None, None, None


def _text(event: dict[str, Any], name: str) -> str | None:
    """A field's value as compact JSON (nested objects keep their order), None when absent."""
    if name not in event:
        return None
    return json.dumps(event[name], separators=(",", ":"), ensure_ascii=False)
