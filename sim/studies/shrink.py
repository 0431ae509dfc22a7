"""Shrinking a failing campaign seed to a small scenario that fails the same way.

A campaign's failing seed is a whole drawn cluster under two to six faults, most of which
usually have nothing to do with the failure. `shrink` reduces it, as QuickCheck's and
Hypothesis's shrinkers and Jepsen's reproductions do, in three passes, each keeping a change
only when the candidate still fails with the *same* check string (`campaign.checks`):

1. the faults: Zeller and Hildebrandt's delta debugging (`ddmin`, "Simplifying and Isolating
   Failure-Inducing Input", IEEE TSE 2002) over the `[[faults]]` tables, which leaves a set
   from which no single table can be removed;
2. the run's length: a bisection of `duration.ms` (to `DURATION_GRAIN_MS`), never before the
   last remaining fault starts;
3. the configuration, one simplification at a time (`SIMPLIFICATIONS`): a `[[consumers]]` or
   `[[producers]]` entry removed, fewer consumers in an entry (`count`), fewer partitions in a
   topic, fewer brokers (not below the largest replication factor). Each goes as far down as
   still fails.

The length comes before the configuration so the configuration's runs are the short ones. A
candidate that is not a valid scenario does not run; one that fails as it starts (a fault
naming a consumer no longer there) fails another check, and is not kept either. The scenario is the resolved one (every default written out), and each
fault keeps the `# campaign kind` comment it was drawn under.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from sim.cluster.scenario import Scenario, ScenarioError, parse_scenario
from sim.studies.campaign import checks, failed, figures_of

__all__ = [
    "DURATION_GRAIN_MS",
    "SIMPLIFICATIONS",
    "ShrinkError",
    "Shrunk",
    "ddmin",
    "run_checks",
    "run_shrink_task",
    "run_shrinks",
    "shrink",
    "shrink_tasks",
]

T = TypeVar("T")

DURATION_GRAIN_MS = 100
"""The bisection of `duration.ms` stops when the failing and the passing length are this close."""

KIND_COMMENT = "# campaign kind: "
FAULTS_HEADER = "\n[[faults]]\n"

Run = Callable[[str], Sequence[str]]
"""A candidate scenario's text to the checks its run fails."""


class ShrinkError(ValueError):
    """The scenario given does not fail the check given: there is nothing to shrink."""


@dataclass(frozen=True, slots=True)
class Shrunk:
    text: str
    """The shrunk scenario, a file `kafkasim run` replays."""
    runs: int
    """Candidates run, the original's confirmation included."""
    faults_before: int
    faults_after: int
    duration_before: int
    duration_after: int


def ddmin(items: Sequence[T], fails: Callable[[list[T]], bool]) -> list[T]:
    """A 1-minimal sublist of `items` (in their order) for which `fails` holds, given that it
    holds for `items`: removing any one element of the result makes it pass. The empty list is
    tried first. Each distinct sublist is tested once."""
    seen: dict[tuple[int, ...], bool] = {}

    def test(kept: list[int]) -> bool:
        key = tuple(kept)
        if key not in seen:
            seen[key] = fails([items[i] for i in kept])
        return seen[key]

    current = list(range(len(items)))
    if current and test([]):
        return []
    n = 2
    while len(current) >= 2:  # noqa: PLR2004 - a pair is the least that can be split
        chunks = _split(current, n)
        reduced = next((chunk for chunk in chunks if test(chunk)), None)
        if reduced is not None:
            current, n = reduced, 2
            continue
        complements = ([i for c in chunks if c is not chunk for i in c] for chunk in chunks)
        reduced = next((complement for complement in complements if test(complement)), None)
        if reduced is not None:
            current, n = reduced, max(n - 1, 2)
            continue
        if n >= len(current):
            break
        n = min(2 * n, len(current))
    return [items[i] for i in current]


def _split(items: list[int], n: int) -> list[list[int]]:
    """`items` in `n` contiguous chunks whose sizes differ by one at most."""
    size, extra = divmod(len(items), n)
    chunks, start = [], 0
    for k in range(n):
        end = start + size + (1 if k < extra else 0)
        chunks.append(items[start:end])
        start = end
    return chunks


def shrink(text: str, source: str, check: str, run: Run) -> Shrunk:
    """The scenario `text` (read from `source`) reduced while `run` of it still gives `check`.
    Raises ShrinkError when the scenario, resolved, does not give `check` in the first place."""
    scenario = parse_scenario(text, source)
    state = _State(scenario, _kind_comments(text, len(scenario.faults)), check, run)
    if not state.fails(scenario, state.comments):
        msg = f"{source}: its run does not fail {check!r}; nothing to shrink"
        raise ShrinkError(msg)
    before = (len(scenario.faults), scenario.get("run", "duration.ms"))
    state.shrink_faults()
    state.shrink_duration()
    for simplify in SIMPLIFICATIONS:
        state.simplify(simplify)
    final = state.scenario
    return Shrunk(
        state.text(final, state.comments),
        state.runs,
        before[0],
        len(final.faults),
        before[1],
        final.get("run", "duration.ms"),
    )


class _State:
    """The smallest failing scenario so far, its faults' comments, and the runs spent."""

    def __init__(self, scenario: Scenario, comments: list[str | None], check: str, run: Run) -> None:
        self.scenario, self.comments, self.check, self.run, self.runs = scenario, comments, check, run, 0

    def text(self, scenario: Scenario, comments: list[str | None]) -> str:
        parts = scenario.to_toml().split(FAULTS_HEADER)
        body = "".join(
            "\n" + (f"{KIND_COMMENT}{kind}\n" if kind else "") + FAULTS_HEADER.lstrip("\n") + part
            for kind, part in zip(comments, parts[1:], strict=True)
        )
        return parts[0] + body

    def fails(self, scenario: Scenario, comments: list[str | None]) -> bool:
        """Whether the candidate gives the check; an invalid candidate is not run."""
        text = self.text(scenario, comments)
        try:
            parse_scenario(text, scenario.source)
        except ScenarioError:
            return False
        self.runs += 1
        return self.check in self.run(text)

    def keep_if_fails(self, scenario: Scenario, comments: list[str | None] | None = None) -> bool:
        comments = self.comments if comments is None else comments
        if self.fails(scenario, comments):
            self.scenario, self.comments = scenario, comments
            return True
        return False

    def shrink_faults(self) -> None:
        faults, comments = self.scenario.faults, self.comments

        def fails(kept: list[int]) -> bool:
            return self.fails(self._with_faults(kept, faults), [comments[i] for i in kept])

        kept = ddmin(list(range(len(faults))), fails)
        self.scenario, self.comments = self._with_faults(kept, faults), [comments[i] for i in kept]

    def _with_faults(self, kept: list[int], faults: tuple[dict[str, Any], ...]) -> Scenario:
        return replace(self.scenario, faults=tuple(faults[i] for i in kept))

    def shrink_duration(self) -> None:
        floor = max((fault["at.ms"] + 1 for fault in self.scenario.faults), default=1)
        low, high = floor - 1, self.scenario.get("run", "duration.ms")  # high fails; low is out of bounds or passes
        while high - low > DURATION_GRAIN_MS:
            middle = (low + high) // 2
            if self.keep_if_fails(_with_section(self.scenario, "run", "duration.ms", middle)):
                high = middle
            else:
                low = middle

    def simplify(self, simplify: Callable[[Scenario], Iterator[Scenario]]) -> None:
        """Take the first candidate that still fails, and again from it, until none does."""
        while any(self.keep_if_fails(candidate) for candidate in simplify(self.scenario)):
            pass


def _with_section(scenario: Scenario, section: str, key: str, value: Any) -> Scenario:
    return replace(scenario, sections={**scenario.sections, section: {**scenario.sections[section], key: value}})


def _smaller(value: int, floor: int) -> list[int]:
    """Smaller values to try, smallest first: the floor, half, one less."""
    return sorted({v for v in (floor, value // 2, value - 1) if floor <= v < value})


def _drop_entries(scenario: Scenario) -> Iterator[Scenario]:
    for array in ("consumers", "producers"):
        entries = getattr(scenario, array)
        for i in reversed(range(len(entries))):
            yield replace(scenario, **{array: entries[:i] + entries[i + 1 :]})


def _fewer_consumers(scenario: Scenario) -> Iterator[Scenario]:
    for i, entry in enumerate(scenario.consumers):
        for count in _smaller(entry["count"], 1):
            entries = list(scenario.consumers)
            entries[i] = {**entry, "count": count}
            yield replace(scenario, consumers=tuple(entries))


def _fewer_partitions(scenario: Scenario) -> Iterator[Scenario]:
    for i, topic in enumerate(scenario.topics):
        if topic.get("replicas"):
            continue  # an explicit assignment names every partition
        for partitions in _smaller(topic["partitions"], 1):
            topics = list(scenario.topics)
            topics[i] = {**topic, "partitions": partitions}
            yield replace(scenario, topics=tuple(topics))


def _fewer_brokers(scenario: Scenario) -> Iterator[Scenario]:
    floor = max((topic["replication.factor"] for topic in scenario.topics), default=1)
    for brokers in _smaller(scenario.get("cluster", "brokers"), max(floor, 1)):
        yield _with_section(scenario, "cluster", "brokers", brokers)


SIMPLIFICATIONS: tuple[Callable[[Scenario], Iterator[Scenario]], ...] = (
    _drop_entries,
    _fewer_consumers,
    _fewer_partitions,
    _fewer_brokers,
)
"""The configuration's simplifications, in the order tried."""


def _kind_comments(text: str, faults: int) -> list[str | None]:
    """The campaign kind named above each `[[faults]]` table of `text`, None where none is."""
    comments: list[str | None] = []
    previous = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped == "[[faults]]":
            comments.append(previous.removeprefix(KIND_COMMENT) if previous.startswith(KIND_COMMENT) else None)
        if stripped:
            previous = stripped
    return comments if len(comments) == faults else [None] * faults


def run_checks(text: str, source: str = "shrink candidate", work: Path | None = None) -> list[str]:
    """`run` for `shrink`: the scenario run into a temporary run directory (under `work`, or
    the system's), deleted after, and the checks it fails."""
    from sim.engine.cpu_claim import one_core  # noqa: PLC0415
    from sim.studies.runner import run_scenario  # noqa: PLC0415

    with tempfile.TemporaryDirectory(prefix="kafkasim-shrink-", dir=work) as directory:
        try:
            scenario = parse_scenario(text, source)
            with one_core():
                summary = run_scenario(scenario, Path(directory) / "run")
        except Exception as exc:  # noqa: BLE001 - a simulator failure is a check like any other
            return checks(failed(exc))
    return checks(figures_of(summary))


def shrink_tasks(failures: list[dict[str, Any]], out: Path, cap: int) -> list[dict[str, Any]]:
    """One task for each of the first `cap` failing seeds, for its first check, written to
    `out/shrunk/seed-N.toml`."""
    first: dict[int, dict[str, Any]] = {}
    for failure in failures:
        first.setdefault(failure["seed"], failure)
    return [
        {"seed": seed, "check": f["check"], "scenario": f["scenario"], "shrunk": str(out / "shrunk" / f"seed-{seed}.toml")}
        for seed, f in sorted(first.items())[:cap]
    ]


def run_shrink_task(task: dict[str, Any], run: Run | None = None) -> dict[str, Any]:
    """One seed shrunk (in a Spark executor's Python worker), its file written: its path and
    counts, or `shrunk` None and why not."""
    result: dict[str, Any] = {"seed": task["seed"], "check": task["check"], "shrunk": None, "error": None}
    source = task["scenario"]
    try:
        text = Path(source).read_text(encoding="utf-8")
        shrunk = shrink(text, source, task["check"], run or (lambda candidate: run_checks(candidate, source)))
    except (OSError, ValueError) as exc:  # unreadable, invalid, or not failing: no file
        return {**result, "error": str(exc)}
    head = (
        f"# kafkasim shrunk scenario: `kafkasim run` of this file fails the check {task['check']!r}\n"
        f"# shrunk from {source}: fault events {shrunk.faults_before} -> {shrunk.faults_after}, "
        f"duration.ms {shrunk.duration_before} -> {shrunk.duration_after} ({shrunk.runs} runs)\n"
    )
    path = Path(task["shrunk"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(head + shrunk.text, encoding="utf-8")
    return {
        **result,
        "shrunk": str(path),
        "runs": shrunk.runs,
        "faults_before": shrunk.faults_before,
        "faults_after": shrunk.faults_after,
        "duration_before": shrunk.duration_before,
        "duration_after": shrunk.duration_after,
    }


def run_shrinks(spark: Any, tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The shrink tasks on Spark, one partition each; their results by seed."""
    if not tasks:
        return []
    results = spark.sparkContext.parallelize(tasks, len(tasks)).map(run_shrink_task).collect()
    return sorted(results, key=lambda r: r["seed"])
