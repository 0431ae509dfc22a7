"""A sweep's scenario in words, for its report: the cluster, topics, producers, consumer groups
with their key settings, and each fault, as a reader of the report needs them to judge what the
grid changed. Pure functions of the resolved scenario."""

from __future__ import annotations

from typing import Any

from sim.cluster.scenario import Scenario

__all__ = ["describe_fault", "describe_scenario"]


def _s(ms: int | None) -> str:
    """`31 s`, `4.5 s`."""
    return "" if ms is None else f"{ms / 1000:g} s"


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _nodes(nodes: list[str]) -> str:
    return ", ".join(nodes) if nodes else "any node"


def _acks(acks: Any) -> str:
    return "all" if str(acks) == "-1" else str(acks)


def _topic(t: dict[str, Any], broker: dict[str, Any]) -> str:
    isr = t.get("min.insync.replicas") or broker.get("min.insync.replicas")
    words = f"Topic {t['name']}: {_plural(t['partitions'], 'partition')}, replication factor {t['replication.factor']}"
    return words + (f", min.insync.replicas {isr}" if isr is not None else "")


def _producer(n: int, p: dict[str, Any]) -> str:
    rate = p["records.per.interval"]
    pace = f"{_plural(rate, 'record')} every {p['interval.ms']} ms"
    idem = "idempotent" if p.get("enable.idempotence") else "not idempotent"
    return (f"producer-{n} writes {p['records']:,} records to {p['topic']} ({pace}), acks {_acks(p['acks'])}, "
            f"{idem}, linger.ms {p['linger.ms']}")


def _group(first: int, c: dict[str, Any]) -> str:
    count = c["count"]
    nodes = f"consumer-{first}" if count == 1 else f"consumer-{first} to consumer-{first + count - 1}"
    if c["enable.auto.commit"]:
        commits = f"auto-commit every {_s(c['auto.commit.interval.ms'])}"
    else:
        commits = "no auto-commit"
    if c["commit"] != "none":
        commits += f", the application commits ({c['commit']})"
    strategy = ", ".join(c["partition.assignment.strategy"])
    static = ", static members" if c.get("group.instance.id") else ""
    return (f"Group {c['group.id']}: {_plural(count, 'consumer')} ({nodes}) on {', '.join(c['topics'])}, {commits}, "
            f"session.timeout.ms {c['session.timeout.ms']:,}, max.poll.interval.ms {c['max.poll.interval.ms']:,}, "
            f"assignors {strategy}, auto.offset.reset {c['auto.offset.reset']}, {c['process.record.ms']} ms per record{static}")


def describe_fault(f: dict[str, Any]) -> str:
    """One fault as a sentence: `at 31 s consumer-2's process crashes; it restarts 20 s later`."""
    at, kind, node = f"at {_s(f.get('at.ms', 0))}", f["kind"], f.get("node")
    lasting = f" for {_s(f['duration.ms'])}" if f.get("duration.ms") else ""
    restart = f"; it restarts {_s(f['restart.after.ms'])} later" if f.get("restart.after.ms") is not None else ""
    if kind == "crash":
        return f"{at} {node} crashes ({f.get('crash.kind', 'process')}){restart}"
    if kind == "restart":
        return f"{at} {node} restarts"
    if kind == "shutdown":
        return f"{at} the operator shuts {node} down{restart}"
    if kind == "pause":
        return f"{at} {node} pauses{lasting}"
    if kind == "partition":
        if f.get("isolate"):
            return f"{at} {_nodes(f['isolate'])} cut off from the others{lasting}"
        a, b = f.get("between") or [[], []]
        return f"{at} the network between {_nodes(a)} and {_nodes(b)} is cut{' one way' if f.get('one.way') else ''}{lasting}"
    if kind == "heal":
        return f"{at} every network cut is lifted"
    if kind in ("drop", "duplicate", "corrupt", "reorder", "delay"):
        chance = f" with probability {f['probability']:g}" if f.get("probability") is not None else ""
        extra = f" of {f['delay.ms']} ms" if kind == "delay" and f.get("delay.ms") else ""
        return f"{at} {kind}{extra} on messages from {_nodes(f.get('src', []))} to {_nodes(f.get('dst', []))}{chance}{lasting}"
    if kind in ("close", "unsubscribe"):
        return f"{at} {node}'s application calls {kind}()"
    if kind == "stall":
        return f"{at} {node}'s processing stalls{lasting}"
    if kind == "slow":
        return f"{at} {node} takes {f['process.record.ms']} ms per record{lasting}"
    if kind == "rolling_restart":
        who = f"group {f['group']}" if f.get("group") else _nodes(f.get("nodes", []))
        return f"{at} a rolling restart of {who}, {_s(f.get('interval.ms'))} apart"
    if kind == "zombie":
        return f"{at} {node} is cut off from its group's coordinator{lasting or ' until a heal'}"
    if kind == "admin":
        group = f" of group {f['group']}" if f.get("group") else ""
        target = f" to {f['to']}" if f.get("to") else ""
        return f"{at} the operator runs {f['operation']}{group}{target}"
    return f"{at} {kind}{' on ' + node if node else ''}"


def describe_scenario(scenario: Scenario) -> tuple[list[str], list[str]]:
    """The scenario as sentences (the cluster and the run, topics, producers, groups) and its
    faults, one sentence each."""
    lines = [
        f"{_plural(scenario.get('cluster', 'brokers'), 'broker')}, Kafka {scenario.profile.name}, "
        f"{_s(scenario.get('run', 'duration.ms'))} simulated per run."
    ]
    lines += [_topic(t, scenario.sections["broker"]) + "." for t in scenario.topics]
    lines += [_producer(n, p) + "." for n, p in enumerate(scenario.producers, start=1)]
    first = 1
    for c in scenario.consumers:
        lines.append(_group(first, c) + ".")
        first += c["count"]
    return lines, [describe_fault(f)[0].upper() + describe_fault(f)[1:] + "." for f in scenario.faults]
