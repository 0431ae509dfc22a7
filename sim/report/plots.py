"""The run report's plots, as base64 PNGs (matplotlib's Agg backend, imported only here).

Colours carry meaning: the duplicate spans' hatches use colours no other mark of the ownership
timeline uses (the partitions' bars are matplotlib's default cycle, faults red), so a reader,
and a test, can find them.
"""

from __future__ import annotations

import base64
import io
from typing import Any

from sim.report.narrative_text import node_order
from sim.report.run_facts import RunFacts

__all__ = ["CAUSE_COLOURS", "MAX_REPLICA_PLOTS", "plot_ownership", "plot_pings", "plot_replicas", "png"]

CAUSE_COLOURS = ("#ff00ff", "#00b000", "#0000ff", "#000000", "#a05a00")
"""The duplicate spans' hatch colours, by cause in sorted order (magenta first)."""

MAX_REPLICA_PLOTS = 12
"""Partitions of the run's own topics plotted at most (internal topics are not plotted)."""

_REPLICA_MARKERS = ("o", "s", "^", "D", "v", "P")


def _pyplot() -> Any:
    import matplotlib  # noqa: PLC0415 - only a report pays for matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    return plt


def png(fig: Any) -> str:
    plt = _pyplot()
    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _mark_faults(ax: Any, facts: RunFacts) -> None:
    """Faults as red lines; controller elections after the first as grey dash-dots."""
    for fault in facts.faults:
        if fault["event"] == "node_started" and fault["ts_ms"] == 0:
            continue
        ax.axvline(fault["ts_ms"] / 1000, color="tab:red", alpha=0.35, linewidth=1)
        what = fault["target"] or fault["kind"] or ""
        label = f"{fault['event']} {what}{' ' + fault['action'] if fault['action'] else ''}".strip()
        ax.annotate(label, (fault["ts_ms"] / 1000, 0.02), xycoords=("data", "axes fraction"),
                    rotation=90, fontsize=7, va="bottom", ha="right", color="tab:red")
    for change in facts.controllers[1:]:
        ax.axvline(change["ts_ms"] / 1000, color="dimgrey", linestyle="-.", linewidth=1)
        ax.annotate(f"controller broker-{change['broker_id']} ({change['event'].removeprefix('controller_')})",
                    (change["ts_ms"] / 1000, 0.98), xycoords=("data", "axes fraction"), rotation=90, fontsize=7,
                    va="top", ha="right", color="dimgrey")


def plot_replicas(facts: RunFacts) -> str | None:
    """One plot per partition of the run's topics: each replica's LEO (solid) and HW (dashed)
    per second, held to the end of the run; the thicker a line, the lower its replica's place,
    and each replica has its own marker, so coinciding lines stay visible. Leader elections
    are marked with the new leader and epoch."""
    series = {name: points for name, points in facts.replica_offsets.items() if not name.startswith("__")}
    if not series:
        return None
    plt = _pyplot()
    partitions = sorted({name.split("@")[0] for name in series}, key=node_order)[:MAX_REPLICA_PLOTS]
    end = facts.end_ms / 1000
    fig, axes = plt.subplots(len(partitions), 1, figsize=(11, 3.2 * len(partitions)), squeeze=False)
    for ax, partition in zip(axes[:, 0], partitions, strict=True):
        replicas = sorted((n for n in series if n.split("@")[0] == partition), key=lambda n: node_order(n.split("@")[1]))
        for i, name in enumerate(replicas):
            seconds = sorted(series[name])
            xs = [*seconds, end]
            leo = [series[name][s][0] for s in seconds]
            hw = [series[name][s][1] for s in seconds]
            style = {"color": f"C{i}", "linewidth": 1.2 + 1.8 * (len(replicas) - 1 - i), "alpha": 0.85,
                     "marker": _REPLICA_MARKERS[i % len(_REPLICA_MARKERS)], "markersize": 4,
                     "markevery": (i, len(replicas) + 2), "drawstyle": "steps-post"}
            node = name.split("@")[1]
            ax.plot(xs, [*leo, leo[-1]], label=f"{node} LEO", **style)
            ax.plot(xs, [*hw, hw[-1]], linestyle="--", label=f"{node} HW", **style)
        for change in facts.leader_changes:
            if change["partition"] == partition and change["event"] == "leader_elected" and change["election"] != "new":
                leader = "none" if change["leader"] < 0 else f"broker-{change['leader']}"
                colour = "darkorange" if change["unclean"] else "tab:green"
                ax.axvline(change["ts_ms"] / 1000, color=colour, linestyle=":", linewidth=1.5)
                ax.annotate(f"leader {leader} (epoch {change['leader_epoch']}{', unclean' if change['unclean'] else ''})",
                            (change["ts_ms"] / 1000, 0.5), xycoords=("data", "axes fraction"), rotation=90,
                            fontsize=7, va="center", ha="left", color=colour)
        _mark_faults(ax, facts)
        ax.set_xlim(0, end)
        ax.set_title(f"partition {partition}: LEO (solid) and HW (dashed) per replica, leader changes dotted")
        ax.set_xlabel("simulated time (s)")
        ax.set_ylabel("offset")
        ax.legend(loc="upper left", fontsize=7, ncol=3)
    return png(fig)


def plot_ownership(facts: RunFacts, spans: list[dict[str, Any]]) -> str | None:
    """One row per consumer: a bar per partition it held, labelled with the partition and its
    generation; the duplicate spans over it, hatched in their cause's colour."""
    holds = facts.holds
    if not holds:
        return None
    plt = _pyplot()
    consumers = sorted({h["consumer"] for h in holds} | {s["consumer"] for s in spans}, key=node_order)
    partitions = sorted({h["partition"] for h in holds}, key=node_order)
    row = {c: i for i, c in enumerate(consumers)}
    lane = {p: i for i, p in enumerate(partitions)}
    height = 0.8 / max(1, len(partitions))
    fig, ax = plt.subplots(figsize=(11, 1.6 + 0.9 * len(consumers)))
    for h in holds:
        to_ms = facts.end_ms if h["to_ms"] is None else h["to_ms"]
        y = row[h["consumer"]] - 0.4 + lane[h["partition"]] * height
        start, width = h["from_ms"] / 1000, max(to_ms - h["from_ms"], 1) / 1000
        ax.broken_barh([(start, width)], (y, height * 0.9), color=f"C{lane[h['partition']] % 10}", alpha=0.55)
        ax.annotate(f"{h['partition']} g{h['generation_id']}", (start, y + height * 0.45), fontsize=6, va="center")
    causes = sorted({s["cause"] for s in spans})
    shortest = max(200, facts.end_ms // 150)  # a one-poll span stays visible on a long run
    for s in spans:
        y = row[s["consumer"]] - 0.45
        start, width = s["from_ms"] / 1000, max(s["to_ms"] - s["from_ms"], shortest) / 1000
        colour = CAUSE_COLOURS[causes.index(s["cause"]) % len(CAUSE_COLOURS)]
        ax.broken_barh([(start, width)], (y, 0.9), facecolor="none", edgecolor=colour, hatch="///", linewidth=1.5)
    for i, cause in enumerate(causes):
        ax.plot([], [], color=CAUSE_COLOURS[i % len(CAUSE_COLOURS)], linewidth=4, label=f"processed again: {cause}")
    _mark_faults(ax, facts)
    ax.set_xlim(0, facts.end_ms / 1000)
    ax.set_yticks(range(len(consumers)), consumers)
    ax.set_ylim(-0.6, len(consumers) - 0.4)
    ax.set_xlabel("simulated time (s)")
    ax.set_title("partitions owned per consumer (bars, with their generation) and duplicate spans (hatched)")
    if causes:  # below the axes, away from the spans
        ax.legend(loc="upper left", bbox_to_anchor=(0, -0.25), fontsize=7, ncol=3)
    return png(fig)


def plot_pings(analysis: dict[str, Any]) -> str | None:
    timeline = analysis.get("ping_timeline", [])
    if not timeline:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(10, 3.5))
    ax.plot([p["second"] for p in timeline], [p["max_rtt_ms"] for p in timeline],
            drawstyle="steps-post", label="max ping round trip per second (ms)")
    for fault in analysis.get("faults", []):
        if fault["ts_ms"]:
            ax.axvline(fault["ts_ms"] / 1000, color="tab:red", alpha=0.35, linewidth=1)
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("ms")
    ax.legend(loc="upper left")
    return png(fig)
