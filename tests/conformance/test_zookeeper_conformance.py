"""The ZooKeeper model against a real ZooKeeper 3.8: the same operations, the same results.

The test starts Debian's ZooKeeper (package `zookeeper`, which `make test` installs) on loopback
and talks to it with kazoo; the model is driven through its handlers. Each sequence returns a
list of plain results, which must be equal.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.core import Address, Ctx, Inbound, Send
from actors.zookeeper.behavior import ZooKeeper
from protocols.zookeeper import (
    CloseSessionRequest,
    ConnectRequest,
    ExistsRequest,
    GetChildrenRequest,
    GetDataRequest,
    MultiRequest,
    Op,
    OpCode,
    WatchedEvent,
)

pytestmark = pytest.mark.zookeeper

JAR = Path("/usr/share/java/zookeeper.jar")
TIMEOUT_MS = 4000  # the server's minimum (2 ticks of 2000 ms)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not JAR.exists() or shutil.which("java") is None:
        reason = "Debian's zookeeper package is not installed (make test installs it as root)"
        if os.environ.get("KAFKASIM_REQUIRE_ZOOKEEPER"):
            pytest.fail(reason)
        pytest.skip(reason)
    kazoo = pytest.importorskip("kazoo.client")
    port = _free_port()
    data = tmp_path_factory.mktemp("zookeeper")
    process = subprocess.Popen(
        ["java", "-cp", f"{JAR}:/usr/share/java/*", "org.apache.zookeeper.server.ZooKeeperServerMain",
         str(port), str(data)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    hosts = f"127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        probe = kazoo.KazooClient(hosts=hosts, timeout=TIMEOUT_MS / 1000)
        try:
            probe.start(timeout=2)
            probe.stop()
            probe.close()
            break
        except Exception:  # noqa: BLE001 - not listening yet
            probe.close()
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                pytest.fail("ZooKeeper did not start on loopback within 60 s")
            time.sleep(0.5)
    yield hosts
    process.terminate()
    process.wait(timeout=10)


# ----------------------------------------------------------------------------- two clients


class Real:
    """kazoo against the real server; results as error names or paths."""

    def __init__(self, hosts: str) -> None:
        from kazoo.client import KazooClient

        self.hosts = hosts
        self.client = KazooClient(hosts=hosts, timeout=TIMEOUT_MS / 1000)
        self.client.start(timeout=10)
        self.events: list[tuple[str, str]] = []

    def _run(self, call: Callable[[], Any]) -> Any:
        from kazoo.exceptions import KazooException

        try:
            return call()
        except KazooException as exc:
            return type(exc).__name__.removesuffix("Error").upper()

    def create(self, path: str, data: str = "", *, ephemeral: bool = False, sequential: bool = False) -> Any:
        return self._run(lambda: self.client.create(path, data.encode(), ephemeral=ephemeral, sequence=sequential))

    def set(self, path: str, data: str, version: int = -1) -> Any:
        return self._run(lambda: self.client.set(path, data.encode(), version=version).version)

    def get(self, path: str) -> Any:
        def read() -> Any:
            data, stat = self.client.get(path)
            return (data.decode(), stat.version)

        return self._run(read)

    def children(self, path: str, *, watch: bool = False) -> Any:
        watcher = self._watcher if watch else None
        return self._run(lambda: sorted(self.client.get_children(path, watch=watcher)))

    def exists(self, path: str, *, watch: bool = False) -> Any:
        watcher = self._watcher if watch else None
        return self._run(lambda: self.client.exists(path, watch=watcher) is not None)

    def multi(self, ops: list[tuple[str, str, str, int]]) -> Any:
        t = self.client.transaction()
        for kind, path, data, version in ops:
            if kind == "create":
                t.create(path, data.encode())
            elif kind == "set":
                t.set_data(path, data.encode(), version=version)
            elif kind == "check":
                t.check(path, version)
            elif kind == "delete":
                t.delete(path, version=version)
        results = t.commit()
        names = {"RolledBack": "OK", "RuntimeInconsistency": "RUNTIMEINCONSISTENCY"}
        out = []
        for r in results:
            if isinstance(r, Exception):
                name = type(r).__name__.removesuffix("Error")
                out.append(names.get(name, name.upper()))
            else:
                out.append("OK")
        return out

    def close(self) -> None:
        self.client.stop()
        self.client.close()

    def _watcher(self, event: Any) -> None:
        self.events.append((event.type, event.path))


class Model:
    """The same calls on the model's handlers; several clients share one service."""

    def __init__(self, zk: ZooKeeper, name: str) -> None:
        self.zk = zk
        self.address = Address(name, "client")
        self.ctx = Ctx(Address("zookeeper", "zookeeper"), 0, random.Random(1))
        self.events: list[tuple[str, str]] = []
        self.sid = self._call(ConnectRequest(TIMEOUT_MS)).session_id
        Model.clients.append(self)

    clients: list[Model] = []

    def _call(self, msg: Any) -> Any:
        out = self.zk.on_message(self.ctx, Inbound(self.address, msg, 1, 0))
        return self._deliver(out)

    def _deliver(self, out: Any) -> Any:
        reply = None
        for c in out:
            if isinstance(c, Send) and isinstance(c.message, WatchedEvent):
                for client in Model.clients:
                    if client.address == c.dst:
                        kind = {1: "CREATED", 2: "DELETED", 3: "CHANGED", 4: "CHILD"}[c.message.type]
                        client.events.append((kind, c.message.path))
            elif isinstance(c, Send):
                reply = c.message
        return reply

    def _write(self, op: Op) -> Any:
        reply = self._call(MultiRequest(self.sid, (op,)))
        return reply.error.name if reply.error.name != "OK" else reply.results[0]

    def create(self, path: str, data: str = "", *, ephemeral: bool = False, sequential: bool = False) -> Any:
        result = self._write(Op(OpCode.CREATE, path, data, ephemeral=ephemeral, sequential=sequential))
        return result if isinstance(result, str) else result.path

    def set(self, path: str, data: str, version: int = -1) -> Any:
        result = self._write(Op(OpCode.SET_DATA, path, data, version=version))
        return result if isinstance(result, str) else result.stat.version

    def get(self, path: str) -> Any:
        reply = self._call(GetDataRequest(self.sid, path))
        return reply.error.name if reply.error.name != "OK" else (reply.data, reply.stat.version)

    def children(self, path: str, *, watch: bool = False) -> Any:
        reply = self._call(GetChildrenRequest(self.sid, path, watch))
        return reply.error.name if reply.error.name != "OK" else sorted(reply.children)

    def exists(self, path: str, *, watch: bool = False) -> Any:
        return self._call(ExistsRequest(self.sid, path, watch)).error.name == "OK"

    def multi(self, ops: list[tuple[str, str, str, int]]) -> Any:
        kinds = {"create": OpCode.CREATE, "set": OpCode.SET_DATA, "check": OpCode.CHECK, "delete": OpCode.DELETE}
        reply = self._call(MultiRequest(self.sid, tuple(Op(kinds[k], p, d, version=v) for k, p, d, v in ops)))
        return [r.error.name for r in reply.results]

    def close(self) -> None:
        self._call(CloseSessionRequest(self.sid))

    def expire(self) -> None:
        self._deliver(self.zk.on_timer(self.ctx, f"expire:{self.sid}"))


def _settle() -> None:
    time.sleep(0.3)  # kazoo delivers watch events on its own thread


def _both(server: str) -> tuple[Callable[[], Any], Callable[[], Any]]:
    Model.clients = []
    zk = ZooKeeper()
    names = iter(range(100))
    return (lambda: Real(server)), (lambda: Model(zk, f"c{next(names)}"))


# ----------------------------------------------------------------------------- sequences


def _create_and_versions(new: Callable[[], Any], root: str) -> list[Any]:
    c = new()
    results = [
        c.create(root),
        c.create(root),  # create existing
        c.create(f"{root}/missing/child"),
        c.create(f"{root}/epoch", "7"),
        c.get(f"{root}/epoch"),
        c.set(f"{root}/epoch", "8", version=5),  # stale version
        c.set(f"{root}/epoch", "8", version=0),
        c.get(f"{root}/epoch"),
        c.create(f"{root}/seq-", sequential=True),
        c.create(f"{root}/seq-", sequential=True),
        c.children(root),
    ]
    c.close()
    return results


def _ephemerals_and_watches(new: Callable[[], Any], root: str) -> list[Any]:
    owner, watcher = new(), new()
    owner.create(root)
    results = [
        owner.create(f"{root}/controller", '{"brokerid":1}', ephemeral=True),
        owner.create(f"{root}/controller/child"),  # no children for ephemerals
        watcher.exists(f"{root}/controller", watch=True),
        watcher.children(root, watch=True),
    ]
    owner.set(f"{root}/controller", "x")
    owner.set(f"{root}/controller", "y")  # the watch fired once already
    _settle()
    results.append(sorted(watcher.events))
    watcher.events.clear()
    owner.close()  # ephemeral deleted with its session
    _settle()
    results += [watcher.exists(f"{root}/controller"), watcher.children(root), sorted(watcher.events)]
    watcher.close()
    return results


def _multi_with_stale_version(new: Callable[[], Any], root: str) -> list[Any]:
    c = new()
    c.create(root)
    c.create(f"{root}/controller_epoch", "7")
    c.set(f"{root}/controller_epoch", "7")  # version 1
    results = [
        c.multi([("create", f"{root}/controller", "2", -1), ("set", f"{root}/controller_epoch", "8", 0), ("create", f"{root}/x", "", -1)]),
        c.exists(f"{root}/controller"),
        c.multi([("check", f"{root}/controller_epoch", "", 1), ("create", f"{root}/controller", "2", -1)]),
        c.get(f"{root}/controller"),
    ]
    c.close()
    return results


@pytest.mark.parametrize("sequence", [_create_and_versions, _ephemerals_and_watches, _multi_with_stale_version])
def test_model_answers_as_zookeeper_does(server: str, sequence: Callable[..., list[Any]]) -> None:
    real, model = _both(server)
    root = f"/{sequence.__name__.strip('_')}"
    expected = sequence(real, root)
    assert sequence(model, root) == expected


def test_ephemerals_go_when_a_session_expires(server: str) -> None:
    """A client that vanishes (killed, no close) loses its ephemerals after the session timeout."""
    script = (
        "import sys, time; from kazoo.client import KazooClient\n"
        f"c = KazooClient(hosts='{server}', timeout={TIMEOUT_MS / 1000}); c.start(timeout=10)\n"
        "c.ensure_path('/expiry'); c.create('/expiry/e', ephemeral=True)\n"
        "print('ready', flush=True); time.sleep(60)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    observer = Real(server)
    before = observer.exists("/expiry/e")
    child.kill()
    child.wait()
    deadline = time.monotonic() + 3 * TIMEOUT_MS / 1000
    while observer.exists("/expiry/e") and time.monotonic() < deadline:
        time.sleep(0.2)
    real = [before, observer.exists("/expiry/e")]
    observer.close()

    Model.clients = []
    zk = ZooKeeper()
    vanishing, watcher = Model(zk, "vanishing"), Model(zk, "watcher")
    vanishing.create("/expiry")
    vanishing.create("/expiry/e", ephemeral=True)
    model_before = watcher.exists("/expiry/e")
    vanishing.expire()  # its timer fires: no request for session.timeout.ms
    assert [model_before, watcher.exists("/expiry/e")] == real == [True, False]
