"""`kafkasim sweep`: the plan and its checks, the runs as Spark tasks, the tables and the report."""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sim.cluster.scenario import load_scenario
from sim.studies.runner import run_scenario
from sim.studies.stats import t_quantile
from sim.studies.sweep import prepare_sweep_dir, run_sweep
from sim.studies.sweep_plan import plan_sweep, split_values

ROOT = Path(__file__).resolve().parents[2]

SCENARIO = (Path(__file__).parent / "crash_group.toml").read_text()
"""One broker, two consumers, consumer-1 crashes at 4.5 s (see the file)."""

COMMIT = "consumers.1.auto.commit.interval.ms"


@pytest.fixture
def scenario_file(tmp_path: Path) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO)
    return path


def kafkasim(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sim.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=300,
        check=False,
    )


# ------------------------------------------------------------------ the plan


def test_grid_values_split_on_commas_outside_lists_and_strings() -> None:
    assert split_values("1000,5000") == ["1000", "5000"]
    assert split_values('["range"], ["sticky","range"]') == ['["range"]', '["sticky","range"]']
    assert split_values('"a,b",c') == ['"a,b"', "c"]


def test_the_plan_is_the_cartesian_product_of_the_grids_with_typed_values(scenario_file: Path) -> None:
    plan = plan_sweep(str(scenario_file), ["run.duration.ms=5000"], [f"{COMMIT}=1000,5000", "consumers.1.commit=none,sync"], 3)
    assert [(c.config_id, c.overrides, c.values) for c in plan.configs] == [
        ("c1", (f"{COMMIT}=1000", "consumers.1.commit=none"), (1000, "none")),
        ("c2", (f"{COMMIT}=1000", "consumers.1.commit=sync"), (1000, "sync")),
        ("c3", (f"{COMMIT}=5000", "consumers.1.commit=none"), (5000, "none")),
        ("c4", (f"{COMMIT}=5000", "consumers.1.commit=sync"), (5000, "sync")),
    ]
    tasks = plan.tasks(Path("out"))
    assert len(tasks) == 12
    # The overrides `kafkasim run --set ... --seed N` applies, in its order, and the name of
    # the configuration's runs.
    assert tasks[4]["overrides"] == [
        "run.duration.ms=5000", f"{COMMIT}=1000", "consumers.1.commit=sync", f'run.name="{plan.configs[1].name}"', "run.seed=2"
    ]
    assert tasks[4]["run_dir"] == str(Path("out").resolve() / "runs" / "c2-seed2")


def test_ten_configurations_get_ids_that_sort() -> None:
    plan = plan_sweep(None, [], ["network.latency.max.ms=" + ",".join(str(n) for n in range(1, 11))], 1)
    assert [c.config_id for c in plan.configs][:2] == ["c01", "c02"]
    assert plan.configs[-1].config_id == "c10"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--grid", "consumers.1.auto.comit.interval.ms=1000"],
            "kafkasim: --grid consumers.1.auto.comit.interval.ms=1000: [[consumers]] #1: "
            "unknown key 'auto.comit.interval.ms' (did you mean 'auto.commit.interval.ms'?)",
        ),
        (
            ["--grid", f"{COMMIT}=1000,fast"],
            f"kafkasim: --grid {COMMIT}=fast: [[consumers]] #1: auto.commit.interval.ms: "
            "expected an integer, got 'fast' (a string)",
        ),
        (
            # Each value is valid alone; together the heartbeat is not below the session timeout.
            ["--grid", "consumers.1.session.timeout.ms=4000", "--grid", "consumers.1.heartbeat.interval.ms=5000"],
            "kafkasim: --grid consumers.1.session.timeout.ms=4000 with consumers.1.heartbeat.interval.ms=5000: "
            "[[consumers]] #1: heartbeat.interval.ms (5000) must be lower than session.timeout.ms (4000)",
        ),
        (
            ["--grid", "consumers.3.commit=sync"],
            "kafkasim: --grid consumers.3.commit=sync: expected consumers.N.KEY, N the entry's number as in "
            "[[consumers]] #N (1 to 1)",
        ),
        (
            ["--grid", "faults.1.node=consumer-9"],
            "kafkasim: --grid faults.1.node=consumer-9: [[faults]] #1: node: no node named 'consumer-9' "
            "(the nodes are broker-1, consumer-1, consumer-2, producer-1, zookeeper)",
        ),
        (
            ["--grid", COMMIT],
            f"kafkasim: --grid '{COMMIT}': expected KEY=VALUE1,VALUE2,..., such as "
            "consumers.1.auto.commit.interval.ms=1000,5000",
        ),
        (["--grid", f"{COMMIT}=1000,", ], f"kafkasim: --grid {COMMIT}: an empty value in '1000,'"),
        (["--grid", f"{COMMIT}=1000,1000"], f"kafkasim: --grid {COMMIT}: the value 1000 is given twice"),
        (["--grid", f"{COMMIT}=1", "--grid", f"{COMMIT}=2"], f"kafkasim: --grid {COMMIT}: given twice; list every value in one --grid"),
        (["--grid", f"{COMMIT}=1", "--set", f"{COMMIT}=2"], f"kafkasim: --grid {COMMIT}: also given with --set; a key is either fixed or swept"),
        (["--grid", "run.seed=1,2"], "kafkasim: --grid run.seed: the seeds are 1 to --seeds N"),
        (["--set", "run.duration.ms=-1"], "kafkasim: --set 'run.duration.ms=-1': [run]: duration.ms: must be at least 1, got -1"),
    ],
)
def test_a_mistake_is_one_line_and_exit_2_before_anything_is_written(
    scenario_file: Path, args: list[str], expected: str
) -> None:
    result = kafkasim("sweep", "s.toml", "--seeds", "2", *args, "--out", "sweep", cwd=scenario_file.parent)
    assert (result.returncode, result.stderr.splitlines()) == (2, [expected])
    assert not (scenario_file.parent / "sweep").exists()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["missing.toml", "--seeds", "2"], "kafkasim: missing.toml: no such scenario file"),
        (["s.toml", "--seeds", "0"], "kafkasim: --seeds must be at least 1, got 0"),
        (["s.toml"], "kafkasim: the following arguments are required: --seeds (see kafkasim sweep --help)"),
    ],
)
def test_a_missing_file_or_bad_seeds_is_one_line_and_exit_2(scenario_file: Path, args: list[str], expected: str) -> None:
    result = kafkasim("sweep", *args, "--out", "sweep", cwd=scenario_file.parent)
    assert (result.returncode, result.stderr.splitlines()) == (2, [expected])


def test_a_directory_that_holds_no_sweep_is_refused(scenario_file: Path) -> None:
    (scenario_file.parent / "notes").mkdir()
    (scenario_file.parent / "notes" / "a.txt").write_text("mine")
    result = kafkasim("sweep", "s.toml", "--seeds", "1", "--out", "notes", cwd=scenario_file.parent)
    assert (result.returncode, result.stderr.splitlines()) == (
        2,
        ["kafkasim: --out notes: not empty and holds no sweep (found a.txt); choose another directory"],
    )
    assert (scenario_file.parent / "notes" / "a.txt").read_text() == "mine"


# ------------------------------------------------------------------ on Spark


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory, spark: Any) -> tuple[Path, Path, dict[str, Any]]:
    """2 configurations x 2 seeds on the shared local[1] session."""
    root = tmp_path_factory.mktemp("sweep")
    scenario = root / "s.toml"
    scenario.write_text(SCENARIO)
    plan = plan_sweep(str(scenario), [], [f"{COMMIT}=1000,5000"], 2)
    out = root / "out"
    prepare_sweep_dir(out)
    return scenario, out, run_sweep(plan, out, spark=spark)


EXPECTED_RUNS = [
    # config, interval, seed, duplicates, of them crash_before_commit, skipped, of them
    # committed_before_processed, consumed, rebalances, acked
    ("c1", 1000, 1, 0, 0, 0, 0, 1000, 3, 1000),
    ("c1", 1000, 2, 0, 0, 0, 0, 1000, 3, 1000),
    ("c2", 5000, 1, 0, 0, 0, 0, 1000, 3, 1000),
    ("c2", 5000, 2, 304, 304, 0, 0, 1304, 3, 1000),
]


def _run_figures(row: dict[str, Any]) -> tuple[Any, ...]:
    return (
        row["config_id"], int(row[COMMIT]), int(row["seed"]), int(row["duplicates"]),
        int(row["duplicates_crash_before_commit"]), int(row["skipped"]), int(row["skipped_committed_before_processed"]),
        int(row["consumed"]), int(row["rebalances"]), int(row["acked"]),
    )


@pytest.mark.spark
def test_each_run_is_a_run_directory_and_a_row_of_the_runs_table(swept: tuple[Path, Path, dict[str, Any]], spark: Any) -> None:
    _, out, outcome = swept
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["c1-seed1", "c1-seed2", "c2-seed1", "c2-seed2"]
    for run in (out / "runs").iterdir():
        assert {"events.jsonl", "scenario.toml", "summary.json"} <= {p.name for p in run.iterdir()}
    assert [r["failure"] for r in outcome["results"]] == [None] * 4
    assert [_run_figures(r) for r in outcome["runs"]] == EXPECTED_RUNS
    with (out / "runs.csv").open() as f:
        assert [_run_figures(r) for r in csv.DictReader(f)] == EXPECTED_RUNS
    parquet = spark.read.parquet(str(out / "runs.parquet")).orderBy("config_id", "seed")
    assert [_run_figures(r.asDict()) for r in parquet.collect()] == EXPECTED_RUNS
    assert {r["events_digest"] for r in outcome["runs"]} == {
        json.loads((out / r["run_dir"] / "summary.json").read_text())["events_digest"] for r in outcome["runs"]
    }
    assert json.loads((out / "sweep.json").read_text())["grid"] == {COMMIT: ["1000", "5000"]}


@pytest.mark.spark
def test_the_configs_table_has_means_deviations_and_t_intervals(swept: tuple[Path, Path, dict[str, Any]]) -> None:
    _, out, outcome = swept
    c1, c2 = outcome["configs"]
    assert (c1["config_id"], c1[COMMIT], c1["n"], c1["failed"]) == ("c1", 1000, 2, 0)
    assert (c1["duplicates_mean"], c1["duplicates_sd"], c1["duplicates_ci95_low"], c1["duplicates_ci95_high"]) == (0, 0, 0, 0)
    sd = 304 / math.sqrt(2)  # two runs: 0 and 304
    half = t_quantile(0.975, 1) * sd / math.sqrt(2)
    assert c2["duplicates_mean"] == 152
    assert c2["duplicates_sd"] == pytest.approx(sd, rel=1e-12)
    # 152 - half is below 0, and a count is never negative: the interval is clipped there
    assert 152 - half < 0
    assert (c2["duplicates_ci95_low"], c2["duplicates_ci95_high"]) == (0, pytest.approx(152 + half, rel=1e-12))
    assert (c2["consumed_mean"], c2["rebalances_mean"], c2["rebalances_sd"], c2["acked_mean"]) == (1152, 3, 0, 1000)
    with (out / "configs.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["config_id"], r[COMMIT], r["n"], float(r["duplicates_mean"])) for r in rows] == [
        ("c1", "1000", "2", 0.0), ("c2", "5000", "2", 152.0),
    ]


@pytest.mark.spark
def test_a_sweep_run_is_byte_identical_to_kafkasim_run(swept: tuple[Path, Path, dict[str, Any]], tmp_path: Path) -> None:
    scenario, out, _ = swept
    name = json.loads((out / "sweep.json").read_text())["configs"][1]["name"]
    # What `kafkasim run s.toml --set consumers.1.auto.commit.interval.ms=5000 --set run.name=NAME --seed 2`
    # runs, and what `kafkasim run DIR/runs/c2-seed2/scenario.toml` runs again.
    direct = run_scenario(load_scenario(str(scenario), [f"{COMMIT}=5000", f"run.name={name}", "run.seed=2"]), tmp_path / "direct")
    again = run_scenario(load_scenario(str(out / "runs" / "c2-seed2" / "scenario.toml")), tmp_path / "again")
    swept_log = (out / "runs" / "c2-seed2" / "events.jsonl").read_bytes()
    assert hashlib.sha256(swept_log).hexdigest() == direct["events_digest"] == again["events_digest"]
    assert swept_log == (tmp_path / "direct" / "events.jsonl").read_bytes()
    assert direct["duplicates"] == 304


@pytest.mark.spark
def test_every_event_of_a_sweep_run_carries_its_configurations_run_id(swept: tuple[Path, Path, dict[str, Any]]) -> None:
    """Grouping `runs/*/events.jsonl` by run_id never merges two configurations."""
    _, out, outcome = swept
    by_run = {}
    for run in sorted((out / "runs").iterdir()):
        ids = {json.loads(line)["run_id"] for line in (run / "events.jsonl").read_text().splitlines()}
        (by_run[run.name],) = ids
    names = [c["name"] for c in json.loads((out / "sweep.json").read_text())["configs"]]
    assert by_run == {
        "c1-seed1": f"{names[0]}-seed1",
        "c1-seed2": f"{names[0]}-seed2",
        "c2-seed1": f"{names[1]}-seed1",
        "c2-seed2": f"{names[1]}-seed2",
    }
    assert [r["run_id"] for r in outcome["runs"]] == [by_run[name] for name in sorted(by_run)]


@pytest.mark.spark
def test_the_report_plots_each_grid_key_and_tabulates_the_configurations(swept: tuple[Path, Path, dict[str, Any]]) -> None:
    _, out, _ = swept
    page = (out / "report.html").read_text()
    assert page.count('<svg xmlns="http://www.w3.org/2000/svg" id="effect-1"') == 1
    assert "<title>effect of consumers.1.auto.commit.interval.ms on duplicates</title>" in page
    assert "<h2>Per configuration</h2>" in page
    assert "<td>crash_<wbr>before_<wbr>commit</td>" not in page  # causes are column headers
    assert "<th>crash_<wbr>before_<wbr>commit</th>" in page


@pytest.mark.spark
def test_the_command_on_local_2_with_two_grids(scenario_file: Path) -> None:
    """The command end to end on its own local[2] Spark: 2 x 2 configurations, one seed each
    (no interval below two runs), quiet on stderr when it is not a terminal."""
    cwd = scenario_file.parent
    args = ["sweep", "s.toml", "--seeds", "1", "--grid", f"{COMMIT}=1000,5000", "--grid", "consumers.1.commit=none,sync"]
    result = kafkasim(*args, "--master", "local[2]", "--out", "sweep", cwd=cwd)
    assert result.returncode == 0, result.stderr
    ours = [line for line in result.stderr.splitlines() if not line.startswith("WARNING")]  # the JVM's
    assert [line for line in ours if " runs done, " not in line] == [  # no bar; a line a tenth after 5 s
        "sweeping 4 configuration(s) x 1 seed(s) on Spark (local[2])",
        "  starting Spark",
        "  running 4 runs",
        "  writing the tables",
        "  writing the report",
    ]
    assert result.stdout.splitlines() == [
        f"c1 {COMMIT}=1000, consumers.1.commit=none: duplicates 0, n 1",
        f"c2 {COMMIT}=1000, consumers.1.commit=sync: duplicates 0, n 1",
        f"c3 {COMMIT}=5000, consumers.1.commit=none: duplicates 0, n 1",
        f"c4 {COMMIT}=5000, consumers.1.commit=sync: duplicates 0, n 1",
        "  4 runs in sweep/runs; tables runs.csv, configs.csv (and .parquet); report sweep/report.html",
    ]
    with (cwd / "sweep" / "configs.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["config_id"], r["consumers.1.commit"], r["n"], r["duplicates_sd"], r["duplicates_ci95_low"]) for r in rows] == [
        ("c1", "none", "1", "", ""), ("c2", "sync", "1", "", ""), ("c3", "none", "1", "", ""), ("c4", "sync", "1", "", ""),
    ]
    assert (cwd / "sweep" / "report.html").read_text().count('<svg xmlns="http://www.w3.org/2000/svg" id="effect-') == 2


@pytest.mark.spark
def test_spark_recounts_every_runs_duplicates_by_cause_in_a_ten_seed_sweep(tmp_path: Path, spark: Any) -> None:
    """A sweep of ten seeds under a consumer crash: for every run, the duplicates Spark computes
    from its events (`kafkasim analyze`'s job), in total and by cause, equal its summary.json,
    and the sweep's runs table agrees with both. Some runs have duplicates and some none, so
    the comparison is not one of zeros."""
    from sim.analytics.jobs import analyze_runs  # noqa: PLC0415 - Spark only here

    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    out = tmp_path / "out"
    prepare_sweep_dir(out)
    outcome = run_sweep(plan_sweep(str(scenario), [], [], 10), out, spark=spark)
    assert [r["failure"] for r in outcome["results"]] == [None] * 10
    run_dirs = [out / row["run_dir"] for row in outcome["runs"]]
    summaries = [json.loads((d / "summary.json").read_text()) for d in run_dirs]
    analyses = analyze_runs(spark, run_dirs)
    for run_dir, summary, analysis, row in zip(run_dirs, summaries, analyses, outcome["runs"], strict=True):
        assert (analysis["duplicates"], analysis["duplicates_by_cause"]) == (
            summary["duplicates"],
            summary["duplicates_by_cause"],
        ), run_dir.name
        assert int(row["duplicates"]) == summary["duplicates"], run_dir.name
    with_duplicates = sum(1 for s in summaries if s["duplicates"] > 0)
    assert 0 < with_duplicates < 10, [s["duplicates"] for s in summaries]
