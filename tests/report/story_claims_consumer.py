"""The story's sentences of KIP-848 consumer groups, fatal consumer errors and known Kafka bugs,
checked against the log (docs/log-schema.md's consumer-protocol events) with this module's own
reading: a part of tests/report/story_claims.py's Checker, whose SENTENCES table takes these
forms too."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.report.story_claims import Log

__all__ = ["CONSUMER_SENTENCES", "ConsumerClaims", "protocol_of"]

T = r"(\d+\.\d) s"
G = r"\S+(?: \(coordinator broker-\d+\))?"

CONSUMER_SENTENCES: list[tuple[str, str]] = [
    (rf"At {T} group ({G}) computed its target assignment at epoch (\d+)(?: after (.+?))?: (.+)\.", "target"),
    (rf"At {T} group ({G})'s coordinator fenced (\S+)'s member at epoch (-?\d+): (no heartbeat came within its session "
     r"timeout|it had not revoked its partitions within its rebalance timeout)\.", "fenced"),
    (rf"At {T} (\S+)'s new process took the place of (\S+)'s static member in group ({G}) \(group\.instance\.id (\S+)\) "
     r"at epoch (\d+) with (.+), and no target assignment was computed\.", "replaced"),
    (rf"At {T} (\S+) stopped on a fatal error \((.+?)\)(?:: (.+))?\.", "stopped"),
    (rf"Kafka (\S+)'s known bug (KAFKA-\d+|of ZooKeeper mode's ISR \(the gap KIP-966 closes\)) showed at {T} on (\S+): "
     r"(.+); this is Kafka's behaviour in that version, not a fault of the simulator\.", "known_bug"),
]

VERBS = {"joined": "member_joined", "left": "member_left", "was fenced": "member_fenced",
         "changed its subscription": "subscription_changed"}
FENCED = {"no heartbeat came within its session timeout": "session_timeout",
          "it had not revoked its partitions within its rebalance timeout": "rebalance_timeout"}


def s(ms: int) -> str:
    return f"{ms / 1000:.1f}"


def protocol_of(log: Log, group: str) -> str:
    """The group's protocol as its consumers started with it."""
    found = [e.get("group_protocol", "classic") for e in log.of("consumer_started") if e["group_id"] == group]
    return found[-1] if found else "classic"


def _partition_list(text: str) -> list[str] | None:
    """`T-0, T-1 and T-2` -> the names; None when the text counts partitions instead of naming them."""
    if text == "nothing":
        return []
    words = re.split(r", | and ", text)
    return None if any(" " in w for w in words) else sorted(words)


class ConsumerClaims:
    """The checks of CONSUMER_SENTENCES; `log` and `_group` are story_claims.Checker's."""

    log: Log

    @staticmethod
    def _group(text: str) -> tuple[str, dict[str, str]]:  # story_claims.Checker defines it
        raise NotImplementedError

    def _node(self, member_id: str) -> str:
        return self.log.member_node.get(member_id, "a member")

    def _ended(self, member_id: str, at: int) -> bool:
        """Whether the process that had `member_id` had stopped or crashed by `at`."""
        node = self.log.member_node.get(member_id)
        first = next((i for i, e in enumerate(self.log.events)
                      if e.get("actor") == "consumer" and e.get("member_id") == member_id), None)
        if node is None or first is None:
            return False
        return any(e["event"] in ("node_crashed", "node_stopped") and e["target"] == node and e["ts_ms"] <= at
                   for e in self.log.events[first:])

    def target(self, when: str, group: str, epoch: str, triggers: str | None, members: str) -> str | None:
        group, on = self._group(group)
        found = self.log.at("target_assignment_computed", when, group_id=group, assignment_epoch=int(epoch), **on)
        if len(found) != 1:
            return "no such target assignment"
        e = found[0]
        told = []
        for item in ([] if members == "no member" else members.split("; ")):
            row = re.fullmatch(r"(\S+?)( \(an ended process\))? (.+)", item)
            listed = _partition_list(row.group(3)) if row else None
            if row is None or listed is None:
                return f"cannot read {item!r}"
            told.append((row.group(1), bool(row.group(2)), listed))
        logged = [(self._node(m), self._ended(m, e["ts_ms"]), sorted(ps)) for m, ps in e["assignment"].items()]
        if sorted(told) != sorted(logged):
            return f"the target was {sorted(logged)}"
        return self._bumps_before(e, triggers)

    def _bumps_before(self, target: dict[str, Any], triggers: str | None) -> str | None:
        """The group epoch's bumps since the group's previous target on that coordinator, each
        with the member whose removal or record came with it."""
        events = self.log.events
        end = next(i for i, e in enumerate(events) if e is target)
        start = end
        while start > 0 and not (events[start - 1]["event"] == "target_assignment_computed"
                                 and events[start - 1]["group_id"] == target["group_id"]
                                 and events[start - 1]["node"] == target["node"]):
            start -= 1
        mine = [(i, e) for i, e in enumerate(events[start:], start)
                if e.get("group_id") == target["group_id"] and e["node"] == target["node"]]
        bumps = [(i, e) for i, e in mine if e["event"] == "group_epoch_bumped" and i < end]
        said = [] if triggers is None else re.split(r", | and ", triggers)
        if len(said) != len(bumps):
            return f"{len(bumps)} bumps of the group epoch led to it"
        for words, (i, bump) in zip(said, bumps, strict=True):
            node, _, verb = words.partition(" ")
            if VERBS.get(verb) != bump["reason"]:
                return f"the bump was {bump['reason']}"
            if bump["reason"] in ("member_left", "member_fenced"):
                whose = [e for j, e in mine if j < i and e["event"] == "consumer_member_removed" and e["ts_ms"] == bump["ts_ms"]]
            else:
                whose = [e for j, e in mine if j > i and e["event"] == "consumer_member_changed" and e["ts_ms"] == bump["ts_ms"]
                         and (bump["reason"] == "subscription_changed" or e["previous_member_epoch"] == 0)]
            if not any(self._node(e["member_id"]) == node for e in whose):
                return f"{node} did not {verb}"
        return None

    def fenced(self, when: str, group: str, node: str, epoch: str, why: str) -> str | None:
        group, on = self._group(group)
        found = [e for e in self.log.at("consumer_member_removed", when, group_id=group, reason=FENCED[why], **on)
                 if e["member_epoch"] == int(epoch) and self._node(e["member_id"]) == node]
        return None if found else "no such fencing"

    def replaced(self, when: str, new: str, old: str, group: str, instance: str, epoch: str, held: str) -> str | None:
        group, on = self._group(group)
        removed = [e for e in self.log.at("consumer_member_removed", when, group_id=group, reason="replaced", instance_id=instance, **on)
                   if self._node(e["member_id"]) == old]
        if not removed:
            return "no static member replaced then"
        at = removed[0]["ts_ms"]
        joined = [e for e in self.log.of("consumer_member_changed") if e["ts_ms"] == at and e["group_id"] == group
                  and e["instance_id"] == instance and e["previous_member_epoch"] == 0 and self._node(e["member_id"]) == new]
        if not joined or joined[0]["member_epoch"] != int(epoch) or sorted(joined[0]["assigned"]) != _partition_list(held):
            return "the new member came otherwise"
        targets = [e for e in self.log.of("target_assignment_computed") if e["ts_ms"] == at and e["group_id"] == group]
        return "a target assignment was computed" if targets else None

    def stopped(self, when: str, node: str, error: str, why: str | None) -> str | None:
        found = self.log.at("consumer_failed", when, node=node, error=error)
        if not found:
            return "no such consumer_failed"
        if why is None:
            return None
        if why == "another process has taken its group.instance.id":
            return None if error.endswith("FENCED_INSTANCE_ID") else "not a fencing"
        if why != "its old member had not left, and Kafka's client gives up" or not error.endswith("UNRELEASED_INSTANCE_ID"):
            return f"cannot read {why!r}"
        started = [e for e in self.log.of("consumer_started") if e["node"] == node and e["ts_ms"] <= found[0]["ts_ms"]]
        instance = started[-1]["group_instance_id"] if started else None
        records = [e for e in self.log.of("consumer_member_changed", "consumer_member_removed")
                   if e["instance_id"] == instance and e["ts_ms"] <= found[0]["ts_ms"]]
        holding = records and records[-1]["event"] == "consumer_member_changed" and records[-1]["member_epoch"] != -2
        return None if instance and holding else "no old member of its instance id was still in the group"

    def _lost_unflushed_in_isr(self, finding: dict[str, Any], what: str) -> str | None:
        told = re.fullmatch(r"(\S+) came back from a power or disk loss with (\d+) records of (\S+), below its HW (\d+), "
                            r"and still in its ISR, so it could have been elected without them", what)
        if told is None:
            return f"cannot read {what!r}"
        replica, records, _, hw = told.groups()
        losses = [e for e in self.log.of("node_crashed") if e["target"] == replica and e["kind"] in ("power_loss", "disk_loss")
                  and e["ts_ms"] <= finding["ts_ms"]]
        if not losses:
            return f"the log shows no power or disk loss of {replica} before then"
        return None if int(records) < int(hw) else "the records told are not below the HW told"

    def _stale_controller_write(self, finding: dict[str, Any], what: str) -> str | None:
        told = re.fullmatch(r"a controller of epoch (\d+), no longer the controller \(epoch (\d+) is\), still wrote leader "
                            r"(\d+) at leader epoch (\d+) to (\S+): its ZooKeeper writes were not fenced by the controller "
                            r"epoch", what)
        if told is None:
            return f"cannot read {what!r}"
        stale, current, leader, leader_epoch, path = told.groups()
        writes = [json.loads(e["data"]) for e in self.log.of("znode_changed") if e["ts_ms"] == finding["ts_ms"] and e["path"] == path]
        if not any((w["controller_epoch"], w["leader"], w["leader_epoch"]) == (int(stale), int(leader), int(leader_epoch)) for w in writes):
            return "the log shows no such write then"
        epochs = [int(e["data"]) for e in self.log.of("znode_changed") if e["path"] == "/controller_epoch" and e["ts_ms"] <= finding["ts_ms"]]
        return None if epochs and epochs[-1] == int(current) > int(stale) else "the controller epoch then was another"

    def known_bug(self, version: str, jira: str, when: str, node: str, what: str) -> str | None:
        if self.log.summary["kafka_version"] != version:
            return "another Kafka version"
        label = "kip_966" if "KIP-966" in jira else jira.lower().replace("-", "_")
        found = [f for f in self.log.summary.get("known_bug_findings", []) if s(f["ts_ms"]) == when and f["node"] == node
                 and f["label"] == label]
        if not found:
            return "summary.json has no such finding"
        if label == "kip_966":
            return self._lost_unflushed_in_isr(found[0], what)
        if label == "kafka_6082":
            return self._stale_controller_write(found[0], what)
        told = re.fullmatch(r"(\S+) of group (\S+) was given to another member in generation (\d+) while a member whose "
                            r"claim the leader's assignor threw away for its older generation still held it", what)
        if jira != "KAFKA-14639" or told is None:
            return f"cannot read {what!r}"
        p, group, generation = told.groups()
        at = found[0]["ts_ms"]
        ignored = [e for e in self.log.of("owned_partitions_ignored") if e["group_id"] == group and p in e["partitions"]
                   and e["generation_id"] == int(generation) and e["ts_ms"] <= at]
        given = [e for e in self.log.of("partitions_assigned") if e["ts_ms"] == at and e["node"] == node and p in e["partitions"]
                 and e["generation_id"] == int(generation)]
        return None if ignored and given else "the log shows no thrown-away claim and assignment then"
