"""A sweep's report: `DIR/report.html`, one self-contained page (PNGs inlined, as sim/report/page.py).

For each grid key, a plot of its effect on duplicates: the mean per configuration with its 95%
confidence interval as an error bar, the key's values along the x axis, and one series per
combination of the other keys' values (so no effect is averaged away). Then the per-configuration
table, the mean duplicates by cause per configuration, and the runs.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from sim.report.page import _STYLE, _image
from sim.report.plots import png
from sim.studies.sweep_plan import SweepPlan
from sim.studies.sweep_tables import FIGURES

__all__ = ["write_sweep_report"]


def _fmt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e4 else f"{value:.0f}"
    return str(value)


def _plot_effect(plan: SweepPlan, configs: list[dict[str, Any]], index: int) -> str:
    import matplotlib  # noqa: PLC0415 - only a report pays for matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    key = plan.grid_keys[index]
    values = [config.values[index] for config in plan.configs]
    levels = list(dict.fromkeys(values))
    others = [k for i, k in enumerate(plan.grid_keys) if i != index]
    series: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in configs:
        series.setdefault(tuple(row[k] for k in others), []).append(row)
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.2 / max(1, len(series))  # series side by side, close to their tick
    for s, (rest, rows) in enumerate(series.items()):
        xs, means, below, above = [], [], [], []
        for row in rows:
            mean = row["duplicates_mean"]
            if mean is None:
                continue
            low, high = row["duplicates_ci95_low"], row["duplicates_ci95_high"]
            xs.append(levels.index(row[key]) + (s - (len(series) - 1) / 2) * width)
            means.append(mean)
            below.append(0.0 if low is None else mean - low)
            above.append(0.0 if high is None else high - mean)
        label = ", ".join(f"{k}={_fmt(v)}" for k, v in zip(others, rest, strict=True)) or "duplicates"
        ax.errorbar(xs, means, yerr=[below, above], fmt="o-", capsize=4, label=label)
    ax.set_xticks(range(len(levels)), [_fmt(v) for v in levels])
    ax.set_xlabel(key)
    ax.set_ylabel("duplicates (mean, 95% CI)")
    ax.set_title(f"effect on duplicates, {plan.seeds} seeds per configuration", fontsize=10)
    ax.legend(fontsize=7)
    return png(fig)


def _html_table(header: list[str], body: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    lines = "".join("<tr>" + "".join(f"<td>{html.escape(_fmt(c))}</td>" for c in row) + "</tr>" for row in body)
    return f"<table><tr>{head}</tr>{lines}</table>"


def _configs_table(plan: SweepPlan, configs: list[dict[str, Any]]) -> str:
    header = ["config", *plan.grid_keys, "n", "failed"]
    for figure in FIGURES:
        header += [f"{figure} mean", f"{figure} sd", f"{figure} 95% CI"]
    body = []
    for row in configs:
        cells = [row["config_id"], *(row[k] for k in plan.grid_keys), row["n"], row["failed"]]
        for figure in FIGURES:
            low, high = row[f"{figure}_ci95_low"], row[f"{figure}_ci95_high"]
            interval = "" if low is None else f"[{_fmt(low)}, {_fmt(high)}]"
            cells += [row[f"{figure}_mean"], row[f"{figure}_sd"], interval]
        body.append(cells)
    return _html_table(header, body)


def _causes_table(plan: SweepPlan, runs: list[dict[str, Any]]) -> str:
    """Mean duplicates per cause and configuration, for the causes some run shows."""
    columns = sorted(c for c in runs[0] if c.startswith("duplicates_")) if runs else []
    columns = [c for c in columns if any(r[c] for r in runs)]
    if not columns:
        return "<p>no duplicates in any run</p>"
    body = []
    for config in plan.configs:
        mine = [r for r in runs if r["config_id"] == config.config_id and r["failure"] is None]
        body.append([config.config_id, *(sum(r[c] for r in mine) / len(mine) if mine else None for c in columns)])
    return _html_table(["config", *(c.removeprefix("duplicates_") for c in columns)], body)


def write_sweep_report(
    out: Path, plan: SweepPlan, configs: list[dict[str, Any]], runs: list[dict[str, Any]], *, unfinished: int = 0
) -> Path:
    """Write `out/report.html` from the two tables' rows and return its path; `unfinished`
    runs of a sweep stopped part way are said to be missing from it."""
    effects = "".join(
        f"<h2>{html.escape(key)}</h2>" + _image(_plot_effect(plan, configs, i), f"effect of {key} on duplicates")
        for i, key in enumerate(plan.grid_keys)
    )
    sets = " ".join(f"--set {s}" for s in plan.sets)
    run_columns = ["run_dir", "seed", "duplicates", "skipped", "consumed", "rebalances", "acked", "lost_acked", "log_duplicates", "wall_s", "failure"]
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>kafkasim sweep of {html.escape(plan.source)}</title><style>{_STYLE}</style></head>
<body>
<h1>kafkasim sweep of {html.escape(plan.source)}</h1>
<p>{len(plan.configs)} configuration(s) &times; {plan.seeds} seed(s) = {len(plan.runs())} runs{html.escape(f"; every run with {sets}" if sets else "")}.
Rerun any of them with <code>kafkasim run RUN_DIR/scenario.toml</code>. Confidence intervals are 95%, Student's t
with n - 1 degrees of freedom over the runs that finished.</p>
{f"<p><b>The sweep stopped part way: {unfinished} of its runs are not done and not in this report; <code>kafkasim sweep ... --resume</code> runs them.</b></p>" if unfinished else ""}
{effects}
<h2>Per configuration</h2>
{_configs_table(plan, configs)}
<h2>Mean duplicates by cause</h2>
{_causes_table(plan, runs)}
<h2>Runs</h2>
{_html_table(["config", *plan.grid_keys, *run_columns], [[r["config_id"], *(r[k] for k in plan.grid_keys), *(r[c] for c in run_columns)] for r in runs])}
</body></html>
"""
    path = out / "report.html"
    path.write_text(page, encoding="utf-8")
    return path
