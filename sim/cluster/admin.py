"""The operator's group commands: checking an `admin` fault, handing it to the admin client,
and reading its outcome (`actors/admin/`).

The admin client is a node of its own, `admin`, added to the cluster the first time a command
runs (a scenario's `[[faults]] kind = "admin"` at its time, or a call of the Python API), so a
run without commands has neither the node nor its `node_started` line. Commands are numbered
from 1 in the order they run; the numbers name their outcomes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from actors.admin.config import ADMIN_ACTOR, ADMIN_NODE
from actors.core import Address
from protocols.admin import AdminCommand
from sim.cluster.faults import Fault, FaultError
from sim.engine.kernel import Kernel, NodeSpec

__all__ = ["AdminDesk", "AdminRequest", "check_admin_fault"]

_RESET_ONLY = (("to", "target"), ("datetime.ms", "datetime_ms"), ("shift.by", "shift_by"))


def check_admin_fault(fault: Fault, topics: Mapping[str, int], where: str) -> None:
    """Raise `FaultError` naming the key and value of what the command cannot take."""
    op = fault.operation
    if op is None:
        msg = f"{where}: an admin fault needs an operation"
        raise FaultError(msg)
    if op != "list_groups" and fault.group is None:
        msg = f"{where}: {op} needs `group` (a group.id)"
        raise FaultError(msg)
    if op == "delete_offsets" and fault.topic is None:
        msg = f"{where}: delete_offsets needs `topic`"
        raise FaultError(msg)
    if fault.topic is not None and fault.topic not in topics:
        msg = f"{where}: topic: no topic named {fault.topic!r} (the topics are {', '.join(sorted(topics)) or 'none'})"
        raise FaultError(msg)
    if fault.partitions:
        if fault.topic is None:
            msg = f"{where}: partitions: {list(fault.partitions)} needs a topic"
            raise FaultError(msg)
        count = topics[fault.topic]
        for p in fault.partitions:
            if not 0 <= p < count:
                msg = f"{where}: partitions: {fault.topic} has partitions 0 to {count - 1}, got {p}"
                raise FaultError(msg)
    if op != "reset_offsets":
        for key, attr in _RESET_ONLY:
            if getattr(fault, attr) is not None:
                msg = f"{where}: {key}: only a reset_offsets takes it (this is {op})"
                raise FaultError(msg)
        return
    if fault.target is None:
        msg = f"{where}: reset_offsets needs `to` (earliest, latest, datetime or shift-by)"
        raise FaultError(msg)
    needed = {"datetime": ("datetime.ms", fault.datetime_ms), "shift-by": ("shift.by", fault.shift_by)}
    if fault.target in needed and needed[fault.target][1] is None:
        msg = f"{where}: to = {fault.target!r} needs `{needed[fault.target][0]}`"
        raise FaultError(msg)


class AdminDesk:
    """The cluster's side of the admin client: makes its node when first needed and hands it
    each command, numbered in the order they run."""

    def __init__(self, kernel: Kernel, spec: Callable[[], NodeSpec]) -> None:
        self.kernel = kernel
        self.spec = spec
        self.last_id = 0
        self.outcomes: dict[int, dict[str, Any]] = {}

    def run(self, fault: Fault) -> None:
        if ADMIN_NODE not in self.kernel.nodes:
            self.kernel.add_node(self.spec())
        self.last_id += 1
        command = AdminCommand(
            operation=fault.operation or "",
            request_id=self.last_id,
            group_id=fault.group or "",
            topic=fault.topic or "",
            partitions=fault.partitions,
            target=fault.target or "",
            datetime_ms=fault.datetime_ms or 0,
            shift_by=fault.shift_by or 0,
        )
        if not self.kernel.tell(Address(ADMIN_NODE, ADMIN_ACTOR), command):
            self.kernel.emit("application_call_ignored", target=ADMIN_NODE, action=command.operation)

    def outcome(self, request_id: int) -> dict[str, Any] | None:
        """The command's outcome once the client has it; kept here from the first time it is
        read, so it can be read again after the run (or the cluster) is over."""
        if request_id not in self.outcomes and ADMIN_NODE in self.kernel.nodes and self.kernel.is_up(ADMIN_NODE):
            address = Address(ADMIN_NODE, ADMIN_ACTOR)
            if address in self.kernel.addresses():
                found = self.kernel.snapshot(address)["results"].get(str(request_id))
                if found is not None:
                    self.outcomes[request_id] = found
        return self.outcomes.get(request_id)


@dataclass(frozen=True, slots=True)
class AdminRequest:
    """A command handed to the admin client. Its outcome exists once the run has gone on long
    enough for the client's requests to be answered: `cluster.run(until=lambda: req.done)`;
    read it while the cluster is open (once read, it stays readable)."""

    desk: AdminDesk
    request_id: int

    @property
    def done(self) -> bool:
        return self.result is not None

    @property
    def result(self) -> dict[str, Any] | None:
        """The outcome as the admin client logged it (the event's fields, with `operation`,
        `request_id` and `done_ms`), or None while it runs."""
        return self.desk.outcome(self.request_id)


def lag_rows(group: Mapping[str, Any] | None, high_watermark: Callable[[str], int | None]) -> list[dict[str, Any]]:
    """`ConsumerGroupCommand.collectGroupOffsets` on a coordinator's view of the group: a row per
    partition a member owns or the group has an offset for, sorted by topic and partition."""
    if group is None:
        return []
    owners: dict[str, tuple[str, Mapping[str, Any]]] = {}
    members = group["members"] if group["state"] == "Stable" else {}  # assignments are described only then
    for member_id, member in sorted(members.items()):
        for tp in member["assignment"]:
            owners[tp] = (member_id, member)
    offsets = group["offsets"]
    rows = []
    for tp in sorted({*owners, *offsets}, key=_topic_partition):
        topic, partition = _topic_partition(tp)
        committed = offsets.get(tp)
        end = high_watermark(tp)
        owner = owners.get(tp)
        rows.append(
            {
                "topic": topic,
                "partition": partition,
                "current_offset": committed,
                "log_end_offset": end,
                "lag": None if committed is None or end is None else end - committed,
                "consumer_id": None if owner is None else owner[0],
                "host": None if owner is None else owner[1].get("client_host"),
                "client_id": None if owner is None else owner[1]["client_id"],
            }
        )
    return rows


def _topic_partition(name: str) -> tuple[str, int]:
    topic, _, partition = name.rpartition("-")
    return topic, int(partition)
