"""Wording shared by the run report's story (sim/report/narrative.py): simulated times, lists of
nodes and partitions, and the grouping of changes that came together."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["GAP_MS", "GROUP_MS", "at", "grouped", "join", "node_order", "partitions", "seconds", "span"]

GAP_MS = 1000
"""A partition without an owner or a leader for less than this is not worth a sentence."""

GROUP_MS = 1000
"""Changes of the same kind this close together are told as one."""


def seconds(ms: int | None) -> str:
    """A simulated time: `31.0 s`; None is the end of the run."""
    return "the end of the run" if ms is None else f"{ms / 1000:.1f} s"


def at(rows: list[dict[str, Any]]) -> str:
    """When changes told together happened: `At 24.0 s`, or `Between 24.0 s and 24.6 s` when
    they did not all fall in one tenth of a second."""
    first, last = seconds(rows[0]["ts_ms"]), seconds(max(r["ts_ms"] for r in rows))
    return f"At {first}" if first == last else f"Between {first} and {last}"


def span(ms: int) -> str:
    """A duration: `10.2 s`."""
    return f"{ms / 1000:.1f} s"


def node_order(name: str) -> tuple[str, int]:
    prefix, _, number = name.rpartition("-")
    return (prefix, int(number)) if number.isdigit() else (name, -1)


def join(words: Iterable[str]) -> str:
    """`a, b and c`."""
    items = list(words)
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"


def partitions(names: Iterable[str], *, listed: int = 6) -> str:
    """`T-0, T-1 and 17 partitions of __consumer_offsets`: a topic's partitions are named up to
    `listed`, counted beyond; an internal topic's are always counted."""
    by_topic: dict[str, list[str]] = {}
    for name in sorted(set(names), key=node_order):
        by_topic.setdefault(name.rpartition("-")[0], []).append(name)
    words: list[str] = []
    for topic in sorted(by_topic, key=lambda t: (t.startswith("__"), t)):
        names_of = by_topic[topic]
        if topic.startswith("__") or len(names_of) > listed:
            words.append(f"{len(names_of)} partition{'s' if len(names_of) > 1 else ''} of {topic}")
        else:
            words.extend(names_of)
    return join(words)


def grouped(rows: list[dict[str, Any]], key: Any) -> list[list[dict[str, Any]]]:
    """Rows (in time order) with the same key, each within GROUP_MS of its group's first."""
    groups: list[list[dict[str, Any]]] = []
    open_groups: dict[Any, list[dict[str, Any]]] = {}
    for row in rows:
        k = key(row)
        group = open_groups.get(k)
        if group is None or row["ts_ms"] - group[0]["ts_ms"] > GROUP_MS:
            group = open_groups[k] = []
            groups.append(group)
        group.append(row)
    return groups
