"""The run report: one self-contained HTML page that tells the run's story and shows it.

First the story (sim/report/narrative.py): headline findings, the run's moments in simulated time,
raw figures. Then the figures, inline SVG that stays sharp when zoomed, on one time axis with the
faults on a lane of their own above it (sim/report/fault_lane.py): which partitions each consumer
owned over time, with the spans it processed again (the duplicates) hatched by cause; then the
faults table; the findings; each replica's LEO and HW over time for the partitions where
something happened (sim/report/replica_plots.py), the others in one line; the leader and ISR
changes after start-up, start-up folded; controller changes; Spark's figures when `kafkasim
analyze` wrote them; the run's details. Every value is in people's words (sim/report/fmt.py).

Everything but Spark's tables comes from summary.json and one pass over events.jsonl
(`sim.report.run_facts`), so a report needs no Spark.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from sim.report import fmt
from sim.report.fault_lane import marks
from sim.report.narrative import narrate
from sim.report.narrative_consumer import rebalance_word
from sim.report.page_tables import (
    by_cause,
    controller_section,
    details_table,
    faults_table,
    findings,
    groups_table,
    isr_section,
)
from sim.report.plots import plot_ownership, plot_pings
from sim.report.replica_plots import MAX_REPLICA_PLOTS, eventful_partitions, plot_replicas, steady_text
from sim.report.run_facts import RunFacts, scan_events

__all__ = ["ANALYSIS_TABLES", "STYLE", "SUMMARY_KEYS", "write_report"]

SUMMARY_KEYS = ("run_id", "scenario", "kafka_version", "seed", "sim_ms", "events")
"""What the report reads of every summary.json."""
ANALYSIS_TABLES = ("produce_outcomes", "events_by_type", "dropped_by_reason")
"""What the report reads of an analysis.json: objects of counts."""

STYLE = """
body { font-family: sans-serif; margin: 2em auto; padding: 0 1em; color: #222; max-width: 1100px; }
h2 { margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.6em 0; max-width: 100%; }
td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; overflow-wrap: break-word; }
th { background: #f3f3f3; }
td a { white-space: nowrap; }
table.inner { margin: 0; }
.box { max-width: 100%; max-height: 460px; overflow: auto; }
svg.figure { display: block; width: 100%; max-width: 1060px; height: auto; }
details summary { cursor: pointer; margin: 0.4em 0; }
#narrative li { margin: 0.3em 0; }
#narrative li.headline { font-weight: bold; }
p.note { color: #555; }
"""
"""Tables never widen the page: long names wrap after their dots and underscores (sim/report/fmt.py's
`breakable`), a table is at most as wide as the page, and a long one scrolls in its own box."""


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
    return f"""{"<h2>Ping round trips</h2>" + pings if pings else ""}
<h2>Produce outcomes</h2>
{fmt.kv_table(analysis.get("produce_outcomes", {}))}
<h2>Events by type</h2>
<div class="box">{fmt.kv_table(analysis.get("events_by_type", {}))}</div>
<h2>Dropped messages by reason</h2>
{fmt.kv_table(analysis.get("dropped_by_reason", {}))}"""


def _skip_rows(summary: dict[str, Any]) -> list[list[Any]]:
    """One row per skip span: who moved the group past which offsets, when, and why."""
    return [
        [
            s["group_id"],
            s["consumer"],
            s["partition"],
            f"{s['first_offset']} to {s['end_offset'] - 1}",
            f"{s['from_ms'] / 1000:.3f}" if s["from_ms"] == s["to_ms"] else f"{s['from_ms'] / 1000:.3f} to {s['to_ms'] / 1000:.3f}",
            s["cause"],
        ]
        for s in summary["skip_spans"]
    ]


def _replicas(facts: RunFacts, lane: list[Any]) -> str:
    figure = plot_replicas(facts, lane)
    notes = []
    more = len(eventful_partitions(facts)) - MAX_REPLICA_PLOTS
    if more > 0:
        notes.append(f"{fmt.plural(more, 'more partition')} changed: see the leader and ISR changes below.")
    steady = steady_text(facts)
    if steady:
        notes.append(steady)
    if figure is None and not notes:
        return ""
    lines = "".join(f'<p class="note" id="steady-partitions">{html.escape(n)}</p>' if n == steady else
                    f'<p class="note">{html.escape(n)}</p>' for n in notes)
    return f"<h2>Replicas over time</h2>{figure or ''}{lines}"


def write_report(run_dir: Path, summary: dict[str, Any], analysis: dict[str, Any] | None = None) -> Path:
    """Write `run_dir/report.html` from the summary, one pass over `run_dir/events.jsonl` and,
    if given, the analysis (analysis.json); return its path."""
    title = f"kafkasim run {summary['run_id']}"
    facts = scan_events(run_dir / "events.jsonl", summary.get("sim_ms", 0))
    lane = marks(facts)
    skips = summary.get("skip_spans")
    ownership = plot_ownership(facts, summary.get("duplicate_spans", []), lane, skips)
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title><style>{STYLE}</style></head>
<body>
<h1>{html.escape(title)}</h1>
<p>Scenario <b>{html.escape(summary['scenario'])}</b>, Kafka profile {html.escape(summary['kafka_version'])},
seed {summary['seed']}: rerun with <code>kafkasim run {html.escape(str(run_dir))}/scenario.toml</code>.</p>
{_narrative(summary, facts)}
{"<h2>Partition ownership per consumer</h2>" + ownership if ownership else ""}
<h2>Faults</h2>
{faults_table(facts)}
<h2>Findings</h2>
{findings(summary, rebalance_word(facts))}
{"<h2>Consumer groups</h2>" + groups_table(facts) if facts.group_protocols else ""}
<h2>Duplicates by cause</h2>
{by_cause(summary.get("duplicates_by_cause", {}), "duplicates-by-cause")}
<h2>Skipped by cause</h2>
{by_cause(summary.get("skipped_by_cause", {}), "skipped-by-cause")}
{"<h2>Skipped records</h2>" + fmt.rows_table(["group", "consumer", "partition", "offsets", "time (s)", "cause"], _skip_rows(summary), "skip-spans") if skips else ""}
{_replicas(facts, lane)}
<h2>Leader and ISR changes</h2>
{isr_section(facts, _leader_rows(facts))}
<h2>Controller changes</h2>
{controller_section(facts)}
{_spark_sections(analysis)}
<h2>Run details</h2>
{details_table(summary, facts)}
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
