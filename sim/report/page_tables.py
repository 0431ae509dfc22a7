"""The run report's tables, each value in people's words (sim/report/fmt.py): the findings, by
cause, the faults, the leader and ISR changes after start-up with start-up folded away, the
controller changes, Spark's counts and the run's details."""

from __future__ import annotations

import html
from typing import Any

from sim.report import fmt
from sim.report.fault_lane import fault_rows
from sim.report.replica_plots import is_startup
from sim.report.run_facts import RunFacts

__all__ = ["by_cause", "controller_section", "details_table", "faults_table", "findings", "groups_table", "isr_section",
           "seconds"]

FINDINGS = {
    "acked": "records acknowledged",
    "lost_acked": "acknowledged records lost",
    "log_duplicates": "records written twice in the log",
    "consumed": "records consumed",
    "duplicates": "records processed more than once",
    "skipped": "records skipped",
    "processed_then_lost": "records processed, then lost",
    "rebalances": "rebalances",
}
"""summary.json's headline figures, in the words the table shows."""

LISTS = {
    "consumer_failures": ("consumer failure", ("node", "ts_ms", "error")),
    "invariant_violations": ("invariant violation", ("invariant", "ts_ms", "node", "detail")),
    "diverged_replicas": ("diverged partition", ("partition", "replicas", "offset", "values")),
    "lost_records": ("lost record", ("partition", "offset", "value")),
    "duplicated_records": ("record written twice", ("partition", "value", "offsets")),
}
"""summary.json's lists: what one item is, and its fields."""

LISTED = 50
"""A list's items shown at most (summary.json has them all)."""


def seconds(ms: int) -> str:
    return f"{ms / 1000:.3f}"


def findings(summary: dict[str, Any], rebalances: str = "") -> str:
    """`rebalances`: what the run's rebalances are (` (target assignments)` for consumer groups)."""
    rows = {label + (rebalances if key == "rebalances" else ""): summary[key] for key, label in FINDINGS.items() if key in summary}
    return fmt.kv_table(rows, table_id="findings")


def groups_table(facts: RunFacts) -> str:
    """Each consumer group: its protocol, its coordinators, and its rebalances as its protocol
    counts them: a classic group's generations formed with members and its last generation, a
    consumer group's target assignments and its last group epoch."""
    rows = []
    for group, protocol in sorted(facts.group_protocols.items()):
        if protocol == "consumer":
            targets = [t for t in facts.target_assignments if t["group_id"] == group]
            rows.append([group, "consumer (KIP-848)", facts.group_coordinators.get(group, []), f"{len(targets)} target assignments",
                         f"group epoch {facts.group_epochs[group]}" if group in facts.group_epochs else ""])
        else:
            formed = [r for r in facts.rebalances if r["group_id"] == group and r["members"]]
            last = max((r["generation_id"] for r in facts.rebalances if r["group_id"] == group), default=None)
            rows.append([group, "classic", sorted({r["coordinator"] for r in formed}), f"{len(formed)} generations formed",
                         "" if last is None else f"generation {last}"])
    return fmt.rows_table(["group", "protocol", "coordinators", "rebalances", "last"], rows, "groups")


def by_cause(counts: dict[str, int], table_id: str) -> str:
    """A cause per row with its records; a sentence when there are none."""
    if not counts:
        return f'<p id="{table_id}">none</p>'
    return fmt.rows_table(["cause", "records"], [[c, n] for c, n in sorted(counts.items())], table_id)


def faults_table(facts: RunFacts) -> str:
    rows = fault_rows(facts)
    if not rows:
        return '<p id="faults">No fault: the nodes ran from start to end.</p>'
    return fmt.rows_table(["time (s)", "kind", "node", "what happened"], rows, "faults")


def isr_section(facts: RunFacts, rows: list[list[Any]]) -> str:
    """The changes after start-up in a table; start-up's elections (every partition's first
    leader) folded into one summary line that opens to their table."""
    startup = [r for r, c in zip(rows, facts.leader_changes, strict=True) if is_startup(c)]
    later = [r for r, c in zip(rows, facts.leader_changes, strict=True) if not is_startup(c)]
    header = ["time (s)", "partition", "change", "leader", "leader epoch", "ISR before", "ISR after", "logged by"]
    out = ""
    if startup:
        first = facts.controllers[0] if facts.controllers else None
        controller = (
            f"; broker-{first['broker_id']} became the controller at {seconds(first['ts_ms'])} s (epoch {first['epoch']})"
            if first else ""
        )
        times = sorted({r[0] for r in startup})
        when = f"at {seconds(times[0])} s" if len(times) == 1 else f"from {seconds(times[0])} to {seconds(times[-1])} s"
        summary = f"Start-up: {fmt.plural(len(startup), 'partition')} got their first leader {when}{controller}."
        table = fmt.rows_table(header, [_shown(r) for r in startup], "startup-elections")
        out += f'<details id="startup"><summary>{html.escape(summary)}</summary>{table}</details>'
    if later:
        out += fmt.rows_table(header, [_shown(r) for r in later], "isr-changes")
    else:
        out += '<p id="isr-changes">No leader or ISR change after start-up.</p>'
    return out


def _shown(row: list[Any]) -> list[Any]:
    return [seconds(row[0]), *row[1:]]


def controller_section(facts: RunFacts) -> str:
    later = facts.controllers[1:]
    if not later:
        return '<p id="controller-changes">No controller change after the first election.</p>'
    rows = [[seconds(c["ts_ms"]), c["event"], f"broker-{c['broker_id']}", c["epoch"]] for c in later]
    return fmt.rows_table(["time (s)", "event", "broker", "controller epoch"], rows, "controller-changes")


def _list_cell(key: str, items: list[Any]) -> str:
    """A list of summary.json: its count, and its first LISTED items in a table that opens."""
    word, fields = LISTS[key]
    if not items:
        return "none"
    if not all(isinstance(i, dict) for i in items):
        return html.escape(fmt.text(items))
    rows = [[i.get(f) for f in fields] for i in items[:LISTED]]
    more = f" (the first {LISTED} below; summary.json has them all)" if len(items) > LISTED else ""
    table = fmt.rows_table([f.replace("_", " ") for f in fields], rows)
    return f"<details><summary>{html.escape(fmt.plural(len(items), word))}{more}</summary>{table}</details>"


def details_table(summary: dict[str, Any], facts: RunFacts | None = None) -> str:
    """summary.json but the spans, each value in words; and the groups' protocol (`group.protocol`)."""
    rows = []
    if facts is not None and facts.group_protocols:
        protocols = "; ".join(f"{g} {p}" for g, p in sorted(facts.group_protocols.items()))
        rows.append(f"<tr><th>group protocol</th><td>{fmt.breakable(protocols)}</td></tr>")
    for key, value in summary.items():
        if key in ("duplicate_spans", "skip_spans"):
            continue
        if key in LISTS and isinstance(value, list):
            shown = _list_cell(key, value)
        elif key == "sim_ms":
            shown = f"{fmt.number(value / 1000)} s"
        elif key == "wall_s":
            shown = f"{fmt.number(value)} s"
        elif key == "failure" and value is None:
            shown = "none"
        else:
            shown = fmt.cell(value)
        rows.append(f"<tr><th>{html.escape(key)}</th><td>{shown}</td></tr>")
    return f'<table id="details">{"".join(rows)}</table>'
