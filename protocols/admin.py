"""The operator's group requests: DescribeGroups, ListGroups, DeleteGroups and OffsetDelete,
and the operator's command to the admin client.

Field names are Kafka's (`DescribeGroupsResponse.json`, `ListGroupsResponse.json`,
`DeleteGroupsResponse.json`, `OffsetDeleteResponse.json`). Kafka carries a described member's
metadata and assignment as the consumer protocol's bytes; here the assignment is the registered
structure the coordinator stores. A group coordinator answers all four for the groups it
coordinates; `AdminClient` (the `kafka-consumer-groups` tool's client) sends them.

`AdminCommand` exists only inside the simulator: the kernel hands the admin client the
operator's command (a `[[faults]] kind = "admin"` entry, or a call of the Python API).
"""

from __future__ import annotations

from dataclasses import dataclass

from protocols.errors import ErrorCode
from protocols.group import Assignment, PartitionError, TopicPartitions
from protocols.keys import ApiKey, SimKey
from protocols.registry import Kind, message, struct

__all__ = [
    "ADMIN_OPERATIONS",
    "RESET_TARGETS",
    "AdminCommand",
    "DeleteGroupsRequest",
    "DeleteGroupsResponse",
    "DeletableGroupResult",
    "DescribeGroupsRequest",
    "DescribeGroupsResponse",
    "DescribedGroup",
    "DescribedGroupMember",
    "ListGroupsRequest",
    "ListGroupsResponse",
    "ListedGroup",
    "OffsetDeleteRequest",
    "OffsetDeleteResponse",
]

ADMIN_OPERATIONS = ("reset_offsets", "delete_offsets", "delete_group", "describe_group", "list_groups")
"""What the operator can ask, each one `kafka-consumer-groups` command."""
RESET_TARGETS = ("earliest", "latest", "datetime", "shift-by")
"""`--reset-offsets`' scenarios the model has: `--to-earliest`, `--to-latest`, `--to-datetime`,
`--shift-by`."""


# --------------------------------------------------------------------------- DescribeGroups (15)


@struct
@dataclass(frozen=True, slots=True)
class DescribedGroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    """The member's node (Kafka: the address its JoinGroup came from)."""
    assignment: Assignment = Assignment()
    """Empty unless the group is Stable (`GroupMetadata.summary`)."""


@struct
@dataclass(frozen=True, slots=True)
class DescribedGroup:
    error_code: ErrorCode
    group_id: str
    group_state: str
    """Kafka's state name; `Dead` for a group the coordinator does not hold, `""` with an error."""
    protocol_type: str = ""
    protocol_data: str = ""
    """The chosen assignor while Stable, else `""`."""
    members: tuple[DescribedGroupMember, ...] = ()


@message(ApiKey.DESCRIBE_GROUPS, kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class DescribeGroupsResponse:
    groups: tuple[DescribedGroup, ...]


@message(ApiKey.DESCRIBE_GROUPS, kind=Kind.REQUEST, response=DescribeGroupsResponse)
@dataclass(frozen=True, slots=True)
class DescribeGroupsRequest:
    groups: tuple[str, ...]


# --------------------------------------------------------------------------- ListGroups (16)


@struct
@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    group_state: str


@message(ApiKey.LIST_GROUPS, kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class ListGroupsResponse:
    error_code: ErrorCode
    groups: tuple[ListedGroup, ...] = ()


@message(ApiKey.LIST_GROUPS, kind=Kind.REQUEST, response=ListGroupsResponse)
@dataclass(frozen=True, slots=True)
class ListGroupsRequest:
    states_filter: tuple[str, ...] = ()
    """KIP-518: only groups in these states; empty: every group."""


# --------------------------------------------------------------------------- DeleteGroups (42)


@struct
@dataclass(frozen=True, slots=True)
class DeletableGroupResult:
    group_id: str
    error_code: ErrorCode


@message(ApiKey.DELETE_GROUPS, kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class DeleteGroupsResponse:
    results: tuple[DeletableGroupResult, ...]


@message(ApiKey.DELETE_GROUPS, kind=Kind.REQUEST, response=DeleteGroupsResponse)
@dataclass(frozen=True, slots=True)
class DeleteGroupsRequest:
    groups_names: tuple[str, ...]


# --------------------------------------------------------------------------- OffsetDelete (47)


@message(ApiKey.OFFSET_DELETE, kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class OffsetDeleteResponse:
    error_code: ErrorCode
    """The group's error; with one, `partitions` is empty."""
    partitions: tuple[PartitionError, ...] = ()


@message(ApiKey.OFFSET_DELETE, kind=Kind.REQUEST, response=OffsetDeleteResponse)
@dataclass(frozen=True, slots=True)
class OffsetDeleteRequest:
    group_id: str
    topics: tuple[TopicPartitions, ...]


# --------------------------------------------------------------------------- the operator


@message(SimKey.ADMIN_COMMAND, kind=Kind.ONE_WAY)
@dataclass(frozen=True, slots=True)
class AdminCommand:
    """One `kafka-consumer-groups` command for the admin client to run."""

    operation: str
    """One of `ADMIN_OPERATIONS`."""
    request_id: int
    """The command's number in this run (from 1), which its result events carry."""
    group_id: str = ""
    topic: str = ""
    """`--topic`; empty: every partition the group has an offset for (`--all-topics`)."""
    partitions: tuple[int, ...] = ()
    """The topic's partitions (`--topic T:0,1`); empty: all of them."""
    target: str = ""
    """A reset's scenario, one of `RESET_TARGETS`."""
    datetime_ms: int = 0
    shift_by: int = 0

    @property
    def action(self) -> str:
        return self.operation
