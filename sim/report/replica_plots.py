"""Each replica's LEO and HW over time, for the partitions where something happened.

A partition whose replicas only grew together from start-up tells nothing a line of text
cannot: only a partition with a leader or ISR change after start-up (`is_startup`), a leader
whose HW stood still while records waited (`RunFacts.hw_stalls`) or a truncation gets a panel;
the others are named in one line. Each panel has its own lane above its plot, laid out as the
faults' lane is, with the partition's elections, ISR changes, truncations and HW stalls.
"""

from __future__ import annotations

from typing import Any

from sim.report.fault_lane import Event, Mark, draw_guides, draw_lane, lane_height, lay_out
from sim.report.narrative_text import node_order
from sim.report.plots import LEFT, LEGEND_X, RIGHT, WIDTH, fault_key, legend
from sim.report.run_facts import RunFacts
from sim.report.svg import PALETTE, Svg, TimeAxis, nice_ticks

__all__ = ["MAX_REPLICA_PLOTS", "eventful_partitions", "is_startup", "plot_replicas", "steady_text"]

MAX_REPLICA_PLOTS = 12
"""Panels at most; more eventful partitions are counted under the figure."""

PLOT_PX = 130
_WIDTHS = (4.5, 3.0, 1.6, 1.0)
"""A lower replica's line is thicker, so that lines that coincide stay visible."""


def is_startup(change: dict[str, Any]) -> bool:
    """A partition's first leader (`election` `new`): start-up, not a change."""
    return change["event"] == "leader_elected" and change["election"] == "new"


def _topic_partitions(facts: RunFacts) -> list[str]:
    names = {name.split("@")[0] for name in facts.replica_offsets} | {c["partition"] for c in facts.leader_changes}
    return sorted((n for n in names if not n.startswith("__")), key=node_order)


def _partition_events(facts: RunFacts, partition: str) -> list[Event]:
    """The partition's changes after start-up, as its lane's events."""
    events = []
    for c in facts.leader_changes:
        if c["partition"] != partition or is_startup(c):
            continue
        isr = ",".join(map(str, c["isr"]))
        if c["event"] == "leader_elected":
            leader = "none" if c["leader"] < 0 else f"broker-{c['leader']}"
            kind = "unclean" if c["unclean"] else "leader"
            words = f"leader {leader} e{c['leader_epoch']}"
            detail = f"{c['election']} election{', unclean' if c['unclean'] else ''}: leader {leader}, epoch {c['leader_epoch']}, ISR {isr}"
            events.append(Event(c["ts_ms"], kind, "", words, detail))
        else:
            before = ",".join(map(str, c["previous_isr"]))
            events.append(Event(c["ts_ms"], "isr", "", f"ISR {isr}", f"{c['event']} by {c['logged_by']}: ISR {before} to {isr}"))
    for t in facts.truncations:
        if t["partition"] == partition:
            words = f"{t['node']} truncated to {t['to_offset']}"
            events.append(Event(t["ts_ms"], "truncation", "", words, f"{words} from {t['from_offset']} ({t['reason']})"))
    for s in facts.hw_stalls:
        if s["partition"] == partition:
            length = (s["to_ms"] - s["from_ms"]) / 1000
            detail = f"{s['leader']}'s HW stood at {s['high_watermark']} for {length:.1f} s while records waited"
            events.append(Event(s["from_ms"], "stall", "", f"HW stall {length:.1f} s", detail))
    return sorted(events, key=lambda e: e.ts_ms)


def eventful_partitions(facts: RunFacts) -> list[str]:
    """The run's topics' partitions with a change after start-up, an HW stall or a truncation."""
    return [p for p in _topic_partitions(facts) if _partition_events(facts, p)]


def _ranges(names: list[str]) -> str:
    """`T-0 to T-3, T-5, T-6, U-0`: three or more consecutive partitions of a topic as a range."""
    words: list[str] = []
    run: list[tuple[str, int]] = []

    def flush() -> None:
        if run:
            (topic, first), (_, last) = run[0], run[-1]
            if last - first >= 2:
                words.append(f"{topic}-{first} to {topic}-{last}")
            else:
                words.extend(f"{topic}-{n}" for _, n in run)
            run.clear()

    for name in sorted(names, key=node_order):
        topic, _, number = name.rpartition("-")
        if run and (run[-1][0] != topic or run[-1][1] + 1 != int(number)):
            flush()
        run.append((topic, int(number)))
    flush()
    return ", ".join(words)


def steady_text(facts: RunFacts) -> str | None:
    """The partitions without a panel, in one line; None if every one has a panel."""
    shown = set(eventful_partitions(facts))
    steady = [p for p in _topic_partitions(facts) if p not in shown]
    if not steady:
        return None
    return f"{_ranges(steady)}: steady, no leader or ISR change after start-up, no HW stall, no truncation."


def _moments(events: list[Event]) -> list[Mark]:
    """A partition's events of one millisecond are one mark (an election and its ISR)."""
    out: list[Mark] = []
    for e in events:
        if out and out[-1].ms == e.ts_ms:
            out[-1].events.append(e)
        else:
            out.append(Mark([e]))
    return out


def _panel(svg: Svg, facts: RunFacts, partition: str, axis: TimeAxis, top: float) -> float:
    """One partition's panel from y `top`: its name, its lane, its plot; returns its bottom."""
    series = {n: pts for n, pts in facts.replica_offsets.items() if n.split("@")[0] == partition}
    replicas = sorted(series, key=lambda n: node_order(n.split("@")[1]))
    events = _partition_events(facts, partition)
    svg.add(svg.text(LEFT, top + 12, partition, font_weight="bold", font_size=12))
    placed = lay_out(_moments(events), axis, LEGEND_X - 8)
    lane_top = top + 18
    plot_top = lane_top + lane_height(placed) + 4
    high = max([v[0] for pts in series.values() for v in pts.values()] + [1])
    ticks = nice_ticks(high, 4)
    high = max(high, ticks[-1])

    def y(v: float) -> float:
        return plot_top + PLOT_PX - PLOT_PX * v / high

    for t in ticks:
        svg.add(svg.line(LEFT, y(t), RIGHT, y(t), stroke="#e4e4e4"), svg.text(LEFT - 6, y(t) + 4, f"{t:,.0f}", text_anchor="end"))
    for s in facts.hw_stalls:
        if s["partition"] == partition:
            x0, x1 = axis.x(s["from_ms"]), axis.x(s["to_ms"])
            svg.add(svg.rect(x0, plot_top, max(x1 - x0, 2), PLOT_PX, fill="#7b4fa0", fill_opacity=0.12))
    draw_guides(svg, _moments(events), axis, lane_top, plot_top + PLOT_PX)
    draw_lane(svg, placed, lane_top)
    items: list[tuple[str, str]] = [("header", partition)]
    for i, name in enumerate(replicas):
        seconds = sorted(series[name])
        colour, width = PALETTE[i % len(PALETTE)], _WIDTHS[min(i, len(_WIDTHS) - 1)]
        for field, dash in ((0, None), (1, "6 4")):
            points = [(axis.x(0), y(0))] if seconds[0] > 0 else []  # every log starts empty at 0
            for s in seconds:
                x, v = axis.x(s * 1000), y(series[name][s][field])
                if points:
                    points.append((x, points[-1][1]))
                points.append((x, v))
            points.append((axis.x(facts.end_ms), points[-1][1]))
            svg.add(svg.polyline(points, stroke=colour, stroke_width=width, stroke_dasharray=dash, stroke_opacity=0.85))
        items.append((svg.line(0, 6, 24, 6, stroke=colour, stroke_width=min(width, 3)), name.split("@")[1]))
    svg.add(svg.line(LEFT, plot_top + PLOT_PX, RIGHT, plot_top + PLOT_PX, stroke="#444"))
    end = legend(svg, items, top)
    return max(plot_top + PLOT_PX + 14, end + 4)


def plot_replicas(facts: RunFacts, lane: list[Mark]) -> str | None:
    """The faults' lane, then a panel per eventful partition (at most MAX_REPLICA_PLOTS): each
    replica's highest LEO (solid) and HW (dashed) per second, held to the end of the run."""
    partitions = eventful_partitions(facts)[:MAX_REPLICA_PLOTS]
    if not partitions:
        return None
    axis = TimeAxis(LEFT, RIGHT, facts.end_ms)
    svg = Svg(WIDTH, 0, ident="replicas", label="LEO and HW per replica over time")
    placed = lay_out(lane, axis, LEGEND_X - 8)
    draw_lane(svg, placed, 4)
    items = fault_key(svg, lane)
    items += [("header", "lines"), (svg.line(0, 6, 24, 6, stroke="#444", stroke_width=2), "LEO"),
              (svg.line(0, 6, 24, 6, stroke="#444", stroke_width=2, stroke_dasharray="6 4"), "HW")]
    y = max(4 + lane_height(placed), legend(svg, items, 4)) + 8
    first, behind = y, len(svg.parts)
    for partition in partitions:
        y = _panel(svg, facts, partition, axis, y)
        axis.draw(svg, y - 12)
        y += 32
    guides = Svg(WIDTH, 0)
    draw_guides(guides, lane, axis, first, y - 44)
    svg.parts[behind:behind] = guides.parts  # behind the panels' lines
    svg.height = y
    return svg.render()
