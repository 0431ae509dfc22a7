"""The command line's edges a new user meets first: each mistake is one line, no traceback."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_cli import kafkasim


def test_analyze_on_a_missing_path_says_so_in_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "runs" / "x"
    result = kafkasim("analyze", str(missing))
    assert (result.returncode, result.stdout, result.stderr) == (
        2, "", f"kafkasim: analyze: {missing}: no such run directory\n",
    )


def test_a_bad_set_names_the_set_not_the_file() -> None:
    result = kafkasim("run", "examples/05_crash_vs_close.toml", "--set", "consumer.foo=1")
    assert (result.returncode, result.stdout, result.stderr) == (
        2, "", "kafkasim: --set 'consumer.foo=1': unknown section [consumer] (did you mean 'consumers'?)\n",
    )


def test_a_list_setting_in_kafkas_comma_form_from_set(tmp_path: Path) -> None:
    result = kafkasim(
        "run", "examples/05_crash_vs_close.toml", "--set", "run.duration.ms=1000", "--out", str(tmp_path / "run"),
        "--no-report", "--set", "consumers.1.partition.assignment.strategy=roundrobin, range",
    )
    assert result.returncode == 0, result.stderr
    resolved = (tmp_path / "run" / "scenario.toml").read_text()
    assert '"partition.assignment.strategy" = ["roundrobin", "range"]' in resolved
