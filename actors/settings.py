"""How an actor package declares its configuration.

Each package lists its settings under Kafka's names (`session.timeout.ms`), with a type, a
default or the name of the version profile's default, a range and a line of documentation, and
builds its actor's config from a checked section (its `settings` module). The scenario loader
composes the packages' lists into its schema, checks a scenario against them and fills the
profile's defaults, so adding a setting touches one package.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ACKS", "Setting", "SettingError", "check_table", "check_value", "describe", "is_list", "parse_list", "setting", "suggest",
]

ACKS = {"all": -1, "-1": -1, "0": 0, "1": 1, -1: -1, 0: 0, 1: 1}
"""The values `acks` takes, written as Kafka accepts them, and what each means."""


class SettingError(ValueError):
    """Settings Kafka refuses together: one sentence; the scenario loader says where."""


@dataclass(frozen=True, slots=True)
class Setting:
    """One valid key: its type, default and range. `default=None` with `required` means
    the key must be given; without `required` it means "not set"."""

    key: str
    kind: Any
    """int, float, bool, str, list[str], list[list[str]], list[list[int]], list[int], or "acks"."""
    default: Any = None
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    required: bool = False
    doc: str = ""
    profile_default: str | None = None
    """The key in `Profile.defaults` that supplies the default (the value differs by version)."""


def setting(key: str, kind: Any, default: Any = None, **kw: Any) -> Setting:
    return Setting(key, kind, default, **kw)


def suggest(word: str, options: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the closest option, or nothing."""
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.5)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_table(table: dict[str, Any], settings: tuple[Setting, ...]) -> dict[str, Any]:
    """A table of settings checked, with every default filled in; a `SettingError` names the
    first key at fault."""
    by_key = {s.key: s for s in settings}
    for key in table:
        if key not in by_key:
            msg = f"unknown key {key!r}{suggest(key, by_key)}"
            raise SettingError(msg)
    resolved: dict[str, Any] = {}
    for setting in settings:
        if setting.key in table and table[setting.key] is not None:
            resolved[setting.key] = check_value(setting, table[setting.key])
        elif setting.required:
            msg = f"{setting.key!r} is required"
            raise SettingError(msg)
        else:
            resolved[setting.key] = setting.default
    return resolved


def describe(value: Any) -> str:
    """A value as the error messages show it: its TOML-ish repr and its type."""
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    return f"{value!r} ({names.get(type(value), type(value).__name__)})"


def check_value(setting: Setting, value: Any) -> Any:
    """One value checked against its setting (type, range, choices), as the actor reads it."""
    kind = setting.kind
    at = setting.key
    if kind == "acks":
        if type(value) not in (int, str) or value not in ACKS:
            msg = f"{at}: {value!r} is not one of 0, 1, all, -1"
            raise SettingError(msg)
        return ACKS[value]
    if kind is float and type(value) is int:
        value = float(value)
    if kind in _LIST_KINDS and type(value) is str:
        value = parse_list(setting, value)
    if kind in (int, float, bool, str):
        if type(value) is not kind:
            expected = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}
            msg = f"{at}: expected {expected[kind]}, got {describe(value)}"
            raise SettingError(msg)
    elif not _is_list_of(value, kind):
        msg = f"{at}: expected {_list_doc(kind)}, got {describe(value)}"
        raise SettingError(msg)
    if setting.low is not None and value < setting.low:
        msg = f"{at}: must be at least {setting.low}, got {value}"
        raise SettingError(msg)
    if setting.high is not None and value > setting.high:
        msg = f"{at}: must be at most {setting.high}, got {value}"
        raise SettingError(msg)
    if setting.choices and value not in setting.choices:
        options = ", ".join(setting.choices)
        msg = f"{at}: {value!r} is not one of {options}{suggest(str(value), setting.choices)}"
        raise SettingError(msg)
    return value


_LIST_KINDS = (list[str], list[int], list[list[str]], list[list[int]])


def is_list(setting: Setting) -> bool:
    """The setting takes a list (and so also Kafka's comma-separated string)."""
    return setting.kind in _LIST_KINDS


def parse_list(setting: Setting, text: str) -> list[Any]:
    """A list setting written as Kafka's properties write one: items separated by commas, the
    whitespace around them ignored (`ConfigDef`'s LIST type); a blank string is the empty list.
    A list of lists takes the form of `kafka-topics --replica-assignment`: commas between the
    lists, colons inside one (`1:2:3,2:3:1`). An empty item is refused, naming the key."""
    if not text.strip():
        return []
    if setting.kind in (list[list[str]], list[list[int]]):
        return [_items(setting, part, text, ":") for part in _split(setting, text, text, ",")]
    return _items(setting, text, text, ",")


def _split(setting: Setting, text: str, whole: str, sep: str) -> list[str]:
    parts = [part.strip() for part in text.split(sep)]
    if "" in parts:
        msg = f"{setting.key}: an empty item in {whole!r} (items are separated by {sep!r})"
        raise SettingError(msg)
    return parts


def _items(setting: Setting, text: str, whole: str, sep: str) -> list[Any]:
    parts = _split(setting, text, whole, sep)
    if setting.kind not in (list[int], list[list[int]]):
        return parts
    try:
        return [int(part) for part in parts]
    except ValueError:
        bad = next(part for part in parts if not part.lstrip("+-").isdigit())
        msg = f"{setting.key}: {bad!r} in {whole!r} is not an integer"
        raise SettingError(msg) from None


def _is_list_of(value: Any, kind: Any) -> bool:
    if kind == list[list[int]]:
        return isinstance(value, list) and all(
            isinstance(v, list) and all(type(x) is int for x in v) for v in value
        )
    if kind == list[str]:
        return isinstance(value, list) and all(type(v) is str for v in value)
    if kind == list[int]:
        return isinstance(value, list) and all(type(v) is int for v in value)
    if kind == list[list[str]]:
        return isinstance(value, list) and all(_is_list_of(v, list[str]) for v in value)
    return False


def _list_doc(kind: Any) -> str:
    if kind == list[list[int]]:
        return "a list of broker-id lists, one per partition"
    if kind == list[int]:
        return "a list of integers"
    return "a list of names" if kind == list[str] else "two lists of node names"
