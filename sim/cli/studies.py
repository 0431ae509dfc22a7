"""`kafkasim study`, `kafkasim sweep` and `kafkasim bench`."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from sim.cli.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE
from sim.cli.progress import RunsProgress, phase
from sim.cli.read import analyze, report
from sim.cli.run import consumer_failure_lines, run
from sim.cli.spark import check_master, on_spark
from sim.engine.kernel import HostKind

__all__ = ["bench", "study", "sweep"]


def study(args: argparse.Namespace) -> int:
    run_args = argparse.Namespace(
        scenario=None, seed=None, set=[], out=args.out, json=False, host=HostKind.PYKKA.value, report=False
    )
    sys.stderr.write("1/3 simulating the default study...\n")
    status = run(run_args)
    if status != 0:
        # A run stopped by Ctrl-C or a failure still gets its report: its log is what to read.
        if (args.out / "summary.json").is_file():
            report(args.out)
        return status
    sys.stderr.write("2/3 analysing the run on Spark...\n")
    try:
        status = analyze(argparse.Namespace(run_dirs=[args.out], master=args.master, json=False))
    except KeyboardInterrupt:
        sys.stderr.write("kafkasim: interrupted during the analysis; writing the report without Spark's tables\n")
        report(args.out)
        return EXIT_INTERRUPTED
    if status != 0:
        return status
    sys.stderr.write("3/3 writing the report...\n")
    return report(args.out)


def sweep(args: argparse.Namespace) -> int:
    from sim.studies.sweep import prepare_sweep_dir, run_sweep  # noqa: PLC0415
    from sim.studies.sweep_plan import plan_sweep  # noqa: PLC0415
    from sim.studies.sweep_resume import SweepStopped, check_resumable, clean_partial_tables  # noqa: PLC0415

    plan = plan_sweep(args.scenario, args.set, args.grid, args.seeds)
    check_master(args.master)
    if args.resume:
        check_resumable(plan, args.out)
    else:
        prepare_sweep_dir(args.out)
    phase(
        f"sweeping {len(plan.configs)} configuration(s) x {plan.seeds} seed(s) on Spark ({args.master})",
        step=False,
    )
    progress = RunsProgress(tty=sys.stderr.isatty())

    def step(text: str) -> None:
        progress.finish()  # the bar's line ends before the next phase's
        phase(text)

    def sweep(spark: Any) -> dict[str, Any]:
        # The tables are a row per run: a cluster's default of 200 shuffle partitions only costs.
        spark.conf.set("spark.sql.shuffle.partitions", "2")
        return run_sweep(plan, args.out, spark=spark, progress=progress, resume=args.resume, phase=step)

    phase("starting Spark")
    try:
        outcome = on_spark(args.master, sweep)
    except SweepStopped as exc:
        progress.finish()
        interrupted = isinstance(exc.cause, KeyboardInterrupt)
        sys.stderr.write(f"kafkasim: {'interrupted' if interrupted else exc}\n")
        _how_to_finish(args, plan, exc.done, exc.total, tables=exc.tables)
        return EXIT_INTERRUPTED if interrupted else EXIT_FAILED
    except KeyboardInterrupt:  # again, while the tables of the runs done were written
        progress.finish()
        sys.stderr.write("kafkasim: interrupted\n")
        _how_to_finish(args, plan, None, len(plan.runs()), tables=False)
        return EXIT_INTERRUPTED
    finally:
        clean_partial_tables(args.out)
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


def _how_to_finish(args: argparse.Namespace, plan: Any, done: int | None, total: int, *, tables: bool) -> None:
    """After a sweep stopped part way: what is written, and the command that finishes it."""
    command = ["kafkasim", "sweep", *([args.scenario] if args.scenario else []), "--seeds", str(args.seeds)]
    for grid in args.grid:
        command += ["--grid", grid]
    for setting in args.set:
        command += ["--set", setting]
    if args.master != "local[*]":
        command += ["--master", args.master]
    command += ["--out", str(args.out), "--resume"]
    if tables:
        written = f"{done} of {total} runs done: their tables and report are in {args.out}"
    elif done == 0:
        written = f"no run of {total} done"
    else:
        written = "the tables were not written"
    sys.stderr.write(f"  {written}; finish the sweep with: {shlex.join(command)}\n")


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


def bench(args: argparse.Namespace) -> int:
    from sim.studies.bench import run_kernel_bench, run_protocols_bench, run_std_bench, run_sweep_bench  # noqa: PLC0415

    if not args.json:
        sys.stderr.write("measuring the kernel: Pykka host against the direct executor...\n")
    figures = {"kernel": run_kernel_bench()}
    if not args.json:
        length = "one simulated minute" if args.quick else "five simulated minutes"
        sys.stderr.write(f"running the standard workload, {length}, and the floor...\n")
    figures["std"] = run_std_bench(quick=args.quick)
    figures["producer"] = figures["std"].pop("producer")
    if args.protocols:
        if not args.json:
            sys.stderr.write("running the standard workload on 4.0, classic then consumer protocol, twice...\n")
        figures["protocols"] = run_protocols_bench(quick=args.quick)
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
    if args.protocols:
        pr = figures["protocols"]
        sys.stdout.write(
            f"protocols: {pr['simulated_s']:g} simulated s on 4.0 in {pr['classic_wall_s']} s classic, "
            f"{pr['consumer_wall_s']} s consumer protocol: {pr['consumer_vs_classic']}x "
            f"({pr['classic_rebalances']} and {pr['consumer_rebalances']} rebalances)\n"
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
