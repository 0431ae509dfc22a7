"""`kafkasim check`: a fault campaign, one Spark task per seed.

Each task builds its scenario from (seed, profile, kinds) with the generator
(`sim.studies.campaign_plan`), writes it to `OUT/scenarios/seed-N.toml` (so that
`kafkasim run` of that file replays the run, whatever happens next), runs it into
`OUT/runs/seed-N/` and returns its summary's figures. A task catches everything its run raises:
a simulator crash is that seed's failure, reported with its replay command, and the other
tasks go on.

Without a base scenario the generator draws the whole scenario. With one, the base's cluster
and workload are kept, with its own faults, and the seed's faults are drawn over it: the
kinds the base can express (no consumer kinds without `[[consumers]]`, no session expiry
without ZooKeeper), aimed at its brokers and its first consumer group, within its
`duration.ms`. Both ways, the run reports invariant violations rather than stopping at the
first (`invariants = "report"`).

What fails a seed is `checks(result)`: a simulator failure, an invariant broken, an
acknowledged record lost, a record skipped, a Jepsen anomaly left unexplained, or a duplicate
whose cause is a Kafka bug. The duplicates of at-least-once delivery (a crash before a commit,
a rebalance) and the records an operator's reset skips are Kafka's documented behaviour: figures,
not failures.
"""

from __future__ import annotations

import random
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from actors.group.placement import partition_for
from sim.cluster.scenario import Scenario, ScenarioError, parse_scenario
from sim.cluster.wiring import consumer_configs
from sim.studies.campaign_faults import KINDS, Shape
from sim.studies.campaign_plan import DURATION_MS, check_kinds, draw_faults, plan, swarm
from sim.studies.watched import collect_watched

__all__ = [
    "campaign_text",
    "check_tasks",
    "checks",
    "figures_of",
    "run_check",
    "run_check_task",
    "shape_of",
    "totals",
    "with_shrunk",
]

CONSUMER_KINDS = frozenset(
    {
        "consumer_crash",
        "consumer_pause",
        "slow",
        "stall",
        "zombie",
        "rolling_restart_consumers",
        "reset_offsets",
        "coordinator_failover",
    }
)
"""Kinds that act on a consumer group."""
CONSUMER_PROTOCOL_SESSION_MS = 45_000


def shape_of(scenario: Scenario) -> Shape:
    """What the faults need of a base scenario: its brokers, its first group's consumers and
    coordinator (the preferred leader of the group's `__consumer_offsets` partition, placed
    round robin as every topic is), and the timeouts."""
    brokers = scenario.get("cluster", "brokers")
    if brokers < 1:
        msg = f"{scenario.source}: a campaign's base scenario needs brokers (it has none)"
        raise ScenarioError(msg)
    configs = consumer_configs(scenario)
    group = configs[0].group_id if configs else ""
    members = [c for c in configs if c.group_id == group]
    first = next((entry for entry in scenario.consumers if entry["group.id"] == group), None)
    offsets = scenario.get("broker", "offsets.topic.num.partitions")
    session = CONSUMER_PROTOCOL_SESSION_MS
    if first is not None and first.get("group.protocol", "classic") == "classic":
        session = first["session.timeout.ms"]
    return Shape(
        brokers=tuple(f"broker-{n}" for n in range(1, brokers + 1)),
        consumers=tuple(c.name for c in members),
        group=group,
        topic=first["topics"][0] if first is not None else scenario.topics[0]["name"],
        coordinator=f"broker-{partition_for(group, offsets) % brokers + 1}",
        zk_session_ms=scenario.get("broker", "zookeeper.session.timeout.ms"),
        consumer_session_ms=session,
        max_poll_interval_ms=first["max.poll.interval.ms"] if first is not None else 300_000,
        duration_ms=scenario.get("run", "duration.ms"),
    )


def _applicable(scenario: Scenario, shape: Shape) -> tuple[str, ...]:
    """The kinds the base scenario can express."""
    zookeeper = scenario.get("cluster", "metadata.mode") == "zookeeper"
    cuts = len(shape.brokers) > 1 or bool(shape.consumers)
    return tuple(
        kind
        for kind in KINDS
        if (shape.consumers or kind not in CONSUMER_KINDS)
        and (zookeeper or kind not in ("session_expiry", "controller_failover"))
        and (cuts or kind not in ("partition", "partition_one_way"))
    )


def campaign_text(
    seed: int,
    profile: str | None,
    kinds: Sequence[str] | None,
    *,
    base: tuple[str, str] | None = None,
    safe: bool = False,
    duration_ms: int | None = None,
) -> str:
    """The seed's scenario text: the generator's, or `base` (its text and source) resolved with
    the seed, the profile and `duration_ms`, and the seed's faults drawn over it."""
    chosen = check_kinds(list(kinds) if kinds is not None else None)
    if base is None:
        return plan(seed, profile, chosen, safe=safe, duration_ms=duration_ms or DURATION_MS)
    text, source = base
    overrides = [f"run.seed={seed}", "run.invariants=report", f"run.name=check-{seed}"]
    overrides += [f"kafka.version={profile}"] if profile is not None else []
    overrides += [f"run.duration.ms={duration_ms}"] if duration_ms is not None else []
    scenario = parse_scenario(text, source, overrides)
    shape = shape_of(scenario)
    possible = _applicable(scenario, shape)
    if chosen is not None:
        left_out = [kind for kind in chosen if kind not in possible]
        if left_out:
            msg = f"{source}: the scenario cannot take fault kind(s) {', '.join(left_out)} (it has no consumer group, no ZooKeeper, or nothing to cut apart)"
            raise ScenarioError(msg)
    rng = random.Random(seed)
    enabled = chosen if chosen is not None else swarm(rng, possible)
    head = f"# kafkasim fault campaign: seed {seed}; kinds {', '.join(enabled)}; over {source}\n"
    return head + scenario.to_toml().rstrip("\n") + "\n" + draw_faults(rng, shape, enabled)


def check_tasks(
    seeds: int,
    out: Path,
    *,
    profile: str | None = None,
    kinds: Sequence[str] | None = None,
    base: tuple[str, str] | None = None,
    safe: bool = False,
    duration_ms: int | None = None,
) -> list[dict[str, Any]]:
    """One task per seed, 1 to `seeds`. The generator is checked here, on the driver, with the
    first seed, so a bad profile or kind is one line before Spark starts."""
    args = {"profile": profile, "kinds": list(kinds) if kinds is not None else None, "base": base, "safe": safe}
    campaign_text(1, profile, kinds, base=base, safe=safe, duration_ms=duration_ms)
    return [
        {
            **args,
            "duration_ms": duration_ms,
            "seed": seed,
            "scenario": str(out / "scenarios" / f"seed-{seed}.toml"),
            "run_dir": str(out / "runs" / f"seed-{seed}"),
        }
        for seed in range(1, seeds + 1)
    ]


def run_check_task(task: dict[str, Any]) -> dict[str, Any]:
    """One seed's run, in a Spark executor's Python worker: its figures, or its failure."""
    from sim.engine.cpu_claim import one_core  # noqa: PLC0415
    from sim.studies.runner import run_scenario  # noqa: PLC0415

    seed, path = task["seed"], Path(task["scenario"])
    result: dict[str, Any] = {"seed": seed, "scenario": str(path), "run_dir": task["run_dir"]}
    base = tuple(task["base"]) if task["base"] is not None else None
    try:
        text = campaign_text(
            seed, task["profile"], task["kinds"], base=base, safe=task["safe"], duration_ms=task["duration_ms"]
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        scenario = parse_scenario(text, str(path))
        with one_core():
            summary = run_scenario(scenario, Path(task["run_dir"]))
    except BaseException as exc:  # noqa: BLE001 - this seed's failure; the others go on
        Path(task["run_dir"]).mkdir(parents=True, exist_ok=True)
        (Path(task["run_dir"]) / "failure.txt").write_text(traceback.format_exc(), encoding="utf-8")
        return {**result, **failed(exc)}
    return {**result, **figures_of(summary)}


def failed(exc: BaseException) -> dict[str, Any]:
    """The figures of a run that raised `exc` instead of finishing."""
    return {"version": None, "failure": f"{type(exc).__name__}: {exc}", **_no_figures()}


def figures_of(summary: dict[str, Any]) -> dict[str, Any]:
    """A run's figures, from its summary, as a campaign keeps them."""
    anomalies = {kind: figures["unexplained"] for kind, figures in sorted(summary["anomalies"].items())}
    return {
        "version": summary["kafka_version"],
        "failure": summary["failure"],
        "violations": sorted({v["invariant"] for v in summary["invariant_violations"]}),
        "violation_count": len(summary["invariant_violations"]),
        "lost_acked": summary["lost_acked"],
        "skipped": summary["skipped"],
        "skipped_by_cause": dict(sorted(summary["skipped_by_cause"].items())),
        "duplicates": summary["duplicates"],
        "duplicates_by_cause": dict(sorted(summary["duplicates_by_cause"].items())),
        "anomalies": anomalies,
        "known_bugs": sorted({f["label"] for f in summary.get("known_bug_findings", [])}),
    }


OPERATOR_SKIPS = frozenset({"admin_reset"})
"""Skipped records an operator asked for (kafka-consumer-groups --reset-offsets): no failure."""


def checks(result: dict[str, Any]) -> list[str]:
    """What failed in one seed's run, each a short stable string: the simulator's failure, each
    invariant broken, each known Kafka bug or gap an invariant showed (a finding, not a
    violation), acknowledged records lost, records skipped (by cause, but for an
    operator's reset), each Jepsen anomaly left unexplained, and duplicates whose cause is a
    Kafka bug (`kafka_NNNNN`). Empty for a run that kept every promise."""
    found = [f"failure: {result['failure']}"] if result["failure"] else []
    found += [f"invariant {name}" for name in result["violations"]]
    found += [f"known {label}" for label in result.get("known_bugs", [])]
    found += ["lost_acked"] if result["lost_acked"] else []
    skipped = result.get("skipped_by_cause", {})
    found += [f"skipped {cause}" for cause, n in sorted(skipped.items()) if n and cause not in OPERATOR_SKIPS]
    found += [f"{kind} unexplained" for kind, n in sorted(result["anomalies"].items()) if n]
    found += [f"duplicates {cause}" for cause, n in sorted(result["duplicates_by_cause"].items()) if n and cause.startswith("kafka_")]
    return found


def run_check(
    spark: Any, tasks: list[dict[str, Any]], progress: Callable[[int, int], None] | None = None
) -> list[dict[str, Any]]:
    """The tasks on Spark, one partition each; their results by seed. `progress(done, total)`
    is called about twice a second while they run (it counts the seeds whose run ended)."""
    results = collect_watched(spark, tasks, run_check_task, _runs_ended, progress)
    return sorted(results, key=lambda r: r["seed"])


def _runs_ended(tasks: list[dict[str, Any]]) -> int:
    ended = ("summary.json", "failure.txt")
    return sum(any((Path(t["run_dir"]) / name).is_file() for name in ended) for t in tasks)


def _no_figures() -> dict[str, Any]:
    return {
        "violations": [],
        "violation_count": 0,
        "lost_acked": 0,
        "skipped": 0,
        "skipped_by_cause": {},
        "duplicates": 0,
        "duplicates_by_cause": {},
        "anomalies": {},
        "known_bugs": [],
    }


def totals(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The campaign's figures: totals over its runs, and each failed check of each run
    (`checks`) with the command that replays it."""
    by_cause: dict[str, int] = {}
    anomalies: dict[str, int] = {}
    failures = []
    for result in sorted(results, key=lambda r: r["seed"]):
        for cause, count in result["duplicates_by_cause"].items():
            by_cause[cause] = by_cause.get(cause, 0) + count
        for kind, count in result["anomalies"].items():
            anomalies[kind] = anomalies.get(kind, 0) + count
        failures.extend(
            {
                "seed": result["seed"],
                "check": check,
                "scenario": result["scenario"],
                "shrunk": None,
                "replay": f"kafkasim run {result['scenario']}",
            }
            for check in checks(result)
        )
    return {
        "runs": len(results),
        "violations": sum(r["violation_count"] for r in results),
        "lost_acked": sum(r["lost_acked"] for r in results),
        "skipped": sum(r["skipped"] for r in results),
        "duplicates": sum(r["duplicates"] for r in results),
        "duplicates_by_cause": dict(sorted(by_cause.items())),
        "anomalies": dict(sorted(anomalies.items())),
        "failures": failures,
    }


def with_shrunk(figures: dict[str, Any], shrunk: list[dict[str, Any]]) -> dict[str, Any]:
    """`figures` with each shrunk seed's failure pointing at its shrunk scenario: the entry of
    the check it reproduces gets `shrunk` and replays that file."""
    paths = {(s["seed"], s["check"]): s["shrunk"] for s in shrunk if s["shrunk"] is not None}
    failures = [
        {**f, "shrunk": paths[key], "replay": f"kafkasim run {paths[key]}"} if (key := (f["seed"], f["check"])) in paths else f
        for f in figures["failures"]
    ]
    return {**figures, "failures": failures}
