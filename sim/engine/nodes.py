"""What the kernel hosts: nodes of actors, and the seeds of their random streams.

A node is what crashes together: a name and the actors it runs, each built by a factory, so a
restart can build them anew from the disk alone. The kernel keeps one record per node of where
its lifecycle stands (`sim.engine.lifecycle`): up or down, which incarnation, paused until when,
its disk, and the connections other nodes' actors opened to it.

Every random stream is seeded from the run's seed by sha256 (`derive_seed`): each actor's from
`(seed, address, incarnation)`, the network's from its own name; nothing uses the global
`random`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from actors.core import Address, Behavior
from sim.engine.disk import Disk

KERNEL = Address("sim", "kernel")
"""Who logs the facts of the simulation itself (faults, drops, failures)."""
CONNECTION = "connection"
"""The actor name `Disconnected` comes from: the peer's end of the connection, not an actor."""
APPLICATION = "application"
"""The source of an application's calls to its client (`Kernel.tell`)."""


class HostKind(StrEnum):
    """How a node's actors run: each in a Pykka thread (the product), or directly in the
    kernel's thread (the reference executor `kafkasim bench` compares against)."""

    PYKKA = "pykka"
    DIRECT = "direct"


Wrap = Callable[[Address, Behavior], Behavior]
"""A function applied to each behaviour as its actor starts (`Kernel(wrap=...)`)."""


@dataclass(frozen=True, slots=True)
class ActorSpec:
    name: str
    factory: Callable[[], Behavior]


@dataclass(frozen=True, slots=True)
class NodeSpec:
    name: str
    actors: tuple[ActorSpec, ...]


@dataclass(slots=True)
class Node:
    """Where a node's lifecycle stands."""

    spec: NodeSpec
    up: bool = True
    incarnation: int = 0
    paused_until: int = 0
    disk: Disk = field(default_factory=Disk)
    refusing: bool = False
    """Its process crashed but its machine is up: connections to it are refused."""
    peers: set[Address] = field(default_factory=set)
    """The actors elsewhere that sent to this node since it started: its open connections."""
    restart_after_exit_ms: int | None = None


def derive_seed(seed: int, *parts: object) -> int:
    """A seed for one stream, derived from the run's seed (never the global random)."""
    text = "/".join([str(seed), *map(str, parts)])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
