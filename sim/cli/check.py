"""`kafkasim check`: a fault campaign on Spark, its result table, and its figures as JSON."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from sim.cli.errors import EXIT_FAILED, EXIT_USAGE
from sim.cli.progress import RunsProgress, phase
from sim.cli.spark import check_master, on_spark
from sim.cluster.scenario import ScenarioError
from sim.studies.rundir import RunDirRefused

__all__ = ["add_parser", "check"]

CHECK_FILES = ("check.json", "scenarios", "runs", "shrunk")
SHRINK_DEFAULT = 5


def add_parser(commands: Any) -> None:
    check = commands.add_parser(
        "check", help="a fault campaign: seeded random faults over random configurations, one Spark task per seed"
    )
    check.add_argument(
        "scenario", nargs="?", help="a base scenario whose cluster and workload the faults are drawn over (default: drawn too)"
    )
    check.add_argument("--seeds", type=int, required=True, help="run seeds 1 to N")
    check.add_argument("--profile", help="the Kafka version (default: each seed draws one; with SCENARIO, its own)")
    check.add_argument("--faults", help="comma-separated campaign kinds (default: each seed enables a random subset)")
    check.add_argument("--safe", action="store_true", help="acks=all, RF 3, min ISR 2, no unclean election, idempotence")
    check.add_argument("--duration-ms", type=int, help="simulated time of each run (default 30000, or SCENARIO's)")
    check.add_argument("--out", type=Path, default=Path("runs/check"), help="the campaign directory (default runs/check)")
    check.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    check.add_argument(
        "--shrink",
        type=int,
        default=SHRINK_DEFAULT,
        metavar="N",
        help=f"shrink the first N failing seeds to minimal scenarios in OUT/shrunk (default {SHRINK_DEFAULT}; 0: none)",
    )
    check.add_argument("--json", action="store_true", help="print the campaign's figures as one JSON object")


def check(args: argparse.Namespace) -> int:
    """Exit status 0 when every run kept every invariant and none failed, else 1."""
    from sim.studies.campaign import check_tasks, run_check, totals, with_shrunk  # noqa: PLC0415
    from sim.studies.shrink import run_shrinks, shrink_tasks  # noqa: PLC0415

    if args.seeds < 1:
        return _usage(f"--seeds {args.seeds}: expected at least 1")
    if args.shrink < 0:
        return _usage(f"--shrink {args.shrink}: expected 0 (no shrinking) or more")
    if args.duration_ms is not None and args.duration_ms < 1000:  # noqa: PLR2004
        return _usage(f"--duration-ms {args.duration_ms}: expected at least 1000")
    if args.safe and args.scenario:
        return _usage("--safe draws the configuration; with a SCENARIO the configuration is the scenario's")
    kinds = [k.strip() for k in args.faults.split(",")] if args.faults is not None else None
    base = _base(args.scenario)
    try:
        tasks = check_tasks(
            args.seeds, args.out, profile=args.profile, kinds=kinds, base=base, safe=args.safe, duration_ms=args.duration_ms
        )
    except ScenarioError as exc:
        return _usage(str(exc))
    except ValueError as exc:  # the generator's unknown kind or profile
        option = "--faults" if "fault kind" in str(exc) else "--profile"
        return _usage(f"{option}: {exc}")
    check_master(args.master)
    _prepare(args.out)
    phase(f"checking {len(tasks)} seed(s) on Spark ({args.master})", step=False)

    progress = RunsProgress(tty=sys.stderr.isatty())

    def campaign(spark: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        try:
            results = run_check(spark, tasks, progress)
        finally:
            progress.finish()  # the bar's line ends before the next phase's
        shrinks = shrink_tasks(totals(results)["failures"], args.out, args.shrink)
        if shrinks:
            phase(f"shrinking {len(shrinks)} failing seed(s) on Spark", step=False)
        return results, run_shrinks(spark, shrinks)

    results, shrunk = on_spark(args.master, campaign)
    figures = with_shrunk(totals(results), shrunk)
    saved = {**figures, "results": results, "shrinks": shrunk}
    (args.out / "check.json").write_text(json.dumps(saved, indent=2) + "\n", encoding="utf-8")
    if args.json:
        sys.stdout.write(json.dumps(figures, sort_keys=True) + "\n")
    else:
        _table(results, figures, args.out)
    return EXIT_FAILED if figures["failures"] else 0


def _usage(message: str) -> int:
    sys.stderr.write(f"kafkasim: {message}\n")
    return EXIT_USAGE


def _base(path: str | None) -> tuple[str, str] | None:
    if path is None:
        return None
    try:
        return Path(path).read_text(encoding="utf-8"), path
    except FileNotFoundError:
        msg = f"{path}: no such scenario file"
        raise ScenarioError(msg) from None


def _prepare(out: Path) -> None:
    """Create `out`, or empty it of an earlier campaign; a directory of other files is refused."""
    if out.is_dir():
        present = sorted(p.name for p in out.iterdir())
        if present and "check.json" not in present:
            msg = f"--out {out}: not empty and holds no campaign (found {', '.join(present[:3])}); choose another directory"
            raise RunDirRefused(msg)
        for name in CHECK_FILES:
            path = out / name
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)


def _table(results: list[dict[str, Any]], figures: dict[str, Any], out: Path) -> None:
    write = sys.stdout.write
    write(f"{'seed':>5}  {'version':<7} {'violations':>10} {'lost':>5} {'dups':>5} {'skipped':>7} {'anomalies':>9}  checks failed\n")
    from sim.studies.campaign import checks  # noqa: PLC0415

    for r in results:
        unexplained = sum(r["anomalies"].values())
        failure = ", ".join(checks(r))
        write(
            f"{r['seed']:>5}  {r['version'] or '-':<7} {r['violation_count']:>10} {r['lost_acked']:>5} "
            f"{r['duplicates']:>5} {r['skipped']:>7} {unexplained:>9}  {failure}\n"
        )
    causes = ", ".join(f"{cause} {n}" for cause, n in figures["duplicates_by_cause"].items()) or "none"
    write(
        f"  {figures['runs']} runs: {figures['violations']} violations, {figures['lost_acked']} acknowledged records lost, "
        f"duplicates by cause: {causes}; runs in {out}/runs, scenarios in {out}/scenarios, figures in {out}/check.json\n"
    )
    for failure in figures["failures"]:
        shrunk = " (shrunk)" if failure["shrunk"] else ""
        write(f"  seed {failure['seed']}: {failure['check']}; replay{shrunk}: {failure['replay']}\n")
