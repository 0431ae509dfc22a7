"""The faults of a run on a lane of their own above a figure's time axis, and in a table.

Each fault is a mark of its kind (a crash a red cross, a restart a green triangle, ...) with a
short label; what a node went through within a moment (a rolling restart's close, exit and
start) is one mark whose label names each step. Labels are laid out in rows so that none
overlaps another (`lay_out`); the details are the mark's tooltip and the rows of the faults
table. Controller changes after the first election and the operator's commands share the lane.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sim.report.run_facts import RunFacts
from sim.report.svg import CHAR_PX, MONO, Svg, TimeAxis

__all__ = ["KINDS", "Mark", "Placed", "draw_guides", "draw_lane", "fault_rows", "glyph", "lay_out", "marks"]

KINDS: dict[str, tuple[str, str, str]] = {
    # kind: (what the legend calls it, colour, shape)
    "crash": ("crash", "#d62728", "cross"),
    "restart": ("(re)start", "#2ca02c", "up"),
    "stop": ("process exit", "#555555", "square"),
    "shutdown": ("shutdown", "#d0701a", "down"),
    "pause": ("pause or resume", "#7b4fa0", "diamond"),
    "cut": ("network cut", "#1f5fbf", "bar"),
    "heal": ("network heal", "#1f5fbf", "ring"),
    "link": ("link fault", "#138d90", "dot"),
    "call": ("application call", "#e08b00", "dot"),
    "admin": ("admin command", "#8c564b", "square"),
    "skipped": ("fault skipped", "#888888", "ring"),
    "controller": ("controller change", "#444444", "diamond"),
    # a partition's own changes, on its replica panel's lane
    "leader": ("leader election", "#2ca02c", "diamond"),
    "unclean": ("unclean election", "#d0701a", "diamond"),
    "isr": ("ISR change", "#555555", "dot"),
    "truncation": ("truncation", "#a0522d", "down"),
    "stall": ("HW stall", "#7b4fa0", "bar"),
}

ROW_PX = 16
"""A lane row's height."""
GAP_PX = 8
"""The least room between two labels of a row."""
MOMENT_MS = 1000
"""A node's faults this close one after another are one mark (a rolling restart's close, exit, start)."""


@dataclass(slots=True)
class Event:
    """One fault as the table shows it."""

    ts_ms: int
    kind: str
    node: str
    verb: str
    """The label's word: `crash`, `restart`, `close`..."""
    detail: str


@dataclass(slots=True)
class Mark:
    """One mark on the lane: its events (one, or a node's each within MOMENT_MS of the last)."""

    events: list[Event] = field(default_factory=list)

    @property
    def ms(self) -> int:
        return self.events[0].ts_ms

    @property
    def kind(self) -> str:
        return self.events[0].kind

    @property
    def label(self) -> str:
        verbs = ", ".join(dict.fromkeys(e.verb for e in self.events))
        node = self.events[0].node
        return f"{node} {verbs}" if self.kind == "admin" else f"{verbs} {node}".strip()

    @property
    def details(self) -> str:
        return "\n".join(f"{e.ts_ms / 1000:.3f} s: {e.detail}" for e in self.events)


@dataclass(frozen=True, slots=True)
class Placed:
    mark: Mark
    row: int
    x: float
    """The mark's x; its label runs right of it, or left when it would pass `right`."""
    left: float
    right: float
    """The room the mark and its label take."""
    anchor: str


def _node(target: str | None) -> str:
    return (target or "").split("/")[0]


def _sides(side: list[str] | None) -> str:
    nodes = list(side or [])
    return ", ".join(nodes) if len(nodes) <= 2 else f"{len(nodes)} nodes"


def _event(f: dict[str, Any]) -> Event | None:
    """A fault of `RunFacts.faults` in the lane's words; None for the nodes' first start."""
    ts, name, node = f["ts_ms"], f["event"], _node(f["target"])
    if name == "node_crashed":
        return Event(ts, "crash", node, "crash", f"{node} crashed ({f['kind']})")
    if name == "node_started":
        if not f["incarnation"]:
            return None
        return Event(ts, "restart", node, "restart", f"{node} started again (incarnation {f['incarnation']})")
    if name == "node_stopped":
        return Event(ts, "stop", node, "exit", f"{node}'s process exited")
    if name == "node_paused":
        return Event(ts, "pause", node, "pause", f"{node} paused until {f['until_ms'] / 1000:.3f} s")
    if name == "node_resumed":
        return Event(ts, "pause", node, "resume", f"{node} resumed")
    if name == "network_partitioned":
        a, b = _sides(f["side_a"]), _sides(f["side_b"])
        return Event(ts, "cut", "", f"cut {a}", f"traffic between {a} and {b} cut")
    if name == "network_partition_lifted":
        a, b = _sides(f["side_a"]), _sides(f["side_b"])
        return Event(ts, "heal", "", f"lift cut {a}", f"the cut between {a} and {b} lifted")
    if name == "network_healed":
        return Event(ts, "heal", "", "heal", "every network cut lifted")
    if name == "link_fault_added":
        return Event(ts, "link", "", f"{f['kind']} on links", f"a {f['kind']} fault on envelopes began")
    if name == "application_called" and node == "admin":  # the operator's group command is sent
        return Event(ts, "admin", node, f["action"], f"the operator ran {f['action']}")
    if name == "application_called":
        kind = "shutdown" if f["action"] == "shutdown" else "call"
        return Event(ts, kind, node, f["action"], f"{node}'s {'operator' if kind == 'shutdown' else 'application'} called {f['action']}")
    if name == "fault_skipped":
        return Event(ts, "skipped", node, f"{f['kind']} skipped", f"the {f['kind']} fault on {node} could not act: {f['reason']}")
    return None


def _all_events(facts: RunFacts) -> list[Event]:
    events = [e for e in map(_event, facts.faults) if e is not None]
    for c in facts.controllers[1:]:
        node = f"broker-{c['broker_id']}"
        word = "resigned" if c["event"] == "controller_resigned" else "elected"
        events.append(Event(c["ts_ms"], "controller", node, "controller", f"{node} {word} controller (epoch {c['epoch']})"))
    for a in facts.admin_actions:  # its answer, one mark with the command while they are one moment
        group = f" of group {a['group_id']}" if a["group_id"] else ""
        detail = f"{a['operation']}{group}{' ' + a['detail'] if a['detail'] else ''} answered {a['error']}"
        events.append(Event(a["ts_ms"], "admin", "admin", a["operation"], detail))
    return sorted(events, key=lambda e: e.ts_ms)  # stable: log order within a millisecond


def marks(facts: RunFacts) -> list[Mark]:
    """The lane's marks in time order: a node's fault within MOMENT_MS of its mark's last is
    that mark's (a command and its answer, a close, the exit and the new start)."""
    out: list[Mark] = []
    open_marks: dict[str, Mark] = {}
    for event in _all_events(facts):
        mark = open_marks.get(event.node) if event.node else None
        if mark is None or event.ts_ms - mark.events[-1].ts_ms > MOMENT_MS:
            mark = Mark()
            out.append(mark)
            if event.node:
                open_marks[event.node] = mark
        mark.events.append(event)
    return out


def fault_rows(facts: RunFacts) -> list[list[str]]:
    """The faults table: time, kind, node, what happened; every event on its own row."""
    return [[f"{e.ts_ms / 1000:.3f}", KINDS[e.kind][0], e.node, e.detail] for e in _all_events(facts)]


def lay_out(lane: list[Mark], axis: TimeAxis, right: float) -> list[Placed]:
    """Each mark in the lowest row where its label has room, never past x `right`: a label
    runs right of its mark, or left of it when it would pass `right`."""
    rows: list[list[tuple[float, float]]] = []
    placed = []
    for mark in lane:
        x, width = axis.x(mark.ms), len(mark.label) * CHAR_PX
        left, end, anchor = x - 6, x + 8 + width, "start"
        if end > right:
            left, end, anchor = x - 8 - width, x + 6, "end"
        row = next(
            (i for i, taken in enumerate(rows) if all(b + GAP_PX <= left or a >= end + GAP_PX for a, b in taken)),
            len(rows),
        )
        if row == len(rows):
            rows.append([])
        rows[row].append((left, end))
        placed.append(Placed(mark, row, x, left, end, anchor))
    return placed


def glyph(svg: Svg, kind: str, x: float, y: float, size: float = 5) -> str:
    """The mark of a kind of fault, centred on (x, y)."""
    colour, shape = KINDS[kind][1], KINDS[kind][2]
    s = size
    if shape == "cross":
        return svg.el("path", d=f"M{x - s:.1f},{y - s:.1f}L{x + s:.1f},{y + s:.1f}M{x - s:.1f},{y + s:.1f}L{x + s:.1f},{y - s:.1f}",
                      stroke=colour, stroke_width=2.2)
    if shape in ("up", "down", "diamond"):
        points = {
            "up": [(x, y - s), (x + s, y + s), (x - s, y + s)],
            "down": [(x - s, y - s), (x + s, y - s), (x, y + s)],
            "diamond": [(x, y - s), (x + s, y), (x, y + s), (x - s, y)],
        }[shape]
        return svg.el("polygon", points=" ".join(f"{px:.1f},{py:.1f}" for px, py in points), fill=colour)
    if shape == "square":
        return svg.rect(x - s * 0.8, y - s * 0.8, s * 1.6, s * 1.6, fill=colour)
    if shape == "bar":
        return svg.rect(x - 1.5, y - s, 3, s * 2, fill=colour)
    if shape == "ring":
        return svg.el("circle", cx=float(x), cy=float(y), r=s * 0.8, fill="white", stroke=colour, stroke_width=2)
    return svg.el("circle", cx=float(x), cy=float(y), r=s * 0.8, fill=colour)


def lane_height(placed: list[Placed]) -> float:
    return 0 if not placed else (max(p.row for p in placed) + 1) * ROW_PX + 6


def draw_lane(svg: Svg, placed: list[Placed], top: float) -> float:
    """The lane's marks and labels from y `top` down, row 0 nearest the figure below; returns
    its height. Each mark is a group: its tooltip, its glyph, its label (`fault-label`)."""
    height = lane_height(placed)
    rows = height and max(p.row for p in placed) + 1
    for p in placed:
        y = top + (rows - 1 - p.row) * ROW_PX + ROW_PX / 2 + 3
        tx = p.x + 8 if p.anchor == "start" else p.x - 8
        label = svg.text(tx, y + 4, p.mark.label, class_="fault-label", text_anchor=p.anchor, style=MONO,
                         fill=KINDS[p.mark.kind][1])
        svg.add(svg.group(svg.title(p.mark.details), glyph(svg, p.mark.kind, p.x, y), label,
                          class_="fault", data_kind=p.mark.kind))
    return height


def draw_guides(svg: Svg, lane: list[Mark], axis: TimeAxis, top: float, bottom: float) -> None:
    """A faint line down the figure at each fault's time, behind what is drawn after it."""
    for mark in lane:
        for ms in sorted({e.ts_ms for e in mark.events}):
            x = axis.x(ms)
            svg.add(svg.line(x, top, x, bottom, stroke=KINDS[mark.kind][1], stroke_opacity=0.35, stroke_width=1))
