"""A fast check of an event log before Spark reads it, for the line number Spark cannot give.

Spark's FAILFAST stops a job at a malformed line without saying which; this reads the file once
with orjson and names the first line that is not a JSON object or whose documented field has
another type than the schema's (a truncated last line, a hand edit). It runs in the driver, so
it needs the files locally, as `kafkasim analyze` does.
"""

from __future__ import annotations

from pathlib import Path

import orjson
from pyspark.sql.types import ArrayType, BooleanType, LongType, StringType

from sim.analytics.schema import EVENT_SCHEMA

__all__ = ["BadEventLog", "check_event_log"]

_TYPES = {
    field.name: {LongType: (int,), BooleanType: (bool,), ArrayType: (list,)}[type(field.dataType)]
    for field in EVENT_SCHEMA.fields
    if not isinstance(field.dataType, StringType)  # a string field takes any JSON, as its text
}


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
            for name, value in event.items():
                kinds = _TYPES.get(name)
                # bool is an int in Python, not in the schema's long fields
                if kinds and value is not None and (type(value) not in kinds):
                    msg = f"{path}:{number}: malformed event, {name} is {orjson.dumps(value).decode()[:40]}, not {kinds[0].__name__}"
                    raise BadEventLog(msg)
    return number
