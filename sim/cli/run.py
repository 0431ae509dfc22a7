"""`kafkasim run`: a scenario, or the default study, into its run directory."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim.cli.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE, usage_error
from sim.cli.figures import group_figures
from sim.cli.progress import RunProgress
from sim.cluster.scenario import Scenario
from sim.engine.divergence import describe
from sim.engine.kernel import HostKind
from sim.studies.builtin import load_study

if TYPE_CHECKING:
    from sim.studies.determinism import DeterminismCheck

__all__ = ["consumer_failure_lines", "determinism_json", "run"]


def run(args: argparse.Namespace) -> int:
    from sim.cluster.harness import check_scenario  # noqa: PLC0415 - keeps `--help` fast
    from sim.studies.runner import default_out_dir, run_scenario  # noqa: PLC0415

    overrides = list(args.set)
    if args.seed is not None:
        if args.seed < 0:
            return usage_error(f"--seed must be at least 0, got {args.seed}")
        overrides.append(f"run.seed={args.seed}")
    checking = getattr(args, "check_determinism", False)
    if checking and args.host is not None:
        return usage_error(f"--check-determinism runs under both hosts, pykka then direct: drop --host {args.host}")
    scenario = load_study(args.scenario, overrides)
    check_scenario(scenario)
    if checking:
        return _check_determinism(args, scenario)
    out_dir = args.out or default_out_dir(scenario)
    def replacing(run_id: str) -> None:
        _say_replacing(out_dir, run_id)

    progress = RunProgress(scenario.get("run", "duration.ms"), tty=sys.stderr.isatty())
    host = HostKind(args.host or HostKind.PYKKA.value)
    summary = run_scenario(scenario, out_dir, host=host, progress=progress, replacing=replacing)
    progress.finish(summary["sim_ms"])
    _print_summary(summary, out_dir, as_json=args.json)
    if args.report:
        _write_run_report(out_dir, summary, quiet=args.json)
    return _outcome(scenario, summary, out_dir)


def _say_replacing(out_dir: Path, run_id: str) -> None:
    earlier = f"the earlier run {run_id}" if run_id else "an earlier run (it left no summary.json or log to name it)"
    sys.stderr.write(f"kafkasim: replacing {earlier} in {out_dir}\n")


def _outcome(scenario: Scenario, summary: dict[str, Any], out_dir: Path) -> int:
    """A finished run's exit status, with its lines on stderr: interrupted, failed, or what
    stopped its consumers."""
    if summary["interrupted"]:
        sys.stderr.write(f"kafkasim: interrupted at {summary['sim_ms']} ms; log kept in {out_dir}\n")
        return EXIT_INTERRUPTED
    if summary["failure"]:
        sys.stderr.write(f"kafkasim: {summary['failure']} (details in {out_dir}/failure.txt)\n")
        return EXIT_FAILED
    lines, mistake = consumer_failure_lines(scenario, summary["consumer_failures"])
    lines = [*map(shared_instance_id_line, summary.get("shared_instance_ids", [])), *lines]
    for line in lines:
        sys.stderr.write(f"kafkasim: {line}\n")
    return EXIT_USAGE if mistake else 0


def _check_determinism(args: argparse.Namespace, scenario: Scenario) -> int:
    """`--check-determinism`: the scenario under each host, the logs compared. Identical logs
    are one line on stdout; differing ones name their first differing line on stderr and exit
    with the status of a simulator failure. No report is written: `kafkasim report` writes one
    from either kept directory."""
    from sim.studies.determinism import check_determinism, default_check_dir  # noqa: PLC0415

    out_dir = args.out or default_check_dir(scenario)
    shown: dict[HostKind, RunProgress] = {}

    def progress(host: HostKind) -> RunProgress:
        shown[host] = RunProgress(scenario.get("run", "duration.ms"), tty=sys.stderr.isatty())
        return shown[host]

    check = check_determinism(
        scenario,
        out_dir,
        progress=progress,
        finished=lambda host, summary: shown[host].finish(summary["sim_ms"]),
        replacing=_say_replacing,
    )
    if check.comparison is None:  # interrupted: half a check compares nothing
        return _outcome(scenario, check.summaries[-1], check.dirs[len(check.summaries) - 1])
    comparison, logs = check.comparison, [d / "events.jsonl" for d in check.dirs]
    if args.json:
        sys.stdout.write(json.dumps(determinism_json(check)) + "\n")
    elif comparison.divergence is None:
        sys.stdout.write(
            f"deterministic: {comparison.events:,} events, identical under {' and '.join(d.name for d in check.dirs)}, "
            f"sha256 {comparison.digest} ({logs[0]}, {logs[1]})\n"
        )
    if comparison.divergence is not None:
        first, *rest = describe(comparison.divergence, *(d.name for d in check.dirs))
        sys.stderr.write(f"kafkasim: not deterministic: {first} ({logs[0]}, {logs[1]})\n" + "".join(f"{line}\n" for line in rest))
        return EXIT_FAILED
    return _outcome(scenario, check.summaries[0], check.dirs[0])  # the same log: the same outcome under both


def determinism_json(check: DeterminismCheck) -> dict[str, Any]:
    """`--check-determinism --json`: the verdict, the logs' figures and the divergence if any."""
    comparison = check.comparison
    assert comparison is not None, "an interrupted check prints no verdict"
    divergence = comparison.divergence
    return {
        "deterministic": divergence is None,
        "events": comparison.events,
        "events_digest": comparison.digest,
        "runs": {d.name: str(d) for d in check.dirs},
        "divergence": None if divergence is None else asdict(divergence),
    }


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


def shared_instance_id_line(shared: dict[str, Any]) -> str:
    """Consumers that share a `group.instance.id`, and which of them the coordinator stopped."""
    nodes = ", ".join(shared["consumers"])
    outcome = f"the coordinator stopped {shared['fenced']} ({shared['error']})" if shared["fenced"] else "none was stopped"
    return f"{nodes} share group.instance.id {shared['instance_id']!r} in group {shared['group_id']!r}: {outcome}"


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
    if summary["consumed"] or summary["skipped"]:
        sys.stdout.write(
            f"  consumed {summary['consumed']}, {group_figures(summary)}, rebalances {summary['rebalances']}\n"
        )
    sys.stdout.write(f"  written to {out_dir}\n")


def _write_run_report(out_dir: Path, summary: dict[str, Any], *, quiet: bool) -> None:
    """The report at the end of a run: the story and plots from the log alone (no Spark).
    A run that failed or was interrupted gets one too: its log is what the user must read."""
    from sim.report.page import write_report  # noqa: PLC0415

    path = write_report(out_dir, summary)
    if not quiet:
        sys.stdout.write(f"  report {path}\n")
