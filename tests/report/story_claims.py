"""Every sentence of a run's story checked against the run's events.jsonl, read as a reader reads it.

The story (sim/report/narrative.py) is prose; this module parses each sentence back into the
claims it makes (who did what, when, for how long, how many) and checks each claim against the
log with its own reading of the events (docs/log-schema.md), sharing no code with
sim/report/. A sentence of a form it does not know is an error too, so a new kind of sentence
cannot go unchecked.

Times are compared as the story prints them (`31.0 s`): a claim holds when the log's own time,
printed the same way, reads the same.

`check(run_dir)` returns the claims the log contradicts, one line each.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import orjson

from tests.properties.group_recount import Recount, recount
from tests.report.story_claims_consumer import CONSUMER_SENTENCES, ConsumerClaims, protocol_of

__all__ = ["check"]

T = r"(\d+\.\d) s"
"""A time as the story prints it."""

G = r"\S+(?: \(coordinator broker-\d+\))?"
"""A group, with its coordinator when more than one broker coordinated it."""


def s(ms: int) -> str:
    return f"{ms / 1000:.1f}"


# reading the log


@dataclass
class Log:
    """A run's events with the few indexes the checks read."""

    events: list[dict[str, Any]]
    summary: dict[str, Any]
    end: int
    by_event: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    member_node: dict[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, run_dir: Path) -> Log:
        events = [orjson.loads(line) for line in (run_dir / "events.jsonl").read_bytes().splitlines()]
        summary = json.loads((run_dir / "summary.json").read_text())
        log = cls(events, summary, max(summary["sim_ms"], events[-1]["ts_ms"]))
        for e in events:
            log.by_event.setdefault(e["event"], []).append(e)
            if e.get("actor") == "consumer" and e.get("member_id"):
                log.member_node[e["member_id"]] = e["node"]
            if e["event"] == "join_group_failed" and e.get("assigned_member_id"):
                log.member_node[e["assigned_member_id"]] = e["node"]
        return log

    @cached_property
    def recount(self) -> Recount:
        """Consumed records and duplicates by cause, recounted once from the log alone."""
        return recount(self.events)

    def of(self, *names: str) -> Iterator[dict[str, Any]]:
        """The events of these kinds, in log order."""
        if len(names) == 1:
            yield from self.by_event.get(names[0], [])
            return
        wanted = set(names)
        yield from (e for e in self.events if e["event"] in wanted)

    def at(self, name: str, when: str, **fields: Any) -> list[dict[str, Any]]:
        """Events `name` printed at `when` whose fields are these."""
        return [e for e in self.of(name) if s(e["ts_ms"]) == when and all(e.get(k) == v for k, v in fields.items())]


def tp(e: dict[str, Any]) -> str:
    return f"{e['topic']}-{e['partition']}"


def broker_id(node: str) -> int:
    return int(node.removeprefix("broker-"))


def names(text: str) -> tuple[list[str], dict[str, int]]:
    """`T-0, T-1 and 17 partitions of __consumer_offsets` -> (['T-0', 'T-1'], {'__consumer_offsets': 17})."""
    named: list[str] = []
    counted: dict[str, int] = {}
    for word in re.split(r", | and ", text):
        found = re.fullmatch(r"(\d+) partitions? of (\S+)", word)
        if found:
            counted[found.group(2)] = int(found.group(1))
        else:
            named.append(word)
    return named, counted


def covered(text: str, holds: Callable[[str], bool], candidates: list[str]) -> str | None:
    """Whether the claim `holds` for every partition `text` names, and for at least as many
    of each counted topic's `candidates` as it counts; None, or what fails."""
    named, counted = names(text)
    wrong = [p for p in named if not holds(p)]
    if wrong:
        return f"not true of {', '.join(wrong)}"
    for topic, n in counted.items():
        true = sum(1 for p in candidates if p.rpartition("-")[0] == topic and holds(p))
        if true < n:
            return f"true of {true} partitions of {topic}, not {n}"
    return None


def window(first: str, last: str | None) -> Callable[[int], bool]:
    last = last or first
    return lambda ms: float(first) <= float(s(ms)) <= float(last)


# the brokers' view: leaders, ISRs, high watermarks


def leader_spells(log: Log) -> dict[str, list[tuple[int, int | None, int, str, int | None]]]:
    """Per partition, its spells with no running broker acting as leader, once it had one:
    (from, to or None, the broker lost, how, the broker that took it)."""
    leading: dict[str, set[int]] = {}
    open_: dict[str, tuple[int, int, str]] = {}
    spells: dict[str, list[tuple[int, int | None, int, str, int | None]]] = {}

    def lose(p: str, b: int, now: int, how: str) -> None:
        leading[p].discard(b)
        if not leading[p] and p not in open_:
            open_[p] = (now, b, how)

    for e in log.of("became_leader", "became_follower", "replica_stopped", "node_crashed", "node_stopped"):
        if e["event"] in ("node_crashed", "node_stopped"):
            if e["target"].startswith("broker-"):
                b = broker_id(e["target"])
                for p in sorted(p for p, bs in leading.items() if b in bs):
                    lose(p, b, e["ts_ms"], e["event"])
            continue
        p, b = tp(e), broker_id(e["node"])
        if e["event"] == "became_leader":
            leading.setdefault(p, set()).add(b)
            if p in open_:
                start, lost, how = open_.pop(p)
                spells.setdefault(p, []).append((start, e["ts_ms"], lost, how, b))
        elif b in leading.get(p, ()):
            lose(p, b, e["ts_ms"], e["event"])
    for p, (start, lost, how) in open_.items():
        spells.setdefault(p, []).append((start, None, lost, how, None))
    return spells


def isr_history(log: Log) -> list[tuple[dict[str, Any], list[int]]]:
    """Every ISR the controller or a leader committed, with the ISR before it."""
    last: dict[str, list[int]] = {}
    out = []
    for e in log.of("leader_elected", "isr_shrunk", "isr_expanded", "replica_removed_from_isr"):
        out.append((e, last.get(tp(e), [])))
        last[tp(e)] = list(e["isr"])
    return out


# the groups' view: owners, processing, commits


@dataclass
class Hold:
    node: str
    group: str
    partition: str
    generation: int
    start: int
    end: int | None = None
    why: str | None = None


def holds(log: Log) -> list[Hold]:
    """Each consumer's ownership of each partition: from `partitions_assigned` to the
    revocation, loss, or its process going down."""
    out: list[Hold] = []
    open_: dict[tuple[str, str], Hold] = {}
    for e in log.of("partitions_assigned", "partitions_revoked", "partitions_lost", "node_crashed", "node_stopped"):
        if e["event"] in ("node_crashed", "node_stopped"):
            for key in [k for k in open_ if k[0] == e["target"]]:
                hold = open_.pop(key)
                hold.end, hold.why = e["ts_ms"], e["event"]
            continue
        for p in e["partitions"]:
            hold = open_.pop((e["node"], p), None)
            if hold is not None:
                hold.end, hold.why = e["ts_ms"], e["event"]
            if e["event"] == "partitions_assigned":
                hold = Hold(e["node"], e["group_id"], p, e["generation_id"], e["ts_ms"])
                open_[(e["node"], p)] = hold
                out.append(hold)
    return out


def owned(all_holds: list[Hold], group: str, p: str, start: int, end: int) -> bool:
    """Whether some member of `group` held `p` at some time in [start, end)."""
    return any(
        h.group == group and h.partition == p and h.start < end and (h.end is None or h.end > start) for h in all_holds
    )


# the checks, one per form of sentence


@dataclass
class Checker(ConsumerClaims):
    log: Log
    holds: list[Hold]
    spells: dict[str, list[tuple[int, int | None, int, str, int | None]]]

    # headline and figures

    def headline_quiet(self) -> str | None:
        summary, counted = self.log.summary, self.log.recount
        if summary["lost_acked"] or summary["log_duplicates"] or counted.duplicates or summary["skipped"]:
            return "something was lost, written twice, processed twice or skipped"
        return None

    def headline_skipped(self, n: str, by: str) -> str | None:
        told = {cause: int(k) for cause, k in (w.rsplit(" ", 1) for w in by.split(", "))}
        summary = self.log.summary
        return None if int(n) == summary["skipped"] == sum(told.values()) and told == summary["skipped_by_cause"] else "summary.json counts otherwise"

    def headline_processed_then_lost(self, n: str) -> str | None:
        return None if int(n) == self.log.summary["processed_then_lost"] else "summary.json counts otherwise"

    def skips(self, first: str, last: str | None, who: str, group: str, n: str, cause: str, pieces: str) -> str | None:
        """Each range's ends were never processed by the group, and a member named (or the
        operator) moved the group's position or committed offset past them in the window."""
        if self.log.summary["skipped_by_cause"].get(cause) != int(n):
            return "summary.json counts otherwise"
        inside = window(first, last)
        nodes = set(re.split(r", | and ", who))
        processed = {(tp(e), o) for e in self.log.of("records_processed") if e["group_id"] == group
                     for o in range(e["first_offset"], e["end_offset"])}
        for p, a, b in re.findall(r"(\S+) offsets (\d+) to (\d+)", pieces):
            if (p, int(a)) in processed or (p, int(b)) in processed:
                return f"{p} offsets {a} to {b} were processed"
            passed = [e for e in self.log.of("offset_commit_completed", "fetch_position_set", "offset_commit_sent")
                      if e["group_id"] == group and inside(e["ts_ms"]) and self._passes(e, p, int(b), nodes)]
            if not passed:
                return f"nobody named moved past {p} offset {b} then"
        return None

    @staticmethod
    def _passes(e: dict[str, Any], p: str, offset: int, nodes: set[str]) -> bool:
        if e["event"] == "fetch_position_set":
            return e["node"] in nodes and tp(e) == p and e["offset"] > offset
        by = "admin" if e["event"] == "offset_commit_completed" and not e["member_id"] else e["node"]
        return (by in nodes or e["event"] == "offset_commit_sent" and e["node"] in nodes) and any(
            f"{t}-{q}" == p and o > offset for t, q, o in e["offsets"])

    def headline_duplicates(self, n: str, by: str) -> str | None:
        counted = self.log.recount
        told = {cause: int(k) for cause, k in (w.rsplit(" ", 1) for w in by.split(", "))}
        if int(n) != counted.duplicates or told != {c: k for c, k in counted.by_cause.items() if k}:
            return f"the log's recount is {counted.duplicates} ({counted.by_cause})"
        return None

    def headline_failed(self) -> str | None:
        return None if any(self.log.of("simulation_failed")) else "no simulation_failed event"

    def headline_violations(self, n: str, when: str, node: str, invariant: str) -> str | None:
        found = list(self.log.of("invariant_violated"))
        if len(found) != int(n) or s(found[0]["ts_ms"]) != when or found[0]["target"] != node:
            return f"the log has {len(found)} violations"
        return None if found[0]["invariant"] == invariant else "another invariant"

    def headline_lost(self, n: str) -> str | None:
        return None if int(n) == self.log.summary["lost_acked"] else "summary.json counts otherwise"

    def headline_copies(self) -> str | None:
        return None if self.log.summary["log_duplicates"] else "summary.json counts no copy"

    def figures(self, events: str, sim: str, rest: str) -> str | None:
        if int(events) != len(self.log.events) or sim != s(self.log.summary["sim_ms"]):
            return f"the log has {len(self.log.events)} events over {s(self.log.summary['sim_ms'])} s"
        produced = re.search(r"(\d+) records produced, (\d+) acknowledged", rest)
        if produced and (int(produced.group(1)), int(produced.group(2))) != (
            self.log.summary["produced"], self.log.summary["acked"]
        ):
            return "produced or acknowledged differ from summary.json"
        consumed = re.search(r"(\d+) consumed, (\d+) rebalances(?: \((.+)\))?$", rest)
        if consumed and int(consumed.group(1)) != self.log.recount.consumed:
            return "the log's recount consumed another number"
        if consumed:  # a classic group's generations formed with members, a consumer group's target assignments
            generations = sum(1 for e in self.log.of("generation_started") if e["members"])
            targets = sum(1 for e in self.log.of("target_assignment_computed"))
            if int(consumed.group(2)) != generations + targets:
                return f"the log has {generations} generations and {targets} target assignments"
            groups = {e["group_id"] for e in self.log.of("consumer_started")}
            kinds = {"target assignments" if protocol_of(self.log, g) == "consumer" else "generations" for g in groups}
            if consumed.group(3) is not None and consumed.group(3) != " and ".join(sorted(kinds, reverse=True)):
                return f"its groups count {kinds}"
        return None

    # the controller, elections and ISRs

    def controller(self, when: str, broker: str, what: str, epoch: str) -> str | None:
        name = "controller_elected" if what == "became" else "controller_resigned"
        return None if self.log.at(name, when, node=f"broker-{broker}", controller_epoch=int(epoch)) else f"no {name}"

    def elected(self, first: str, last: str | None, node: str, what: str, kind: str | None, parts: str, leaders: str | None) -> str | None:
        election = "new" if what == "the first leaders" else kind
        inside = window(first, last)
        found = [e for e in self.log.of("leader_elected") if e["node"] == node and e["election"] == election and inside(e["ts_ms"])]
        by_partition = {tp(e): e for e in found}
        wrong = covered(parts, lambda p: p in by_partition, sorted(by_partition))
        if wrong:
            return wrong
        for pair in (leaders or "").split("; ") if leaders else []:
            p, b = pair.split(" to broker-")
            if by_partition[p]["leader"] != int(b):
                return f"{p} went to broker-{by_partition[p]['leader']}"
        return None

    def unclean(self, when: str, broker: str, p: str, epoch: str, isr: str) -> str | None:
        for e, before in isr_history(self.log):
            elected = e["event"] == "leader_elected" and e["unclean"] and tp(e) == p and s(e["ts_ms"]) == when
            if elected and (e["leader"], e["leader_epoch"], str(before)) == (int(broker), int(epoch), isr) and int(broker) not in before:
                return None
        return "no such unclean election"

    def election_failed(self, when: str, p: str, reason: str) -> str | None:
        found = [e for e in self.log.at("leader_election_failed", when) if tp(e) == p and e["reason"] == reason]
        return None if found else "no leader_election_failed"

    def isr(self, first: str, last: str | None, who: str, change: str, parts: str, single: str | None) -> str | None:
        brokers = {int(b) for b in re.findall(r"broker-(\d+)", who)}
        inside = window(first, last)
        changed: dict[str, list[int]] = {}
        for e, before in isr_history(self.log):
            if e["event"] == "leader_elected" or not inside(e["ts_ms"]):
                continue
            gone, came = set(before) - set(e["isr"]), set(e["isr"]) - set(before)
            if (change == "left" and brokers <= gone) or (change == "rejoined" and brokers <= came):
                changed.setdefault(tp(e), list(e["isr"]))
        wrong = covered(parts, lambda p: p in changed, sorted(changed))
        if wrong:
            return wrong
        if single:
            named, _ = names(single)
            if any(len(changed.get(p, [])) != 1 for p in named):
                return "not left with a single in-sync replica"
        return None

    def leaderless(self, start: str, parts: str, length: str, end: str | None, broker: str, why: str) -> str | None:
        how = {"crashed": ("node_crashed",), "was stopped": ("node_stopped",)}.get(why, ("became_follower", "replica_stopped"))

        def holds(p: str) -> bool:
            for begun, over, lost, how_lost, _ in self.spells.get(p, []):
                to = self.log.end if over is None else over
                if (s(begun) == start and s(to - begun) == length and lost == int(broker) and how_lost in how
                        and (end is None) == (over is None) and (end is None or s(over) == end)):
                    return True
            return False

        return covered(parts, holds, sorted(self.spells))

    def hw_stall(self, start: str, p: str, node: str, hw: str, length: str) -> str | None:
        events = [e for e in self.log.of("replica_offsets_changed", "became_follower", "replica_stopped", "node_crashed", "node_stopped")
                  if (e.get("node") == node and e.get("topic") is not None and tp(e) == p) or e.get("target") == node]
        waiting = None
        for e in events:
            if e["event"] != "replica_offsets_changed":
                if waiting is not None:
                    return self._stall_ends(waiting, e["ts_ms"], start, length)
                continue
            if e["role"] != "leader":
                continue
            if waiting is not None and e["high_watermark"] > int(hw):
                found = self._stall_ends(waiting, e["ts_ms"], start, length)
                if found is None:
                    return None
                waiting = None
            if waiting is None and e["high_watermark"] == int(hw) and e["log_end_offset"] > int(hw) and s(e["ts_ms"]) == start:
                waiting = e["ts_ms"]
        if waiting is not None:
            return self._stall_ends(waiting, self.log.end, start, length)
        return "no such stall"

    @staticmethod
    def _stall_ends(since: int, until: int, start: str, length: str) -> str | None:
        return None if s(until - since) == length else f"it stood {s(until - since)} s from {start} s"

    # faults

    def crash(self, when: str, node: str, kind: str, restart: str | None) -> str | None:
        found = self.log.at("node_crashed", when, target=node, kind=kind)
        return self._restarted(found, node, restart) if found else "no node_crashed"

    def exited(self, when: str, node: str, restart: str | None) -> str | None:
        found = self.log.at("node_stopped", when, target=node)
        return self._restarted(found, node, restart) if found else "no node_stopped"

    def _restarted(self, found: list[dict[str, Any]], node: str, restart: str | None) -> str | None:
        later = [e for e in self.log.of("node_started") if e["target"] == node and e["ts_ms"] > found[0]["ts_ms"]]
        if restart is None:
            return "it did restart" if later else None
        return None if later and s(later[0]["ts_ms"]) == restart else "no restart then"

    def called(self, when: str, node: str, action: str) -> str | None:
        found = [e for e in self.log.at("application_called", when, action=action) if e["target"].split("/")[0] == node]
        return None if found else f"no application_called {action}"

    def paused(self, when: str, node: str, until: str) -> str | None:
        return None if [e for e in self.log.at("node_paused", when, target=node) if s(e["until_ms"]) == until] else "no pause"

    def cut(self, when: str, way: str, a: str, b: str) -> str | None:
        found = [e for e in self.log.at("network_partitioned", when, one_way=way.startswith("one way"))
                 if _joined(e["side_a"]) == a and _joined(e["side_b"]) == b]
        return None if found else "no such cut"

    def healed(self, when: str, what: str) -> str | None:
        return None if self.log.at("network_healed" if what == "healed" else "network_partition_lifted", when) else "not then"

    def link_fault(self, when: str, kind: str) -> str | None:
        return None if self.log.at("link_fault_added", when, kind=kind) else "no link fault"

    def skipped_fault(self, when: str, kind: str, node: str) -> str | None:
        return None if self.log.at("fault_skipped", when, kind=kind, target=node) else "no fault_skipped"

    def closes(self, times: str, nodes: str) -> str | None:
        for when, node in zip(re.split(r", | and ", times), re.split(r", | and ", nodes), strict=True):
            found = self.called(when.removesuffix(" s"), node, "close")
            if found:
                return found
            close = self.log.at("application_called", when.removesuffix(" s"), action="close")[0]["ts_ms"]
            if not any(e["target"] == node and e["ts_ms"] > close for e in self.log.of("node_started")):
                return f"{node}'s process did not restart"
        return None

    # consumers and groups

    def consumer_crash(self, when: str, node: str, kind: str, owners: str, n: str, commit: str | None, readers: str | None, restart: str | None) -> str | None:
        crashes = self.log.at("node_crashed", when, target=node, kind=kind)
        if not crashes:
            return "no node_crashed"
        at = crashes[0]["ts_ms"]
        held = [h for h in self.holds if h.node == node and h.end == at and h.why == "node_crashed"]
        if not held:
            return "it held nothing"
        group = held[0].group
        for part in filter(None, owners.split("; ")):
            found = re.fullmatch(r"(?:its partitions? )?(.+) had no owner for (\d+\.\d) s(?: until (generation|member epoch) (\d+)|, "
                                 r"to the end of the run)", part)
            if not found:
                return f"cannot read {part!r}"
            listed, length, word, generation = found.groups()
            if word and word != self._epoch_word(group):
                return f"group {group} has no {word}s"
            for p in names(listed)[0]:
                later = sorted((h for h in self.holds if h.group == group and h.partition == p and h.start >= at), key=lambda h: h.start)
                to = later[0].start if later else self.log.end
                if owned(self.holds, group, p, at, to) or s(to - at) != length:
                    return f"{p} had an owner within {length} s"
                if generation and (not later or later[0].generation != int(generation)):
                    return f"{p}'s next owner is not of generation {generation}"
        uncommitted = self._uncommitted(node, group, crashes[0], [h.partition for h in held])
        if int(n) != uncommitted:
            return f"it had processed {uncommitted} uncommitted records"
        last = self._last_commit(node, at)
        if commit is None and last is not None:
            return "it had committed"
        if commit is not None:
            kind_of, since = commit.rsplit(" at ", 1)
            words = {"auto": "auto-commit", "join_prepare": "auto-commit before a rebalance", "sync": "commitSync",
                     "async": "commitAsync", "revoke": "commit in onPartitionsRevoked", "close": "commit on close()"}
            expected = words.get(last[1]) if last else None
            if last is None or s(last[0]) != since or kind_of != expected:
                return f"its last commit was {last}"
        if readers:
            who = re.split(r", | and ", readers.split(" (")[0])
            again = self._read_again(node, group, at, [h.partition for h in held])
            if not set(who) <= again:
                return f"read again by {sorted(again)}"
        later = [e for e in self.log.of("node_started") if e["target"] == node and e["ts_ms"] > at]
        if (restart is None) != (not later) or (restart and s(later[0]["ts_ms"]) != restart):
            return "its restart is otherwise"
        return None

    def _uncommitted(self, node: str, group: str, crash: dict[str, Any], partitions: list[str]) -> int:
        """What the process had processed above the group's commits when it crashed: the log's
        lines before the crash's, a commit completed later in its millisecond not counted."""
        at = crash["ts_ms"]
        started = max(e["ts_ms"] for e in self.log.of("node_started") if e["target"] == node and e["ts_ms"] <= at)
        processed: dict[str, int] = {}
        committed: dict[str, int] = {}
        for e in self.log.of("records_processed", "offset_commit_completed", "node_crashed"):
            if e is crash:
                break
            if e["event"] == "node_crashed" or e["group_id"] != group:
                continue
            if e["event"] == "records_processed" and e["node"] == node and e["ts_ms"] >= started:
                processed[tp(e)] = max(processed.get(tp(e), 0), e["end_offset"])
            elif e["event"] == "offset_commit_completed" and e["error"] == "NONE":
                for topic, partition, offset in e["offsets"]:
                    committed[f"{topic}-{partition}"] = offset
        return sum(max(0, processed.get(p, 0) - committed.get(p, 0)) for p in partitions)

    def _last_commit(self, node: str, at: int) -> tuple[int, str] | None:
        kinds = {e["commit_id"]: e["kind"] for e in self.log.of("offset_commit_sent") if e["node"] == node}
        done = [e for e in self.log.of("offset_commit_answered") if e["node"] == node and e["error"] == "NONE" and e["ts_ms"] <= at]
        return (done[-1]["ts_ms"], kinds.get(done[-1]["commit_id"], done[-1]["kind"])) if done else None

    def _read_again(self, node: str, group: str, at: int, partitions: list[str]) -> set[str]:
        before: set[tuple[str, int]] = set()
        again: set[str] = set()
        for e in self.log.of("records_processed"):
            if e["group_id"] != group or tp(e) not in partitions:
                continue
            offsets = {(tp(e), o) for o in range(e["first_offset"], e["end_offset"])}
            if e["node"] == node and e["ts_ms"] <= at:
                before |= offsets
            elif e["ts_ms"] > at and offsets & before:
                again.add(e["node"])
        return again

    @staticmethod
    def _group(text: str) -> tuple[str, dict[str, str]]:
        """`swarm (coordinator broker-2)` -> ('swarm', {'node': 'broker-2'})."""
        found = re.fullmatch(r"(\S+) \(coordinator (\S+)\)", text)
        return (found.group(1), {"node": found.group(2)}) if found else (text, {})

    def formed(self, when: str, group: str, generation: str, members: str) -> str | None:
        group, on = self._group(group)
        for e in self.log.at("generation_started", when, group_id=group, generation_id=int(generation), **on):
            if self._members(e) == members:
                return None
        return "no such generation"

    def _members(self, e: dict[str, Any]) -> str:
        nodes = sorted((self.log.member_node.get(m, m) for m in e["members"]), key=lambda n: (n.rpartition("-")[0], int(n.rpartition("-")[2]) if n.rpartition("-")[2].isdigit() else -1))
        return _joined(nodes) if nodes else "no member"

    def rebalance(self, when: str, node: str, change: str, group: str, generation: str, after: str, members: str, removed: str | None) -> str | None:
        group, on = self._group(group)
        begun = self.log.at("group_state_changed", when, group_id=group, state="PreparingRebalance", **on)
        if not begun:
            return "no rebalance began then"
        began, coordinator = begun[0]["ts_ms"], begun[0]["node"]
        if not self._trigger(began, group, coordinator, node, change):
            return f"{node} did not {change}"
        formed = [e for e in self.log.of("generation_started") if e["group_id"] == group and e["node"] == coordinator
                  and e["generation_id"] == int(generation) and e["ts_ms"] >= began]
        if not formed or s(formed[0]["ts_ms"] - began) != after or self._members(formed[0]) != members:
            return "the generation formed otherwise"
        return None

    def _trigger(self, began: int, group: str, coordinator: str, node: str, change: str) -> bool:
        removed = re.fullmatch(r"was removed \((\w+)\)", change)
        reason = {"left (LeaveGroup)": "leave", "was expelled (session timeout)": "session_timeout"}.get(change)
        reason = removed.group(1) if removed else reason
        name = "group_member_added" if change == "joined" else "group_member_removed"
        found = [e for e in self.log.of(name) if e["group_id"] == group and e["node"] == coordinator and e["ts_ms"] == began
                 and (change == "joined" or e["reason"] == reason)]
        return any(self.log.member_node.get(e["member_id"], "a new member") == node for e in found)

    def rebalances(self, start: str, end: str, group: str, n: str, nodes: str, change: str, first: str, last: str) -> str | None:
        group, on = self._group(group)
        generations = [e for e in self.log.of("generation_started") if e["group_id"] == group and int(first) <= e["generation_id"] <= int(last)
                       and e["node"] == on.get("node", e["node"]) and float(start) - 0.05 <= e["ts_ms"] / 1000]
        if len(generations) != int(n) or s(generations[-1]["ts_ms"]) != end:
            return "the generations formed otherwise"
        return None

    def _epoch_word(self, group: str) -> str:
        """What a consumer's `generation_id` is in `group`: a consumer group's member epoch."""
        return "member epoch" if protocol_of(self.log, group) == "consumer" else "generation"

    def owner_gap(self, start: str, parts: str, group: str, why: str, length: str, word: str | None, generation: str | None) -> str | None:
        if word and word != self._epoch_word(group):
            return f"group {group} has no {word}s"
        def holds(p: str) -> bool:
            ends = [h.end for h in self.holds if h.group == group and h.partition == p and h.end is not None and s(h.end) == start]
            for end in ends:
                later = sorted((h for h in self.holds if h.group == group and h.partition == p and h.start >= end), key=lambda h: h.start)
                to = later[0].start if later else self.log.end
                if owned(self.holds, group, p, end, to) or s(to - end) != length:
                    continue
                if (generation is None) == (not later) and (generation is None or later[0].generation == int(generation)):
                    return True
            return False

        return covered(parts, holds, sorted({h.partition for h in self.holds if h.group == group}))

    def out_of_group(self, start: str, node: str, group: str, length: str, generation: str | None, why: str) -> str | None:
        """The coordinator removed a member of `node` then, not for a LeaveGroup, while its
        process ran; no generation had a member of it until `generation`'s, `length` later."""
        removed = [e for e in self.log.at("group_member_removed", start, group_id=group)
                   if self.log.member_node.get(e["member_id"]) == node and e["reason"] != "leave"]
        if not removed:
            return "no removal then"
        at, member = removed[0]["ts_ms"], removed[0]["member_id"]
        ups = [e for e in self.log.of("node_started", "node_crashed", "node_stopped") if e["target"] == node and e["ts_ms"] <= at]
        if not ups or ups[-1]["event"] != "node_started":
            return "its process was down"
        first_seen = next(e["ts_ms"] for e in self.log.events if e.get("actor") == "consumer" and e["node"] == node
                          and member in (e.get("member_id"), e.get("assigned_member_id")))
        if first_seen < ups[-1]["ts_ms"]:
            return "the member removed was an earlier process's, not the running one's"
        back = [e for e in self.log.of("generation_started") if e["group_id"] == group and e["ts_ms"] >= at
                and node in {self.log.member_node.get(m) for m in e["members"]}]
        to = back[0]["ts_ms"] if back else self.log.end
        if s(to - at) != length or (generation is None) != (not back):
            return f"it was out for {s(to - at)} s"
        return None if generation is None or back[0]["generation_id"] == int(generation) else "another generation took it back"

    def duplicates(self, first: str, last: str | None, readers: str, n: str, cause: str, pieces: str) -> str | None:
        counted = self.log.recount
        if counted.by_cause.get(cause, 0) != int(n):
            return f"the log's recount has {counted.by_cause.get(cause, 0)} {cause}"
        times: dict[tuple[str, int], list[tuple[int, str]]] = {}
        for e in self.log.of("records_processed"):
            for o in range(e["first_offset"], e["end_offset"]):
                times.setdefault((tp(e), o), []).append((e["ts_ms"], e["node"]))
        inside = window(first, last)
        who = set(re.split(r", | and ", readers))
        for piece in re.findall(r"(\S+) offsets (\d+) to (\d+)", pieces):
            p, a, b = piece[0], int(piece[1]), int(piece[2])
            for o in (a, b):
                seen = times.get((p, o), [])
                if len(seen) < 2 or not any(inside(ms) and node in who for ms, node in seen[1:]):
                    return f"{p} offset {o} was not processed again then by {readers}"
        return None

    def lost(self, p: str, n: str, why: str) -> str | None:
        if sum(1 for r in self.log.summary["lost_records"] if r["partition"] == p) != int(n):
            return "summary.json counts otherwise"
        unclean = re.fullmatch(rf"the unclean election at {T} gave the partition to a replica that lacked them", why)
        if unclean:
            found = [e for e in self.log.at("leader_elected", unclean.group(1)) if tp(e) == p and e["unclean"]]
            return None if found else "no unclean election then"
        down = re.fullmatch(rf"broker-(\d+) led it when it went down at {T}, before its followers had them", why)
        if down:
            spells = [x for x in self.spells.get(p, []) if x[2] == int(down.group(1)) and s(x[0]) == down.group(2)]
            return None if spells and spells[0][3] in ("node_crashed", "node_stopped") else "it did not go down leading it"
        return None if why == "no leader change explains it" else f"cannot read {why!r}"


def _joined(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


SENTENCES: list[tuple[str, str]] = [
    ("No acknowledged write was lost, none was written twice, no record was processed twice, and no record was skipped.",
     "headline_quiet"),
    (r"(\d+) acknowledged records were skipped: the group moved past them and no member processed them \((.+)\)\.",
     "headline_skipped"),
    (r"(\d+) records a group processed are not in the final log: .*", "headline_processed_then_lost"),
    (r"(\d+) records were processed more than once \((.+)\)\.", "headline_duplicates"),
    (r"The simulation failed: .*", "headline_failed"),
    (rf"(\d+) invariant violations?, the first at {T} on (\S+): (\S+) \(.*\)\.", "headline_violations"),
    (r"(\d+) acknowledged writes? (?:were|was) lost: .*", "headline_lost"),
    (r"\d+ extra cop(?:ies|y) of \d+ records? in the final logs, .*", "headline_copies"),
    (rf"Figures: (\d+) events over {T} simulated(.*)\.", "figures"),
    (rf"At {T} broker-(\d+) (became|stopped acting as) the controller \(epoch (\d+)\)\.", "controller"),
    (rf"(?:At {T}|Between {T} and {T}) the controller (broker-\d+) elected (the first leaders|new leaders \((\w+) election\)) "
     r"of (.+?)(?:: (.+))?\.", "elected"),
    (rf"At {T} broker-(\d+) became leader of (\S+) \(epoch (\d+)\) in an unclean election: it was not in the ISR "
     r"(\[.*?\]), so .*", "unclean"),
    (rf"At {T} no leader could be elected for (\S+) \((.+)\)\.", "election_failed"),
    (rf"(?:At {T}|Between {T} and {T}) ((?:broker-\d+|no broker)(?:(?:, | and )broker-\d+)*) (left|rejoined) the ISR of "
     r"(.+?)(?:; (.+) kept a single in-sync replica)?\.", "isr"),
    (rf"From {T} (.+) had no live leader for {T}, (?:until {T}|to the end of the run): broker-(\d+), (?:its|their) "
     r"leader, (crashed|was stopped|gave up its leadership)\.", "leaderless"),
    (rf"From {T} the high watermark of (\S+) on its leader (\S+) stood at (\d+) for {T} while records waited above it\.",
     "hw_stall"),
    (rf"At {T} (consumer-\d+) crashed \((\w+)\)((?:; (?:its partitions? )?\S.*? had no owner for [^;]*)*); it had "
     rf"processed (\d+) records (?:without having committed|since its last (.+? at \d+\.\d) s)(?:, read again by "
     rf"(.+?))?(?:; it restarted at {T})?\.", "consumer_crash"),
    (rf"At {T} (\S+) crashed \((\w+)\)(?:; it restarted at {T})?\.", "crash"),
    (rf"At {T} (\S+)'s process exited(?:; it restarted at {T})?\.", "exited"),
    (rf"At {T} (\S+)'s operator stopped it \(kafka-server-stop\)\.", "called_shutdown"),
    (rf"At {T} (\S+)'s processing became (stalled|slow)\.", "called_processing"),
    (rf"At {T} (\S+)'s application called (\w+)\(\)\.", "called"),
    (rf"At {T} the operator called (\w+)\(\) on the admin client\.", "called_admin"),
    (rf"At {T} (\S+) was paused \(stop-the-world\) until {T}\.", "paused"),
    (rf"At {T} the network was cut \((one way, from the first to the second|both ways)\) between (.+) on one side and "
     r"(.+) on the other\.", "cut"),
    (rf"At {T} the network (healed|cut was lifted)\.", "healed"),
    (rf"At {T} a (\w+) fault began on the network's envelopes\.", "link_fault"),
    (rf"At {T} a (\w+) fault on (\S+) did nothing: .*", "skipped_fault"),
    (rf"At ({T}) (\S+)'s application called close\(\) and its process restarted\.", "closes"),
    (rf"At ((?:{T}(?:, | and ))+{T}) (.+) in turn called close\(\) and restarted \(a rolling restart\): .*", "closes"),
    (rf"At {T} group ({G}) formed generation (\d+) with (.+)\.", "formed_at"),
    (rf"At {T} (\S+) (joined|left \(LeaveGroup\)|was expelled \(session timeout\)|was removed \(\w+\)) and group ({G}) "
     rf"began a rebalance; generation (\d+) formed {T} later with (.+?)(?:, once the coordinator had removed (.+))?\.",
     "rebalance"),
    (rf"From {T} to {T} group ({G}) rebalanced (\d+) times as (.+) (joined|left \(LeaveGroup\)|was expelled \(session "
     rf"timeout\)|was removed \(\w+\)): generations (\d+) to (\d+), each formed in .*", "rebalances"),
    (rf"From {T} (.+) of group (\S+) had no owner \((.+?)\) for {T}, (?:until (generation|member epoch) (\d+)|to the end of "
     r"the run)\.", "owner_gap"),
    (rf"From {T} (consumer-\d+), still running, was out of group (\S+) for {T}, (?:until generation (\d+) took it back|to "
     r"the end of the run): the coordinator removed it \((.+)\)\.", "out_of_group"),
    (rf"(?:At {T}|From {T} to {T}) (.+) processed again (\d+) records \((\w+)\): (.+?); .*", "duplicates"),
    (rf"(?:At {T}|From {T} to {T}) (.+) moved group (\S+) past (\d+) records that no member processed \((\w+)\): (.+?); "
     r".*", "skips"),
    (r"(\S+) lost (\d+) acknowledged records?: (.+)\.", "lost"),
    (r"\.\.\. and \d+ more moments: see the tables below\.", "more"),
    *CONSUMER_SENTENCES,
]


def _dispatch(checker: Checker, name: str, groups: tuple[str | None, ...]) -> str | None:
    g = groups
    match name:
        case "headline_quiet" | "headline_failed" | "headline_copies" | "more":
            return None if name == "more" else getattr(checker, name)()
        case "headline_lost":
            return checker.headline_lost(g[0])
        case "figures":
            return checker.figures(g[0], g[1], g[2])
        case "elected":
            return checker.elected(g[0] or g[1], g[2], g[3], g[4], g[5], g[6], g[7])
        case "isr":
            return checker.isr(g[0] or g[1], g[2], g[3], g[4], g[5], g[6])
        case "leaderless":
            return checker.leaderless(g[0], g[1], g[2], g[3], g[4], g[5])
        case "consumer_crash":
            return checker.consumer_crash(g[0], g[1], g[2], g[3].removeprefix("; "), g[4], g[5], g[6], g[7])
        case "called_admin":
            return checker.called(g[0], "admin", g[1])
        case "called_shutdown":
            return checker.called(g[0], g[1], "shutdown")
        case "called_processing":
            return checker.called(g[0], g[1], "stall" if g[2] == "stalled" else "slow")
        case "closes":
            return checker.closes(g[0], g[-1])
        case "formed_at":
            return checker.formed(*g)
        case "duplicates":
            return checker.duplicates(g[0] or g[1], g[2], g[3], g[4], g[5], g[6])
        case "skips":
            return checker.skips(g[0] or g[1], g[2], g[3], g[4], g[5], g[6], g[7])
        case _:
            return getattr(checker, name)(*g)


def check(run_dir: Path, lines: list[str]) -> list[str]:
    """The sentences of `lines` (a story of the run in `run_dir`) that the run's log
    contradicts or that no form here reads, each with why."""
    log = Log.read(run_dir)
    all_holds = holds(log)
    checker = Checker(log, all_holds, leader_spells(log))
    wrong = []
    for line in lines:
        for pattern, name in SENTENCES:
            found = re.fullmatch(pattern, line)
            if found:
                why = _dispatch(checker, name, found.groups())
                if why:
                    wrong.append(f"{line!r}: {why}")
                break
        else:
            wrong.append(f"{line!r}: no form of sentence reads it")
    return wrong
