"""The run report: one self-contained HTML page with the summary, the analysis and plots.

Plots are matplotlib PNGs inlined as base64, so the page can be mailed or archived as one file.
Until the Kafka actors exist the plot shows the stand-in's ping round trips over time with the
faults marked; the later issues add partition ownership and replica LEO/HW.
"""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path
from typing import Any

__all__ = ["write_report"]

_STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
td, th { border: 1px solid #ccc; padding: 4px 10px; text-align: left; }
th { background: #f3f3f3; }
"""


def _plot_pings(analysis: dict[str, Any]) -> str:
    import matplotlib  # noqa: PLC0415 - only a report pays for matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    timeline = analysis.get("ping_timeline", [])
    fig, ax = plt.subplots(figsize=(10, 3.5))
    ax.plot(
        [p["second"] for p in timeline],
        [p["max_rtt_ms"] for p in timeline],
        drawstyle="steps-post",
        label="max ping round trip per second (ms)",
    )
    for fault in analysis.get("faults", []):
        if fault["event"] in ("node_started",) and fault["ts_ms"] == 0:
            continue
        ax.axvline(fault["ts_ms"] / 1000, color="tab:red", alpha=0.4, linewidth=1)
        label = f"{fault['event']} {fault['target'] or fault['kind'] or ''}".strip()
        ax.annotate(label, (fault["ts_ms"] / 1000, ax.get_ylim()[1]), rotation=90, fontsize=7,
                    va="top", ha="right", color="tab:red")
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("ms")
    ax.legend(loc="upper left")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _table(rows: dict[str, Any]) -> str:
    body = "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>" for k, v in rows.items()
    )
    return f"<table>{body}</table>"


def write_report(run_dir: Path, summary: dict[str, Any], analysis: dict[str, Any]) -> Path:
    """Write `run_dir/report.html` and return its path."""
    png = _plot_pings(analysis)
    title = f"kafkasim run {summary['run_id']}"
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title><style>{_STYLE}</style></head>
<body>
<h1>{html.escape(title)}</h1>
<p>Scenario <b>{html.escape(summary['scenario'])}</b>, Kafka profile {html.escape(summary['kafka_version'])},
seed {summary['seed']}: rerun with <code>kafkasim run {html.escape(str(run_dir))}/scenario.toml</code>.</p>
<h2>Summary</h2>
{_table(summary)}
<h2>Ping round trips and faults</h2>
<img alt="ping round trips over time, faults marked" src="data:image/png;base64,{png}">
<h2>Events by type</h2>
{_table(analysis.get("events_by_type", {}))}
<h2>Dropped messages by reason</h2>
{_table(analysis.get("dropped_by_reason", {}) or {"none": 0})}
</body></html>
"""
    path = run_dir / "report.html"
    path.write_text(page, encoding="utf-8")
    return path
