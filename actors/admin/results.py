"""What a finished command logs and keeps: one event from the admin node per command, and its
outcome as plain data for the Python API (docs/log-schema.md has the events)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from actors.admin.job import Job
from actors.core import Out
from protocols.admin import DescribedGroup
from protocols.types import TopicPartition

__all__ = ["described_fields", "outcome", "parse_key", "triples"]


def parse_key(key: str) -> tuple[str, Any]:
    kind, arg = json.loads(key)
    return kind, arg


def triples(offsets: Mapping[TopicPartition, int]) -> list[list[Any]]:
    """Offsets as the events carry them: sorted `[topic, partition, offset]`."""
    return [[tp.topic, tp.partition, offset] for tp, offset in sorted(offsets.items())]


def described_fields(described: DescribedGroup | None) -> dict[str, Any]:
    if described is None:
        return {"state": "", "protocol_type": "", "protocol": "", "member_details": []}
    members = [
        {
            "member_id": m.member_id,
            "group_instance_id": m.group_instance_id,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "assignment": sorted(f"{tps.topic}-{p}" for tps in m.assignment.partitions for p in tps.partitions),
        }
        for m in described.members
    ]
    return {
        "state": described.group_state,
        "protocol_type": described.protocol_type,
        "protocol": described.protocol_data,
        "member_details": members,
    }


def outcome(out: Out, job: Job, error: str, now_ms: int) -> dict[str, Any]:
    """Log the command's result and return it."""
    c = job.command
    op = c.operation
    fields: dict[str, Any]
    if op == "reset_offsets":
        fields = {"group_id": c.group_id, "target": c.target, "offsets": triples(job.reset_to), "error": error}
        out.emit("admin_offsets_reset", **fields)
    elif op == "delete_offsets":
        fields = {
            "group_id": c.group_id,
            "partitions": sorted(str(tp) for tp in job.partitions),
            "error": error,
            "partition_errors": sorted([f"{e.topic}-{e.partition}", e.error_code.name] for e in job.deleted),
        }
        out.emit("admin_offsets_deleted", request_id=c.request_id, **fields)
    elif op == "delete_group":
        fields = {"group_id": c.group_id, "error": error}
        out.emit("admin_group_deleted", request_id=c.request_id, **fields)
    elif op == "describe_group":
        fields = {"group_id": c.group_id, "error": error, **described_fields(job.described)}
        out.emit("admin_group_described", request_id=c.request_id, **fields)
    else:
        listed = sorted(
            [g.group_id, g.group_state, g.protocol_type, broker] for broker, groups in job.listed.items() for g in groups
        )
        fields = {"error": error, "listed_groups": listed}
        out.emit("admin_groups_listed", request_id=c.request_id, **fields)
    return {"operation": op, "request_id": c.request_id, "done_ms": now_ms, **fields}
