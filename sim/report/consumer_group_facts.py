"""KIP-848 consumer groups (`group.protocol = "consumer"`) in the report's one pass over a run's
events: the coordinator's target assignments with the changes of the group epoch that led to
each, the members it removed (fenced or replaced), and each consumer's protocol and static id.

Under the consumer protocol there are no generations: the coordinator bumps a group epoch on
every change of membership or subscription and, at the next heartbeat, computes a new target
assignment (Kafka's `GroupMetadataManager.updateTargetAssignment`); that is what its group
counts as a rebalance, and what summary.json's `rebalances` counts. Each member reconciles to
the target at its own member epoch, so a hold's `generation_id` is the member epoch it was
assigned in (`partitions_assigned`).
"""

from __future__ import annotations

from typing import Any

RunFacts = Any
"""`sim.report.run_facts.RunFacts`, which imports this module."""

__all__ = ["ConsumerGroupScan", "handoff_gaps", "is_consumer_group", "label_members"]


def is_consumer_group(facts: RunFacts, group_id: str) -> bool:
    """Whether the group's consumers ran the consumer protocol (KIP-848)."""
    return facts.group_protocols.get(group_id) == "consumer"


def label_members(members: list[list[Any]]) -> list[list[Any]]:
    """`[member's consumer, whether its process ended before the target, partitions]` rows,
    sorted by consumer, an earlier process's member before the running one's."""
    def order(row: list[Any]) -> tuple[str, int, bool]:
        prefix, _, number = row[0].rpartition("-")
        return (prefix, int(number) if number.isdigit() else -1, not row[1])

    return sorted(members, key=order)


class ConsumerGroupScan:
    """The consumer-protocol handlers of `sim.report.run_facts._Scan` (a mixin: it shares the
    pass's state: `facts`, `member_node`, `member_process`, `up`)."""

    facts: RunFacts
    member_node: dict[str, str]
    member_process: dict[str, int]
    up: dict[str, int]
    _bumps: dict[tuple[str, str], dict[str, Any]]

    def _see_member(self, member_id: str, node: str) -> None:  # run_facts defines it
        raise NotImplementedError

    def _on_consumer_started(self, e: dict[str, Any]) -> None:
        protocol = e.get("group_protocol") or "classic"
        self.facts.group_protocols[e["group_id"]] = protocol
        self.facts.consumer_setup[e["node"]] = {"group_id": e["group_id"], "protocol": protocol,
                                                "static": e["group_instance_id"] is not None}

    def _on_consumer_group_state_changed(self, e: dict[str, Any]) -> None:
        """A coordinator that created, loaded or changed the group coordinates it."""
        if e["state"] != "Dead":
            seen = self.facts.group_coordinators.setdefault(e["group_id"], [])
            if e["node"] not in seen:
                seen.append(e["node"])
        self.facts.group_epochs[e["group_id"]] = e["group_epoch"]

    def _on_membership_state_changed(self, e: dict[str, Any]) -> None:
        if e["member_id"]:
            self._see_member(e["member_id"], e["node"])

    def _pending(self, e: dict[str, Any]) -> dict[str, Any]:
        key = (e["node"], e["group_id"])
        return self._bumps.setdefault(key, {"triggers": [], "open": [], "removed_ms": None, "removed": None})

    def _on_consumer_member_removed(self, e: dict[str, Any]) -> None:
        pending = self._pending(e)
        pending["removed_ms"], pending["removed"] = e["ts_ms"], e["member_id"]
        self.facts.member_removals.append(
            {"ts_ms": e["ts_ms"], "group_id": e["group_id"], "coordinator": e["node"], "member_id": e["member_id"],
             "consumer": self.member_node.get(e["member_id"], "a member"), "member_epoch": e["member_epoch"],
             "reason": e["reason"], "instance_id": e["instance_id"], "successor": None})

    def _on_group_epoch_bumped(self, e: dict[str, Any]) -> None:
        pending = self._pending(e)
        member = None
        if e["reason"] in ("member_left", "member_fenced") and pending["removed_ms"] == e["ts_ms"]:
            member = pending["removed"]
        trigger = {"reason": e["reason"], "member_id": member, "ts_ms": e["ts_ms"]}
        pending["triggers"].append(trigger)
        self.facts.group_epochs[e["group_id"]] = e["group_epoch"]
        if member is None:  # a join or a new subscription: its member's record follows (even after the target)
            pending["open"] = [*(t for t in pending["open"] if t["ts_ms"] == e["ts_ms"]), trigger]

    def _on_consumer_member_changed(self, e: dict[str, Any]) -> None:
        """A joining or resubscribing member names the bump of its heartbeat (logged before
        it); a member that took a static member's instance id names the member it replaced."""
        pending = self._pending(e)
        for trigger in pending["open"]:
            if trigger["member_id"] is None and trigger["ts_ms"] == e["ts_ms"]:
                joined = trigger["reason"] == "member_joined" and e["previous_member_epoch"] == 0
                if joined or trigger["reason"] == "subscription_changed":
                    trigger["member_id"] = e["member_id"]
                    break
        for removal in self.facts.member_removals[::-1]:
            if (removal["ts_ms"] == e["ts_ms"] and removal["reason"] == "replaced" and removal["successor"] is None
                    and removal["instance_id"] == e["instance_id"] and removal["coordinator"] == e["node"]):
                removal["successor"] = {"member_id": e["member_id"], "member_epoch": e["member_epoch"],
                                        "assigned": list(e["assigned"])}

    def _on_target_assignment_computed(self, e: dict[str, Any]) -> None:
        pending = self._pending(e)
        members = []
        for member_id, partitions in sorted(e["assignment"].items()):
            node = self.member_node.get(member_id, member_id)
            earlier = member_id in self.member_node and self.member_process.get(member_id) != self.up.get(node)
            members.append([node, earlier, list(partitions)])
        self.facts.target_assignments.append(
            {"ts_ms": e["ts_ms"], "group_id": e["group_id"], "coordinator": e["node"], "epoch": e["assignment_epoch"],
             "members": label_members(members), "triggers": pending["triggers"]})
        pending["triggers"] = []

    def finish_consumer_groups(self) -> None:
        """Triggers name their consumer once every member id is known."""
        for target in self.facts.target_assignments:
            target["triggers"] = [
                {"reason": t["reason"], "consumer": self.member_node.get(t["member_id"]) if t["member_id"] else None}
                for t in target["triggers"]
            ]
        for removal in self.facts.member_removals:
            removal["consumer"] = self.member_node.get(removal["member_id"], removal["consumer"])
            if removal["successor"] is not None:
                removal["successor"]["consumer"] = self.member_node.get(removal["successor"]["member_id"])


def handoff_gaps(facts: RunFacts) -> list[dict[str, Any]]:
    """Under the consumer protocol, each revocation of a partition with the time until its next
    owner was assigned it: `group_id`, `partition`, `consumer` (who revoked it), `from_ms`,
    `to_ms` (null: no owner to the end of the run), `next_consumer`, `member_epoch` (the next
    owner's). The revoking member gives a partition up before the coordinator hands it on, at
    the next owner's heartbeat (KIP-848's incremental reconciliation)."""
    by_partition: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for hold in facts.holds:
        if is_consumer_group(facts, hold["group_id"]):
            by_partition.setdefault((hold["group_id"], hold["partition"]), []).append(hold)
    gaps = []
    for (group, partition), holds in sorted(by_partition.items()):
        for hold in holds:
            if hold["ended_by"] != "partitions_revoked":
                continue
            later = [h for h in holds if h["from_ms"] >= hold["to_ms"] and h is not hold]
            after = min(later, key=lambda h: h["from_ms"]) if later else None
            if after is not None and after["from_ms"] == hold["to_ms"]:
                continue
            gaps.append({"group_id": group, "partition": partition, "consumer": hold["consumer"],
                         "from_ms": hold["to_ms"], "to_ms": after["from_ms"] if after else None,
                         "next_consumer": after["consumer"] if after else None,
                         "member_epoch": after["generation_id"] if after else None})
    return sorted(gaps, key=lambda g: (g["from_ms"], g["partition"]))
