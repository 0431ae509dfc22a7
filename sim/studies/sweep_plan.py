"""A sweep's plan: the scenario, its grids and seeds, checked whole before Spark starts.

The scenario is read with the `--set` overrides, every grid value alone (so a mistake names its
grid key), and every combination (settings that only clash together, such as a heartbeat not
below the session timeout). The plan's configurations are the product of the grids, in the
order given; the sweep's tasks, tables and report all read it.

Each configuration's runs are named after it (`[run] name`, and so the run_id stamped on every
event): `NAME-cN-HASH`, HASH eight hex digits of the sha256 of the scenario's text and the
configuration's overrides. The id stays short and safe in a file name whatever the values
(lists, strings), tells the configurations of one sweep apart, and those of two sweeps of the
same name too, so that grouping many runs' events by run_id never merges two configurations.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim.cluster.scenario import Scenario, ScenarioError, parse_scenario
from sim.cluster.schema import ARRAYS

__all__ = ["Config", "Grid", "SweepError", "SweepPlan", "config_name", "plan_sweep", "resolved_value", "split_values"]


class SweepError(ScenarioError):
    """A mistake in a sweep's input (a grid, `--seeds`): one sentence, exit status 2."""


@dataclass(frozen=True, slots=True)
class Grid:
    key: str
    texts: tuple[str, ...]
    """The values as given, each a TOML value (a bare word is a string), as for `--set`."""


@dataclass(frozen=True, slots=True)
class Config:
    config_id: str
    overrides: tuple[str, ...]
    """`KEY=VALUE` per grid key, in grid order."""
    values: tuple[Any, ...]
    """Each grid key's value as the resolved scenario holds it (checked and typed)."""
    name: str
    """The `[run] name` its runs get (`config_name`): their run_id is `NAME-seedN`."""


@dataclass(frozen=True, slots=True)
class SweepPlan:
    source: str
    text: str
    sets: tuple[str, ...]
    grids: tuple[Grid, ...]
    seeds: int
    configs: tuple[Config, ...]

    @property
    def grid_keys(self) -> tuple[str, ...]:
        return tuple(g.key for g in self.grids)

    def run_name(self, config: Config, seed: int) -> str:
        return f"{config.config_id}-seed{seed}"

    def describe_run(self, config: Config, seed: int) -> str:
        """A run's name with its settings and seed, as an error line names it."""
        return f"{self.run_name(config, seed)} ({', '.join([*config.overrides, f'seed {seed}'])})"

    def runs(self) -> list[tuple[Config, int]]:
        """Every (configuration, seed), in the order of the tasks."""
        return [(config, seed) for config in self.configs for seed in range(1, self.seeds + 1)]

    def tasks(self, out: Path) -> list[dict[str, Any]]:
        """One task per (configuration, seed): plain data, pickled to the workers."""
        runs = out.resolve() / "runs"
        return [
            {
                "config_id": config.config_id,
                "seed": seed,
                "source": self.source,
                "text": self.text,
                "overrides": [*self.sets, *config.overrides, f"run.name={json.dumps(config.name)}", f"run.seed={seed}"],
                "run_dir": str(runs / self.run_name(config, seed)),
            }
            for config, seed in self.runs()
        ]

    def describe(self) -> dict[str, Any]:
        """sweep.json: what was swept, and how to rerun any of its runs."""
        return {
            "scenario": self.source,
            "scenario_sha256": hashlib.sha256(self.text.encode()).hexdigest(),
            "sets": list(self.sets),
            "grid": {g.key: list(g.texts) for g in self.grids},
            "seeds": self.seeds,
            "configs": [
                {
                    "config_id": c.config_id,
                    "name": c.name,
                    "overrides": list(c.overrides),
                    "values": dict(zip(self.grid_keys, c.values, strict=True)),
                }
                for c in self.configs
            ],
        }


# ------------------------------------------------------------------ the plan, checked


def split_values(text: str) -> list[str]:
    """`1000,5000` -> two values; commas inside a TOML list or string do not split
    (`["range"],["sticky","range"]` is two lists)."""
    values, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            values.append(text[start:i].strip())
            start = i + 1
    values.append(text[start:].strip())
    return values


def _parse_grid(arg: str, seen: set[str], set_keys: set[str]) -> Grid:
    key, sep, rest = arg.partition("=")
    key = key.strip()
    if not sep or not key:
        msg = f"--grid {arg!r}: expected KEY=VALUE1,VALUE2,..., such as consumers.1.auto.commit.interval.ms=1000,5000"
        raise SweepError(msg)
    if key == "run.seed":
        msg = "--grid run.seed: the seeds are 1 to --seeds N"
        raise SweepError(msg)
    if key in seen:
        msg = f"--grid {key}: given twice; list every value in one --grid"
        raise SweepError(msg)
    if key in set_keys:
        msg = f"--grid {key}: also given with --set; a key is either fixed or swept"
        raise SweepError(msg)
    texts = split_values(rest)
    if any(not t for t in texts):
        msg = f"--grid {key}: an empty value in {rest!r}"
        raise SweepError(msg)
    duplicate = next((t for t in texts if texts.count(t) > 1), None)
    if duplicate is not None:
        msg = f"--grid {key}: the value {duplicate} is given twice"
        raise SweepError(msg)
    seen.add(key)
    return Grid(key, tuple(texts))


def _load(text: str, source: str, overrides: list[str]) -> Scenario:
    from sim.cluster.harness import check_scenario  # noqa: PLC0415 - the CLI's --help stays fast

    scenario = parse_scenario(text, source, overrides)
    check_scenario(scenario)
    return scenario


def _loader_message(exc: Exception, overrides: Iterable[str]) -> str:
    """The loader's sentence without the `--set 'K=V'` it names for these grid values (the
    caller names the grid)."""
    message = str(exc)
    for override in overrides:
        message = message.removeprefix(f"--set {override!r}: ").replace(f" with --set {override!r}: ", ": ", 1)
    return message


def resolved_value(scenario: Scenario, key: str) -> Any:
    """The value the resolved scenario holds for an override key (`consumers.1.linger.ms`)."""
    section, _, rest = key.partition(".")
    if section in ARRAYS:
        number, _, name = rest.partition(".")
        return getattr(scenario, section)[int(number) - 1].get(name)
    return scenario.sections[section].get(rest)


def plan_sweep(
    scenario_path: str | None, sets: Iterable[str], grid_args: Iterable[str], seeds: int
) -> SweepPlan:
    """Read and check everything a sweep needs; raises `ScenarioError` (or `FaultError`) with
    one sentence naming the mistake."""
    from sim.cluster.faults import FaultError  # noqa: PLC0415
    from sim.studies.builtin import load_study, study_text  # noqa: PLC0415

    sets = tuple(sets)
    if seeds < 1:
        msg = f"--seeds must be at least 1, got {seeds}"
        raise SweepError(msg)
    set_keys = {s.partition("=")[0].strip() for s in sets}
    if "run.seed" in set_keys:
        msg = "--set run.seed: a sweep's seeds are 1 to --seeds N"
        raise SweepError(msg)
    base = load_study(scenario_path, sets)  # the file's and --set's mistakes, as `run` words them
    text = study_text(scenario_path)
    _load(text, base.source, list(sets))
    seen: set[str] = set()
    grids = tuple(_parse_grid(arg, seen, set_keys) for arg in grid_args)
    for grid in grids:
        for value in grid.texts:
            override = f"{grid.key}={value}"
            try:
                _load(text, base.source, [*sets, override])
            except (ScenarioError, FaultError) as exc:
                msg = f"--grid {override}: {_loader_message(exc, [override])}"
                raise SweepError(msg) from None
    configs = []
    combos = list(itertools.product(*(grid.texts for grid in grids)))
    width = len(str(len(combos)))
    for n, combo in enumerate(combos, start=1):
        overrides = tuple(f"{g.key}={v}" for g, v in zip(grids, combo, strict=True))
        try:
            scenario = _load(text, base.source, [*sets, *overrides])
        except (ScenarioError, FaultError) as exc:
            msg = f"--grid {' with '.join(overrides)}: {_loader_message(exc, overrides)}"
            raise SweepError(msg) from None
        values = tuple(
            _plain(resolved_value(scenario, g.key), v) for g, v in zip(grids, combo, strict=True)
        )
        config_id = f"c{n:0{width}d}"
        name = config_name(scenario.name, config_id, text, [*sets, *overrides])
        configs.append(Config(config_id, overrides, values, name))
    return SweepPlan(base.source, text, sets, grids, seeds, tuple(configs))


def config_name(base: str, config_id: str, text: str, settings: Sequence[str]) -> str:
    """`BASE-cN-HASH`: HASH the first eight hex digits of the sha256 of the scenario's text and
    the configuration's overrides (`--set` ones, then the grid's)."""
    digest = hashlib.sha256(json.dumps([text, list(settings)]).encode()).hexdigest()
    return f"{base}-{config_id}-{digest[:8]}"


def _plain(value: Any, text: str) -> Any:
    """A table cell: numbers, booleans and strings as they are; a list as its TOML text."""
    if value is None or isinstance(value, list | dict):
        return text
    return value
