"""The structured trace: structlog, rendered as JSON lines, stamped with simulated time.

Every actor logs through its own structlog logger, configured here and nowhere else. The
processor chain is plain callables: `add_sim_time` stamps `ts_ms` from the simulated clock (never
a `TimeStamper`), `order_fields` puts the required fields first (`ts_ms`, `run_id`, `seed`,
`node`, `actor`, `event`), and orjson renders the line. The logger at the end does not write: it
buffers `(ts_ms, line, event_dict)` for the kernel, which merges the buffers of all actors in a
fixed order and writes them, so the log never depends on thread timing.

The event catalogue is docs/log-schema.md.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any, NamedTuple

import orjson
import structlog

__all__ = ["LOG_SCHEMA_VERSION", "ActorLog", "LogLine", "TraceContext"]

LOG_SCHEMA_VERSION = 2
"""Bumped whenever an event or a field in docs/log-schema.md changes meaning or disappears."""

REQUIRED_FIELDS = ("ts_ms", "run_id", "seed", "node", "actor", "event")


class LogLine(NamedTuple):
    """One rendered event, kept with its dict so in-process checkers need not parse it back."""

    ts_ms: int
    line: bytes
    event: dict[str, Any]


class TraceContext(NamedTuple):
    run_id: str
    seed: int


def _json_default(value: Any) -> Any:
    if isinstance(value, tuple):  # NamedTuples such as Address and TopicPartition
        return str(value)
    msg = f"cannot log a value of type {type(value).__name__}"
    raise TypeError(msg)


def render_json(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> bytes:
    """The renderer: one JSON object per line (orjson keeps the field order)."""
    return orjson.dumps(event_dict, default=_json_default)


def order_fields(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> Any:
    """Put the required fields first, in the documented order, then the event's own fields."""
    ordered = {name: event_dict.pop(name) for name in REQUIRED_FIELDS}
    ordered.update(event_dict)
    return ordered


class _Buffer:
    """The end of the chain: keeps rendered lines for the kernel instead of writing them."""

    __slots__ = ("clock", "lines", "pending")

    def __init__(self, clock: Callable[[], int]) -> None:
        self.clock = clock
        self.lines: list[LogLine] = []
        self.pending: dict[str, Any] = {}

    def info(self, line: bytes) -> None:
        self.lines.append(LogLine(self.pending["ts_ms"], line, self.pending))


class ActorLog:
    """The structlog logger of one actor (or of the kernel), bound to its identity."""

    __slots__ = ("_buffer", "_log")

    def __init__(self, trace: TraceContext, node: str, actor: str, clock: Callable[[], int]) -> None:
        self._buffer = _Buffer(clock)
        buffer = self._buffer

        def add_sim_time(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> Any:
            event_dict["ts_ms"] = buffer.clock()
            return event_dict

        def keep_dict(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> Any:
            buffer.pending = event_dict  # order_fields built it afresh; nothing changes it after
            return event_dict

        self._log = structlog.wrap_logger(
            buffer,
            processors=[add_sim_time, order_fields, keep_dict, render_json],
            context_class=dict,
            cache_logger_on_first_use=True,
        ).bind(run_id=trace.run_id, seed=trace.seed, node=node, actor=actor)

    def emit(self, event: str, fields: dict[str, Any]) -> None:
        self._log.info(event, **fields)

    def take(self) -> list[LogLine]:
        """The lines logged since the last call, in the order they were logged."""
        lines, self._buffer.lines = self._buffer.lines, []
        return lines
