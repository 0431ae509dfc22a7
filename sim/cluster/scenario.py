"""Scenario files: TOML with Kafka's configuration names, checked against one schema
(`sim.cluster.schema`, composed of the actors' own settings).

A scenario has sections (`[run]`, `[kafka]`, `[network]`, `[cluster]`, `[zookeeper]`,
`[broker]`, `[workload]`) and arrays of tables (`[[topics]]`, `[[producers]]`, `[[consumers]]`,
`[[faults]]`). Keys are Kafka's own names with their units (`duration.ms`); TOML reads an
unquoted `latency.min.ms = 1` as nested tables, so nested tables inside a section are flattened
back into dotted names and both spellings work.

Every problem is one `ScenarioError` sentence that names the file, the key and the value:
unknown keys suggest the closest valid one. `--set section.key=value` overrides go through the
same checks. The resolved scenario (every default filled in) is written back as TOML, so a run
directory's `scenario.toml` reruns the same run.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from actors.consumer import settings as consumer_settings
from actors.group.placement import OFFSETS_TOPIC
from actors.producer import settings as producer_settings
from actors.profiles import Profile
from actors.settings import ACKS, Setting, SettingError, check_table, describe, is_list, suggest
from sim.cluster.scenario_checks import (
    ScenarioError,
    check_group_protocols,
    check_relations,
    replica_assignment,
)
from sim.cluster.schema import ARRAYS, FAULT_COMMON, SECTIONS, TOPIC_LOG_SETTINGS

__all__ = ["Scenario", "ScenarioError", "blame_overrides", "load_scenario", "parse_scenario", "replica_assignment"]


@dataclass(frozen=True, slots=True)
class Scenario:
    """A checked scenario with every default filled in."""

    source: str
    sections: dict[str, dict[str, Any]]
    faults: tuple[dict[str, Any], ...] = ()
    profile: Profile = field(default_factory=lambda: Profile.for_version("3.9"))
    topics: tuple[dict[str, Any], ...] = ()
    producers: tuple[dict[str, Any], ...] = ()
    consumers: tuple[dict[str, Any], ...] = ()
    text: str = field(default="", repr=False, compare=False)
    """The TOML it was read from, before `overrides`: an error found later can name its `--set`."""
    overrides: tuple[str, ...] = field(default=(), compare=False)

    def get(self, section: str, key: str) -> Any:
        return self.sections[section][key]

    @property
    def seed(self) -> int:
        return self.get("run", "seed")

    @property
    def name(self) -> str:
        return self.get("run", "name")

    @property
    def has_groups(self) -> bool:
        """Consumer groups exist: the scenario has consumers, or an operator's group command."""
        return bool(self.consumers) or any(f["kind"] == "admin" for f in self.faults)

    @property
    def all_topics(self) -> tuple[dict[str, Any], ...]:
        """The scenario's topics, and `__consumer_offsets` when it has consumer groups (Kafka
        creates it on the first FindCoordinator; here it exists from the start)."""
        if not self.has_groups:
            return self.topics
        cluster = self.sections["broker"]
        offsets = {
            "name": OFFSETS_TOPIC,
            "partitions": cluster["offsets.topic.num.partitions"],
            "replication.factor": min(cluster["offsets.topic.replication.factor"], self.get("cluster", "brokers")),
            "replicas": [],
            "min.insync.replicas": None,
            **dict.fromkeys(TOPIC_LOG_SETTINGS),
        }
        return (*self.topics, offsets)

    def to_toml(self) -> str:
        """The resolved scenario, as TOML that loads back to the same scenario."""
        lines = [f"# resolved scenario (from {self.source}); kafka profile {self.profile.name}"]
        for section, values in self.sections.items():
            lines += ["", f"[{section}]"]
            lines += [f'"{k}" = {_toml_value(v)}' for k, v in values.items() if v is not None]
        arrays = (
            ("topics", self.topics),
            ("producers", self.producers),
            ("consumers", self.consumers),
            ("faults", self.faults),
        )
        for name, entries in arrays:
            for entry in entries:
                lines += ["", f"[[{name}]]"]
                lines += [f'"{k}" = {_toml_value(v)}' for k, v in entry.items() if v is not None]
        return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    msg = f"cannot write {value!r} as TOML"
    raise TypeError(msg)


def load_scenario(path: str | Path, overrides: Iterable[str] = ()) -> Scenario:
    """Read, check and resolve a scenario file."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        msg = f"{file}: no such scenario file"
        raise ScenarioError(msg) from None
    except IsADirectoryError:
        msg = f"{file}: is a directory, not a scenario file"
        raise ScenarioError(msg) from None
    except (OSError, UnicodeDecodeError) as exc:
        msg = f"{file}: cannot read the scenario file ({exc})"
        raise ScenarioError(msg) from None
    return parse_scenario(text, str(file), overrides)


_TOML_POSITION = re.compile(r"^(?P<what>.*?)\s*\(at line (?P<line>\d+), column (?P<col>\d+)\)$")


def parse_scenario(text: str, source: str, overrides: Iterable[str] = ()) -> Scenario:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = _TOML_POSITION.match(str(exc))
        if match:
            msg = (
                f"{source}: TOML syntax error at line {match['line']}, column {match['col']}: "
                f"{match['what']}"
            )
        else:
            msg = f"{source}: TOML syntax error: {exc}"
        raise ScenarioError(msg) from None
    overrides = tuple(overrides)
    for override in overrides:
        _apply_override(raw, override)
    try:
        scenario = _resolve(raw, source)
    except ScenarioError as exc:
        raise blame_overrides(text, source, overrides, exc) from None
    return replace(scenario, text=text, overrides=overrides)


def blame_overrides(
    text: str,
    source: str,
    overrides: tuple[str, ...],
    error: ValueError,
    check: Callable[[Scenario], object] = lambda _: None,
) -> ValueError:
    """Where the file alone is valid (`check` included), the error the first `--set` that
    brings one brings, naming that `--set` and not the file: the user typed the value on the
    command line. Otherwise `error`, the file's own."""
    if not overrides:
        return error
    for count in range(len(overrides) + 1):
        raw = tomllib.loads(text)
        for override in overrides[:count]:
            _apply_override(raw, override)
        try:
            check(_resolve(raw, source))
        except ValueError as exc:
            if count == 0:
                return error  # the file's own
            what = str(exc).removeprefix(f"{source}: ")
            return type(exc)(f"--set {overrides[count - 1]!r}: {what}")
    return error


def _apply_override(raw: dict[str, Any], override: str) -> None:
    key, sep, text = override.partition("=")
    if not sep or not key.strip():
        msg = f"--set {override!r}: expected SECTION.KEY=VALUE, such as run.seed=7"
        raise ScenarioError(msg)
    section, _, rest = key.strip().partition(".")
    if not rest:
        msg = f"--set {override!r}: the key needs its section, such as run.{section}"
        raise ScenarioError(msg)
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        value = text  # a bare word is a string: --set kafka.version=2.8 stays "2.8" below
    if section in ARRAYS:
        # Entries count from 1, as error messages name them (`[[faults]] #1`).
        index_text, _, rest = rest.partition(".")
        entries = raw.get(section, [])
        if not index_text.isdigit() or not 1 <= int(index_text) <= len(entries) or not rest:
            have = f"1 to {len(entries)}" if entries else "none: the scenario has no entries"
            msg = f"--set {override!r}: expected {section}.N.KEY, N the entry's number as in [[{section}]] #N ({have})"
            raise ScenarioError(msg)
        entry = entries[int(index_text) - 1]
        entry[rest] = _list_text(value, text, _settings_of(section, entry), rest)
        return
    if section == "kafka" and rest == "version" and not isinstance(value, str):
        value = text.strip()
    table = raw.setdefault(section, {})
    if not isinstance(table, dict):
        msg = f"--set {override!r}: [{section}] is not a section"
        raise ScenarioError(msg)
    table[rest] = _list_text(value, text, SECTIONS.get(section, ()), rest)


def _settings_of(array: str, entry: Any) -> tuple[Setting, ...]:
    schema = ARRAYS[array]
    if not isinstance(schema, dict):
        return schema
    kind = entry.get("kind") if isinstance(entry, dict) else None
    return (*FAULT_COMMON, *schema.get(kind, ()))


def _list_text(value: Any, text: str, settings: tuple[Setting, ...], key: str) -> Any:
    """A list setting's `--set` value as typed: `--set faults.1.partitions=1` is the list
    [1], as Kafka reads a one-item list; TOML would have read the integer 1."""
    if isinstance(value, list | str) or not any(s.key == key and is_list(s) for s in settings):
        return value
    return text.strip()


def _flatten(table: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def _resolve(raw: dict[str, Any], source: str) -> Scenario:
    valid = [*SECTIONS, *ARRAYS]
    for name in raw:
        if name not in valid:
            msg = f"{source}: unknown section [{name}]{suggest(name, valid)}"
            raise ScenarioError(msg)
    sections: dict[str, dict[str, Any]] = {}
    for name, settings in SECTIONS.items():
        table = raw.get(name, {})
        if not isinstance(table, dict):
            msg = f"{source}: [{name}] must be a table, got {describe(table)}"
            raise ScenarioError(msg)
        sections[name] = _check_table(_flatten(table), settings, f"{source}: [{name}]")
    arrays: dict[str, list[dict[str, Any]]] = {}
    for array, schema in ARRAYS.items():
        entries = raw.get(array, [])
        if not isinstance(entries, list):
            msg = f"{source}: {array} must be an array of tables ([[{array}]])"
            raise ScenarioError(msg)
        arrays[array] = []
        for i, entry in enumerate(entries):
            where = f"{source}: [[{array}]] #{i + 1}"
            if not isinstance(entry, dict):
                msg = f"{where} must be a table"
                raise ScenarioError(msg)
            flat = _flatten(entry)
            if isinstance(schema, dict):  # faults: the kind decides the keys
                kind = _check_table({"kind": flat.get("kind")}, FAULT_COMMON[:1], where)["kind"]
                settings = (*FAULT_COMMON, *schema[kind])
            else:
                settings = schema
            arrays[array].append(_check_table(flat, settings, where))
    try:
        profile = Profile.for_version(sections["kafka"]["version"])
    except ValueError as exc:
        msg = f"{source}: [kafka] version: {exc}"
        raise ScenarioError(msg) from None
    for i, entry in enumerate(arrays["producers"]):
        try:
            producer_settings.resolve(entry, profile)
        except SettingError as exc:
            msg = f"{source}: [[producers]] #{i + 1}: {exc}"
            raise ScenarioError(msg) from None
    check_group_protocols(source, sections["broker"], arrays["consumers"], profile)
    _fill_profile_defaults(sections, arrays, profile)
    scenario = Scenario(
        source,
        sections,
        tuple(arrays["faults"]),
        profile,
        tuple(arrays["topics"]),
        tuple(arrays["producers"]),
        tuple(arrays["consumers"]),
    )
    check_relations(scenario)
    return scenario


def _fill_profile_defaults(
    sections: dict[str, dict[str, Any]], arrays: dict[str, list[dict[str, Any]]], profile: Profile
) -> None:
    """Settings whose default depends on the Kafka version take it from the profile."""
    tables = [(SECTIONS[name], sections[name]) for name in SECTIONS]
    tables += [(producer_settings.SETTINGS, entry) for entry in arrays["producers"]]
    tables += [(consumer_settings.SETTINGS, entry) for entry in arrays["consumers"]]
    for settings, table in tables:
        for setting in settings:
            if setting.profile_default is not None and table.get(setting.key) is None:
                value = profile.defaults[setting.profile_default]
                value = list(value) if isinstance(value, list) else value
                table[setting.key] = ACKS[value] if setting.kind == "acks" else value


def _check_table(table: dict[str, Any], settings: tuple[Setting, ...], where: str) -> dict[str, Any]:
    try:
        return check_table(table, settings)
    except SettingError as exc:
        msg = f"{where}: {exc}"
        raise ScenarioError(msg) from None
