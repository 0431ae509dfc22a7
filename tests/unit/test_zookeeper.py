"""The ZooKeeper model, on its handlers directly."""

from __future__ import annotations

import random
from typing import Any

from actors.core import Address, Ctx, Inbound, Out, Send
from actors.zookeeper.behavior import ZooKeeper
from protocols.zookeeper import (
    CloseSessionRequest,
    ConnectRequest,
    EventType,
    ExistsRequest,
    GetChildrenRequest,
    GetDataRequest,
    MultiRequest,
    Op,
    OpCode,
    WatchedEvent,
    ZkError,
    ZkPingRequest,
)

ZK = Address("zookeeper", "zookeeper")
A, B = Address("broker-1", "controller"), Address("broker-2", "controller")


class Service:
    def __init__(self) -> None:
        self.zk = ZooKeeper()
        self.ctx = Ctx(ZK, 0, random.Random(1))
        self.zk.on_start(self.ctx)
        self.notified: list[tuple[Address, WatchedEvent]] = []

    def call(self, src: Address, msg: Any) -> Any:
        out = self.zk.on_message(self.ctx, Inbound(src, msg, 1, 0))
        return self._collect(out)

    def expire(self, sid: int) -> None:
        self._collect(self.zk.on_timer(self.ctx, f"expire:{sid}"))

    def _collect(self, out: Out) -> Any:
        reply = None
        for c in out:
            if isinstance(c, Send) and isinstance(c.message, WatchedEvent):
                self.notified.append((c.dst, c.message))
            elif isinstance(c, Send):
                reply = c.message
        return reply

    def session(self, client: Address, timeout_ms: int = 18000) -> int:
        return self.call(client, ConnectRequest(timeout_ms)).session_id

    def create(self, sid: int, path: str, data: str = "", **kw: Any) -> Any:
        return self.call(A, MultiRequest(sid, (Op(OpCode.CREATE, path, data, **kw),)))


def test_create_read_and_conditional_set() -> None:
    s = Service()
    sid = s.session(A)
    assert s.create(sid, "/controller_epoch", "0").error is ZkError.OK
    assert s.create(sid, "/controller_epoch", "0").error is ZkError.NODEEXISTS
    assert s.create(sid, "/a/b").error is ZkError.NONODE
    got = s.call(A, GetDataRequest(sid, "/controller_epoch"))
    assert (got.error, got.data, got.stat.version) == (ZkError.OK, "0", 0)
    bad = s.call(A, MultiRequest(sid, (Op(OpCode.SET_DATA, "/controller_epoch", "1", version=3),)))
    assert bad.error is ZkError.BADVERSION
    good = s.call(A, MultiRequest(sid, (Op(OpCode.SET_DATA, "/controller_epoch", "1", version=0),)))
    assert (good.error, good.results[0].stat.version) == (ZkError.OK, 1)


def test_a_failed_multi_applies_nothing() -> None:
    """Kafka's controller election: create /controller and bump /controller_epoch expecting its
    version; a stale version fails the whole multi (BADVERSION), /controller is not created."""
    s = Service()
    sid = s.session(A)
    s.create(sid, "/controller_epoch", "7")
    ops = (
        Op(OpCode.CREATE, "/controller", "1", ephemeral=True),
        Op(OpCode.SET_DATA, "/controller_epoch", "8", version=6),
        Op(OpCode.CREATE, "/other"),
    )
    reply = s.call(A, MultiRequest(sid, ops))
    assert reply.error is ZkError.BADVERSION
    assert [r.error for r in reply.results] == [ZkError.OK, ZkError.BADVERSION, ZkError.RUNTIMEINCONSISTENCY]
    assert s.call(A, ExistsRequest(sid, "/controller")).error is ZkError.NONODE
    assert s.call(A, GetDataRequest(sid, "/controller_epoch")).data == "7"


def test_ephemerals_go_with_their_session_on_close_and_on_expiry() -> None:
    s = Service()
    a, b = s.session(A), s.session(B, timeout_ms=6000)
    s.create(a, "/brokers")
    s.create(a, "/brokers/1", ephemeral=True)
    s.create(b, "/brokers/2", ephemeral=True)
    assert s.call(A, GetChildrenRequest(a, "/brokers")).children == ("1", "2")
    s.call(A, CloseSessionRequest(a))
    assert s.call(B, GetChildrenRequest(b, "/brokers")).children == ("2",)
    s.expire(b)
    c = s.session(A)
    assert s.call(A, GetChildrenRequest(c, "/brokers")).children == ()
    assert s.call(B, ZkPingRequest(b)).error is ZkError.SESSIONEXPIRED


def test_a_watch_fires_once() -> None:
    s = Service()
    a, b = s.session(A), s.session(B)
    s.create(a, "/controller", "1", ephemeral=True)
    assert s.call(B, ExistsRequest(b, "/controller", watch=True)).error is ZkError.OK
    s.call(A, MultiRequest(a, (Op(OpCode.SET_DATA, "/controller", "2"),)))
    s.call(A, MultiRequest(a, (Op(OpCode.SET_DATA, "/controller", "3"),)))
    assert s.notified == [(B, WatchedEvent(EventType.NODE_DATA_CHANGED, "/controller"))]


def test_exists_watches_creation_and_deletion_fires_data_and_child_watches() -> None:
    s = Service()
    a, b = s.session(A), s.session(B)
    s.create(a, "/brokers")
    s.call(B, ExistsRequest(b, "/controller", watch=True))  # missing: still watched
    s.call(B, GetChildrenRequest(b, "/brokers", watch=True))
    s.create(a, "/controller", ephemeral=True)
    s.create(a, "/brokers/1", ephemeral=True)
    s.call(B, ExistsRequest(b, "/controller", watch=True))
    s.call(A, CloseSessionRequest(a))  # session close deletes /brokers/1 and /controller
    assert s.notified == [
        (B, WatchedEvent(EventType.NODE_CREATED, "/controller")),
        (B, WatchedEvent(EventType.NODE_CHILDREN_CHANGED, "/brokers")),
        (B, WatchedEvent(EventType.NODE_DELETED, "/controller")),
    ]


def test_sequential_names_use_the_parents_cversion() -> None:
    s = Service()
    sid = s.session(A)
    s.create(sid, "/isr_change_notification")
    first = s.create(sid, "/isr_change_notification/isr_change_", sequential=True)
    second = s.create(sid, "/isr_change_notification/isr_change_", sequential=True)
    assert [first.results[0].path, second.results[0].path] == [
        "/isr_change_notification/isr_change_0000000000",
        "/isr_change_notification/isr_change_0000000001",
    ]


def test_delete_needs_no_children_and_ephemerals_have_none() -> None:
    s = Service()
    sid = s.session(A)
    s.create(sid, "/a")
    s.create(sid, "/a/b")
    s.create(sid, "/e", ephemeral=True)
    assert s.call(A, MultiRequest(sid, (Op(OpCode.DELETE, "/a"),))).error is ZkError.NOTEMPTY
    assert s.create(sid, "/e/x").error is ZkError.NOCHILDRENFOREPHEMERALS
    assert s.call(A, MultiRequest(sid, (Op(OpCode.DELETE, "/a/b", version=0),))).error is ZkError.OK


def test_czxid_is_the_create_zxid() -> None:
    """KIP-380: a broker's epoch is the czxid of its /brokers/ids/N, which grows on re-registration."""
    s = Service()
    sid = s.session(A)
    s.create(sid, "/brokers")
    first = s.create(sid, "/brokers/1", ephemeral=True).results[0].stat.czxid
    s.call(A, MultiRequest(sid, (Op(OpCode.DELETE, "/brokers/1"),)))
    again = s.create(sid, "/brokers/1", ephemeral=True).results[0].stat.czxid
    assert again > first


def test_the_root_cannot_be_deleted() -> None:
    s = Service()
    sid = s.session(A)
    assert s.call(A, MultiRequest(sid, (Op(OpCode.DELETE, "/"),))).error is ZkError.BADARGUMENTS
    assert s.call(A, ExistsRequest(sid, "/")).error is ZkError.OK
