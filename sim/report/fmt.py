"""People's formatting for every value the report pages show: counts with thousands separators,
`1 rebalance` and `3 rebalances`, `yes` and `no`, nothing for a missing value, lists as words,
objects of counts as tables, never Python's repr. Every function returns escaped HTML or plain
text as its name says."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["breakable", "cell", "count", "kv_table", "number", "plural", "rows_table", "text"]


def count(n: int) -> str:
    """`12,151`."""
    return f"{n:,}"


def plural(n: int, word: str, many: str | None = None) -> str:
    """`1 rebalance`, `3 rebalances`, `0 rebalances`."""
    return f"{count(n)} {word if n == 1 else many or word + 's'}"


def number(x: float) -> str:
    """A measured value: `152`, `19.5`, `0.37`, `1,931`; whole numbers without a point."""
    if x == int(x) and abs(x) < 1e15:
        return count(int(x))
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def text(value: Any) -> str:
    """Any value of a summary or a table as plain words: None is empty, a boolean `yes`/`no`,
    numbers as `number` says, a list its items joined by commas (`none` when empty), an object
    its `key value` pairs."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return number(value)
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return "; ".join(f"{k} {text(v)}" for k, v in value.items()) or "none"
    if isinstance(value, Iterable):
        items = [text(v) for v in value]
        return ", ".join(items) if items else "none"
    return str(value)


_BREAK = re.compile(r"([._/])(?=[A-Za-z])")


def breakable(words: str) -> str:
    """Escaped, with a line break allowed after the dots and underscores of a long name
    (`consumers.1.auto.commit.interval.ms`, `crash_before_commit`), so that a narrow column
    wraps it there rather than widening its table."""
    return _BREAK.sub(r"\1<wbr>", html.escape(words))


def cell(value: Any) -> str:
    """`text` escaped for a table cell; an object of counts becomes a table of its own."""
    if isinstance(value, Mapping) and value and all(isinstance(v, int | float) for v in value.values()):
        return kv_table(value, css="inner")
    return breakable(text(value))


def kv_table(rows: Mapping[str, Any], *, table_id: str = "", css: str = "") -> str:
    """Two columns, a name and its value; `none` for no rows."""
    if not rows:
        return f'<p{_attrs(table_id, "")}>none</p>'
    body = "".join(f"<tr><th>{breakable(str(k))}</th><td>{cell(v)}</td></tr>" for k, v in rows.items())
    return f"<table{_attrs(table_id, css)}>{body}</table>"


def rows_table(header: list[str], rows: list[list[Any]], table_id: str = "", *, raw: bool = False) -> str:
    """A table with a header row in its own scrolling box; `raw` cells are HTML already."""
    if not rows:
        return f'<p{_attrs(table_id, "")}>none</p>'
    head = "".join(f"<th>{breakable(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c if raw else cell(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f'<div class="box"><table{_attrs(table_id, "")}><tr>{head}</tr>{body}</table></div>'


def _attrs(table_id: str, css: str) -> str:
    return (f' id="{table_id}"' if table_id else "") + (f' class="{css}"' if css else "")
