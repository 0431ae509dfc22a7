"""The run report: one self-contained HTML page with the summary, the analysis and plots.

Plots are matplotlib PNGs inlined as base64, so the page can be mailed or archived as one file:
which partitions each consumer owned over time, with the spans it processed again (the
duplicates) marked by cause; each partition's replicas' LEO and HW over time; and, for the
gossip stand-in, its ping round trips. Faults are marked on every plot.
"""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path
from typing import Any

__all__ = ["write_report"]

_STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; max-width: 1100px; }
table { border-collapse: collapse; margin: 1em 0; }
td, th { border: 1px solid #ccc; padding: 4px 10px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
"""


_CAUSE_COLOURS = ("tab:red", "tab:purple", "tab:orange", "black", "tab:brown")


def _png(fig: Any) -> str:
    import matplotlib.pyplot as plt  # noqa: PLC0415

    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _mark_faults(ax: Any, faults: list[dict[str, Any]]) -> None:
    for fault in faults:
        if fault["event"] == "node_started" and fault["ts_ms"] == 0:
            continue
        ax.axvline(fault["ts_ms"] / 1000, color="tab:red", alpha=0.35, linewidth=1)
        label = f"{fault['event']} {fault['target'] or fault['kind'] or ''}".strip()
        ax.annotate(label, (fault["ts_ms"] / 1000, 0.02), xycoords=("data", "axes fraction"),
                    rotation=90, fontsize=7, va="bottom", ha="right", color="tab:red")


def _plot_replicas(analysis: dict[str, Any]) -> str | None:
    series = analysis.get("replica_offsets", {})
    if not series:
        return None
    import matplotlib  # noqa: PLC0415 - only a report pays for matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    partitions = sorted({name.split("@")[0] for name in series})
    fig, axes = plt.subplots(len(partitions), 1, figsize=(10, 3.2 * len(partitions)), squeeze=False)
    for ax, partition in zip(axes[:, 0], partitions, strict=True):
        replicas = sorted(name for name in series if name.startswith(f"{partition}@"))
        for i, name in enumerate(replicas):
            points = series[name]
            seconds = [p["second"] for p in points]
            color = f"C{i}"
            node = name.split("@")[1]
            ax.plot(seconds, [p["log_end_offset"] for p in points], drawstyle="steps-post",
                    color=color, label=f"{node} LEO")
            ax.plot(seconds, [p["high_watermark"] for p in points], drawstyle="steps-post",
                    color=color, linestyle="--", label=f"{node} HW")
        _mark_faults(ax, analysis.get("faults", []))
        ax.set_title(f"partition {partition}: LEO (solid) and HW (dashed) per replica")
        ax.set_xlabel("simulated time (s)")
        ax.set_ylabel("offset")
        ax.legend(loc="upper left", fontsize=7, ncol=3)
    return _png(fig)


def _plot_ownership(analysis: dict[str, Any], spans: list[dict[str, Any]]) -> str | None:
    """One row per consumer: a bar per partition it held, labelled with the partition and its
    generation; the duplicate spans over it, hatched and coloured by cause."""
    holds = analysis.get("ownership", [])
    if not holds:
        return None
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    consumers = sorted({h["consumer"] for h in holds} | {s["consumer"] for s in spans}, key=_node_order)
    partitions = sorted({h["partition"] for h in holds}, key=_node_order)
    row = {c: i for i, c in enumerate(consumers)}
    lane = {p: i for i, p in enumerate(partitions)}
    height = 0.8 / max(1, len(partitions))
    fig, ax = plt.subplots(figsize=(11, 1.0 + 0.9 * len(consumers)))
    for h in holds:
        y = row[h["consumer"]] - 0.4 + lane[h["partition"]] * height
        start, width = h["from_ms"] / 1000, max(h["to_ms"] - h["from_ms"], 1) / 1000
        ax.broken_barh([(start, width)], (y, height * 0.9), color=f"C{lane[h['partition']] % 10}", alpha=0.55)
        ax.annotate(f"{h['partition']} g{h['generation_id']}", (start, y + height * 0.45), fontsize=6, va="center")
    causes = sorted({s["cause"] for s in spans})
    for s in spans:
        y = row[s["consumer"]] - 0.45
        start, width = s["from_ms"] / 1000, max(s["to_ms"] - s["from_ms"], 200) / 1000
        colour = _CAUSE_COLOURS[causes.index(s["cause"]) % len(_CAUSE_COLOURS)]
        ax.broken_barh([(start, width)], (y, 0.9), facecolor="none", edgecolor=colour, hatch="///", linewidth=1.2)
    for i, cause in enumerate(causes):
        colour = _CAUSE_COLOURS[i % len(_CAUSE_COLOURS)]
        ax.plot([], [], color=colour, linewidth=4, label=f"processed again: {cause}")
    _mark_faults(ax, analysis.get("faults", []))
    ax.set_yticks(range(len(consumers)), consumers)
    ax.set_ylim(-0.6, len(consumers) - 0.4)
    ax.set_xlabel("simulated time (s)")
    ax.set_title("partitions owned per consumer (bars, with their generation) and duplicate spans (hatched)")
    if causes:
        ax.legend(loc="upper right", fontsize=7)
    return _png(fig)


def _node_order(name: str) -> tuple[str, int]:
    """`consumer-10` after `consumer-9`; `T-10` after `T-9`."""
    prefix, _, number = name.rpartition("-")
    return (prefix, int(number)) if number.isdigit() else (name, -1)


def _plot_pings(analysis: dict[str, Any]) -> str | None:
    timeline = analysis.get("ping_timeline", [])
    if not timeline:
        return None
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(10, 3.5))
    ax.plot([p["second"] for p in timeline], [p["max_rtt_ms"] for p in timeline],
            drawstyle="steps-post", label="max ping round trip per second (ms)")
    _mark_faults(ax, analysis.get("faults", []))
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("ms")
    ax.legend(loc="upper left")
    return _png(fig)


def _table(rows: dict[str, Any]) -> str:
    if not rows:
        return "<p>none</p>"
    body = "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>" for k, v in rows.items()
    )
    return f"<table>{body}</table>"


def _image(png: str | None, alt: str) -> str:
    return "" if png is None else f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{png}">'


def write_report(run_dir: Path, summary: dict[str, Any], analysis: dict[str, Any]) -> Path:
    """Write `run_dir/report.html` and return its path."""
    title = f"kafkasim run {summary['run_id']}"
    isr = {
        f"{c['ts_ms']} ms {c['node']}": f"{c['event']} {c['partition']} -> {c['isr']}"
        for c in analysis.get("isr_changes", [])
    }
    spans = summary.get("duplicate_spans", [])
    ownership = _plot_ownership(analysis, spans)
    replicas = _plot_replicas(analysis)
    pings = _plot_pings(analysis)
    headline = {
        key: summary[key]
        for key in ("acked", "lost_acked", "log_duplicates", "consumed", "duplicates", "rebalances")
        if key in summary
    }
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title><style>{_STYLE}</style></head>
<body>
<h1>{html.escape(title)}</h1>
<p>Scenario <b>{html.escape(summary['scenario'])}</b>, Kafka profile {html.escape(summary['kafka_version'])},
seed {summary['seed']}: rerun with <code>kafkasim run {html.escape(str(run_dir))}/scenario.toml</code>.</p>
<h2>Findings</h2>
{_table(headline)}
<h2>Duplicates by cause</h2>
{_table(summary.get("duplicates_by_cause", {}))}
{"<h2>Partition ownership per consumer</h2>" + _image(ownership, "partition ownership per consumer with duplicate spans") if ownership else ""}
{"<h2>Replicas over time</h2>" + _image(replicas, "LEO and HW per replica over time") if replicas else ""}
{"<h2>Ping round trips</h2>" + _image(pings, "ping round trips over time") if pings else ""}
<h2>Produce outcomes</h2>
{_table(analysis.get("produce_outcomes", {}))}
<h2>ISR changes</h2>
{_table(isr)}
<h2>Events by type</h2>
{_table(analysis.get("events_by_type", {}))}
<h2>Dropped messages by reason</h2>
{_table(analysis.get("dropped_by_reason", {}))}
<h2>Summary</h2>
{_table({k: v for k, v in summary.items() if k != "duplicate_spans"})}
</body></html>
"""
    path = run_dir / "report.html"
    path.write_text(page, encoding="utf-8")
    return path
