"""The sweep's report: the scenario and its faults in words, each configuration's effect as a
point with its 95% interval clipped at zero, and each run linked to its own report, which the
sweep's runs write. The page is built from the tables' rows, so most tests need no Spark."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from sim.studies.builtin import load_study
from sim.studies.sweep_plan import plan_sweep
from sim.studies.sweep_report import write_sweep_report
from sim.studies.sweep_scenario import describe_fault, describe_scenario
from sim.studies.sweep_tables import FIGURES
from tests.report.conftest import SWEPT_KEY, SWEPT_SCENARIO

GROUP_FAULTS = Path(__file__).with_name("group_faults.toml")


def _config(config_id: str, value: int, mean: float, low: float | None, high: float | None) -> dict[str, Any]:
    row: dict[str, Any] = {"config_id": config_id, SWEPT_KEY: value, "n": 2, "failed": 0}
    for figure in FIGURES:
        row |= {f"{figure}_mean": 0.0, f"{figure}_sd": 0.0, f"{figure}_ci95_low": 0.0, f"{figure}_ci95_high": 0.0}
    return row | {"duplicates_mean": mean, "duplicates_ci95_low": low, "duplicates_ci95_high": high}


def _run(config_id: str, value: int, seed: int, duplicates: int) -> dict[str, Any]:
    figures = dict.fromkeys(("skipped", "consumed", "rebalances", "acked", "lost_acked", "log_duplicates", "wall_s"), 0)
    return {"config_id": config_id, SWEPT_KEY: value, "seed": seed, "run_dir": f"runs/{config_id}-seed{seed}",
            "duplicates": duplicates, "duplicates_crash_before_commit": duplicates, **figures, "failure": None}


@pytest.fixture
def page(tmp_path: Path) -> str:
    """A report of made-up rows: c1 has no duplicates, c2 0 and 304 (an interval below 0)."""
    plan = plan_sweep(str(SWEPT_SCENARIO), ["run.duration.ms=10000"], [f"{SWEPT_KEY}=1000,5000"], 2)
    configs = [_config("c1", 1000, 0.0, 0.0, 0.0), _config("c2", 5000, 152.0, -1779.4, 2083.4)]
    runs = [_run("c1", 1000, 1, 0), _run("c1", 1000, 2, 0), _run("c2", 5000, 1, 0), _run("c2", 5000, 2, 304)]
    for run in runs[:3]:  # c2-seed2 wrote no report
        (tmp_path / run["run_dir"]).mkdir(parents=True)
        (tmp_path / run["run_dir"] / "report.html").write_text("")
    return write_sweep_report(tmp_path, plan, configs, runs).read_text().replace("<wbr>", "")


def test_the_scenario_and_its_faults_in_words() -> None:
    lines, faults = describe_scenario(load_study(str(GROUP_FAULTS)))
    assert lines == [
        "3 brokers, Kafka 3.9, 60 s simulated per run.",
        "Topic events: 6 partitions, replication factor 2, min.insync.replicas 1.",
        "producer-1 writes 3,000 records to events (1 record every 20 ms), acks all, idempotent, linger.ms 0.",
        "Group g: 3 consumers (consumer-1 to consumer-3) on events, auto-commit every 5 s, session.timeout.ms 10,000, "
        "max.poll.interval.ms 300,000, assignors range, cooperative-sticky, auto.offset.reset earliest, 0 ms per record.",
    ]
    assert faults == [
        "At 12 s broker-1 crashes (process); it restarts 8 s later.",
        "At 25 s consumer-2 crashes (process); it restarts 10 s later.",
        "At 40 s broker-1 crashes (power_loss); it restarts 8 s later.",
    ]
    assert describe_fault({"kind": "partition", "at.ms": 20000, "isolate": ["broker-2"], "duration.ms": 5000}) == (
        "at 20 s broker-2 cut off from the others for 5 s")
    assert describe_fault({"kind": "rolling_restart", "at.ms": 90000, "group": "billing", "interval.ms": 5000}) == (
        "at 90 s a rolling restart of group billing, 5 s apart")


def test_the_page_describes_what_was_swept(page: str) -> None:
    assert "<li>At 4.5 s consumer-1 crashes (process).</li>" in page
    assert "<li>1 broker, Kafka 3.9, 10 s simulated per run.</li>" in page
    assert f"<li><code>{SWEPT_KEY}</code>: 1000, 5000</li><li>seeds 1 to 2</li>" in page
    assert "<li><code>--set run.duration.ms=10000</code></li>" in page
    assert "2 configurations &times; 2 seeds = 4 runs." in page


def test_each_configuration_is_a_point_with_its_interval_clipped_at_zero(page: str) -> None:
    figure = re.search(r'<svg[^>]*id="effect-1".*?</svg>', page, re.S).group(0)
    points = re.findall(r'<g class="config-point" data-config="(c\d)"><title>([^<]*)</title>', figure)
    assert points == [
        ("c1", "c1: n 2, mean 0, 95% interval 0 to 0; runs 0, 0"),
        ("c2", "c2: n 2, mean 152, 95% interval 0 to 2,083; runs 0, 304"),
    ]
    assert "<polyline" not in figure  # settings are not joined by lines
    # the bar of c2 runs from the axis (y 274: 0) up to 2,083 (the axis ends at 2,500), never below it
    bar = re.search(r'data-config="c2"><title>[^<]*</title>(?:<circle[^>]*>)*<line x1="([\d.]+)" y1="([\d.]+)" x2="[\d.]+" y2="([\d.]+)"', figure)
    assert (bar.group(2), bar.group(3)) == ("274", "57.3")
    row = re.search(r"<tr><td>c2</td>.*?</tr>", page).group(0)
    assert "<td>152 (0 to 2,083)</td>" in row
    # a figure no run changed is a sentence, not a column of equal cells
    assert "<th>duplicates: mean (95% interval)</th>" in page and "<th>rebalances: mean (95% interval)</th>" not in page
    assert ('<p id="same-everywhere">The same in every run: skipped 0, consumed 0, rebalances 0, acknowledged 0, '
            "acknowledged, lost 0, written twice 0, processed, then lost 0, wall time (s) 0.</p>") in page


def test_each_run_links_its_own_report(page: str) -> None:
    assert '<td><a href="runs/c1-seed1/report.html">c1-seed1</a></td>' in page
    assert "<td>c2-seed2</td>" in page  # no report written: no link
    assert page.count("<a href=") == 3


@pytest.mark.spark
def test_a_sweep_writes_each_runs_report_and_clips_its_intervals(swept: tuple[Path, dict[str, Any]]) -> None:
    out, outcome = swept
    for run in outcome["runs"]:
        assert (out / run["run_dir"] / "report.html").is_file()
    c2 = outcome["configs"][1]
    assert (c2["duplicates_mean"], c2["duplicates_ci95_low"]) == (152, 0)
    assert c2["duplicates_ci95_high"] == pytest.approx(2083.4, abs=0.1)
    page = (out / "report.html").read_text().replace("<wbr>", "")
    assert page.count('<a href="runs/c') == 4
