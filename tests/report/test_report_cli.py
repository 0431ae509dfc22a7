"""`kafkasim report` writes the page from summary.json and events.jsonl alone (no Spark); a
directory without them, or with one of its files damaged, is one line naming the file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sim.cli import main
from sim.cluster.scenario import load_scenario
from sim.studies.runner import run_scenario

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
    assert "data:image/png" not in page  # inline SVG, sharp when zoomed
    assert '<svg xmlns="http://www.w3.org/2000/svg" id="ownership-timeline"' in page
    # broker-1's crash at 8 s has not yet changed a leader or an ISR at 10 s: no replica panel
    assert "id=\"replicas\"" not in page
    assert ('<p class="note" id="steady-partitions">T-0, T-1: steady, no leader or ISR change after start-up, '
            "no HW stall, no truncation.</p>") in page


def test_report_of_a_directory_without_its_event_log_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "summary.json").write_text("{}")
    assert main(["report", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"kafkasim: {tmp_path}: no events.jsonl in this run directory\n"


@pytest.fixture(scope="module")
def story_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("story") / "run"
    run_scenario(load_scenario(str(STORY), ["run.duration.ms=3000"]), run_dir)
    return run_dir


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("summary.json", '{"run_id":', "not a run summary (Expecting value"),
        ("summary.json", "[1, 2]", "not a run summary (not a JSON object)"),
        ("summary.json", '{"run_id": "x"}', "not a run summary (no 'scenario')"),
        ("analysis.json", '{"events_by_type": [1]}', "not an analysis (events_by_type is not an object)"),
        ("events.jsonl", "garbage\n", "1: malformed event, not JSON"),
    ],
    ids=["summary-cut", "summary-list", "summary-keys", "analysis-table", "events-garbage"],
)
def test_a_damaged_file_is_one_line_naming_it(
    story_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, problem: str
) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(story_run, run_dir)
    (run_dir / name).write_text(text)
    assert main(["report", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"kafkasim: {run_dir / name}:{'' if name == 'events.jsonl' else ' '}{problem}"), err
    assert err.count("\n") == 1
