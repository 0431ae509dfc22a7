"""The `kafkasim` command line.

    kafkasim run [SCENARIO] [--seed N] [--set KEY=VALUE ...] [--out DIR] [--json] [--host pykka|direct | --check-determinism] [--no-report]
    kafkasim analyze RUN_DIR [RUN_DIR ...] [--master URL] [--json]
    kafkasim report RUN_DIR
    kafkasim study [--out DIR] [--master URL]
    kafkasim sweep [SCENARIO] --seeds N [--grid KEY=V1,V2 ...] [--set KEY=VALUE ...] [--master URL] --out DIR [--resume]
    kafkasim check [SCENARIO] --seeds N [--profile VERSION] [--faults KIND,...] [--safe] [--duration-ms MS] [--out DIR] [--master URL] [--json]
    kafkasim bench [--json] [--quick] [--protocols] [--sweep] [--analytics]

A user's mistake (a bad file, key or value) is one line on stderr naming it, and exit status 2;
a simulator failure is one line with the seed and the event, exit status 1, the traceback in the
run directory's failure.txt; an interrupt exits 130 after writing the summary. A determinism
check whose two logs differ is a simulator failure too: exit status 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

from sim.cli import check as check_command
from sim.cli import read as read_commands
from sim.cli import run as run_command
from sim.cli import studies as study_commands
from sim.cli.errors import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    RunDirError,
    SparkUnavailable,
    usage_error,
)
from sim.cluster.faults import FaultError
from sim.cluster.scenario import ScenarioError
from sim.engine.kernel import HostKind
from sim.studies.rundir import RunDirRefused

__all__ = ["main"]


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
        help="pykka (the product, the default) or direct (the in-thread reference executor)",
    )
    run.add_argument(
        "--check-determinism",
        action="store_true",
        help="run under both hosts into OUT/pykka and OUT/direct and compare the event logs line by line",
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
    sweep.add_argument(
        "--resume",
        action="store_true",
        help="finish a sweep that stopped part way: run only the runs not done, then write the tables and report of all",
    )

    check_command.add_parser(commands)

    bench = commands.add_parser(
        "bench", help="measure the kernel's throughput and the standard workload against the floor"
    )
    bench.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    bench.add_argument(
        "--quick", action="store_true", help="one simulated minute of the standard workload, not five"
    )
    bench.add_argument(
        "--protocols",
        action="store_true",
        help="also run the standard workload on 4.0 under the classic and the consumer protocol, alternated",
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
            return run_command.run(args)
        if args.command == "bench":
            return study_commands.bench(args)
        if args.command == "analyze":
            return read_commands.analyze(args)
        if args.command == "report":
            return read_commands.report(args.run_dir)
        if args.command == "study":
            return study_commands.study(args)
        if args.command == "sweep":
            return study_commands.sweep(args)
        if args.command == "check":
            return check_command.check(args)
    except (ScenarioError, FaultError, RunDirError, RunDirRefused) as exc:
        return usage_error(str(exc))
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
