"""The behaviour contract: deterministic state machines that return commands.

A behaviour holds immutable configuration and one mutable state. Its handlers take a `Ctx` (the
node and actor it runs as, the simulated time, a random stream seeded for this actor, and the
durable files it restarted with) and return an `Out`: an ordered list of commands, as in
stateright's `Out` and Kafka's `CoordinatorResult`. A handler never reads the wall clock, never
calls the global `random`, never touches Pykka, sockets or files, and sorts before it iterates an
unordered collection to emit.

The same behaviour therefore runs unchanged under the Pykka host and the direct executor
(`actors.runtime`), and its handlers can be unit-tested by calling them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, runtime_checkable

from protocols.frozen import fast_init

__all__ = [
    "Address",
    "Append",
    "Behavior",
    "CancelTimer",
    "Command",
    "Ctx",
    "DeleteHead",
    "Disconnect",
    "DiskCommand",
    "Emit",
    "Exit",
    "Flush",
    "Inbound",
    "Out",
    "Send",
    "SetTimer",
    "Truncate",
    "WriteFile",
]


class Address(NamedTuple):
    """Where an actor lives: its node (what crashes together) and its name on that node."""

    node: str
    actor: str

    def __str__(self) -> str:
        return f"{self.node}/{self.actor}"


@fast_init
@dataclass(frozen=True, slots=True)
class Send:
    """Send `message` to `dst`; the host encodes it to msgpack bytes."""

    dst: Address
    message: Any
    correlation_id: int = 0
    version: int | None = None


@fast_init
@dataclass(frozen=True, slots=True)
class SetTimer:
    """Fire `on_timer(key)` after `after_ms`; setting a key again replaces the earlier timer."""

    key: str
    after_ms: int


@fast_init
@dataclass(frozen=True, slots=True)
class CancelTimer:
    key: str


@fast_init
@dataclass(frozen=True, slots=True)
class Emit:
    """Log the fact `event` (snake_case, past tense) with flat, typed fields."""

    event: str
    fields: dict[str, Any]


@fast_init
@dataclass(frozen=True, slots=True)
class Append:
    """Append records to a log file of this node's disk; they sit in the page cache until flushed."""

    file: str
    records: tuple[Any, ...]


@fast_init
@dataclass(frozen=True, slots=True)
class Truncate:
    """Keep only the first `length` records of a log file."""

    file: str
    length: int


@fast_init
@dataclass(frozen=True, slots=True)
class DeleteHead:
    """Delete the first `count` records of a log file: the segments retention removed."""

    file: str
    count: int


@fast_init
@dataclass(frozen=True, slots=True)
class WriteFile:
    """Replace a whole file; with `sync`, durably (Kafka's checkpoint files are fsynced)."""

    file: str
    value: Any
    sync: bool = True


@fast_init
@dataclass(frozen=True, slots=True)
class Flush:
    """fsync a file: everything written to it so far survives any crash but a disk loss."""

    file: str


@fast_init
@dataclass(frozen=True, slots=True)
class Exit:
    """The process exits on purpose, once this window's sends and writes are out: every actor
    of the node stops and its connections close, as after a crash; the disk keeps everything."""


@fast_init
@dataclass(frozen=True, slots=True)
class Disconnect:
    """Close this actor's connection to `dst` (Kafka's `NetworkClient.disconnect`, after a
    request timeout): what the network still holds on it, both ways, is never delivered."""

    dst: Address


DiskCommand = Append | Truncate | DeleteHead | WriteFile | Flush
Command = Send | SetTimer | CancelTimer | Emit | DiskCommand | Exit | Disconnect


class Out(list[Command]):
    """The ordered commands a handler returns, with helpers that read like the protocol."""

    def send(self, dst: Address, message: Any, correlation_id: int = 0) -> None:
        self.append(Send(dst, message, correlation_id))

    def reply(self, inbound: Inbound, message: Any) -> None:
        """Answer a request on the connection it came from, with its correlation id and version."""
        self.append(Send(inbound.src, message, inbound.correlation_id, inbound.version))

    def set_timer(self, key: str, after_ms: int) -> None:
        self.append(SetTimer(key, after_ms))

    def cancel_timer(self, key: str) -> None:
        self.append(CancelTimer(key))

    def emit(self, event: str, **fields: Any) -> None:
        self.append(Emit(event, fields))

    def append_records(self, file: str, records: tuple[Any, ...]) -> None:
        self.append(Append(file, records))

    def truncate(self, file: str, length: int) -> None:
        self.append(Truncate(file, length))

    def write_file(self, file: str, value: Any, *, sync: bool = True) -> None:
        self.append(WriteFile(file, value, sync))

    def flush(self, file: str) -> None:
        self.append(Flush(file))

    def exit(self) -> None:
        self.append(Exit())

    def disconnect(self, dst: Address) -> None:
        self.append(Disconnect(dst))


class Inbound(NamedTuple):
    """A delivered, decoded message."""

    src: Address
    message: Any
    correlation_id: int
    version: int


@dataclass(slots=True)
class Ctx:
    """What a handler may know of the world besides its own state."""

    address: Address
    now_ms: int
    rng: random.Random
    disk: dict[str, Any] = field(default_factory=dict)
    """The files that survived on this node's disk when the actor started (read on start only)."""

    @property
    def node(self) -> str:
        return self.address.node


@runtime_checkable
class Behavior(Protocol):
    """A deterministic actor. Handlers return commands and never perform I/O."""

    def on_start(self, ctx: Ctx) -> Out: ...

    def on_message(self, ctx: Ctx, inbound: Inbound) -> Out: ...

    def on_timer(self, ctx: Ctx, key: str) -> Out: ...

    def snapshot(self) -> dict[str, Any]:
        """A plain-data view of the state, for inspection and tests."""
        ...
