"""Static members sharing a `group.instance.id`, seen from the event log.

Two live processes configured with one `group.instance.id` are an operator's mistake that
Kafka lets happen: each is a static member (KIP-345) claiming the same identity. The classic
coordinator lets the later JoinGroup replace the earlier member, whose next request is answered
FENCED_INSTANCE_ID, fatal to it; the consumer protocol's coordinator (KIP-848) refuses the
later join with UNRELEASED_INSTANCE_ID while the first member is still in the group, fatal to
the later one. Either way one process stops (`consumer_failed`).

`summary.json`'s `shared_instance_ids` lists, per group and instance id that two or more
consumer nodes started with, the nodes in the order they first started, the first of them
stopped by either error, and that error (None for both while none was).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["SharedInstanceIds"]

_ERRORS = ("FENCED_INSTANCE_ID", "UNRELEASED_INSTANCE_ID")
"""The coordinators' answers to a second claimant of a static member's identity."""


class SharedInstanceIds:
    def __init__(self) -> None:
        self._nodes: dict[tuple[str, str], list[str]] = {}
        """(group, instance id) -> the consumer nodes that started with it, in start order."""
        self._identity: dict[str, tuple[str, str]] = {}
        self._fenced: dict[tuple[str, str], tuple[str, str]] = {}
        """(group, instance id) -> the first node stopped on one of `_ERRORS`, and that error."""

    def __call__(self, e: Mapping[str, Any]) -> None:
        if e["event"] == "consumer_started" and e.get("group_instance_id") is not None:
            key = (e["group_id"], e["group_instance_id"])
            nodes = self._nodes.setdefault(key, [])
            if e["node"] not in nodes:
                nodes.append(e["node"])
            self._identity[e["node"]] = key
        elif e["event"] == "consumer_failed" and e["node"] in self._identity:
            error = e["error"].rpartition(": ")[2]
            if error in _ERRORS:
                self._fenced.setdefault(self._identity[e["node"]], (e["node"], error))

    def figures(self) -> dict[str, Any]:
        shared = []
        for (group, instance), nodes in sorted(self._nodes.items()):
            if len(nodes) < 2:  # noqa: PLR2004 - a shared id has two claimants at least
                continue
            fenced, error = self._fenced.get((group, instance), (None, None))
            shared.append({"group_id": group, "instance_id": instance, "consumers": list(nodes), "fenced": fenced, "error": error})
        return {"shared_instance_ids": shared}
