"""The consumer protocol's invariants (KIP-848), checked after every event like
`sim.cluster.group_invariants`, from each coordinator's own records of its consumer groups.

`partition_epoch_single_holder`: a coordinator never hands a partition to a member while
another member of the group holds it, assigned or pending revocation: a partition's epoch
(`ModernGroup.currentPartitionEpoch`) belongs to one member at a time.
`member_epoch_monotonic`: a member's epoch never goes back while it stays a member: on the
coordinator (but for a static member's leave, epoch -2, which keeps it in the group), and on
the consumer, whose assignments carry its epoch, until it is fenced (its partitions lost, its
membership reset) or its process starts again.
(Commits to a consumer group are checked by member epoch with the classic ones', in
`sim.cluster.group_invariants`.)

Each coordinator's view is its own: a coordinator that loads a group after a failover starts
from what it loaded, and one that unloads it (the group goes Dead there) forgets it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sim.cluster.invariants import Violation

__all__ = ["ConsumerGroupInvariants"]

View = tuple[str, str]  # (coordinator node, group)
STATIC_LEAVE_EPOCH = -2


class ConsumerGroupInvariants:
    def __init__(self) -> None:
        self.consumer_groups: set[View] = set()
        """The groups each coordinator holds as consumer groups."""
        self._members: dict[View, dict[str, tuple[int, frozenset[str]]]] = {}
        """Per view: member id -> (member epoch, partitions held: assigned or pending revocation)."""
        self._client_epochs: dict[str, int] = {}
        """Per consumer node of the consumer protocol: the member epoch of its last assignment."""
        self._consumer_protocol: set[str] = set()

    def __call__(self, event: Mapping[str, Any]) -> list[Violation]:
        handler = _HANDLERS.get(event["event"])
        if handler is None:
            return []
        return handler(self, event) or []

    # ------------------------------------------------------------------ the coordinator's view

    def _group_state(self, e: Mapping[str, Any]) -> None:
        view = (e["node"], e["group_id"])
        if e["state"] == "Dead":
            self.consumer_groups.discard(view)
            self._members.pop(view, None)
            return
        if e["previous_state"] is None:
            self._members[view] = {}  # created, or loaded: what it held before no longer applies
        self.consumer_groups.add(view)

    def _member_changed(self, e: Mapping[str, Any]) -> list[Violation]:
        view = (e["node"], e["group_id"])
        members = self._members.setdefault(view, {})
        member, epoch = e["member_id"], e["member_epoch"]
        held = frozenset(e["assigned"]) | frozenset(e["pending_revocation"])
        found = []
        before = members.get(member)
        if before is not None and epoch < before[0] and epoch != STATIC_LEAVE_EPOCH:
            detail = f"{member} of {e['group_id']} went from epoch {before[0]} back to {epoch}"
            found.append(Violation("member_epoch_monotonic", e["ts_ms"], e["node"], detail))
        for other, (_, theirs) in sorted(members.items()):
            if other != member and held & theirs:
                twice = ", ".join(sorted(held & theirs))
                detail = f"{twice} of {e['group_id']} held by {member} at epoch {epoch} while {other} holds it"
                found.append(Violation("partition_epoch_single_holder", e["ts_ms"], e["node"], detail))
        members[member] = (epoch, held)
        return found

    def _member_removed(self, e: Mapping[str, Any]) -> None:
        self._members.get((e["node"], e["group_id"]), {}).pop(e["member_id"], None)

    # ------------------------------------------------------------------ the consumers' view

    def _started(self, e: Mapping[str, Any]) -> None:
        self._client_epochs.pop(e["node"], None)
        if e.get("group_protocol") == "consumer":
            self._consumer_protocol.add(e["node"])
        else:
            self._consumer_protocol.discard(e["node"])

    def _fenced(self, e: Mapping[str, Any]) -> None:
        if e["event"] == "member_reset" or e["event"] == "partitions_lost":
            self._client_epochs.pop(e["node"], None)

    def _assigned(self, e: Mapping[str, Any]) -> list[Violation]:
        node = e["node"]
        if node not in self._consumer_protocol:
            return []
        before = self._client_epochs.get(node)
        self._client_epochs[node] = e["generation_id"]
        if before is None or e["generation_id"] >= before:
            return []
        detail = f"{e['member_id']} took an assignment at epoch {e['generation_id']} after epoch {before}"
        return [Violation("member_epoch_monotonic", e["ts_ms"], node, detail)]


_HANDLERS: dict[str, Any] = {
    "consumer_group_state_changed": ConsumerGroupInvariants._group_state,
    "consumer_member_changed": ConsumerGroupInvariants._member_changed,
    "consumer_member_removed": ConsumerGroupInvariants._member_removed,
    "consumer_started": ConsumerGroupInvariants._started,
    "member_reset": ConsumerGroupInvariants._fenced,
    "partitions_lost": ConsumerGroupInvariants._fenced,
    "partitions_assigned": ConsumerGroupInvariants._assigned,
}
