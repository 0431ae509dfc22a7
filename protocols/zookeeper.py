"""The coordination service's protocol: a model of ZooKeeper's client API.

Keys are 1000 plus ZooKeeper's opcode (`org.apache.zookeeper.ZooDefs.OpCode`); error codes are
ZooKeeper's (`KeeperException.Code`). Data is a string (Kafka stores JSON in its znodes). Every
request names its session; a watch notification is a one-way `WatchedEvent`.

Left out: ACLs, authentication, chroot, sync, the four-letter words, observers and the quorum
itself (the service is one node that does not fail on its own, as Kafka's tests assume).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from protocols.keys import ZOOKEEPER_BASE
from protocols.registry import Kind, message, struct


class ZkError(IntEnum):
    OK = 0
    RUNTIMEINCONSISTENCY = -2
    BADARGUMENTS = -8
    NONODE = -101
    BADVERSION = -103
    NOCHILDRENFOREPHEMERALS = -108
    NODEEXISTS = -110
    NOTEMPTY = -111
    SESSIONEXPIRED = -112


class OpCode(IntEnum):
    NOTIFICATION = 0
    CREATE = 1
    DELETE = 2
    EXISTS = 3
    GET_DATA = 4
    SET_DATA = 5
    GET_CHILDREN = 8
    PING = 11
    CHECK = 13
    MULTI = 14
    CREATE_SESSION = -10
    CLOSE_SESSION = -11


class EventType(IntEnum):
    """`Watcher.Event.EventType`."""

    NODE_CREATED = 1
    NODE_DELETED = 2
    NODE_DATA_CHANGED = 3
    NODE_CHILDREN_CHANGED = 4


def _key(op: OpCode) -> int:
    return ZOOKEEPER_BASE + op


@struct
@dataclass(frozen=True, slots=True)
class Stat:
    czxid: int
    """The zxid of the create: Kafka's broker epoch (KIP-380) is the czxid of /brokers/ids/N."""
    mzxid: int
    version: int
    """The data version, checked by setData, delete and check (Kafka's zkVersion)."""
    cversion: int
    ephemeral_owner: int
    """The owning session, 0 for a persistent node."""
    num_children: int


# ------------------------------------------------------------------------------- sessions


@message(_key(OpCode.CREATE_SESSION), kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class ConnectResponse:
    session_id: int
    session_timeout_ms: int


@message(_key(OpCode.CREATE_SESSION), kind=Kind.REQUEST, response=ConnectResponse)
@dataclass(frozen=True, slots=True)
class ConnectRequest:
    session_timeout_ms: int


@message(_key(OpCode.PING), kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class ZkPingResponse:
    error: ZkError


@message(_key(OpCode.PING), kind=Kind.REQUEST, response=ZkPingResponse)
@dataclass(frozen=True, slots=True)
class ZkPingRequest:
    session_id: int


@message(_key(OpCode.CLOSE_SESSION), kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class CloseSessionResponse:
    error: ZkError


@message(_key(OpCode.CLOSE_SESSION), kind=Kind.REQUEST, response=CloseSessionResponse)
@dataclass(frozen=True, slots=True)
class CloseSessionRequest:
    session_id: int


# ------------------------------------------------------------------------------- reads


@message(_key(OpCode.EXISTS), kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class ExistsResponse:
    error: ZkError
    stat: Stat | None = None


@message(_key(OpCode.EXISTS), kind=Kind.REQUEST, response=ExistsResponse)
@dataclass(frozen=True, slots=True)
class ExistsRequest:
    session_id: int
    path: str
    watch: bool = False


@message(_key(OpCode.GET_DATA), kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class GetDataResponse:
    error: ZkError
    data: str = ""
    stat: Stat | None = None


@message(_key(OpCode.GET_DATA), kind=Kind.REQUEST, response=GetDataResponse)
@dataclass(frozen=True, slots=True)
class GetDataRequest:
    session_id: int
    path: str
    watch: bool = False


@message(_key(OpCode.GET_CHILDREN), kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class GetChildrenResponse:
    error: ZkError
    children: tuple[str, ...] = ()


@message(_key(OpCode.GET_CHILDREN), kind=Kind.REQUEST, response=GetChildrenResponse)
@dataclass(frozen=True, slots=True)
class GetChildrenRequest:
    session_id: int
    path: str
    watch: bool = False


# ------------------------------------------------------------------------------- writes


@struct
@dataclass(frozen=True, slots=True)
class Op:
    """One operation: create, delete, set_data or check (a version check that writes nothing)."""

    op: OpCode
    path: str
    data: str = ""
    version: int = -1
    """-1: any version."""
    ephemeral: bool = False
    sequential: bool = False


@struct
@dataclass(frozen=True, slots=True)
class OpResult:
    error: ZkError
    path: str = ""
    """The created path (with its sequence suffix)."""
    stat: Stat | None = None


@message(_key(OpCode.MULTI), kind=Kind.RESPONSE)
@dataclass(frozen=True, slots=True)
class MultiResponse:
    error: ZkError
    """OK, or the error of the first operation that failed (then nothing was applied)."""
    results: tuple[OpResult, ...]


@message(_key(OpCode.MULTI), kind=Kind.REQUEST, response=MultiResponse)
@dataclass(frozen=True, slots=True)
class MultiRequest:
    """One operation (a plain create, delete or setData) or several applied atomically."""

    session_id: int
    ops: tuple[Op, ...]


@message(_key(OpCode.NOTIFICATION), kind=Kind.ONE_WAY)
@dataclass(frozen=True, slots=True)
class WatchedEvent:
    type: EventType
    path: str
