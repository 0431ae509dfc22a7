"""The run report: one self-contained HTML page that tells the run's story and shows it.

First the story (sim/report/narrative.py): headline findings, the run's moments in simulated time,
raw figures. Then the plots, matplotlib PNGs inlined as base64 so the page can be mailed or
archived as one file: which partitions each consumer owned over time, with the spans it
processed again (the duplicates) hatched by cause; each partition's replicas' LEO and HW over
time, to the end of the run, with its leader changes; and, for the gossip stand-in, its ping
round trips. Faults and controller changes are marked on every plot. Then the tables: leader
and ISR changes, controller changes, and Spark's figures when `kafkasim analyze` wrote them.

Everything but Spark's tables comes from summary.json and one pass over events.jsonl
(`sim.report.run_facts`), so a report needs no Spark.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from sim.report.narrative import narrate
from sim.report.plots import plot_ownership, plot_pings, plot_replicas
from sim.report.run_facts import RunFacts, scan_events

__all__ = ["ANALYSIS_TABLES", "SUMMARY_KEYS", "write_report"]

SUMMARY_KEYS = ("run_id", "scenario", "kafka_version", "seed", "sim_ms", "events")
"""What the report reads of every summary.json."""
ANALYSIS_TABLES = ("produce_outcomes", "events_by_type", "dropped_by_reason")
"""What the report reads of an analysis.json: objects of counts."""

_STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; max-width: 1100px; }
table { border-collapse: collapse; margin: 1em 0; }
td, th { border: 1px solid #ccc; padding: 4px 10px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
#narrative li { margin: 0.3em 0; }
#narrative li.headline { font-weight: bold; }
.scroll { max-height: 420px; overflow-y: auto; }
"""


def _table(rows: dict[str, Any]) -> str:
    if not rows:
        return "<p>none</p>"
    body = "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>" for k, v in rows.items()
    )
    return f"<table>{body}</table>"


def _rows_table(header: list[str], rows: list[list[Any]], table_id: str) -> str:
    if not rows:
        return f'<p id="{table_id}">none</p>'
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f'<div class="scroll"><table id="{table_id}"><tr>{head}</tr>{body}</table></div>'


def _image(png: str | None, alt: str, image_id: str = "") -> str:
    if png is None:
        return ""
    ident = f' id="{image_id}"' if image_id else ""
    return f'<img{ident} alt="{html.escape(alt)}" src="data:image/png;base64,{png}">'


def _narrative(summary: dict[str, Any], facts: RunFacts) -> str:
    story = narrate(summary, facts)
    items = "".join(f'<li class="headline">{html.escape(line)}</li>' for line in story.headline)
    items += "".join(f"<li>{html.escape(line)}</li>" for line in [*story.moments, story.figures])
    return f'<section id="narrative"><h2>What happened</h2><ol>{items}</ol></section>'


def _leader_rows(facts: RunFacts) -> list[list[Any]]:
    """One row per change, none merged: a controller may change many partitions in one ms."""
    rows = []
    for c in facts.leader_changes:
        change = c["event"]
        if c["election"]:
            change += f" ({c['election']}{', unclean' if c['unclean'] else ''})"
        leader = "none" if c["leader"] < 0 else f"broker-{c['leader']}"
        rows.append([c["ts_ms"], c["partition"], change, leader, c["leader_epoch"], c["previous_isr"], c["isr"], c["logged_by"]])
    return rows


def _spark_sections(analysis: dict[str, Any] | None) -> str:
    if analysis is None:
        return "<h2>Spark's figures</h2><p>No analysis.json: <code>kafkasim analyze RUN_DIR</code> adds them.</p>"
    pings = plot_pings(analysis)
    return f"""{"<h2>Ping round trips</h2>" + _image(pings, "ping round trips over time") if pings else ""}
<h2>Produce outcomes</h2>
{_table(analysis.get("produce_outcomes", {}))}
<h2>Events by type</h2>
{_table(analysis.get("events_by_type", {}))}
<h2>Dropped messages by reason</h2>
{_table(analysis.get("dropped_by_reason", {}))}"""


def _skip_rows(summary: dict[str, Any]) -> list[list[Any]]:
    """One row per skip span: who moved the group past which offsets, when, and why."""
    return [
        [
            s["group_id"],
            s["consumer"],
            s["partition"],
            f"{s['first_offset']}-{s['end_offset'] - 1}",
            str(s["from_ms"]) if s["from_ms"] == s["to_ms"] else f"{s['from_ms']}-{s['to_ms']}",
            s["cause"],
        ]
        for s in summary["skip_spans"]
    ]


def write_report(run_dir: Path, summary: dict[str, Any], analysis: dict[str, Any] | None = None) -> Path:
    """Write `run_dir/report.html` from the summary, one pass over `run_dir/events.jsonl` and,
    if given, the analysis (analysis.json); return its path."""
    title = f"kafkasim run {summary['run_id']}"
    facts = scan_events(run_dir / "events.jsonl", summary.get("sim_ms", 0))
    spans = summary.get("duplicate_spans", [])
    ownership = plot_ownership(facts, spans)
    replicas = plot_replicas(facts)
    headline = {
        key: summary[key]
        for key in ("acked", "lost_acked", "log_duplicates", "consumed", "duplicates", "skipped", "processed_then_lost", "rebalances")
        if key in summary
    }
    controllers = [[c["ts_ms"], c["event"], f"broker-{c['broker_id']}", c["epoch"]] for c in facts.controllers]
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title><style>{_STYLE}</style></head>
<body>
<h1>{html.escape(title)}</h1>
<p>Scenario <b>{html.escape(summary['scenario'])}</b>, Kafka profile {html.escape(summary['kafka_version'])},
seed {summary['seed']}: rerun with <code>kafkasim run {html.escape(str(run_dir))}/scenario.toml</code>.</p>
{_narrative(summary, facts)}
{"<h2>Partition ownership per consumer</h2>" + _image(ownership, "partition ownership per consumer with duplicate spans", "ownership-timeline") if ownership else ""}
<h2>Findings</h2>
{_table(headline)}
<h2>Duplicates by cause</h2>
{_table(summary.get("duplicates_by_cause", {}))}
<h2>Skipped by cause</h2>
{_table(summary.get("skipped_by_cause", {}))}
{"<h2>Skipped records</h2>" + _rows_table(["group", "consumer", "partition", "offsets", "ms", "cause"], _skip_rows(summary), "skip-spans") if summary.get("skip_spans") else ""}
{"<h2>Replicas over time</h2>" + _image(replicas, "LEO and HW per replica over time", "replicas") if replicas else ""}
<h2>Leader and ISR changes</h2>
{_rows_table(["ms", "partition", "change", "leader", "leader epoch", "ISR before", "ISR after", "logged by"], _leader_rows(facts), "isr-changes")}
<h2>Controller changes</h2>
{_rows_table(["ms", "event", "broker", "controller epoch"], controllers, "controller-changes")}
{_spark_sections(analysis)}
<h2>Summary</h2>
{_table({k: v for k, v in summary.items() if k != "duplicate_spans"})}
</body></html>
"""
    # Written beside and renamed: a full disk leaves the previous report, not half of this one.
    path = run_dir / "report.html"
    partial = path.with_suffix(".html.partial")
    try:
        partial.write_text(page, encoding="utf-8")
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)
    return path
