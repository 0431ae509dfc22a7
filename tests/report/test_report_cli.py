"""`kafkasim report` writes the page from summary.json and events.jsonl alone (no Spark), and a
directory without them is one line naming the missing file."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.cli import main
from sim.runner import run_scenario
from sim.scenario import load_scenario

STORY = Path(__file__).with_name("story.toml")


def test_report_without_analysis_tells_the_story(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = tmp_path / "run"
    run_scenario(load_scenario(str(STORY), ["run.duration.ms=10000"]), run_dir)
    assert main(["report", str(run_dir)]) == 0
    assert capsys.readouterr().out == f"report written to {run_dir}/report.html\n"
    page = (run_dir / "report.html").read_text()
    assert '<section id="narrative"><h2>What happened</h2><ol><li class="headline">No acknowledged write was lost' in page
    assert "<li>At 8.0 s broker-1 crashed (process).</li>" in page
    assert "No analysis.json: <code>kafkasim analyze RUN_DIR</code> adds them." in page
    assert page.count("data:image/png;base64,") == 2
    assert '<img id="ownership-timeline"' in page and '<img id="replicas"' in page


def test_report_of_a_directory_without_its_event_log_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "summary.json").write_text("{}")
    assert main(["report", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"kafkasim: {tmp_path}: no events.jsonl in this run directory\n"
