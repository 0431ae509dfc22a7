"""The story's sentences of KIP-848 consumer groups, of consumers that stopped on a fatal error,
and of the known Kafka bugs a run showed.

A consumer group has no generations: its rebalances are the target assignments its coordinator
computes after the group epoch moved (a member joined, left, was fenced, or changed its
subscription), and each member reconciles to the target at its own member epoch. A member the
coordinator fences (its session or rebalance timeout) or replaces (a static member whose
`group.instance.id` a new process took) is told when it happens.
"""

from __future__ import annotations

import re
from typing import Any

from sim.report.consumer_group_facts import is_consumer_group
from sim.report.narrative_text import join, partitions, seconds
from sim.report.run_facts import RunFacts

__all__ = ["FATAL_WHY", "KNOWN_BUGS", "close_tail", "epoch_word", "failure_moments", "known_bug_lines",
           "member_moments", "rebalance_word", "target_moments"]

TRIGGER_VERBS = {"member_joined": "joined", "member_left": "left", "member_fenced": "was fenced",
                 "subscription_changed": "changed its subscription"}
"""`group_epoch_bumped`'s reasons as the story tells them of the member's consumer."""

FENCED_WHY = {
    "session_timeout": "no heartbeat came within its session timeout",
    "rebalance_timeout": "it had not revoked its partitions within its rebalance timeout",
}

FATAL_WHY = {
    "UNRELEASED_INSTANCE_ID": "its old member had not left, and Kafka's client gives up",
    "FENCED_INSTANCE_ID": "another process has taken its group.instance.id",
}
"""Why a fatal error stops a consumer, by Kafka's error name (the others are told bare)."""

KNOWN_BUGS = {
    "kafka_14639": ("KAFKA-14639", re.compile(r"(\S+) of (\S+) is assigned to \S+ in generation (\d+) while \S+ holds it"),
                    "{0} of group {1} was given to another member in generation {2} while a member whose claim the "
                    "leader's assignor threw away for its older generation still held it"),
    "kip_966": ("of ZooKeeper mode's ISR (the gap KIP-966 closes)",
                re.compile(r"(\S+): (\S+) lost unflushed records and is back with (\d+), below \S+'s HW (\d+), still in the ISR"),
                "{1} came back from a power or disk loss with {2} records of {0}, below its HW {3}, and still in its ISR, "
                "so it could have been elected without them"),
    "kafka_6082": ("KAFKA-6082",
                   re.compile(r"(\S+): leader (\S+) epoch (\S+) written with controller epoch (\d+), current (\d+)"),
                   "a controller of epoch {3}, no longer the controller (epoch {4} is), still wrote leader {1} at leader "
                   "epoch {2} to {0}: its ZooKeeper writes were not fenced by the controller epoch"),
}
"""A known-bug finding's label: Kafka's JIRA id, how to read its detail, and what to say."""


def epoch_word(facts: RunFacts, group_id: str) -> str:
    """What a hold's `generation_id` is: the member epoch in a consumer group."""
    return "member epoch" if is_consumer_group(facts, group_id) else "generation"


def rebalance_word(facts: RunFacts) -> str:
    """What summary.json's `rebalances` counts in a run with a consumer group (a classic run's
    rebalances are its generations, as they always were)."""
    kinds = {"target assignments" if is_consumer_group(facts, g) else "generations" for g in facts.group_protocols}
    return f" ({' and '.join(sorted(kinds, reverse=True))})" if "target assignments" in kinds else ""


def close_tail(facts: RunFacts, nodes: list[str]) -> str:
    """What a rolling restart's close() did, as its consumers' protocol and static ids make it."""
    setups = [facts.consumer_setup.get(n, {}) for n in nodes]
    if not all(s.get("static") for s in setups):
        return "each commits what it processed, revokes its partitions and leaves the group before its process exits."
    if all(s.get("protocol") == "consumer" for s in setups):
        return ("each commits what it processed, revokes its partitions and leaves with member epoch -2, which keeps its "
                "assignment for the next process with its group.instance.id.")
    return ("each commits what it processed and revokes its partitions; a static member sends no LeaveGroup, and its "
            "next process takes its place by its group.instance.id.")


def _group_names(facts: RunFacts) -> dict[str, int]:
    """Group -> how many brokers coordinated it (a group of more is named with its coordinator)."""
    coordinators: dict[str, set[str]] = {}
    for row in [*facts.target_assignments, *facts.member_removals]:
        coordinators.setdefault(row["group_id"], set()).add(row["coordinator"])
    return {g: len(c) for g, c in coordinators.items()}


def _name(names: dict[str, int], row: dict[str, Any]) -> str:
    return row["group_id"] + (f" (coordinator {row['coordinator']})" if names[row["group_id"]] > 1 else "")


def target_moments(facts: RunFacts) -> list[tuple[int, int, str]]:
    names = _group_names(facts)
    out = []
    for t in facts.target_assignments:
        triggers = join(f"{x['consumer'] or 'a member'} {TRIGGER_VERBS.get(x['reason'], x['reason'])}"
                        for x in t["triggers"])
        members = "; ".join(
            f"{node}{' (an ended process)' if ended else ''} {partitions(ps) if ps else 'nothing'}"
            for node, ended, ps in t["members"]
        ) or "no member"
        after = f" after {triggers}" if triggers else ""
        out.append((t["ts_ms"], 4, (
            f"At {seconds(t['ts_ms'])} group {_name(names, t)} computed its target assignment at epoch {t['epoch']}"
            f"{after}: {members}."
        )))
    return out


def member_moments(facts: RunFacts) -> list[tuple[int, int, str]]:
    """Members fenced or replaced (those that left are told by their consumer's close or
    unsubscribe)."""
    names = _group_names(facts)
    out = []
    for r in facts.member_removals:
        if r["reason"] in FENCED_WHY:
            out.append((r["ts_ms"], 4, (
                f"At {seconds(r['ts_ms'])} group {_name(names, r)}'s coordinator fenced {r['consumer']}'s member at "
                f"epoch {r['member_epoch']}: {FENCED_WHY[r['reason']]}."
            )))
        elif r["reason"] == "replaced" and r["successor"] is not None:
            new = r["successor"]
            held = partitions(new["assigned"]) if new["assigned"] else "nothing"
            out.append((r["ts_ms"], 4, (
                f"At {seconds(r['ts_ms'])} {new['consumer']}'s new process took the place of {r['consumer']}'s static "
                f"member in group {_name(names, r)} (group.instance.id {r['instance_id']}) at epoch "
                f"{new['member_epoch']} with {held}, and no target assignment was computed."
            )))
    return out


def failure_moments(summary: dict[str, Any]) -> list[tuple[int, int, str]]:
    out = []
    for f in summary.get("consumer_failures", []):
        if not isinstance(f, dict):
            continue
        why = FATAL_WHY.get(f["error"].rpartition(": ")[2])
        out.append((f["ts_ms"], 0, (
            f"At {seconds(f['ts_ms'])} {f['node']} stopped on a fatal error ({f['error']}){': ' + why if why else ''}."
        )))
    return out


def known_bug_lines(summary: dict[str, Any]) -> list[str]:
    """One sentence per known-bug finding: Kafka's behaviour in the run's version."""
    lines = []
    for f in summary.get("known_bug_findings", []):
        jira, reading, words = KNOWN_BUGS.get(f["label"], (f["label"], None, ""))
        found = reading.fullmatch(f["detail"]) if reading else None
        what = words.format(*found.groups()) if found else f"{f['invariant']} did not hold ({f['detail']})"
        lines.append(
            f"Kafka {summary['kafka_version']}'s known bug {jira} showed at {seconds(f['ts_ms'])} on {f['node']}: {what}; "
            f"this is Kafka's behaviour in that version, not a fault of the simulator."
        )
    return lines
