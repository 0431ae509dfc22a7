"""The coordination service: a model of ZooKeeper for Kafka's ZooKeeper mode.

What it keeps of ZooKeeper (`DataTree`, `SessionTracker`, `WatchManager`, `PrepRequestProcessor`):
- sessions with a timeout, kept alive by any request (clients ping); on expiry or close the
  session's ephemeral znodes are deleted and its watches dropped;
- persistent, ephemeral and sequential znodes (a sequential name ends in the parent's
  `cversion`, ten digits), with `Stat`: czxid, mzxid, data version, cversion, ephemeral owner;
- one-shot watches: `exists` and `getData` set a data watch (`exists` also on a missing node, to
  hear of its creation), `getChildren` a child watch; each fires once, per session;
- writes as multi-ops: all or nothing, one zxid; a failed multi reports OK for the operations
  before the failure (rolled back), the failure's own error, and RUNTIMEINCONSISTENCY after it;
- the errors NONODE, NODEEXISTS, BADVERSION, NOTEMPTY, NOCHILDRENFOREPHEMERALS, SESSIONEXPIRED.

The service is one node and does not fail on its own; tests can still crash it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from actors.core import Address, Ctx, Inbound, Out
from protocols.connection import Disconnected
from protocols.zookeeper import (
    CloseSessionRequest,
    CloseSessionResponse,
    ConnectRequest,
    ConnectResponse,
    EventType,
    ExistsRequest,
    ExistsResponse,
    GetChildrenRequest,
    GetChildrenResponse,
    GetDataRequest,
    GetDataResponse,
    MultiRequest,
    MultiResponse,
    Op,
    OpCode,
    OpResult,
    Stat,
    WatchedEvent,
    ZkError,
    ZkPingRequest,
    ZkPingResponse,
)

__all__ = ["ZooKeeper"]

ROOT = "/"


@dataclass(frozen=True, slots=True)
class Znode:
    data: str
    czxid: int
    mzxid: int
    version: int = 0
    cversion: int = 0
    ephemeral_owner: int = 0
    children: tuple[str, ...] = ()

    def stat(self) -> Stat:
        return Stat(self.czxid, self.mzxid, self.version, self.cversion, self.ephemeral_owner, len(self.children))


@dataclass(slots=True)
class Session:
    client: Address
    timeout_ms: int


@dataclass(slots=True)
class ZooKeeperState:
    nodes: dict[str, Znode] = field(default_factory=lambda: {ROOT: Znode("", 0, 0)})
    zxid: int = 0
    next_session: int = 0
    sessions: dict[int, Session] = field(default_factory=dict)
    data_watches: dict[str, dict[int, Address]] = field(default_factory=dict)
    child_watches: dict[str, dict[int, Address]] = field(default_factory=dict)


class _Failed(Exception):
    def __init__(self, error: ZkError) -> None:
        super().__init__(error.name)
        self.error = error


def _parent(path: str) -> str:
    parent = path.rsplit("/", 1)[0]
    return parent or ROOT


def _valid(path: str) -> bool:
    return path == ROOT or (path.startswith("/") and not path.endswith("/") and "//" not in path)


class ZooKeeper:
    def __init__(self, session_id_base: int = 0x100, initial: tuple[tuple[str, str, int], ...] = ()) -> None:
        """`initial`: znodes `(path, data, version)` present before the run, as a restored
        snapshot would hold them (the topics an administrator created, a controller epoch);
        missing parents are created empty. Each takes the next zxid, in the order given."""
        self.state = ZooKeeperState(next_session=session_id_base)
        for path, data, version in initial:
            self._seed(path, data, version)

    # ------------------------------------------------------------------ handlers

    def on_start(self, ctx: Ctx) -> Out:
        out = Out()
        out.emit("zookeeper_started", znodes=len(self.state.nodes))
        return out

    def on_message(self, ctx: Ctx, inbound: Inbound) -> Out:  # noqa: PLR0911 - one arm per request
        out = Out()
        msg = inbound.message
        if isinstance(msg, Disconnected):
            return out  # a session outlives its connection: it ends by its timeout or a close
        if isinstance(msg, ConnectRequest):
            self._connect(out, inbound, msg)
            return out
        session = self.state.sessions.get(msg.session_id)
        if session is None:
            out.reply(inbound, _expired(msg))
            return out
        out.set_timer(f"expire:{msg.session_id}", session.timeout_ms)  # any request keeps it alive
        match msg:
            case ZkPingRequest():
                out.reply(inbound, ZkPingResponse(ZkError.OK))
            case CloseSessionRequest(session_id):
                self._end_session(out, session_id, "zk_session_closed")
                out.cancel_timer(f"expire:{session_id}")
                out.reply(inbound, CloseSessionResponse(ZkError.OK))
            case ExistsRequest(sid, path, watch):
                node = self.state.nodes.get(path)
                if watch:
                    self.state.data_watches.setdefault(path, {})[sid] = session.client
                out.reply(inbound, ExistsResponse(ZkError.OK, node.stat()) if node else ExistsResponse(ZkError.NONODE))
            case GetDataRequest(sid, path, watch):
                node = self.state.nodes.get(path)
                if node is None:
                    out.reply(inbound, GetDataResponse(ZkError.NONODE))
                    return out
                if watch:
                    self.state.data_watches.setdefault(path, {})[sid] = session.client
                out.reply(inbound, GetDataResponse(ZkError.OK, node.data, node.stat()))
            case GetChildrenRequest(sid, path, watch):
                node = self.state.nodes.get(path)
                if node is None:
                    out.reply(inbound, GetChildrenResponse(ZkError.NONODE))
                    return out
                if watch:
                    self.state.child_watches.setdefault(path, {})[sid] = session.client
                out.reply(inbound, GetChildrenResponse(ZkError.OK, node.children))
            case MultiRequest(sid, ops):
                out.reply(inbound, self._multi(out, sid, ops))
        return out

    def on_timer(self, ctx: Ctx, key: str) -> Out:
        out = Out()
        kind, _, arg = key.partition(":")
        if kind == "expire" and int(arg) in self.state.sessions:
            self._end_session(out, int(arg), "zk_session_expired")
        return out

    def snapshot(self) -> dict[str, Any]:
        return {
            "zxid": self.state.zxid,
            "sessions": sorted(self.state.sessions),
            "znodes": {
                path: {
                    "data": node.data,
                    "version": node.version,
                    "czxid": node.czxid,
                    "ephemeral_owner": node.ephemeral_owner,
                    "children": list(node.children),
                }
                for path, node in sorted(self.state.nodes.items())
            },
        }

    # ------------------------------------------------------------------ sessions

    def _connect(self, out: Out, inbound: Inbound, msg: ConnectRequest) -> None:
        self.state.next_session += 1
        sid = self.state.next_session
        self.state.sessions[sid] = Session(inbound.src, msg.session_timeout_ms)
        out.set_timer(f"expire:{sid}", msg.session_timeout_ms)
        out.emit("zk_session_created", session_id=sid, client=str(inbound.src), timeout_ms=msg.session_timeout_ms)
        out.reply(inbound, ConnectResponse(sid, msg.session_timeout_ms))

    def _end_session(self, out: Out, sid: int, event: str) -> None:
        """Close or expire: delete the session's ephemerals (firing watches), drop its watches."""
        ephemerals = sorted(p for p, n in self.state.nodes.items() if n.ephemeral_owner == sid)
        del self.state.sessions[sid]
        for watches in (self.state.data_watches, self.state.child_watches):
            for path in sorted(watches):
                watches[path].pop(sid, None)
        out.emit(event, session_id=sid, ephemerals=ephemerals)
        if ephemerals:
            ops = tuple(Op(OpCode.DELETE, path) for path in reversed(ephemerals))
            self._multi(out, sid, ops)

    # ------------------------------------------------------------------ writes

    def _seed(self, path: str, data: str, version: int) -> None:
        if not _valid(path) or path == ROOT:
            msg = f"cannot seed the znode {path!r}"
            raise ValueError(msg)
        parent = _parent(path)
        if parent not in self.state.nodes:
            self._seed(parent, "", 0)
        nodes = self.state.nodes
        if path in nodes:
            nodes[path] = replace(nodes[path], data=data, version=version)
            return
        self.state.zxid += 1
        self._apply(nodes, self.state.zxid, 0, Op(OpCode.CREATE, path, data), [])
        nodes[path] = replace(nodes[path], version=version)

    def _multi(self, out: Out, sid: int, ops: tuple[Op, ...]) -> MultiResponse:
        """Apply `ops` atomically under one zxid, or none of them."""
        staged = dict(self.state.nodes)
        zxid = self.state.zxid + 1
        results: list[OpResult] = []
        fired: list[tuple[EventType, str]] = []
        for i, op in enumerate(ops):
            try:
                results.append(self._apply(staged, zxid, sid, op, fired))
            except _Failed as failed:
                rolled_back = [OpResult(ZkError.OK) for _ in results]
                after = [OpResult(ZkError.RUNTIMEINCONSISTENCY) for _ in ops[i + 1 :]]
                return MultiResponse(failed.error, (*rolled_back, OpResult(failed.error), *after))
        self.state.nodes = staged
        self.state.zxid = zxid
        for result, op in zip(results, ops, strict=True):
            if op.op in (OpCode.CREATE, OpCode.SET_DATA):
                out.emit("znode_changed", op=op.op.name.lower(), path=result.path, zxid=zxid, data=op.data)
            elif op.op is OpCode.DELETE:
                out.emit("znode_changed", op="delete", path=result.path, zxid=zxid)
        for event_type, path in fired:
            self._fire(out, event_type, path)
        return MultiResponse(ZkError.OK, tuple(results))

    def _apply(
        self, nodes: dict[str, Znode], zxid: int, sid: int, op: Op, fired: list[tuple[EventType, str]]
    ) -> OpResult:
        path = op.path
        if not _valid(path):
            raise _Failed(ZkError.BADARGUMENTS)
        node = nodes.get(path)
        if op.op is OpCode.CREATE:
            parent_path = _parent(path)
            parent = nodes.get(parent_path)
            if parent is None:
                raise _Failed(ZkError.NONODE)
            if parent.ephemeral_owner:
                raise _Failed(ZkError.NOCHILDRENFOREPHEMERALS)
            if op.sequential:
                path = f"{path}{parent.cversion:010d}"
                node = nodes.get(path)
            if node is not None or path == ROOT:
                raise _Failed(ZkError.NODEEXISTS)
            nodes[path] = Znode(op.data, zxid, zxid, ephemeral_owner=sid if op.ephemeral else 0)
            name = path.rsplit("/", 1)[1]
            nodes[parent_path] = replace(
                parent, cversion=parent.cversion + 1, children=tuple(sorted((*parent.children, name)))
            )
            fired += [(EventType.NODE_CREATED, path), (EventType.NODE_CHILDREN_CHANGED, parent_path)]
            return OpResult(ZkError.OK, path, nodes[path].stat())
        if node is None:
            raise _Failed(ZkError.NONODE)
        if op.version != -1 and op.version != node.version:
            raise _Failed(ZkError.BADVERSION)
        if op.op is OpCode.CHECK:
            return OpResult(ZkError.OK, path)
        if op.op is OpCode.SET_DATA:
            nodes[path] = replace(node, data=op.data, version=node.version + 1, mzxid=zxid)
            fired.append((EventType.NODE_DATA_CHANGED, path))
            return OpResult(ZkError.OK, path, nodes[path].stat())
        if op.op is OpCode.DELETE:
            if path == ROOT:
                raise _Failed(ZkError.BADARGUMENTS)
            if node.children:
                raise _Failed(ZkError.NOTEMPTY)
            del nodes[path]
            parent_path = _parent(path)
            parent = nodes[parent_path]
            name = path.rsplit("/", 1)[1]
            nodes[parent_path] = replace(
                parent, cversion=parent.cversion + 1, children=tuple(c for c in parent.children if c != name)
            )
            fired += [(EventType.NODE_DELETED, path), (EventType.NODE_CHILDREN_CHANGED, parent_path)]
            return OpResult(ZkError.OK, path)
        raise _Failed(ZkError.BADARGUMENTS)

    def _fire(self, out: Out, event_type: EventType, path: str) -> None:
        """Send a one-shot notification to every session watching `path` for this change."""
        targets: dict[int, Address] = {}
        if event_type in (EventType.NODE_CREATED, EventType.NODE_DATA_CHANGED, EventType.NODE_DELETED):
            targets.update(self.state.data_watches.pop(path, {}))
        if event_type in (EventType.NODE_CHILDREN_CHANGED, EventType.NODE_DELETED):
            targets.update(self.state.child_watches.pop(path, {}))
        for sid in sorted(targets):
            out.send(targets[sid], WatchedEvent(event_type, path))


def _expired(msg: Any) -> Any:
    """The SESSIONEXPIRED answer of the request's own type."""
    match msg:
        case ZkPingRequest():
            return ZkPingResponse(ZkError.SESSIONEXPIRED)
        case CloseSessionRequest():
            return CloseSessionResponse(ZkError.SESSIONEXPIRED)
        case ExistsRequest():
            return ExistsResponse(ZkError.SESSIONEXPIRED)
        case GetDataRequest():
            return GetDataResponse(ZkError.SESSIONEXPIRED)
        case GetChildrenRequest():
            return GetChildrenResponse(ZkError.SESSIONEXPIRED)
        case _:
            return MultiResponse(ZkError.SESSIONEXPIRED, ())
