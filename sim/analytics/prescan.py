"""A fast check of an event log before Spark reads it, for the line number Spark cannot give.

Spark's FAILFAST stops a job at a malformed line without saying which; this reads the file once
with orjson and names the first line that is not a JSON object, lacks a field every event has,
or whose documented field has another type than the schema's, list items and the range of a
64-bit long included (a truncated last line, a hand edit). A log with no events is refused too:
there is nothing to analyse, and Spark would fail on it without saying why. It runs in the
driver, so it needs the files locally, as `kafkasim analyze` does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from pyspark.sql.types import ArrayType, BooleanType, LongType, StringType

from sim.analytics.schema import EVENT_SCHEMA

__all__ = ["BadEventLog", "check_event_log"]

_PYTHON = {LongType: int, BooleanType: bool, StringType: str}
_TYPES = {
    field.name: list if isinstance(field.dataType, ArrayType) else _PYTHON[type(field.dataType)]
    for field in EVENT_SCHEMA.fields
    if not isinstance(field.dataType, StringType)  # a string field takes any JSON, as its text
}
_ITEMS = {
    field.name: _PYTHON[type(field.dataType.elementType)]
    for field in EVENT_SCHEMA.fields
    if isinstance(field.dataType, ArrayType)
}
REQUIRED = {
    name: _PYTHON[type(EVENT_SCHEMA[name].dataType)] for name in ("ts_ms", "run_id", "seed", "node", "actor", "event")
}
"""The fields every event has (docs/log-schema.md), never null, with their types."""
_LONG_RANGE = range(-(1 << 63), 1 << 63)


class BadEventLog(ValueError):
    """An event log Spark would refuse, with its file and line."""


def check_event_log(path: Path) -> int:
    """The number of lines, once every one is an event the schema reads; else BadEventLog."""
    number = 0
    with path.open("rb") as lines:
        for number, line in enumerate(lines, start=1):  # noqa: B007 - the count is returned
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                complete = line.endswith(b"\n")
                what = "not JSON" if complete else "truncated (no end of line)"
                msg = f"{path}:{number}: malformed event, {what}: {exc}"
                raise BadEventLog(msg) from None
            if not isinstance(event, dict):
                msg = f"{path}:{number}: malformed event, not a JSON object"
                raise BadEventLog(msg)
            problem = _problem(event)
            if problem:
                msg = f"{path}:{number}: malformed event, {problem}"
                raise BadEventLog(msg)
    if number == 0:
        msg = f"{path}: empty event log"
        raise BadEventLog(msg)
    return number


def _problem(event: dict[str, Any]) -> str | None:
    """What keeps the schema from reading this event, if anything."""
    for name, kind in REQUIRED.items():
        if event.get(name) is None:
            return f"no {name} field"
        if type(event[name]) is not kind:
            return _wrong(name, event[name], kind)
    for name, value in event.items():
        kind = _TYPES.get(name)
        if kind is None or value is None:
            continue
        # bool is an int in Python, not in the schema's long fields
        if type(value) is not kind or (kind is int and value not in _LONG_RANGE):
            return _wrong(name, value, kind)
        if kind is list:
            item_kind = _ITEMS[name]
            for item in value:
                if type(item) is not item_kind or (item_kind is int and item not in _LONG_RANGE):
                    return _wrong(f"an item of {name}", item, item_kind)
    return None


def _wrong(name: str, value: object, kind: type) -> str:
    expected = "a 64-bit int" if kind is int else kind.__name__
    return f"{name} is {orjson.dumps(value).decode()[:40]}, not {expected}"
