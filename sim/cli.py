"""The `kafkasim` command line.

    kafkasim run [SCENARIO] [--seed N] [--set KEY=VALUE ...] [--out DIR] [--json]
    kafkasim analyze RUN_DIR [RUN_DIR ...] [--master URL] [--json]
    kafkasim report RUN_DIR
    kafkasim study [--out DIR] [--master URL]
    kafkasim sweep [SCENARIO] --seeds N [--grid KEY=V1,V2 ...] [--set KEY=VALUE ...] [--master URL] --out DIR
    kafkasim bench [--json] [--quick] [--sweep] [--analytics]

A user's mistake (a bad file, key or value) is one line on stderr naming it, and exit status 2;
a simulator failure is one line with the seed and the event, exit status 1, the traceback in the
run directory's failure.txt; an interrupt exits 130 after writing the summary.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from sim.cluster.faults import FaultError
from sim.cluster.scenario import Scenario, ScenarioError
from sim.engine.kernel import HostKind
from sim.studies.builtin import load_study
from sim.studies.rundir import RunDirRefused

__all__ = ["main"]

T = TypeVar("T")

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"kafkasim: {message} (see {self.prog} --help)\n")
        sys.exit(EXIT_USAGE)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    try:
        return version("kafkasim")
    except PackageNotFoundError:
        return "unknown (not installed)"


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kafkasim", description="A deterministic simulator of Apache Kafka.")
    parser.add_argument("--version", action="version", version=f"kafkasim {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = commands.add_parser("run", help="run a scenario (the default study if none is given)")
    run.add_argument("scenario", nargs="?", help="a scenario TOML file")
    run.add_argument("--seed", type=int, help="override [run] seed")
    run.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a setting, e.g. --set network.latency.max.ms=20",
    )
    run.add_argument("--out", type=Path, help="the run directory (default runs/NAME-seedSEED)")
    run.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    run.add_argument(
        "--host",
        choices=[h.value for h in HostKind],
        default=HostKind.PYKKA.value,
        help="pykka (the product) or direct (the in-thread reference executor)",
    )
    run.add_argument(
        "--no-report", dest="report", action="store_false", help="do not write report.html at the end"
    )

    analyze = commands.add_parser("analyze", help="analyse run directories on Spark")
    analyze.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR")
    analyze.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    analyze.add_argument("--json", action="store_true", help="print the analyses as one JSON object")

    report = commands.add_parser("report", help="write a run directory's report.html")
    report.add_argument("run_dir", type=Path, metavar="RUN_DIR")

    study = commands.add_parser(
        "study", help="the default study end to end: simulation, Spark analytics, report"
    )
    study.add_argument("--out", type=Path, default=Path("runs/default-study"))
    study.add_argument("--master", default="local[*]", help="Spark master (default local[*])")

    sweep = commands.add_parser(
        "sweep", help="run a scenario over a grid of settings and seeds as Spark tasks, with tables and a report"
    )
    sweep.add_argument("scenario", nargs="?", help="a scenario TOML file (default: the default study)")
    sweep.add_argument("--seeds", type=int, required=True, help="run seeds 1 to N of every configuration")
    sweep.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="KEY=V1,V2",
        help="sweep a setting over these values (a --set key); several grids: their cartesian product",
    )
    sweep.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="fix a setting for every run")
    sweep.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    sweep.add_argument("--out", type=Path, required=True, help="the sweep directory")

    bench = commands.add_parser(
        "bench", help="measure the kernel's throughput and the standard workload against the floor"
    )
    bench.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    bench.add_argument(
        "--quick", action="store_true", help="one simulated minute of the standard workload, not five"
    )
    bench.add_argument(
        "--sweep", action="store_true", help="also time a sweep of 8 short runs on Spark, local[2] against local[1]"
    )
    bench.add_argument(
        "--analytics",
        action="store_true",
        help="also time the duplicate and final-log Spark jobs on 5 million events from Parquet (minutes)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    if not (sys.argv[1:] if argv is None else argv):
        sys.stderr.write(parser.format_help())
        return EXIT_USAGE
    args = parser.parse_args(argv)
    try:
        if args.command == "run":
            return _run(args)
        if args.command == "bench":
            return _bench(args)
        if args.command == "analyze":
            return _analyze(args)
        if args.command == "report":
            return _report(args.run_dir)
        if args.command == "study":
            return _study(args)
        if args.command == "sweep":
            return _sweep(args)
    except (ScenarioError, FaultError, RunDirError, RunDirRefused) as exc:
        return _usage_error(str(exc))
    except SparkUnavailable as exc:
        sys.stderr.write(f"kafkasim: {exc}\n")
        return EXIT_FAILED
    except KeyboardInterrupt:
        sys.stderr.write("kafkasim: interrupted\n")
        return EXIT_INTERRUPTED
    except OSError as exc:  # a full disk, a file system gone read-only, a closed pipe
        where = f"{exc.filename}: " if exc.filename else ""
        sys.stderr.write(f"kafkasim: {where}{exc.strerror or exc}\n")
        return EXIT_FAILED
    return EXIT_USAGE


def _usage_error(message: str) -> int:
    sys.stderr.write(f"kafkasim: {message}\n")
    return EXIT_USAGE


def _run(args: argparse.Namespace) -> int:
    from sim.cluster.harness import check_scenario  # noqa: PLC0415 - keeps `--help` fast
    from sim.studies.runner import default_out_dir, print_progress, run_scenario  # noqa: PLC0415

    overrides = list(args.set)
    if args.seed is not None:
        if args.seed < 0:
            return _usage_error(f"--seed must be at least 0, got {args.seed}")
        overrides.append(f"run.seed={args.seed}")
    scenario = load_study(args.scenario, overrides)
    check_scenario(scenario)
    out_dir = args.out or default_out_dir(scenario)
    progress = print_progress() if sys.stderr.isatty() else None
    summary = run_scenario(scenario, out_dir, host=HostKind(args.host), progress=progress)
    if progress is not None:
        sys.stderr.write("\n")
    _print_summary(summary, out_dir, as_json=args.json)
    if args.report:
        _write_run_report(out_dir, summary, quiet=args.json)
    if summary["interrupted"]:
        sys.stderr.write(f"kafkasim: interrupted at {summary['sim_ms']} ms; log kept in {out_dir}\n")
        return EXIT_INTERRUPTED
    if summary["failure"]:
        sys.stderr.write(f"kafkasim: {summary['failure']} (details in {out_dir}/failure.txt)\n")
        return EXIT_FAILED
    lines, mistake = consumer_failure_lines(scenario, summary["consumer_failures"])
    for line in lines:
        sys.stderr.write(f"kafkasim: {line}\n")
    return EXIT_USAGE if mistake else 0


INVALID_SESSION_TIMEOUT = "JoinGroup: INVALID_SESSION_TIMEOUT"
"""`consumer_failed`'s error when the coordinator refused the session timeout."""


def consumer_failure_lines(scenario: Scenario, failures: list[dict[str, Any]]) -> tuple[list[str], bool]:
    """One line per `[[consumers]]` entry and fatal error that stopped its consumers, and
    whether one of them is a mistake in the scenario: a session timeout outside the broker's
    `group.min.session.timeout.ms` and `group.max.session.timeout.ms`, which Kafka's
    coordinator refuses (INVALID_SESSION_TIMEOUT) and the consumer throws from `poll()`
    (`InvalidSessionTimeoutException`). Other fatal errors are outcomes of the run."""
    entry_of: dict[str, int] = {}
    for i, entry in enumerate(scenario.consumers):
        for _ in range(entry["count"]):
            entry_of[f"consumer-{len(entry_of) + 1}"] = i
    stopped: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for failure in failures:
        stopped.setdefault((entry_of[failure["node"]], failure["error"]), []).append(failure)
    lines, mistake = [], False
    broker = scenario.sections["broker"]
    for (i, error), found in sorted(stopped.items()):
        nodes = ", ".join(f["node"] for f in found)
        if error == INVALID_SESSION_TIMEOUT:
            mistake = True
            lines.append(
                f"{scenario.source}: [[consumers]] #{i + 1}: session.timeout.ms: "
                f"{scenario.consumers[i]['session.timeout.ms']} is outside the broker's "
                f"group.min.session.timeout.ms ({broker['group.min.session.timeout.ms']}) to "
                f"group.max.session.timeout.ms ({broker['group.max.session.timeout.ms']}): the coordinator "
                f"answered JoinGroup with INVALID_SESSION_TIMEOUT and {nodes} stopped"
            )
        else:
            lines.append(f"{nodes} stopped at {found[0]['ts_ms']} ms on a fatal error ({error})")
    return lines, mistake


def _print_summary(summary: dict[str, Any], out_dir: Path, *, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps(summary) + "\n")
        return
    sys.stdout.write(
        f"run {summary['run_id']}: {summary['sim_ms']} ms simulated in {summary['wall_s']} s, "
        f"{summary['events']} events, {summary['deliveries']} deliveries, "
        f"{summary['rejected_frames']} rejected frames\n"
        f"  events digest {summary['events_digest']}\n"
    )
    if summary["produced"]:
        sys.stdout.write(
            f"  produced {summary['produced']}, acknowledged {summary['acked']}, "
            f"lost {summary['lost_acked']}, written twice {summary['log_duplicates']}\n"
        )
    if summary["consumed"]:
        causes = ", ".join(f"{cause} {n}" for cause, n in summary["duplicates_by_cause"].items())
        sys.stdout.write(
            f"  consumed {summary['consumed']}, duplicates {summary['duplicates']}"
            f"{f' ({causes})' if causes else ''}, rebalances {summary['rebalances']}\n"
        )
    sys.stdout.write(f"  written to {out_dir}\n")


class RunDirError(ValueError):
    """A run directory that is missing or lacks a file a command needs."""


def _check_run_dir(run_dir: Path, *files: str) -> None:
    if not run_dir.is_dir():
        msg = f"{run_dir}: no such run directory"
        raise RunDirError(msg)
    for name in files:
        if not (run_dir / name).is_file():
            hint = " (run kafkasim analyze on it first)" if name == "analysis.json" else ""
            msg = f"{run_dir}: no {name} in this run directory{hint}"
            raise RunDirError(msg)


class SparkUnavailable(RuntimeError):
    """The Spark master cannot be reached, or Spark cannot start or run the job."""


_MASTER_KINDS = ("local", "spark://", "yarn", "k8s://")


def _check_master(master: str) -> None:
    """A standalone master (`spark://host:port`) that does not answer: said before the JVM
    starts, since Spark itself retries for a minute and then logs stack traces. A URL of no
    kind Spark knows is refused here too, as spark-submit would with a Java stack trace."""
    local = re.fullmatch(r"local(\[(\*|[1-9]\d*)(, ?[1-9]\d*)?\]|-cluster\[.*\])?", master)
    if not master.startswith(_MASTER_KINDS) or (master.startswith("local") and not local):
        msg = f"--master {master}: not a Spark master URL (local[N], spark://HOST:PORT, yarn, k8s://...)"
        raise RunDirError(msg)
    if not master.startswith("spark://"):
        return
    import socket  # noqa: PLC0415
    from urllib.parse import urlparse  # noqa: PLC0415

    for hostport in master.removeprefix("spark://").split(","):
        url = urlparse(f"spark://{hostport}")
        try:
            with socket.create_connection((url.hostname or "", url.port or 7077), timeout=3):
                return
        except (OSError, ValueError) as exc:
            reason = exc.strerror or str(exc) if isinstance(exc, OSError) else str(exc)
    msg = f"cannot reach the Spark master {master}: {reason}"
    raise SparkUnavailable(msg)


def _analyze(args: argparse.Namespace) -> int:
    from sim.analytics.prescan import BadEventLog, check_event_log  # noqa: PLC0415

    for run_dir in args.run_dirs:
        if not (run_dir / "events.jsonl").is_file():
            return _usage_error(f"{run_dir}: not a run directory (no events.jsonl)")
        # Said before Spark's start and jobs, not after them.
        written = run_dir / "analysis.json"
        if not os.access(written if written.exists() else run_dir, os.W_OK):
            return _usage_error(f"{written}: cannot write it (read-only)")
    _check_master(args.master)
    try:
        for run_dir in args.run_dirs:
            check_event_log(run_dir / "events.jsonl")
    except BadEventLog as exc:
        return _usage_error(str(exc))
    analyses = _spark_analyses(args.run_dirs, args.master)
    for run_dir, analysis in zip(args.run_dirs, analyses, strict=True):
        (run_dir / "analysis.json").write_text(json.dumps(analysis, indent=2) + "\n")
        if not args.json:
            sys.stdout.write(_analysis_line(run_dir, analysis) + "\n")
    if args.json:
        runs = [{"dir": str(d), **a} for d, a in zip(args.run_dirs, analyses, strict=True)]
        sys.stdout.write(json.dumps({"runs": runs}) + "\n")
    return 0


def _spark_analyses(run_dirs: list[Path], master: str) -> list[dict[str, Any]]:
    """analyze_runs on a session of `master`; Spark's failures become one line."""
    from sim.analytics.jobs import analyze_runs  # noqa: PLC0415 - Spark only when asked

    sys.stderr.write(f"analysing {len(run_dirs)} run(s) on Spark ({master})...\n")
    return _on_spark(master, lambda spark: analyze_runs(spark, run_dirs))


def _on_spark(master: str, work: Callable[[Any], T]) -> T:
    """`work(session)` on a quiet session of `master`, stopped after. Spark's failures become
    SparkUnavailable (one line), Ctrl-C a KeyboardInterrupt."""
    from py4j.protocol import Py4JError  # noqa: PLC0415 - Spark only when asked
    from pyspark.errors import PySparkException  # noqa: PLC0415

    from sim.analytics.session import spark_session  # noqa: PLC0415

    # py4j logs a call broken by an interrupt with its traceback; the CLI says it in one line.
    logging.disable(logging.CRITICAL)
    # The JVM ignores Ctrl-C (PySpark starts it so), and an interrupt while PySpark waits for it
    # to start would leave it running with no one to stop it: the interrupt waits until then.
    deferred: list[bool] = []
    signal.signal(signal.SIGINT, lambda _signum, _frame: deferred.append(True))
    try:
        spark = spark_session(master, quiet=True)
    except (Py4JError, PySparkException, RuntimeError, OSError) as exc:
        msg = f"Spark did not start on {master}: {_first_line(exc)}"  # py4j reads it of the JVM
        _stop_gateway()
        raise SparkUnavailable(msg) from None
    except KeyboardInterrupt:  # from PySpark's own handler, once the JVM has started
        _stop_gateway()
        raise
    if deferred:
        spark.stop()
        raise KeyboardInterrupt
    # PySpark's own Ctrl-C handler calls into the JVM from inside the call it interrupts; and
    # py4j turns an interrupt inside a call into an error of its own.
    interrupted = []

    def interrupt(_signum: int, _frame: Any) -> None:
        interrupted.append(True)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupt)
    try:
        return work(spark)
    except (Py4JError, PySparkException) as exc:
        if interrupted:
            raise KeyboardInterrupt from None
        msg = f"the Spark job failed: {_first_line(exc)}"
        raise SparkUnavailable(msg) from None
    finally:
        with contextlib.suppress(Exception):
            spark.stop()


def _stop_gateway() -> None:
    """Stop the JVM of a session that failed to start, if PySpark had launched one."""
    from pyspark import SparkContext  # noqa: PLC0415

    gateway = SparkContext._gateway  # noqa: SLF001 - the only handle on it PySpark keeps
    with contextlib.suppress(Exception):
        if SparkContext._active_spark_context is not None:  # noqa: SLF001
            SparkContext._active_spark_context.stop()  # noqa: SLF001
    if gateway is not None:
        with contextlib.suppress(Exception):
            gateway.proc.kill()
        SparkContext._gateway = SparkContext._jvm = None  # noqa: SLF001 - a later session launches its own


def _first_line(exc: BaseException) -> str:
    """The line of an error that says what went wrong: for an error py4j relays from the JVM,
    the Java exception's message, not py4j's "An error occurred while calling ..."."""
    try:
        text = str(exc)  # py4j asks the JVM for its exception's text
    except Exception:  # noqa: BLE001 - a JVM gone with its text
        return type(exc).__name__
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].startswith("An error occurred while calling") and lines[1].startswith(": "):
        return lines[1].removeprefix(": ")
    return lines[0] if lines else type(exc).__name__


def _analysis_line(run_dir: Path, analysis: dict[str, Any]) -> str:
    parts = [
        f"{sum(analysis['events_by_type'].values())} events",
        f"{sum(analysis['dropped_by_reason'].values())} dropped messages",
        f"{analysis['rejected_frames']} rejected frames",
    ]
    outcomes = analysis["produce_outcomes"]
    if outcomes:
        parts.append("produce outcomes " + ", ".join(f"{k} {v}" for k, v in outcomes.items()))
        parts.append(f"{len(analysis['isr_changes'])} ISR changes")
        parts.append(f"lost {analysis['lost_acked']}, written twice {analysis['log_duplicates']}")
    if analysis["consumed"]:
        causes = ", ".join(f"{cause} {n}" for cause, n in analysis["duplicates_by_cause"].items())
        parts.append(f"consumed {analysis['consumed']}, duplicates {analysis['duplicates']}{f' ({causes})' if causes else ''}")
    rtt = analysis["ping_rtt_ms"]
    if rtt:
        parts.append(f"ping rtt p50 {rtt['p50']} ms, p99 {rtt['p99']} ms")
    return f"{run_dir}: " + ", ".join(parts)


def _write_run_report(out_dir: Path, summary: dict[str, Any], *, quiet: bool) -> None:
    """The report at the end of a run: the story and plots from the log alone (no Spark).
    A run that failed or was interrupted gets one too: its log is what the user must read."""
    from sim.report.page import write_report  # noqa: PLC0415

    path = write_report(out_dir, summary)
    if not quiet:
        sys.stdout.write(f"  report {path}\n")


def _report(run_dir: Path) -> int:
    """The report needs the summary and the event log; Spark's analysis.json adds its tables."""
    _check_run_dir(run_dir, "summary.json", "events.jsonl")
    from sim.analytics.prescan import BadEventLog, check_event_log  # noqa: PLC0415
    from sim.report.page import ANALYSIS_TABLES, SUMMARY_KEYS, write_report  # noqa: PLC0415

    summary = _json_object(run_dir / "summary.json", "a run summary")
    missing = [key for key in SUMMARY_KEYS if key not in summary]
    if missing:
        msg = f"{run_dir / 'summary.json'}: not a run summary (no {missing[0]!r})"
        raise RunDirError(msg)
    spark = run_dir / "analysis.json"
    analysis = _json_object(spark, "an analysis") if spark.is_file() else None
    for key in ANALYSIS_TABLES if analysis else ():
        if not isinstance(analysis.get(key, {}), dict):
            msg = f"{spark}: not an analysis ({key} is not an object)"
            raise RunDirError(msg)
    try:
        check_event_log(run_dir / "events.jsonl")
    except BadEventLog as exc:
        raise RunDirError(str(exc)) from None
    path = write_report(run_dir, summary, analysis)
    sys.stdout.write(f"report written to {path}\n")
    return 0


def _json_object(path: Path, what: str) -> dict[str, Any]:
    """A JSON object read from `path`, or RunDirError naming the file."""
    try:
        value = json.loads(path.read_bytes())
    except ValueError as exc:  # bad JSON or bad UTF-8
        msg = f"{path}: not {what} ({exc})"
        raise RunDirError(msg) from None
    if not isinstance(value, dict):
        msg = f"{path}: not {what} (not a JSON object)"
        raise RunDirError(msg)
    return value


def _study(args: argparse.Namespace) -> int:
    run_args = argparse.Namespace(
        scenario=None, seed=None, set=[], out=args.out, json=False, host=HostKind.PYKKA.value, report=False
    )
    sys.stderr.write("1/3 simulating the default study...\n")
    status = _run(run_args)
    if status != 0:
        return status
    sys.stderr.write("2/3 analysing the run on Spark...\n")
    status = _analyze(argparse.Namespace(run_dirs=[args.out], master=args.master, json=False))
    if status != 0:
        return status
    sys.stderr.write("3/3 writing the report...\n")
    return _report(args.out)


def _sweep(args: argparse.Namespace) -> int:
    from sim.studies.sweep import SweepTaskFailed, prepare_sweep_dir, progress_bar, run_sweep  # noqa: PLC0415
    from sim.studies.sweep_plan import plan_sweep  # noqa: PLC0415

    plan = plan_sweep(args.scenario, args.set, args.grid, args.seeds)
    _check_master(args.master)
    prepare_sweep_dir(args.out)
    tty = sys.stderr.isatty()
    if tty:
        sys.stderr.write(
            f"sweeping {len(plan.configs)} configuration(s) x {plan.seeds} seed(s) on Spark ({args.master})...\n"
        )
    progress = progress_bar() if tty else None

    def sweep(spark: Any) -> dict[str, Any]:
        # The tables are a row per run: a cluster's default of 200 shuffle partitions only costs.
        spark.conf.set("spark.sql.shuffle.partitions", "2")
        return run_sweep(plan, args.out, spark=spark, progress=progress)

    try:
        outcome = _on_spark(args.master, sweep)
    except SweepTaskFailed as exc:
        sys.stderr.write(f"{chr(10) if tty else ''}kafkasim: {exc}\n")
        return EXIT_FAILED
    if tty:
        sys.stderr.write("\n")
    for row in outcome["configs"]:
        values = ", ".join(f"{k}={row[k]}" for k in plan.grid_keys)
        mean, low, high = row["duplicates_mean"], row["duplicates_ci95_low"], row["duplicates_ci95_high"]
        figure = "no finished run" if mean is None else f"duplicates {mean:g}"
        if low is not None:
            figure += f" (95% CI {low:.4g} to {high:.4g})"
        sys.stdout.write(f"{row['config_id']}{' ' + values if values else ''}: {figure}, n {row['n']}\n")
    sys.stdout.write(
        f"  {len(outcome['runs'])} runs in {args.out}/runs; tables runs.csv, configs.csv (and .parquet); "
        f"report {args.out}/report.html\n"
    )
    return _sweep_status(plan, outcome["results"], args.out)


def _sweep_status(plan: Any, results: list[dict[str, Any]], out: Path) -> int:
    """1 when a run failed (one line each), 2 when a run showed a mistake in the input (as
    `run` does), else 0."""
    from sim.cluster.scenario import parse_scenario  # noqa: PLC0415

    status = 0
    configs = {c.config_id: c for c in plan.configs}
    overrides = {c.config_id: c.overrides for c in plan.configs}
    for result in results:
        name = Path(result["run_dir"]).name
        if result["failure"]:
            run = plan.describe_run(configs[result["config_id"]], result["seed"])
            sys.stderr.write(f"kafkasim: {run}: {result['failure']} (details in {out}/runs/{name}/failure.txt)\n")
            status = max(status, EXIT_FAILED)
        if result["consumer_failures"]:
            scenario = parse_scenario(plan.text, plan.source, [*plan.sets, *overrides[result["config_id"]]])
            lines, mistake = consumer_failure_lines(scenario, result["consumer_failures"])
            for line in lines:
                sys.stderr.write(f"kafkasim: {name}: {line}\n")
            status = EXIT_USAGE if mistake else status
    return status


def _bench(args: argparse.Namespace) -> int:
    from sim.studies.bench import run_kernel_bench, run_std_bench, run_sweep_bench  # noqa: PLC0415

    if not args.json:
        sys.stderr.write("measuring the kernel: Pykka host against the direct executor...\n")
    figures = {"kernel": run_kernel_bench()}
    if not args.json:
        length = "one simulated minute" if args.quick else "five simulated minutes"
        sys.stderr.write(f"running the standard workload, {length}, and the floor...\n")
    figures["std"] = run_std_bench(quick=args.quick)
    figures["producer"] = figures["std"].pop("producer")
    if args.sweep:
        if not args.json:
            sys.stderr.write("timing a sweep of 8 short runs on Spark, local[1] then local[2]...\n")
        figures["sweep"] = run_sweep_bench()
    if args.analytics:
        from sim.studies.analytics_bench import analytics_figures  # noqa: PLC0415 - Spark only when asked

        if not args.json:
            sys.stderr.write("timing the Spark duplicate and final-log jobs on 5 million events...\n")
        figures["analytics"] = analytics_figures()
    if args.json:
        sys.stdout.write(json.dumps(figures) + "\n")
        return 0
    k, std = figures["kernel"], figures["std"]
    sys.stdout.write(
        f"kernel: {k['pykka_deliveries_per_s']} deliveries/s under Pykka, "
        f"{k['direct_deliveries_per_s']} direct; ratio {k['ratio']} "
        f"({k['actors']} actors, {k['deliveries']} deliveries, same digest: {k['same_digest']})\n"
        f"std: {std['simulated_s']:g} simulated s in {std['wall_s']} s, {std['realtime_factor']}x real "
        f"time; {std['us_per_delivery']} us per delivery, {std['floor_ratio']}x the floor "
        f"({std['floor_us_per_delivery']} us); last/first {std['segment_s']:g} s: "
        f"{std['minute5_vs_minute1']}; peak RSS {std['peak_rss_mb']} MB\n"
        f"producer: {figures['producer']['records_per_wall_s']} records per wall second, "
        f"{figures['producer']['records_per_request']} records per Produce request\n"
    )
    if args.sweep:
        sw = figures["sweep"]
        sys.stdout.write(
            f"sweep: {sw['runs']} runs in {sw['local1_wall_s']} s on local[1], {sw['local2_wall_s']} s on "
            f"local[2]: speedup {sw['speedup']} (same digests: {sw['same_digests']}; load average "
            f"{sw['load_average_before']} before, {sw['load_average_after']} after, {sw['cpus']} CPUs)\n"
        )
    if args.analytics:
        a = figures["analytics"]
        sys.stdout.write(
            f"analytics: {a['events_per_s']} events/s warm on {a['master']} ({a['events']} events, "
            f"{a['runs']} runs, {a['warm_s']} s, {a['warm_cpu_s']} CPU s at load {a['load_average']}; "
            f"cold {a['cold_s']} s)\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
