"""Hand-written SVG for the report's figures: a few primitives, a time axis, nice ticks.

The figures are inline SVG, so they stay sharp when zoomed and the page stays one file; drawing
them by hand keeps every label where the layout put it (sim/report/fault_lane.py places the
fault labels so that none overlaps another) and the page small. Text that must not collide is
set in a monospace font, whose width per character is known: CHAR_PX per character at 11 px.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

__all__ = ["CHAR_PX", "FONT", "MONO", "PALETTE", "Svg", "TimeAxis", "nice_ticks"]

CHAR_PX = 6.8
"""The most a character of MONO at 11 px takes (DejaVu Sans Mono and Liberation Mono: 6.6 to 6.7)."""

FONT = "font-family:sans-serif;font-size:11px"
MONO = "font-family:'DejaVu Sans Mono','Liberation Mono',monospace;font-size:11px"

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#76b7b2", "#edc948", "#9c755f", "#b07aa1", "#bab0ac", "#1b9e77", "#a6761d")
"""Colours of partitions and series: none is red (faults) or magenta (the first cause's spans)."""


def _num(v: float) -> str:
    return f"{v:.1f}".removesuffix(".0")


def _attrs(attrs: dict[str, object]) -> str:
    out = []
    for key, value in attrs.items():
        if value is None:
            continue
        name = key.rstrip("_").replace("_", "-")
        shown = _num(value) if isinstance(value, float) else str(value)
        out.append(f' {name}="{html.escape(shown)}"')
    return "".join(out)


class Svg:
    """An SVG document built element by element, in drawing order."""

    def __init__(self, width: float, height: float, *, ident: str = "", label: str = "") -> None:
        self.width, self.height = width, height
        self.ident, self.label = ident, label
        self.defs: list[str] = []
        self.parts: list[str] = []

    def el(self, tag: str, body: str = "", **attrs: object) -> str:
        inner = f">{body}</{tag}>" if body else "/>"
        return f"<{tag}{_attrs(attrs)}{inner}"

    def add(self, *parts: str) -> None:
        self.parts.extend(parts)

    def rect(self, x: float, y: float, w: float, h: float, **attrs: object) -> str:
        return self.el("rect", x=float(x), y=float(y), width=float(w), height=float(h), **attrs)

    def line(self, x1: float, y1: float, x2: float, y2: float, **attrs: object) -> str:
        return self.el("line", x1=float(x1), y1=float(y1), x2=float(x2), y2=float(y2), **attrs)

    def polyline(self, points: list[tuple[float, float]], **attrs: object) -> str:
        return self.el("polyline", points=" ".join(f"{_num(x)},{_num(y)}" for x, y in points), fill="none", **attrs)

    def text(self, x: float, y: float, words: str, **attrs: object) -> str:
        return self.el("text", html.escape(words), x=float(x), y=float(y), **attrs)

    @staticmethod
    def title(words: str) -> str:
        """A tooltip: the first child of a group shows on hover over any of it."""
        return f"<title>{html.escape(words)}</title>"

    def group(self, *children: str, **attrs: object) -> str:
        return f"<g{_attrs(attrs)}>{''.join(children)}</g>"

    def render(self) -> str:
        ident = f' id="{self.ident}"' if self.ident else ""
        defs = f"<defs>{''.join(self.defs)}</defs>" if self.defs else ""
        label = f"<title>{html.escape(self.label)}</title>" if self.label else ""
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg"{ident} class="figure" role="img" '
            f'viewBox="0 0 {_num(self.width)} {_num(self.height)}" width="{_num(self.width)}" '
            f'height="{_num(self.height)}" style="{FONT}">{label}{defs}{"".join(self.parts)}</svg>'
        )


def nice_ticks(high: float, wanted: int = 8, *, cover: bool = True) -> list[float]:
    """Ticks from 0 at 1, 2 or 5 times a power of ten, about `wanted` of them: up to the first
    at or above `high` (a value axis holds every value), or, not `cover`, the last at or below
    it (a time axis ends with the run)."""
    if high <= 0:
        return [0.0]
    raw = high / wanted
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    last = math.ceil(high / step - 1e-9) if cover else math.floor(high / step + 1e-9)
    return [i * step for i in range(last + 1)]


@dataclass(frozen=True, slots=True)
class TimeAxis:
    """Simulated time from 0 to `end_ms` drawn from x `left` to x `right`."""

    left: float
    right: float
    end_ms: int

    def x(self, ms: float) -> float:
        return self.left + (self.right - self.left) * min(max(ms, 0), self.end_ms) / max(1, self.end_ms)

    def draw(self, svg: Svg, y: float) -> None:
        """The axis line at `y`, ticks in seconds below it, and its name."""
        svg.add(svg.line(self.left, y, self.right, y, stroke="#444"))
        for second in nice_ticks(self.end_ms / 1000, 10, cover=False):
            x = self.x(second * 1000)
            svg.add(svg.line(x, y, x, y + 4, stroke="#444"), svg.text(x, y + 15, f"{second:g}", text_anchor="middle"))
        svg.add(svg.text((self.left + self.right) / 2, y + 30, "simulated time (s)", text_anchor="middle"))
