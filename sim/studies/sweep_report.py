"""A sweep's report: `DIR/report.html`, one self-contained page (inline SVG, as sim/report/page.py).

First what was swept: the scenario in words (sim/studies/sweep_scenario.py: cluster, topics,
producers, groups with their key settings, and each fault), the `--set` overrides, the grids and
seeds. Then, for each grid key, its effect on duplicates: each configuration's mean as a point
with its 95% confidence interval as an error bar (clipped at 0: a count is never negative), the
key's values along the x axis, one series per combination of the other keys' values (so no
effect is averaged away), each run's own value as a small ring beside its point; points are not
joined, since settings are not a continuum. Then the per-configuration table, the mean duplicates
by cause, and the runs, each linked to its own report (`runs/<run>/report.html`).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from sim.cluster.scenario import parse_scenario
from sim.report import fmt
from sim.report.page import STYLE
from sim.report.svg import PALETTE, Svg, nice_ticks
from sim.studies.sweep_plan import SweepPlan
from sim.studies.sweep_scenario import describe_scenario
from sim.studies.sweep_tables import FIGURES

__all__ = ["plot_effect", "write_sweep_report"]

_W, _LEFT, _RIGHT, _LEGEND = 1060, 90, 600, 630
_TOP, _PLOT = 14, 260

_NAMES = {
    "duplicates": "duplicates", "skipped": "skipped", "consumed": "consumed", "rebalances": "rebalances",
    "acked": "acknowledged", "lost_acked": "acknowledged, lost", "log_duplicates": "written twice",
    "processed_then_lost": "processed, then lost", "wall_s": "wall time (s)",
}


def _value(v: Any) -> str:
    return fmt.text(v)


def interval(row: dict[str, Any], figure: str) -> tuple[float, float] | None:
    """The 95% interval of a configuration's mean, its low end never below 0; None below two runs."""
    low, high = row[f"{figure}_ci95_low"], row[f"{figure}_ci95_high"]
    return None if low is None or high is None else (max(0.0, low), high)


def plot_effect(plan: SweepPlan, configs: list[dict[str, Any]], runs: list[dict[str, Any]], index: int,
                figure: str = "duplicates") -> str:
    """The effect of grid key `index` on `figure`: points with error bars, one series per
    combination of the other keys, the runs as rings beside."""
    key = plan.grid_keys[index]
    levels = list(dict.fromkeys(config.values[index] for config in plan.configs))
    others = [k for i, k in enumerate(plan.grid_keys) if i != index]
    series: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in configs:
        series.setdefault(tuple(row[k] for k in others), []).append(row)
    highs = [0.0]
    for row in configs:
        spread = interval(row, figure)
        highs += [v for v in (row[f"{figure}_mean"], spread and spread[1]) if v is not None]
    highs += [r[figure] for r in runs if r.get(figure) is not None]
    ticks = nice_ticks(max(highs) or 1, 5)
    top_value = ticks[-1] if ticks[-1] > 0 else 1
    band = (_RIGHT - _LEFT) / max(1, len(levels))
    step = min(24.0, band * 0.6 / max(1, len(series)))

    def y(v: float) -> float:
        return _TOP + _PLOT - _PLOT * v / top_value

    svg = Svg(_W, 0, ident=f"effect-{index + 1}", label=f"effect of {key} on {figure}")
    for t in ticks:
        svg.add(svg.line(_LEFT, y(t), _RIGHT, y(t), stroke="#e4e4e4"), svg.text(_LEFT - 6, y(t) + 4, fmt.number(t), text_anchor="end"))
    svg.add(svg.line(_LEFT, y(0), _RIGHT, y(0), stroke="#444"))
    for i, level in enumerate(levels):
        svg.add(svg.text(_LEFT + (i + 0.5) * band, y(0) + 16, _value(level), text_anchor="middle"))
    svg.add(svg.text((_LEFT + _RIGHT) / 2, y(0) + 34, key, text_anchor="middle"))
    svg.add(svg.text(16, _TOP + _PLOT / 2, f"{_NAMES[figure]}, mean and 95% interval", text_anchor="middle",
                     transform=f"rotate(-90 16 {_TOP + _PLOT / 2})"))
    items = []
    for s, (rest, rows) in enumerate(series.items()):
        colour = PALETTE[s % len(PALETTE)]
        for row in rows:
            mean = row[f"{figure}_mean"]
            x = _LEFT + (levels.index(row[key]) + 0.5) * band + (s - (len(series) - 1) / 2) * step
            mine = [r[figure] for r in runs if r["config_id"] == row["config_id"] and r.get(figure) is not None]
            parts = [svg.el("circle", cx=x + 7, cy=y(v), r=2.5, fill="none", stroke=colour, stroke_width=1) for v in mine]
            spread = interval(row, figure)
            tip = f"{row['config_id']}: n {row['n']}"
            if mean is not None:
                tip += f", mean {fmt.number(mean)}"
                if spread is not None:
                    tip += f", 95% interval {fmt.number(spread[0])} to {fmt.number(spread[1])}"
                    parts += [svg.line(x, y(spread[0]), x, y(spread[1]), stroke=colour, stroke_width=1.5),
                              svg.line(x - 5, y(spread[0]), x + 5, y(spread[0]), stroke=colour, stroke_width=1.5),
                              svg.line(x - 5, y(spread[1]), x + 5, y(spread[1]), stroke=colour, stroke_width=1.5)]
                parts.append(svg.el("circle", cx=x, cy=y(mean), r=4.5, fill=colour))
            tip += "; runs " + (", ".join(fmt.number(v) for v in mine) or "none")
            svg.add(svg.group(svg.title(tip), *parts, class_="config-point", data_config=row["config_id"]))
        label = ", ".join(f"{k}={_value(v)}" for k, v in zip(others, rest, strict=True)) or "each configuration"
        items.append((colour, label))
    legend_y = _TOP
    for colour, label in items:
        svg.add(svg.el("circle", cx=_LEGEND + 6, cy=legend_y + 6, r=4.5, fill=colour), svg.text(_LEGEND + 18, legend_y + 10, label))
        legend_y += 17
    svg.add(svg.el("circle", cx=_LEGEND + 6, cy=legend_y + 6, r=2.5, fill="none", stroke="#444"),
            svg.text(_LEGEND + 18, legend_y + 10, "a run"))
    svg.height = max(_TOP + _PLOT + 44, legend_y + 24)
    return svg.render()


def _same_everywhere(configs: list[dict[str, Any]], figure: str) -> bool:
    """Every finished run of every configuration had the same value."""
    means = {row[f"{figure}_mean"] for row in configs}
    return len(means) == 1 and None not in means and all(not row[f"{figure}_sd"] for row in configs)


def _configs_table(plan: SweepPlan, configs: list[dict[str, Any]]) -> str:
    """Per configuration: its values, its runs, and each figure's mean with its interval; a
    figure every run had the same value of is one sentence below instead of a column."""
    varied = [f for f in FIGURES if not _same_everywhere(configs, f)]
    header = ["config", *plan.grid_keys, "runs finished", "failed", *(f"{_NAMES[f]}: mean (95% interval)" for f in varied)]
    body = []
    for row in configs:
        cells = [row["config_id"], *(row[k] for k in plan.grid_keys), row["n"], row["failed"]]
        for figure in varied:
            mean, spread = row[f"{figure}_mean"], interval(row, figure)
            shown = "" if mean is None else fmt.number(mean)
            if spread is not None:
                shown += f" ({fmt.number(spread[0])} to {fmt.number(spread[1])})"
            cells.append(shown)
        body.append(cells)
    same = [f"{_NAMES[f]} {fmt.number(configs[0][f'{f}_mean'])}" for f in FIGURES if f not in varied]
    note = f'<p id="same-everywhere">The same in every run: {html.escape(", ".join(same))}.</p>' if same and configs else ""
    return fmt.rows_table(header, body, "configs") + note


def _causes_table(plan: SweepPlan, runs: list[dict[str, Any]]) -> str:
    """Mean duplicates per cause and configuration, for the causes some run shows."""
    columns = sorted(c for c in runs[0] if c.startswith("duplicates_")) if runs else []
    columns = [c for c in columns if any(r[c] for r in runs)]
    if not columns:
        return '<p id="causes">No duplicates in any run.</p>'
    body = []
    for config in plan.configs:
        mine = [r for r in runs if r["config_id"] == config.config_id and r["failure"] is None]
        body.append([config.config_id, *(sum(r[c] for r in mine) / len(mine) if mine else None for c in columns)])
    return fmt.rows_table(["config", *(c.removeprefix("duplicates_") for c in columns)], body, "causes")


_RUN_FIGURES = ("duplicates", "skipped", "consumed", "rebalances", "acked", "lost_acked", "log_duplicates", "wall_s")


def _runs_table(plan: SweepPlan, runs: list[dict[str, Any]], out: Path) -> str:
    """One row per run; its name links to its own report when the run wrote one. A figure
    equal in every run (said above the table) has no column, nor failures when none failed."""
    figures = [f for f in _RUN_FIGURES if len({r[f] for r in runs}) > 1]
    failures = any(r["failure"] for r in runs)
    body = []
    for r in runs:
        name = html.escape(r["run_dir"].removeprefix("runs/"))
        page = f"{r['run_dir']}/report.html"
        link = f'<a href="{html.escape(page)}">{name}</a>' if (out / page).is_file() else name
        cells = [r["config_id"], *(r[k] for k in plan.grid_keys), r["seed"]]
        row = [*(fmt.cell(c) for c in cells), link, *(fmt.cell(r[f]) for f in figures)]
        body.append([*row, fmt.cell(r["failure"] or "none")] if failures else row)
    header = ["config", *plan.grid_keys, "seed", "run (its report)", *(_NAMES[f] for f in figures)]
    return fmt.rows_table([*header, "failure"] if failures else header, body, "runs", raw=True)


def _scenario_section(plan: SweepPlan) -> str:
    scenario = parse_scenario(plan.text, plan.source, list(plan.sets))
    lines, faults = describe_scenario(scenario)
    setup = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    fault_items = "".join(f"<li>{html.escape(line)}</li>" for line in faults) or "<li>No fault.</li>"
    sets = "".join(f"<li><code>--set {html.escape(s)}</code></li>" for s in plan.sets)
    grids = "".join(f"<li><code>{html.escape(g.key)}</code>: {html.escape(', '.join(g.texts))}</li>" for g in plan.grids)
    return f"""<section id="scenario"><h2>The scenario</h2><ul>{setup}</ul>
<h3>Faults</h3><ul id="scenario-faults">{fault_items}</ul>
{"<h3>Set for every run</h3><ul>" + sets + "</ul>" if sets else ""}
<h3>Swept</h3><ul>{grids or "<li>nothing: every run has the same settings</li>"}<li>seeds 1 to {plan.seeds}</li></ul></section>"""


def write_sweep_report(
    out: Path, plan: SweepPlan, configs: list[dict[str, Any]], runs: list[dict[str, Any]], *, unfinished: int = 0
) -> Path:
    """Write `out/report.html` from the two tables' rows and return its path; `unfinished`
    runs of a sweep stopped part way are said to be missing from it."""
    effects = "".join(
        f"<h3>{html.escape(key)}</h3>" + plot_effect(plan, configs, runs, i) for i, key in enumerate(plan.grid_keys)
    )
    title = f"kafkasim sweep of {plan.source}"
    counts = (f"{fmt.plural(len(plan.configs), 'configuration')} &times; {fmt.plural(plan.seeds, 'seed')} = "
              f"{fmt.plural(len(plan.runs()), 'run')}")
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title><style>{STYLE}</style></head>
<body>
<h1>{html.escape(title)}</h1>
<p>{counts}. Rerun any of them with <code>kafkasim run RUN_DIR/scenario.toml</code>. Intervals are 95%
confidence intervals of the mean, Student's t with n - 1 degrees of freedom over the runs that finished,
clipped at 0 (a count is never negative); a configuration with one run has none.</p>
{f"<p><b>The sweep stopped part way: {unfinished} of its runs are not done and not in this report; <code>kafkasim sweep ... --resume</code> runs them.</b></p>" if unfinished else ""}
{_scenario_section(plan)}
{"<h2>Effect on duplicates</h2>" + effects if effects else ""}
<h2>Per configuration</h2>
{_configs_table(plan, configs)}
<h2>Mean duplicates by cause</h2>
{_causes_table(plan, runs)}
<h2>Runs</h2>
{_runs_table(plan, runs, out)}
</body></html>
"""
    path = out / "report.html"
    path.write_text(page, encoding="utf-8")
    return path
