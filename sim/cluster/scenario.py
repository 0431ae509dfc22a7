"""Scenario files: TOML with Kafka's configuration names, checked against one schema.

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

import difflib
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from actors.profiles import Profile
from protocols.replication import RECORD_BATCH_OVERHEAD, RECORD_OVERHEAD

__all__ = [
    "OFFSETS_TOPIC",
    "SECTIONS",
    "TOPIC_LOG_SETTINGS",
    "Scenario",
    "ScenarioError",
    "Setting",
    "load_scenario",
    "parse_scenario",
    "replica_assignment",
]


OFFSETS_TOPIC = "__consumer_offsets"
INT_MAX = 2**31 - 1


class ScenarioError(ValueError):
    """A user's mistake in a scenario or an override: one sentence, no traceback."""


@dataclass(frozen=True, slots=True)
class Setting:
    """One valid key: its type, default and range. `default=None` with `required` means
    the key must be given; without `required` it means "not set"."""

    key: str
    kind: Any
    """int, float, bool, str, list[str], list[list[str]], list[list[int]], or "acks"."""
    default: Any = None
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    required: bool = False
    doc: str = ""
    profile_default: str | None = None
    """The key in `Profile.defaults` that supplies the default (the value differs by version)."""


def _s(key: str, kind: type, default: Any = None, **kw: Any) -> Setting:
    return Setting(key, kind, default, **kw)


SECTIONS: dict[str, tuple[Setting, ...]] = {
    "run": (
        _s("name", str, "default", doc="names the run id and the default output directory"),
        _s("seed", int, 1, low=0, high=2**63 - 1),
        _s("duration.ms", int, 60000, low=1),
        _s("max.events", int, 0, low=0, doc="stop after this many handler calls; 0: no limit"),
        _s(
            "invariants",
            str,
            "fail",
            choices=("fail", "report"),
            doc="fail the run on a violation, or report violations (a study of an unsafe setup)",
        ),
    ),
    "kafka": (_s("version", str, "3.9", doc="selects behaviour and defaults (actors/profiles.py)"),),
    "network": (
        _s("latency.min.ms", int, 1, low=1, high=60000),
        _s("latency.max.ms", int, 5, low=1, high=60000),
    ),
    "cluster": (
        _s("brokers", int, 0, low=0, high=100, doc="brokers broker-1 ... broker-N"),
        _s(
            "metadata.mode",
            str,
            "zookeeper",
            choices=("zookeeper", "static"),
            doc="zookeeper: a controller elected through ZooKeeper; static: no controller, leaders never move",
        ),
    ),
    "zookeeper": (_s("enabled", bool, True, doc="run the coordination service (node `zookeeper`)"),),
    "broker": (
        _s("min.insync.replicas", int, 1, low=1),
        _s("replica.lag.time.max.ms", int, None, low=1, profile_default="replica.lag.time.max.ms"),
        _s("replica.fetch.wait.max.ms", int, 500, low=0),
        _s("replica.fetch.backoff.ms", int, 1000, low=0),
        _s("replica.socket.timeout.ms", int, 30000, low=1),
        _s("replica.high.watermark.checkpoint.interval.ms", int, 5000, low=1),
        _s("zookeeper.session.timeout.ms", int, None, low=1, profile_default="zookeeper.session.timeout.ms"),
        _s("unclean.leader.election.enable", bool, None, profile_default="unclean.leader.election.enable"),
        _s("auto.leader.rebalance.enable", bool, True),
        _s("leader.imbalance.check.interval.seconds", int, 300, low=1),
        _s("leader.imbalance.per.broker.percentage", int, 10, low=0, high=100),
        _s("offsets.topic.num.partitions", int, 50, low=1, high=10000, doc="partitions of __consumer_offsets"),
        _s(
            "offsets.topic.replication.factor",
            int,
            3,
            low=1,
            doc="capped by the broker count (Kafka refuses to create the topic instead)",
        ),
        _s("offsets.commit.timeout.ms", int, 5000, low=1),
        _s("offsets.retention.minutes", int, None, low=1, profile_default="offsets.retention.minutes"),
        _s("offsets.retention.check.interval.ms", int, 600000, low=1),
        _s(
            "group.initial.rebalance.delay.ms",
            int,
            None,
            low=0,
            profile_default="group.initial.rebalance.delay.ms",
        ),
        _s("group.min.session.timeout.ms", int, 6000, low=0),
        _s("group.max.session.timeout.ms", int, None, low=0, profile_default="group.max.session.timeout.ms"),
        _s("controlled.shutdown.enable", bool, True, doc="a stopping broker first moves its leaderships"),
        _s("controlled.shutdown.max.retries", int, 3, low=1),
        _s("controlled.shutdown.retry.backoff.ms", int, 5000, low=0),
        _s("log.segment.bytes", int, 1073741824, low=14, high=INT_MAX, doc="a log rolls a new segment past this size"),
        _s("log.roll.ms", int, 604800000, low=1, doc="or when its first batch is this old (log.roll.hours = 168)"),
        _s("log.retention.ms", int, 604800000, low=-1, doc="delete segments whose newest record is older; -1: never"),
        _s("log.retention.bytes", int, -1, low=-1, doc="delete the oldest segments while a log is larger; -1: no limit"),
        _s("log.retention.check.interval.ms", int, 300000, low=1),
        _s("log.initial.task.delay.ms", int, 30000, low=0, doc="the first retention check (a fixed 30 s before 3.7)"),
    ),
    "workload": (
        _s("kind", str, "gossip", choices=("gossip",)),
        _s("nodes", int, 0, low=0, high=1000, doc="the gossip stand-in's nodes; 0: none"),
        _s("actors.per.node", int, 1, low=1, high=100),
        _s("tokens.per.actor", int, 2, low=0, high=10000),
        _s("ping.interval.ms", int, 1000, low=0),
        _s("report.interval.ms", int, 5000, low=0),
    ),
}

FAULT_KINDS = (
    "crash",
    "restart",
    "shutdown",
    "pause",
    "partition",
    "heal",
    "drop",
    "delay",
    "duplicate",
    "reorder",
    "corrupt",
    "close",
    "unsubscribe",
    "stall",
    "slow",
    "rolling_restart",
    "zombie",
)

_NODES = list[str]
_FAULT_COMMON = (_s("kind", str, required=True, choices=FAULT_KINDS), _s("at.ms", int, 0, low=0))
_LINK = (
    _s("src", _NODES, [], doc="sending nodes; empty: any"),
    _s("dst", _NODES, [], doc="receiving nodes; empty: any"),
    _s("duration.ms", int, None, low=1, doc="how long the fault lasts; unset: to the end"),
)
_PROBABILITY = _s("probability", float, None, low=0.0, high=1.0, required=True)
FAULT_SETTINGS: dict[str, tuple[Setting, ...]] = {
    "crash": (
        _s("node", str, required=True),
        _s("crash.kind", str, "process", choices=("process", "power_loss", "disk_loss")),
        _s("restart.after.ms", int, None, low=1),
    ),
    "restart": (_s("node", str, required=True),),
    "shutdown": (
        _s("node", str, required=True, doc="a broker: the operator stops it (a controlled shutdown first)"),
        _s("exit.after.ms", int, 0, low=0, doc="the process exits no earlier than this after the signal"),
        _s("restart.after.ms", int, None, low=1, doc="restart this long after the process exits"),
    ),
    "pause": (_s("node", str, required=True), _s("duration.ms", int, None, low=1, required=True)),
    "partition": (
        _s("isolate", _NODES, [], doc="cut these nodes off from all the others"),
        _s("between", list[_NODES], [], doc="two groups of nodes to cut apart"),
        _s("one.way", bool, False, doc="block only traffic from the first group to the second"),
        _s("duration.ms", int, None, low=1, doc="heal after this long; unset: until a heal"),
    ),
    "heal": (),
    "drop": (_PROBABILITY, *_LINK),
    "duplicate": (_PROBABILITY, *_LINK),
    "corrupt": (_PROBABILITY, *_LINK),
    "reorder": (_PROBABILITY, _s("delay.ms", int, 50, low=0), *_LINK),
    "delay": (_s("delay.ms", int, None, low=1, required=True), *_LINK),
    "close": (_s("node", str, required=True, doc="a consumer: its application calls close()"),),
    "unsubscribe": (_s("node", str, required=True, doc="a consumer: its application calls unsubscribe()"),),
    "stall": (
        _s("node", str, required=True, doc="a consumer: its processing between two polls takes longer"),
        _s("duration.ms", int, None, low=1, required=True),
    ),
    "slow": (
        _s("node", str, required=True, doc="a consumer: each record it processes takes process.record.ms"),
        _s("process.record.ms", int, None, low=0, required=True),
        _s("duration.ms", int, None, low=1, doc="then back to the consumer's own; unset: to the end"),
    ),
    "rolling_restart": (
        _s("nodes", _NODES, [], doc="consumers or brokers, stopped and restarted in this order"),
        _s("group", str, None, doc="or every consumer of this group.id, in node order"),
        _s("interval.ms", int, 10000, low=0, doc="from one consumer's restart to the next one's close()"),
        _s("down.ms", int, 0, low=0, doc="how long each process stays down after close() returns"),
    ),
    "zombie": (
        _s("node", str, required=True, doc="a consumer: cut off from its group's coordinator only"),
        _s("duration.ms", int, None, low=1, doc="lift that cut after this long; unset: until a heal"),
    ),
}
TOPIC_SETTINGS = (
    _s("name", str, required=True),
    _s("partitions", int, 1, low=1, high=10000),
    _s("replication.factor", int, 1, low=1, high=100),
    _s("replicas", list[list[int]], [], doc="broker ids per partition; empty: round robin"),
    _s("min.insync.replicas", int, None, low=1, doc="overrides [broker] min.insync.replicas"),
    _s("segment.bytes", int, None, low=14, high=INT_MAX, doc="overrides [broker] log.segment.bytes"),
    _s("segment.ms", int, None, low=1, doc="overrides [broker] log.roll.ms"),
    _s("retention.ms", int, None, low=-1, doc="overrides [broker] log.retention.ms"),
    _s("retention.bytes", int, None, low=-1, doc="overrides [broker] log.retention.bytes"),
)
TOPIC_LOG_SETTINGS = {
    "segment.bytes": "log.segment.bytes",
    "segment.ms": "log.roll.ms",
    "retention.ms": "log.retention.ms",
    "retention.bytes": "log.retention.bytes",
}
"""Each topic-level log setting and the broker setting it overrides."""
PRODUCER_SETTINGS = (
    _s("topic", str, required=True),
    _s("acks", "acks", None, profile_default="acks", doc="0, 1, all or -1"),
    _s("request.timeout.ms", int, 30000, low=1),
    _s("linger.ms", int, 0, low=0, doc="how long a batch waits for more records"),
    _s("batch.size", int, 16384, low=0, doc="bytes; a batch always takes its first record"),
    _s("max.request.size", int, 1048576, low=1),
    _s("max.in.flight.requests.per.connection", int, 5, low=1),
    _s("retries", int, None, low=0, high=2**31 - 1, profile_default="retries"),
    _s("retry.backoff.ms", int, 100, low=0, doc="wait before a retry, or before asking again for a missing leader"),
    _s(
        "delivery.timeout.ms",
        int,
        None,
        low=1,
        doc="2.1+ (KIP-91); unset: 120000, raised to linger.ms + request.timeout.ms if below",
    ),
    _s("enable.idempotence", bool, None, doc="unset: the version's default, dropped if the settings conflict"),
    _s("partitioner", str, "default", choices=("default", "round_robin")),
    _s("metadata.max.age.ms", int, 300000, low=1, doc="refresh the leaders at least this often"),
    _s("records", int, 100, low=0, doc="records generated in all"),
    _s("interval.ms", int, 100, low=1, doc="a tick every interval.ms"),
    _s("records.per.interval", int, 1, low=1, high=1_000_000, doc="records generated at each tick"),
    _s("start.ms", int, 0, low=0),
    _s("burst.ms", int, 0, low=0, doc="with pause.ms: generate for burst.ms, then pause"),
    _s("pause.ms", int, 0, low=0),
    _s("keys", int, 0, low=0, doc="distinct keys (record n has key-{n % keys}); 0: no keys"),
    _s("record.bytes", int, 100, low=0, doc="a record's key and value size"),
)
CONSUMER_SETTINGS = (
    _s("group.id", str, "group-1"),
    _s("topics", list[str], None, required=True, doc="the topics it subscribes to"),
    _s("count", int, 1, low=1, high=1000, doc="identical consumer processes, each its own node"),
    _s("group.instance.id", str, None, doc="static membership (2.3+); with count > 1, suffixed -1, -2, ..."),
    _s("session.timeout.ms", int, None, low=1, profile_default="session.timeout.ms"),
    _s("heartbeat.interval.ms", int, 3000, low=1),
    _s("max.poll.interval.ms", int, 300000, low=1, doc="also the rebalance timeout sent in JoinGroup"),
    _s("max.poll.records", int, 500, low=1),
    _s("fetch.min.bytes", int, 1, low=0),
    _s("fetch.max.wait.ms", int, 500, low=0),
    _s("max.partition.fetch.bytes", int, 1048576, low=1),
    _s("enable.auto.commit", bool, True),
    _s("auto.commit.interval.ms", int, 5000, low=1),
    _s("auto.offset.reset", str, "latest", choices=("latest", "earliest", "none")),
    _s(
        "partition.assignment.strategy",
        list[str],
        None,
        profile_default="partition.assignment.strategy",
        doc="assignor names, most preferred first: range, roundrobin, sticky, cooperative-sticky",
    ),
    _s("request.timeout.ms", int, 30000, low=1),
    _s("retry.backoff.ms", int, 100, low=0),
    _s("default.api.timeout.ms", int, 60000, low=1, doc="how long commitSync retries"),
    _s(
        "commit",
        str,
        "none",
        choices=("none", "sync", "async", "on_revoke"),
        doc="what the application commits besides auto-commit: commitSync or commitAsync after "
        "each poll's records, or commitSync of the revoked partitions in onPartitionsRevoked",
    ),
    _s("poll.timeout.ms", int, 100, low=0, doc="the Duration the application passes to poll()"),
    _s("process.record.ms", int, 0, low=0, doc="the application's processing time per record"),
    _s("start.ms", int, 0, low=0),
)
DELIVERY_TIMEOUT_DEFAULT_MS = 120000
MAX_IN_FLIGHT_FOR_IDEMPOTENCE = 5
ARRAYS: dict[str, Any] = {
    "faults": FAULT_SETTINGS,
    "topics": TOPIC_SETTINGS,
    "producers": PRODUCER_SETTINGS,
    "consumers": CONSUMER_SETTINGS,
}


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

    def get(self, section: str, key: str) -> Any:
        return self.sections[section][key]

    @property
    def seed(self) -> int:
        return self.get("run", "seed")

    @property
    def name(self) -> str:
        return self.get("run", "name")

    @property
    def all_topics(self) -> tuple[dict[str, Any], ...]:
        """The scenario's topics, and `__consumer_offsets` when it has consumer groups (Kafka
        creates it on the first FindCoordinator; here it exists from the start)."""
        if not self.consumers:
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
    overrides = list(overrides)
    for override in overrides:
        _apply_override(raw, override)
    try:
        return _resolve(raw, source)
    except ScenarioError as exc:
        raise _blamed(text, source, overrides, exc) from None


def _blamed(text: str, source: str, overrides: list[str], error: ScenarioError) -> ScenarioError:
    """Where the file alone is valid, the error the first `--set` that brings one brings, naming
    it: the user typed that value on the command line, not in the file."""
    for count in range(len(overrides) + 1):
        raw = tomllib.loads(text)
        for override in overrides[:count]:
            _apply_override(raw, override)
        try:
            _resolve(raw, source)
        except ScenarioError as exc:
            if count == 0:
                return error  # the file's own
            what = str(exc).removeprefix(f"{source}: ")
            return ScenarioError(f"{source} with --set {overrides[count - 1]!r}: {what}")
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
        entries[int(index_text) - 1][rest] = value
        return
    if section == "kafka" and rest == "version" and not isinstance(value, str):
        value = text.strip()
    table = raw.setdefault(section, {})
    if not isinstance(table, dict):
        msg = f"--set {override!r}: [{section}] is not a section"
        raise ScenarioError(msg)
    table[rest] = value


def _flatten(table: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def _suggest(word: str, options: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.5)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _resolve(raw: dict[str, Any], source: str) -> Scenario:
    valid = [*SECTIONS, *ARRAYS]
    for name in raw:
        if name not in valid:
            msg = f"{source}: unknown section [{name}]{_suggest(name, valid)}"
            raise ScenarioError(msg)
    sections: dict[str, dict[str, Any]] = {}
    for name, settings in SECTIONS.items():
        table = raw.get(name, {})
        if not isinstance(table, dict):
            msg = f"{source}: [{name}] must be a table, got {_describe(table)}"
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
                kind = _check_table({"kind": flat.get("kind")}, _FAULT_COMMON[:1], where)["kind"]
                settings = (*_FAULT_COMMON, *schema[kind])
            else:
                settings = schema
            arrays[array].append(_check_table(flat, settings, where))
    try:
        profile = Profile.for_version(sections["kafka"]["version"])
    except ValueError as exc:
        msg = f"{source}: [kafka] version: {exc}"
        raise ScenarioError(msg) from None
    for i, producer in enumerate(arrays["producers"]):
        _resolve_producer(producer, profile, f"{source}: [[producers]] #{i + 1}")
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
    _check_relations(scenario)
    return scenario


def _fill_profile_defaults(
    sections: dict[str, dict[str, Any]], arrays: dict[str, list[dict[str, Any]]], profile: Profile
) -> None:
    """Settings whose default depends on the Kafka version take it from the profile."""
    tables = [(SECTIONS[name], sections[name]) for name in SECTIONS]
    tables += [(PRODUCER_SETTINGS, entry) for entry in arrays["producers"]]
    tables += [(CONSUMER_SETTINGS, entry) for entry in arrays["consumers"]]
    for settings, table in tables:
        for setting in settings:
            if setting.profile_default is not None and table.get(setting.key) is None:
                value = profile.defaults[setting.profile_default]
                value = list(value) if isinstance(value, list) else value
                table[setting.key] = _ACKS[value] if setting.kind == "acks" else value


def _resolve_producer(producer: dict[str, Any], profile: Profile, where: str) -> None:
    """Kafka's producer checks that involve several settings, and whether each was set
    (`postProcessAndValidateIdempotenceConfigs`, `configureDeliveryTimeout`): a conflict with
    an explicit `enable.idempotence = true` or `delivery.timeout.ms` is an error; a default
    that conflicts is adjusted, as Kafka does."""
    def value(key: str) -> Any:
        given = producer[key]
        if given is not None:
            return given
        default = profile.defaults[key]
        return _ACKS[default] if key == "acks" else default

    record = producer["record.bytes"] + RECORD_BATCH_OVERHEAD + RECORD_OVERHEAD
    if record > producer["max.request.size"]:
        msg = (
            f"{where}: record.bytes ({producer['record.bytes']}) makes a record of {record} bytes in its "
            f"batch, above max.request.size ({producer['max.request.size']}): Kafka refuses every record "
            "(RecordTooLargeException)"
        )
        raise ScenarioError(msg)
    linger, request_timeout = producer["linger.ms"], producer["request.timeout.ms"]
    delivery = producer["delivery.timeout.ms"]
    if delivery is not None and delivery < linger + request_timeout:
        msg = (
            f"{where}: delivery.timeout.ms ({delivery}) must be at least linger.ms + "
            f"request.timeout.ms ({linger} + {request_timeout})"
        )
        raise ScenarioError(msg)
    if delivery is None:
        producer["delivery.timeout.ms"] = max(DELIVERY_TIMEOUT_DEFAULT_MS, linger + request_timeout)
    explicit = producer["enable.idempotence"] is not None
    idempotence = value("enable.idempotence")
    conflicts = []
    if value("acks") != -1:
        conflicts.append(f"acks = all (got {value('acks')})")
    if value("retries") == 0:
        conflicts.append("retries > 0 (got 0)")
    if producer["max.in.flight.requests.per.connection"] > MAX_IN_FLIGHT_FOR_IDEMPOTENCE:
        got = producer["max.in.flight.requests.per.connection"]
        conflicts.append(f"max.in.flight.requests.per.connection <= 5 (got {got})")
    if explicit and idempotence and profile.version < (0, 11, 0):
        msg = f"{where}: enable.idempotence = true needs Kafka 0.11 or later (the version is {profile.name})"
        raise ScenarioError(msg)
    if explicit and idempotence and conflicts:
        msg = f"{where}: enable.idempotence = true requires {conflicts[0]}"
        raise ScenarioError(msg)
    producer["enable.idempotence"] = bool(idempotence) and not conflicts


def _check_table(table: dict[str, Any], settings: tuple[Setting, ...], where: str) -> dict[str, Any]:
    by_key = {s.key: s for s in settings}
    for key in table:
        if key not in by_key:
            msg = f"{where}: unknown key {key!r}{_suggest(key, by_key)}"
            raise ScenarioError(msg)
    resolved: dict[str, Any] = {}
    for setting in settings:
        if setting.key in table and table[setting.key] is not None:
            resolved[setting.key] = _check_value(setting, table[setting.key], where)
        elif setting.required:
            msg = f"{where}: {setting.key!r} is required"
            raise ScenarioError(msg)
        else:
            resolved[setting.key] = setting.default
    return resolved


def _describe(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    return f"{value!r} ({names.get(type(value), type(value).__name__)})"


_ACKS = {"all": -1, "-1": -1, "0": 0, "1": 1, -1: -1, 0: 0, 1: 1}


def _check_value(setting: Setting, value: Any, where: str) -> Any:
    kind = setting.kind
    at = f"{where}: {setting.key}"
    if kind == "acks":
        if type(value) not in (int, str) or value not in _ACKS:
            msg = f"{at}: {value!r} is not one of 0, 1, all, -1"
            raise ScenarioError(msg)
        return _ACKS[value]
    if kind is float and type(value) is int:
        value = float(value)
    if kind in (int, float, bool, str):
        if type(value) is not kind:
            expected = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}
            msg = f"{at}: expected {expected[kind]}, got {_describe(value)}"
            raise ScenarioError(msg)
    elif not _is_list_of(value, kind):
        msg = f"{at}: expected {_list_doc(kind)}, got {_describe(value)}"
        raise ScenarioError(msg)
    if setting.low is not None and value < setting.low:
        msg = f"{at}: must be at least {setting.low}, got {value}"
        raise ScenarioError(msg)
    if setting.high is not None and value > setting.high:
        msg = f"{at}: must be at most {setting.high}, got {value}"
        raise ScenarioError(msg)
    if setting.choices and value not in setting.choices:
        options = ", ".join(setting.choices)
        msg = f"{at}: {value!r} is not one of {options}{_suggest(str(value), setting.choices)}"
        raise ScenarioError(msg)
    return value


def _is_list_of(value: Any, kind: Any) -> bool:
    if kind == list[list[int]]:
        return isinstance(value, list) and all(
            isinstance(v, list) and all(type(x) is int for x in v) for v in value
        )
    if kind == list[str]:
        return isinstance(value, list) and all(type(v) is str for v in value)
    if kind == list[list[str]]:
        return isinstance(value, list) and all(_is_list_of(v, list[str]) for v in value)
    return False


def _list_doc(kind: Any) -> str:
    if kind == list[list[int]]:
        return "a list of broker-id lists, one per partition"
    return "a list of names" if kind == list[str] else "two lists of node names"


def replica_assignment(topic: dict[str, Any], brokers: int) -> list[list[int]]:
    """The topic's replicas per partition: as given, or round robin from broker 1 (Kafka's
    assignment starts at a random broker; here it starts at 1, so runs are reproducible)."""
    if topic["replicas"]:
        return [list(r) for r in topic["replicas"]]
    rf = topic["replication.factor"]
    return [[(p + i) % brokers + 1 for i in range(rf)] for p in range(topic["partitions"])]


def _check_topics(scenario: Scenario) -> None:
    brokers = scenario.sections["cluster"]["brokers"]
    seen: set[str] = set()
    for i, topic in enumerate(scenario.topics):
        where = f"{scenario.source}: [[topics]] #{i + 1} ({topic['name']})"
        if topic["name"] in seen:
            msg = f"{where}: name: the topic {topic['name']!r} is defined twice"
            raise ScenarioError(msg)
        seen.add(topic["name"])
        rf = topic["replication.factor"]
        if not topic["replicas"] and rf > brokers:
            msg = f"{where}: replication.factor {rf} is above the broker count {brokers}"
            raise ScenarioError(msg)
        assignment = topic["replicas"]
        if assignment and len(assignment) != topic["partitions"]:
            msg = f"{where}: replicas: {len(assignment)} lists for {topic['partitions']} partitions"
            raise ScenarioError(msg)
        for p, replicas in enumerate(assignment):
            if len(replicas) != rf:
                msg = f"{where}: replicas: partition {p} has {len(replicas)} replicas, replication.factor is {rf}"
                raise ScenarioError(msg)
            if len(set(replicas)) != len(replicas):
                msg = f"{where}: replicas: partition {p} lists a broker twice: {replicas}"
                raise ScenarioError(msg)
            unknown = [b for b in replicas if not 1 <= b <= brokers]
            if unknown:
                msg = f"{where}: replicas: partition {p} names broker {unknown[0]}, but the brokers are 1 to {brokers}"
                raise ScenarioError(msg)
    for i, producer in enumerate(scenario.producers):
        if producer["topic"] not in seen:
            known = ", ".join(sorted(seen)) or "none"
            msg = (
                f"{scenario.source}: [[producers]] #{i + 1}: topic: {producer['topic']!r} is not a "
                f"topic of [[topics]] (defined: {known})"
            )
            raise ScenarioError(msg)
    _check_consumers(scenario, seen)


def _check_consumers(scenario: Scenario, topics: set[str]) -> None:
    """Kafka's client-side checks of a consumer's settings (`ConsumerConfig`, the `Heartbeat`
    and `ConsumerCoordinator` constructors), and the topics it subscribes to, which must be
    the scenario's: topics exist before the run and none is created by a subscription."""
    for i, consumer in enumerate(scenario.consumers):
        where = f"{scenario.source}: [[consumers]] #{i + 1}"
        for topic in consumer["topics"]:
            if topic not in topics:
                known = ", ".join(sorted(topics)) or "none"
                msg = f"{where}: topics: {topic!r} is not a topic of [[topics]] (defined: {known})"
                raise ScenarioError(msg)
        if not consumer["topics"]:
            msg = f"{where}: topics: a consumer needs at least one topic"
            raise ScenarioError(msg)
        if consumer["heartbeat.interval.ms"] >= consumer["session.timeout.ms"]:
            msg = (
                f"{where}: heartbeat.interval.ms ({consumer['heartbeat.interval.ms']}) must be lower "
                f"than session.timeout.ms ({consumer['session.timeout.ms']})"
            )
            raise ScenarioError(msg)
        _check_strategy(consumer["partition.assignment.strategy"], where)
        if consumer["group.instance.id"] is not None and not scenario.profile.static_membership:
            msg = f"{where}: group.instance.id needs Kafka 2.3 or later (the version is {scenario.profile.name})"
            raise ScenarioError(msg)
    if scenario.consumers and scenario.get("cluster", "brokers") == 0:
        msg = f"{scenario.source}: [[consumers]] needs brokers: set [cluster] brokers"
        raise ScenarioError(msg)


def _check_strategy(strategy: list[str], where: str) -> None:
    """`partition.assignment.strategy`: at least one assignor (the `ConsumerCoordinator`
    refuses none), each one the simulator models."""
    from actors.consumer.assignors import ASSIGNORS  # noqa: PLC0415 - sim reads the actors' names

    valid = ", ".join(ASSIGNORS)
    if not strategy:
        msg = f"{where}: partition.assignment.strategy: names no assignor (valid: {valid})"
        raise ScenarioError(msg)
    for name in strategy:
        if name not in ASSIGNORS:
            msg = f"{where}: partition.assignment.strategy: {name!r} is not one of {valid}{_suggest(name, ASSIGNORS)}"
            raise ScenarioError(msg)


def _check_relations(scenario: Scenario) -> None:
    """Checks that involve more than one key."""
    if scenario.topics and scenario.sections["cluster"]["brokers"] == 0:
        msg = f"{scenario.source}: [[topics]] needs brokers: set [cluster] brokers"
        raise ScenarioError(msg)
    _check_topics(scenario)
    net = scenario.sections["network"]
    if net["latency.max.ms"] < net["latency.min.ms"]:
        msg = (
            f"{scenario.source}: [network] latency.max.ms ({net['latency.max.ms']}) is below "
            f"latency.min.ms ({net['latency.min.ms']})"
        )
        raise ScenarioError(msg)
    for i, fault in enumerate(scenario.faults):
        if fault["kind"] == "partition":
            between, isolate = fault["between"], fault["isolate"]
            if bool(between) == bool(isolate):
                msg = f"{scenario.source}: [[faults]] #{i + 1}: a partition needs `isolate` or `between`"
                raise ScenarioError(msg)
            if between and len(between) != 2:  # noqa: PLR2004 - two sides
                msg = f"{scenario.source}: [[faults]] #{i + 1}: between: expected two lists of nodes"
                raise ScenarioError(msg)
    cluster = scenario.sections["cluster"]
    if cluster["brokers"] and cluster["metadata.mode"] == "zookeeper" and not scenario.get("zookeeper", "enabled"):
        msg = (
            f"{scenario.source}: [zookeeper] enabled = false, but [cluster] metadata.mode = "
            '"zookeeper" needs the coordination service (use metadata.mode = "static" for a '
            "cluster without a controller)"
        )
        raise ScenarioError(msg)
    if scenario.sections["cluster"]["brokers"] == 0 and scenario.sections["workload"]["nodes"] == 0:
        msg = f"{scenario.source}: the scenario has no nodes: set [cluster] brokers (or [workload] nodes)"
        raise ScenarioError(msg)
