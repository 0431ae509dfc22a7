"""The structured trace: structlog, rendered as JSON lines, stamped with simulated time.

Every actor logs through its own structlog logger, configured here and nowhere else: a wrapper
class whose one method, `emit`, hands an event and its fields to the processor chain (no level
method: those pass the fields on as keyword arguments, copying them twice more per event). The chain is plain callables: `add_sim_time` stamps `ts_ms` from the simulated clock
(never a `TimeStamper`), and orjson renders the line. The required fields come first (`ts_ms`, `run_id`,
`seed`, `node`, `actor`, `event`) because the bound context holds them in that order, `ts_ms` and
`event` as placeholders that keep their places when structlog fills them in. The logger at the
end does not write: it buffers `(ts_ms, line, event_dict)` for the kernel, which merges the
buffers of all actors in a fixed order and writes them, so the log never depends on thread
timing.

The event catalogue is docs/log-schema.md.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any, NamedTuple

import orjson
import structlog

__all__ = ["KERNEL_FAULT_EVENTS", "LOG_SCHEMA_VERSION", "ActorLog", "LogLine", "TraceContext"]

LOG_SCHEMA_VERSION = 2
"""Bumped whenever an event or a field in docs/log-schema.md changes meaning or disappears."""

KERNEL_FAULT_EVENTS = (
    "node_crashed",
    "node_stopped",
    "node_started",
    "node_paused",
    "node_resumed",
    "network_partitioned",
    "network_partition_lifted",
    "network_healed",
    "link_fault_added",
)
"""The kernel's events that inject or end a fault on a node or the network (and every node's
start): analysis.json's `faults`."""


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


def render_json(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> tuple[tuple[bytes, MutableMapping[str, Any]], dict[str, Any]]:
    """The renderer: one JSON object per line (orjson keeps the field order). It hands the
    logger the line and the dict it came from, as structlog's `(args, kwargs)` (structlog copied
    the context for this event alone, so the dict is the event's to keep)."""
    return (orjson.dumps(event_dict, default=_json_default), event_dict), {}


class _Buffer:
    """The end of the chain: keeps rendered lines for the kernel instead of writing them."""

    __slots__ = ("clock", "lines")

    def __init__(self, clock: Callable[[], int]) -> None:
        self.clock = clock
        self.lines: list[LogLine] = []

    def info(self, line: bytes, event_dict: dict[str, Any]) -> None:
        self.lines.append(LogLine(event_dict["ts_ms"], line, event_dict))


class _EventLogger(structlog.BoundLoggerBase):
    """A structlog wrapper class with one method, `emit`: an event and its fields go through
    the processor chain to the buffer without the level methods' argument handling (a
    simulator's events have no level and no %-interpolation; every one is kept)."""

    def emit(self, event: str, fields: dict[str, Any]) -> None:
        args, _ = self._process_event("info", event, fields)
        self._logger.info(*args)


class ActorLog:
    """The structlog logger of one actor (or of the kernel), bound to its identity."""

    __slots__ = ("_buffer", "_log")

    def __init__(self, trace: TraceContext, node: str, actor: str, clock: Callable[[], int]) -> None:
        self._buffer = _Buffer(clock)
        buffer = self._buffer

        def add_sim_time(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> Any:
            event_dict["ts_ms"] = buffer.clock()
            return event_dict

        # A dict keeps the place of a key that is assigned again: the event's own fields follow
        # the required ones, which structlog and `add_sim_time` fill in where they stand.
        self._log: _EventLogger = structlog.wrap_logger(
            buffer,
            wrapper_class=_EventLogger,
            processors=[add_sim_time, render_json],
            context_class=dict,
            cache_logger_on_first_use=True,
        ).bind(ts_ms=None, run_id=trace.run_id, seed=trace.seed, node=node, actor=actor, event=None)

    def emit(self, event: str, fields: dict[str, Any]) -> None:
        self._log.emit(event, fields)

    def take(self) -> list[LogLine]:
        """The lines logged since the last call, in the order they were logged."""
        lines, self._buffer.lines = self._buffer.lines, []
        return lines
