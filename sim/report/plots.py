"""The run report's figures, as inline SVG (sim/report/svg.py): which partitions each consumer
owned over time, and, for the gossip stand-in, its ping round trips. Each replica's LEO and HW
is sim/report/replica_plots.py.

Every figure has the same geometry: names left of x LEFT, simulated time from LEFT to RIGHT,
the legend beside it from LEGEND_X, the faults on their lane above (sim/report/fault_lane.py),
so the figures' time axes line up on the page. Colours carry meaning: the duplicate spans'
hatches use colours no other mark uses (partitions take PALETTE, faults red and their kinds'
colours), so a reader, and a test, can find them.
"""

from __future__ import annotations

from typing import Any

from sim.report.consumer_group_facts import handoff_gaps, is_consumer_group
from sim.report.fault_lane import KINDS, Mark, draw_guides, draw_lane, glyph, lane_height, lay_out
from sim.report.narrative_text import node_order
from sim.report.run_facts import RunFacts
from sim.report.svg import PALETTE, Svg, TimeAxis, nice_ticks

__all__ = ["CAUSE_COLOURS", "LEFT", "LEGEND_X", "RIGHT", "WIDTH", "legend", "plot_ownership", "plot_pings"]

CAUSE_COLOURS = ("#ff00ff", "#00b000", "#0000ff", "#000000", "#a05a00")
"""The duplicate spans' hatch colours, by cause in sorted order (magenta first)."""

SKIP_COLOUR = "#d62728"
"""Skipped records: a red cross-hatch with a dashed outline, over the lane of the consumer whose
commit or reset passed them (or the operator's row)."""

OPERATOR = "admin"
"""The skip spans' `consumer` for an operator's action; its row is labelled `operator`."""

WIDTH, LEFT, RIGHT, LEGEND_X = 1060, 100, 840, 860
LANE_PX = 14
"""A partition's lane in a consumer's row."""
SHORTEST_SPAN_PX = 8
"""A duplicate span one poll long stays visible on a long run."""
HANDOFF_COLOUR = "#555555"
"""A consumer-protocol partition between its revocation and its next owner: a grey dotted bar
on the revoking consumer's lane of it."""


def legend(svg: Svg, items: list[tuple[str, str]], top: float) -> float:
    """Items (an SVG swatch drawn at (0, 0) to (24, 12), a name) down the legend column from
    `top`; returns where it ends."""
    y = top
    for swatch, name in items:
        if swatch == "header":
            svg.add(svg.text(LEGEND_X, y + 10, name, font_weight="bold"))
        else:
            svg.add(svg.group(swatch, transform=f"translate({LEGEND_X},{y:.1f})"),
                    svg.text(LEGEND_X + 30, y + 10, name))
        y += 17
    return y


def fault_key(svg: Svg, lane: list[Mark]) -> list[tuple[str, str]]:
    kinds = [k for k in KINDS if any(e.kind == k for m in lane for e in m.events)]
    return ([("header", "faults")] if kinds else []) + [(glyph(svg, k, 8, 6), KINDS[k][0]) for k in kinds]


def _hatch(svg: Svg, index: int, colour: str) -> str:
    ident = f"hatch-{index}"
    svg.defs.append(
        f'<pattern id="{ident}" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)">'
        f'<rect width="6" height="6" fill="white" fill-opacity="0.55"/>'
        f'<line x1="0" y1="0" x2="0" y2="6" stroke="{colour}" stroke-width="3"/></pattern>'
    )
    return f"url(#{ident})"


def _cross_hatch(svg: Svg) -> str:
    svg.defs.append(
        '<pattern id="skip-hatch" patternUnits="userSpaceOnUse" width="6" height="6">'
        '<rect width="6" height="6" fill="white" fill-opacity="0.6"/>'
        f'<path d="M0,0 L6,6 M6,0 L0,6" stroke="{SKIP_COLOUR}" stroke-width="1"/></pattern>'
    )
    return "url(#skip-hatch)"


def plot_ownership(
    facts: RunFacts, spans: list[dict[str, Any]], lane: list[Mark], skips: list[dict[str, Any]] | None = None,
) -> str | None:
    """One row per consumer, as tall as its group has partitions: a bar per partition it held,
    labelled with the partition and its generation where the bar has room (always in its
    tooltip); the duplicate spans over their partition, hatched in their cause's colour; the
    skip spans over the partition of whoever passed them, cross-hatched in red."""
    holds, skips = facts.holds, skips or []
    if not holds:
        return None
    axis = TimeAxis(LEFT, RIGHT, facts.end_ms)
    marked = [*spans, *skips]
    consumers = sorted({h["consumer"] for h in holds} | {s["consumer"] for s in marked}, key=node_order)
    group_of = {h["consumer"]: h["group_id"] for h in holds}
    group_of.update({s["consumer"]: s["group_id"] for s in marked if s["consumer"] not in group_of})
    by_group: dict[str, list[str]] = {}
    for tp in sorted({(h["group_id"], h["partition"]) for h in holds} | {(s["group_id"], s["partition"]) for s in marked}):
        by_group.setdefault(tp[0], []).append(tp[1])
    for names in by_group.values():
        names.sort(key=node_order)
    every = sorted({p for names in by_group.values() for p in names}, key=node_order)
    colour = {p: PALETTE[i % len(PALETTE)] for i, p in enumerate(every)}
    svg = Svg(WIDTH, 0, ident="ownership-timeline", label="partition ownership per consumer with duplicate spans")
    placed = lay_out(lane, axis, LEGEND_X - 8)
    top = 4 + lane_height(placed)
    row_top: dict[str, float] = {}
    y = top + 4
    for consumer in consumers:
        row_top[consumer] = y
        y += len(by_group[group_of[consumer]]) * LANE_PX + 10
    bottom = y
    for i, consumer in enumerate(consumers):
        y0 = row_top[consumer]
        height = len(by_group[group_of[consumer]]) * LANE_PX + 10
        if i % 2 == 0:
            svg.add(svg.rect(LEFT, y0 - 4, RIGHT - LEFT, height, fill="#f4f4f4"))
        svg.add(svg.text(LEFT - 8, y0 + height / 2, "operator" if consumer == OPERATOR else consumer, text_anchor="end"))
    draw_guides(svg, lane, axis, top, bottom)
    draw_lane(svg, placed, 4)
    for h in holds:
        lane_of = by_group[h["group_id"]].index(h["partition"])
        y0 = row_top[h["consumer"]] + lane_of * LANE_PX
        x0, x1 = axis.x(h["from_ms"]), axis.x(facts.end_ms if h["to_ms"] is None else h["to_ms"])
        until = "the end" if h["to_ms"] is None else f"{h['to_ms'] / 1000:.3f} s ({h['ended_by']})"
        epoch = is_consumer_group(facts, h["group_id"])  # a consumer group's holds carry member epochs
        words = f"{h['partition']} {'e' if epoch else 'g'}{h['generation_id']}"
        held_in = f"at member epoch {h['generation_id']}" if epoch else f"in generation {h['generation_id']}"
        parts = [svg.title(f"{h['consumer']} held {h['partition']} {held_in} from {h['from_ms'] / 1000:.3f} s to {until}"),
                 svg.rect(x0, y0, max(x1 - x0, 1), LANE_PX - 2, fill=colour[h["partition"]], fill_opacity=0.8)]
        if x1 - x0 >= len(words) * 5.6 + 6:
            parts.append(svg.text(x0 + 3, y0 + LANE_PX - 4.5, words, font_size=9.5, fill="#111"))
        svg.add(svg.group(*parts, class_="hold"))
    gaps = handoff_gaps(facts)
    for g in gaps:
        y0 = row_top[g["consumer"]] + by_group[g["group_id"]].index(g["partition"]) * LANE_PX
        x0 = axis.x(g["from_ms"])
        to = facts.end_ms if g["to_ms"] is None else g["to_ms"]
        svg.add(svg.group(svg.title(_handoff_tip(g, to)),
                          svg.rect(x0, y0 + 2, max(axis.x(to) - x0, 2), LANE_PX - 6, fill="none", stroke=HANDOFF_COLOUR,
                                   stroke_width=1.2, stroke_dasharray="1.5 1.5"),
                          class_="handoff-gap"))
    causes = sorted({s["cause"] for s in spans})
    fills = [_hatch(svg, i, CAUSE_COLOURS[i % len(CAUSE_COLOURS)]) for i in range(len(causes))]
    for s in spans:
        i = causes.index(s["cause"])
        lane_of = by_group[s["group_id"]].index(s["partition"])
        y0 = row_top[s["consumer"]] + lane_of * LANE_PX - 1
        x0 = axis.x(s["from_ms"])
        width = max(axis.x(s["to_ms"]) - x0, SHORTEST_SPAN_PX)
        when = (f"at {s['from_ms'] / 1000:.3f} s" if s["from_ms"] == s["to_ms"]
                else f"from {s['from_ms'] / 1000:.3f} s to {s['to_ms'] / 1000:.3f} s")
        tip = (f"{s['consumer']} processed again offsets {s['first_offset']} to {s['end_offset'] - 1} of "
               f"{s['partition']} {when} ({s['cause']})")
        svg.add(svg.group(svg.title(tip), svg.rect(x0, y0, width, LANE_PX, fill=fills[i],
                                                   stroke=CAUSE_COLOURS[i % len(CAUSE_COLOURS)], stroke_width=1.5),
                          class_="duplicate-span", data_cause=s["cause"]))
    skip_fill = _cross_hatch(svg) if skips else ""
    for s in skips:
        lane_of = by_group[s["group_id"]].index(s["partition"])
        y0 = row_top[s["consumer"]] + lane_of * LANE_PX - 1
        x0 = axis.x(s["from_ms"])
        width = max(axis.x(s["to_ms"]) - x0, SHORTEST_SPAN_PX)
        who = "the operator" if s["consumer"] == OPERATOR else s["consumer"]
        tip = (f"{who} moved group {s['group_id']} past offsets {s['first_offset']} to {s['end_offset'] - 1} of "
               f"{s['partition']} at {s['from_ms'] / 1000:.3f} s, never processed ({s['cause']})")
        svg.add(svg.group(svg.title(tip), svg.rect(x0, y0, width, LANE_PX, fill=skip_fill, stroke=SKIP_COLOUR,
                                                   stroke_width=1.5, stroke_dasharray="3 2"),
                          class_="skip-span", data_cause=s["cause"]))
    axis.draw(svg, bottom + 2)
    items = fault_key(svg, lane)
    items += [("header", "partitions")] + [(svg.rect(0, 0, 24, 12, fill=colour[p], fill_opacity=0.8), p) for p in every]
    if gaps:
        items += [("header", "consumer protocol"),
                  (svg.rect(0, 2, 24, 8, fill="none", stroke=HANDOFF_COLOUR, stroke_dasharray="1.5 1.5"), "revoked, not yet reassigned")]
    if causes:
        items.append(("header", "processed again"))
        items += [(svg.rect(0, 0, 24, 12, fill=fills[i], stroke=CAUSE_COLOURS[i % len(CAUSE_COLOURS)]), c)
                  for i, c in enumerate(causes)]
    if skips:
        items.append(("header", "skipped"))
        items += [(svg.rect(0, 0, 24, 12, fill=skip_fill, stroke=SKIP_COLOUR, stroke_dasharray="3 2"), c)
                  for c in sorted({s["cause"] for s in skips})]
    end = legend(svg, items, 4)
    svg.height = max(bottom + 40, end + 4)
    return svg.render()


def _handoff_tip(g: dict[str, Any], to: int) -> str:
    revoked = f"{g['consumer']} revoked {g['partition']} at {g['from_ms'] / 1000:.3f} s"
    if g["to_ms"] is None:
        return f"{revoked}; no member was assigned it again: {(to - g['from_ms']) / 1000:.3f} s without an owner to the end"
    return (f"{revoked}; {g['next_consumer']} was assigned it at {to / 1000:.3f} s (member epoch {g['member_epoch']}): "
            f"{(to - g['from_ms']) / 1000:.3f} s without an owner")


def plot_pings(analysis: dict[str, Any]) -> str | None:
    """The gossip stand-in's largest ping round trip per second, faults as red lines."""
    timeline = analysis.get("ping_timeline", [])
    if not timeline:
        return None
    end_ms = max(p["second"] for p in timeline) * 1000 + 1000
    axis = TimeAxis(LEFT, RIGHT, end_ms)
    top, height = 10, 200
    high = max(p["max_rtt_ms"] for p in timeline) or 1
    ticks = nice_ticks(high, 4)
    high = max(high, ticks[-1])
    svg = Svg(WIDTH, top + height + 40, ident="pings", label="ping round trips over time")

    def y(v: float) -> float:
        return top + height - height * v / high

    for t in ticks:
        svg.add(svg.line(LEFT, y(t), RIGHT, y(t), stroke="#e4e4e4"), svg.text(LEFT - 6, y(t) + 4, f"{t:g}", text_anchor="end"))
    for fault in analysis.get("faults", []):
        if fault["ts_ms"]:
            svg.add(svg.line(axis.x(fault["ts_ms"]), top, axis.x(fault["ts_ms"]), top + height, stroke="#d62728", stroke_opacity=0.35))
    points: list[tuple[float, float]] = []
    for p in timeline:
        x = axis.x(p["second"] * 1000)
        if points:
            points.append((x, points[-1][1]))
        points.append((x, y(p["max_rtt_ms"])))
    svg.add(svg.polyline(points, stroke=PALETTE[0], stroke_width=1.5))
    svg.add(svg.text(20, top + height / 2, "ms", text_anchor="middle"))
    axis.draw(svg, top + height + 2)
    legend(svg, [(svg.line(0, 6, 24, 6, stroke=PALETTE[0], stroke_width=2), "largest round trip per second")], top)
    return svg.render()
