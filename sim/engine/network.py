"""The network: envelopes between nodes, with latency and faults.

Each directed pair of nodes is one connection. By default it keeps TCP's order (Kafka relies on
per-connection ordering): an envelope is never delivered before one sent earlier on the same
connection. Latency is drawn from the network's own seeded stream, between `latency.min.ms` and
`latency.max.ms`; the minimum is also the kernel's lookahead.

Faults act on envelopes and connections, as data (`LinkFault`):
- `drop`, `duplicate`, `reorder` and `corrupt` act on each envelope with a probability: the
  lossy kinds lose or damage what TCP would not;
- `delay` adds latency to every envelope;
- a partition (symmetric or one-way) cuts links but closes no connection, as a cut cable does
  to TCP: what was in flight on a cut link, and what is sent on it while it is cut, is held in
  the link's queue, in order, and goes on when the cut is lifted, each envelope with a fresh
  latency and the connection's order (`release`). What ends a held envelope is its connection
  ending first: a crash or restart of either node breaks every connection of the node (after
  a process crash the kernel also tells the node's peers: `protocols.connection`), and an
  actor that gives up on a connection closes it (`actors.core.Disconnect`, a client's request
  timeout); either way what the connection held is never delivered.

What the network does not model: bandwidth, connection set-up time, and TCP's retransmission
back-off (held envelopes go one latency after the cut is lifted, not at the next retry).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from enum import StrEnum
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

__all__ = ["HELD", "Envelope", "FaultKind", "LinkFault", "Network", "NetworkConfig"]

HELD = "held"
"""What `transmit` says of a frame sent on a cut link: the caller holds it (`hold`)."""

Link = tuple[str, str]


class FaultKind(StrEnum):
    DROP = "drop"
    DELAY = "delay"
    DUPLICATE = "duplicate"
    REORDER = "reorder"
    CORRUPT = "corrupt"


@dataclass(frozen=True, slots=True)
class NetworkConfig:
    latency_min_ms: int = 1
    latency_max_ms: int = 5

    def __post_init__(self) -> None:
        if self.latency_min_ms < 1:
            msg = "latency.min.ms must be at least 1: it is the kernel's lookahead"
            raise ValueError(msg)
        if self.latency_max_ms < self.latency_min_ms:
            msg = "latency.max.ms must not be below latency.min.ms"
            raise ValueError(msg)


@dataclass(frozen=True, slots=True)
class LinkFault:
    """A fault on the envelopes from `src` nodes to `dst` nodes (empty means any node)."""

    kind: FaultKind
    start_ms: int
    end_ms: int | None = None
    src: frozenset[str] = frozenset()
    dst: frozenset[str] = frozenset()
    probability: float = 1.0
    delay_ms: int = 0
    """Extra latency: added to every envelope (`delay`), or the most a reordered one may lag."""

    def applies(self, now_ms: int, src: str, dst: str) -> bool:
        return (
            self.start_ms <= now_ms
            and (self.end_ms is None or now_ms < self.end_ms)
            and (not self.src or src in self.src)
            and (not self.dst or dst in self.dst)
        )


class Envelope(NamedTuple):
    """What the network will deliver: the frame, when, and on which connection incarnation."""

    deliver_ms: int
    frame: bytes
    connection: int


_new_envelope = partial(tuple.__new__, Envelope)
"""`Envelope(*fields)` built in C: a NamedTuple's own constructor runs a Python `__new__`, and
this runs for every send."""


class Network:
    """Connections, latency and link faults. Deterministic given its seed and call order."""

    def __init__(self, config: NetworkConfig, rng: random.Random) -> None:
        self.config = config
        self._rng = rng
        self._latency_min = config.latency_min_ms
        self._latency_span = config.latency_max_ms - config.latency_min_ms + 1
        self._faults: list[LinkFault] = []
        self._blocked: dict[Link, int] = {}
        """Each cut link, with how many partitions cut it (one lifted, the others still hold)."""
        self._held: dict[Link, list[Any]] = {}
        """What each link holds while it is cut, in the connection's order: entries the
        caller made (`hold`), opaque here."""
        self._connection: dict[Link, int] = {}
        self._last_delivery: dict[Link, int] = {}

    @property
    def lookahead_ms(self) -> int:
        return self.config.latency_min_ms

    def add_fault(self, fault: LinkFault) -> None:
        self._faults.append(fault)

    def partition(self, side_a: list[str], side_b: list[str], *, one_way: bool = False) -> None:
        """Cut the links from side A to side B (and back, unless one-way); their connections
        stay open, and what they carry is held until the cut is lifted."""
        for pair in _links(side_a, side_b, one_way=one_way):
            self._blocked[pair] = self._blocked.get(pair, 0) + 1

    def lift(self, side_a: list[str], side_b: list[str], *, one_way: bool = False) -> list[Link]:
        """Lift one partition made by `partition` with the same arguments; links another
        partition also cut stay cut. Returns the links now open, sorted."""
        opened = []
        for pair in _links(side_a, side_b, one_way=one_way):
            count = self._blocked.get(pair, 0) - 1
            if count > 0:
                self._blocked[pair] = count
            elif self._blocked.pop(pair, None) is not None:
                opened.append(pair)
        return sorted(opened)

    def heal(self) -> list[Link]:
        """Lift every partition; returns the links now open, sorted."""
        opened = sorted(self._blocked)
        self._blocked.clear()
        return opened

    def reset_node(self, node: str, nodes: list[str]) -> None:
        """Break every connection to and from `node` (it crashed or restarted)."""
        for other in nodes:
            self._break((node, other))
            self._break((other, node))

    def connection(self, src: str, dst: str) -> int:
        return self._connection.get((src, dst), 0)

    def is_blocked(self, src: str, dst: str) -> bool:
        return (src, dst) in self._blocked

    # ----------------------------------------------------------------- what cut links hold

    def hold(self, src: str, dst: str, entry: Any) -> None:
        """Queue `entry` on the cut link from `src` to `dst`, behind what it already holds."""
        held = self._held.get((src, dst))
        if held is None:
            self._held[(src, dst)] = [entry]
        else:
            held.append(entry)

    def release(self, link: Link) -> list[Any]:
        """Everything `link` held, in order, and the link holds nothing more."""
        return self._held.pop(link, [])

    def discard(self, link: Link, lost: Callable[[Any], bool]) -> list[Any]:
        """Take the entries `link` holds for which `lost(entry)` is true (a closed connection's),
        in order; the others stay held, in order."""
        held = self._held.get(link)
        if not held:
            return []
        gone = [entry for entry in held if lost(entry)]
        if gone:
            kept = [entry for entry in held if not lost(entry)]
            if kept:
                self._held[link] = kept
            else:
                del self._held[link]
        return gone

    def holding(self, node: str) -> list[Link]:
        """The links to or from `node` that hold something, sorted."""
        return sorted(link for link in self._held if node in link)

    def latency_ms(self) -> int:
        """One latency draw, for what the network itself sends (a closed connection's notice)."""
        return self._latency_min + int(self._rng.random() * self._latency_span)

    def transmit(self, now_ms: int, src: str, dst: str, frame: bytes) -> list[Envelope] | str:
        """Route one frame: the envelopes to deliver, or why there are none: `HELD` (the link
        is cut: the caller holds the frame) or the reason it was dropped."""
        link = (src, dst)
        if link in self._blocked:
            return HELD
        rng = self._rng
        latency = self._latency_min + int(rng.random() * self._latency_span)
        reorder_lag = -1
        copies = 1
        for fault in self._faults:
            if not fault.applies(now_ms, src, dst):
                continue
            kind = fault.kind
            if kind is FaultKind.DELAY:
                latency += fault.delay_ms
            elif rng.random() >= fault.probability:
                continue
            elif kind is FaultKind.DROP:
                return "dropped"
            elif kind is FaultKind.DUPLICATE:
                copies = 2
            elif kind is FaultKind.REORDER:
                reorder_lag = int(rng.random() * (fault.delay_ms + 1))
            elif kind is FaultKind.CORRUPT:
                frame = self._corrupt(frame)
        due = now_ms + latency
        if reorder_lag >= 0:
            # Skips the connection's order: later envelopes may overtake it.
            due += reorder_lag
        else:
            last = self._last_delivery.get(link, 0)
            if last > due:  # not before what was sent earlier (a comparison: max() costs more)
                due = last
            self._last_delivery[link] = due
        conn = self._connection.get(link, 0)
        if copies == 1:
            return [_new_envelope((due, frame, conn))]
        return [Envelope(due + i, frame, conn) for i in range(copies)]

    def _corrupt(self, frame: bytes) -> bytes:
        damaged = bytearray(frame)
        position = self._rng.randrange(len(damaged))
        damaged[position] ^= self._rng.randint(1, 255)
        return bytes(damaged)

    def _break(self, link: Link) -> None:
        self._connection[link] = self._connection.get(link, 0) + 1
        self._last_delivery.pop(link, None)


def _links(side_a: list[str], side_b: list[str], *, one_way: bool) -> list[Link]:
    pairs = [(a, b) for a in side_a for b in side_b if a != b]
    return pairs if one_way else pairs + [(b, a) for a, b in pairs]
