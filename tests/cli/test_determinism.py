"""`kafkasim run --check-determinism`: one scenario under the Pykka and the direct host, the
two event logs compared. A real scenario passes; a behaviour that keeps state from one run to the
next (a module-level counter) is caught, at the first line the counter shows in."""

from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from actors.group.manager import GroupManager
from sim.cli import main
from sim.engine.divergence import compare_logs
from tests.cli.test_cli import kafkasim

SHORT = ["--set", "run.duration.ms=8000", "--set", "faults.1.at.ms=6500", "--set", "faults.1.restart.after.ms=1000"]
"""The default study cut to 8 s, the group formed at about 6 s and its crash brought forward."""


def _figures(path: Path) -> tuple[int, str]:
    data = path.read_bytes()
    return data.count(b"\n"), hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_default_study_passes_on_each_host_and_says_so_in_one_line(
    seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "check"
    assert main(["run", "--check-determinism", "--seed", str(seed), *SHORT, "--out", str(out)]) == 0
    captured = capsys.readouterr()
    pykka, direct = out / "pykka" / "events.jsonl", out / "direct" / "events.jsonl"
    assert pykka.read_bytes() == direct.read_bytes()
    events, digest = _figures(pykka)
    assert (captured.out, captured.err) == (
        f"deterministic: {events:,} events, identical under pykka and direct, sha256 {digest} ({pykka}, {direct})\n",
        "",
    )
    for run_dir in (out / "pykka", out / "direct"):
        summary = json.loads((run_dir / "summary.json").read_text())
        assert (summary["seed"], summary["sim_ms"], summary["events"], summary["events_digest"]) == (seed, 8000, events, digest)
        assert not (run_dir / "report.html").exists()
    crashed = [json.loads(line) for line in pykka.read_text().splitlines() if '"node_crashed"' in line]
    assert [(e["ts_ms"], e["target"]) for e in crashed] == [(6500, "consumer-2")]


def test_a_scenario_file_passes_as_a_process_and_its_json_names_both_runs(tmp_path: Path) -> None:
    out = tmp_path / "check"
    result = kafkasim(
        "run", "examples/05_crash_vs_close.toml", "--check-determinism", "--set", "run.duration.ms=5000",
        "--out", str(out), "--json",
    )
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    events, digest = _figures(out / "pykka" / "events.jsonl")
    assert json.loads(result.stdout) == {
        "deterministic": True,
        "events": events,
        "events_digest": digest,
        "runs": {"pykka": str(out / "pykka"), "direct": str(out / "direct")},
        "divergence": None,
    }
    assert _figures(out / "direct" / "events.jsonl") == (events, digest)


def _first_difference(path_a: Path, path_b: Path) -> tuple[int, dict[str, Any], dict[str, Any], str]:
    """The oracle: the first differing line of two logs read whole, both events, and the first
    field (in the first log's order) whose value differs."""
    lines_a, lines_b = path_a.read_text().splitlines(), path_b.read_text().splitlines()
    number = next(i for i, (a, b) in enumerate(zip(lines_a, lines_b, strict=False), start=1) if a != b)
    a, b = json.loads(lines_a[number - 1]), json.loads(lines_b[number - 1])
    field = next(name for name in a if a[name] != b.get(name))
    return number, a, b, field


def test_a_counter_kept_across_runs_is_named_at_its_first_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The group coordinator made to draw member ids from a module-level counter instead of its
    seeded stream: the second run, in the same process, starts where the first one stopped, so
    its member ids differ from the first line that shows one."""
    counter = itertools.count(1)
    monkeypatch.setattr(GroupManager, "new_member_id", lambda _m, _ctx, prefix: f"{prefix}-{next(counter)}")
    out = tmp_path / "check"
    assert main(["run", "--check-determinism", *SHORT, "--out", str(out)]) == 1
    captured = capsys.readouterr()
    pykka, direct = out / "pykka" / "events.jsonl", out / "direct" / "events.jsonl"
    number, a, b, field = _first_difference(pykka, direct)
    assert (captured.out, captured.err.splitlines()) == (
        "",
        [
            f"kafkasim: not deterministic: the event logs first differ at line {number:,} ({pykka}, {direct})",
            f"  pykka   {a['ts_ms']} ms {a['node']}/{a['actor']} {a['event']}",
            f"  direct  {b['ts_ms']} ms {b['node']}/{b['actor']} {b['event']}",
            f"  first differing field: {field}: {json.dumps(a[field])} under pykka, {json.dumps(b[field])} under direct",
        ],
    )
    # The counter is what differs: the first run's first id is 1, the second's the next after the first run's last.
    assert field.endswith("member_id")
    assert a[field].rsplit("-", 1)[1] == "1"
    assert int(b[field].rsplit("-", 1)[1]) > 1
    comparison = compare_logs(pykka, direct)
    assert comparison.divergence is not None
    assert (comparison.events, comparison.digest, comparison.divergence.line) == (number - 1, None, number)


def test_check_determinism_with_host_is_one_line(tmp_path: Path) -> None:
    result = kafkasim("run", "--check-determinism", "--host", "direct", "--out", str(tmp_path / "check"))
    assert (result.returncode, result.stdout, result.stderr) == (
        2, "", "kafkasim: --check-determinism runs under both hosts, pykka then direct: drop --host direct\n",
    )
    assert not (tmp_path / "check").exists()


def test_an_out_dir_holding_other_files_is_refused_before_anything_is_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    assert main(["run", "--set", "run.duration.ms=500", "--out", str(run_dir), "--no-report"]) == 0
    capsys.readouterr()
    assert main(["run", "--check-determinism", "--set", "run.duration.ms=500", "--out", str(run_dir)]) == 2
    assert capsys.readouterr().err == (
        f"kafkasim: --out {run_dir}: --check-determinism writes only pykka and direct there, "
        "and it holds events.jsonl, scenario.toml, summary.json; choose another directory\n"
    )
    check = tmp_path / "check"
    assert main(["run", "--check-determinism", "--set", "run.duration.ms=500", "--out", str(check)]) == 0
    (check / "direct" / "events.jsonl").unlink()
    (check / "direct" / "summary.json").unlink()
    (check / "direct" / "scenario.toml").rename(check / "direct" / "notes.toml")
    capsys.readouterr()
    assert main(["run", "--check-determinism", "--set", "run.duration.ms=500", "--out", str(check)]) == 2
    assert capsys.readouterr().err == (
        f"kafkasim: --out {check / 'direct'}: not empty and holds no run (found notes.toml); choose another directory\n"
    )
    assert (check / "pykka" / "events.jsonl").exists()  # the earlier check's pykka run is still there


def test_the_guide_shows_what_the_check_prints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "guide.md").read_text().splitlines()
    start = next(i for i, line in enumerate(guide) if line.startswith("    $ .venv/bin/kafkasim run --check-determinism"))
    args = guide[start].removeprefix("    $ .venv/bin/kafkasim ").split()
    assert args[-2:] == ["--out", "/tmp/check"]
    assert main([*args[:-1], str(tmp_path / "check")]) == 0
    assert capsys.readouterr().out == guide[start + 1].removeprefix("    ").replace("/tmp/check", str(tmp_path / "check")) + "\n"


def test_the_json_verdict_of_logs_that_differ_carries_the_divergence(tmp_path: Path) -> None:
    from sim.cli.run import determinism_json
    from sim.engine.divergence import Divergence, EventHead, LogComparison
    from sim.studies.determinism import DeterminismCheck

    head = EventHead(105, "consumer-3", "consumer", "join_group_failed")
    divergence = Divergence(456, head, None)
    check = DeterminismCheck((tmp_path / "pykka", tmp_path / "direct"), ({}, {}), LogComparison(455, None, divergence))
    assert determinism_json(check) == {
        "deterministic": False,
        "events": 455,
        "events_digest": None,
        "runs": {"pykka": str(tmp_path / "pykka"), "direct": str(tmp_path / "direct")},
        "divergence": {
            "line": 456,
            "a": {"ts_ms": 105, "node": "consumer-3", "actor": "consumer", "event": "join_group_failed"},
            "b": None,
            "field": None,
            "value_a": None,
            "value_b": None,
        },
    }
