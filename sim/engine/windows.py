"""The window machinery: what a lookahead window takes, and how its results are merged and routed.

Besides the kernel's own events (`Kernel.schedule`), what is to come is two heaps: the envelopes
in flight, by `(delivery time, sequence)`, and the actors' next timers, by time. A window `[start, end)` takes every envelope
due before its end (`take_deliveries`), dropping those whose node is down or whose connection
was reset, and holding back those to a paused node until it resumes; it wakes every actor whose
timer falls in it (`busy_actors`). `open` hands each busy actor its part, in address order;
`close` reads the results by slot in that order and merges what the actors did (log lines,
sends, disk writes) by `(time, address, sequence)`. The sends go through the network in that
order (`route`), so its seeded draws happen in an order that threads cannot change, and what it
delivers joins the envelopes' heap for a later window: nothing sent inside a window can arrive
inside it. The kernel puts envelopes in flight of its own: a closed connection's `Disconnected`
(`disconnect`) and an application's call to its client (`call`).

A cut link holds its envelopes in the network (`sim.engine.network`): those in flight when it
is cut (`hold_in_flight`) and those sent on it meanwhile, until the cut is lifted (`release`)
or their connection ends: a crash or restart of either node (`purge_held`), or an actor
closing it (`Disconnect`, routed among the sends in their order: `_route_closing`).

One sequence number breaks the ties in the kernel's heaps, the envelopes' and the kernel
events': it counts every envelope and kernel event pushed, whoever pushes it, so its values are
part of what a run's log depends on.

This is the hottest code of the simulator: every loop caches what it reads in locals.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from functools import cache, partial
from itertools import chain
from typing import Any

from actors.core import Address
from actors.host import Batch, Host
from actors.runtime import Delivery, HandlerError, OutboundFrame, WindowResult
from protocols.codec import encode_frame
from protocols.connection import Disconnected
from sim.engine.journal import Journal, ts_of
from sim.engine.network import HELD, Network
from sim.engine.nodes import APPLICATION, CONNECTION, Node
from sim.engine.trace import LogLine

Envelope = tuple[int, int, Address, Address, bytes, int]
"""An envelope in flight: `(delivery time, sequence, source, destination, frame, connection)`."""


class Windows:
    """The envelopes in flight and the actors' timers, and the windows that consume them.

    Shares the kernel's node records and hosts (by name and by address), which the node
    lifecycle changes between windows."""

    def __init__(
        self, nodes: dict[str, Node], hosts: dict[Address, Host], network: Network, journal: Journal
    ) -> None:
        self.nodes = nodes
        self.hosts = hosts
        self.network = network
        self.pending: list[Envelope] = []
        self.timers: list[tuple[int, Address]] = []  # lazy heap; next_timer says what is live
        self.next_timer: dict[Address, int] = {}
        self.seq = 0
        self.delivered = 0
        self.handled = 0
        self.rejected_frames = 0
        self.dropped = 0
        self.opened = 0
        self.batch = Batch(0)  # one per kernel, reset each window: every slot is in before the next
        self.end_ms = 0
        self._busy: list[Address] = []
        self._journal = journal
        self._log = journal.lines
        self._emit = journal.emit
        self._write = journal.write

    def set_next_timer(self, address: Address, due_ms: int | None) -> None:
        if due_ms is None:
            self.next_timer.pop(address, None)
            return
        self.next_timer[address] = due_ms
        heapq.heappush(self.timers, (due_ms, address))

    def next_event_ms(self) -> int | None:
        """When the next envelope or live timer is due (None if none is)."""
        timers, next_timer = self.timers, self.next_timer
        while timers and next_timer.get(timers[0][1]) != timers[0][0]:
            heapq.heappop(timers)
        next_ms = None
        for queue in (self.pending, timers):
            if queue and (next_ms is None or queue[0][0] < next_ms):
                next_ms = queue[0][0]
        return next_ms

    def take_deliveries(self, end_ms: int) -> dict[Address, list[Delivery]]:
        by_actor: dict[Address, list[Delivery]] = {}
        pending, nodes, hosts, network = self.pending, self.nodes, self.hosts, self.network
        while pending and pending[0][0] < end_ms:
            entry = heapq.heappop(pending)
            ts, seq, src, dst, frame, connection = entry
            node = nodes.get(dst.node)
            reason = None
            current = connection == network.connection(src.node, dst.node)
            if node is None or not node.up or dst not in hosts:
                # Sent before the crash: its sender was told when the connection closed.
                refused = current and node is not None and node.refusing and src.actor != CONNECTION
                reason = "connection_refused" if refused else "node_down"
                if refused:
                    self.disconnect(ts, dst.node, src)
            elif not current:
                reason = "connection_reset"
            elif node.paused_until > ts:
                heapq.heappush(pending, (node.paused_until, *entry[1:]))
                continue
            if reason is None:
                delivery = _new_delivery((ts, seq, src, frame))
                deliveries = by_actor.get(dst)
                if deliveries is None:
                    by_actor[dst] = [delivery]
                else:
                    deliveries.append(delivery)
            else:
                self.dropped += 1
                self._emit(
                    ts, "message_dropped", src=str(src), dst=str(dst), bytes=len(frame), reason=reason
                )
        return by_actor

    def busy_actors(self, by_actor: dict[Address, list[Delivery]], end_ms: int) -> list[Address]:
        timers = self.timers
        if not timers or timers[0][0] >= end_ms:
            return sorted(by_actor)
        busy = set(by_actor)
        next_timer, nodes = self.next_timer, self.nodes
        while timers and timers[0][0] < end_ms:
            due, address = heapq.heappop(timers)
            if next_timer.get(address) != due:
                continue
            paused_until = nodes[address.node].paused_until
            if paused_until > due:
                self.set_next_timer(address, paused_until)
                if paused_until >= end_ms:
                    continue
            busy.add(address)
        return sorted(busy)

    def open(self, start_ms: int, end_ms: int) -> bool:
        """Hand every busy actor its part of the window; False if none is busy (nothing to
        wait for: `close` may follow at once)."""
        self.opened += 1
        self.end_ms = end_ms
        by_actor = self.take_deliveries(end_ms)
        busy = self.busy_actors(by_actor, end_ms)
        self._busy = busy
        batch = self.batch
        batch.reset(len(busy))
        if not busy:
            return False
        hosts, nodes = self.hosts, self.nodes
        for slot, address in enumerate(busy):
            paused_until = nodes[address.node].paused_until
            actor_start = paused_until if paused_until > start_ms else start_ms
            hosts[address].submit(actor_start, end_ms, by_actor.get(address, []), batch, slot)
        return True

    def close(self) -> list[tuple[str, int]]:
        """Merge what the window's actors did (every result is in), in address order; return
        the nodes whose processes exited in it, and when."""
        busy = self._busy
        results: list[tuple[Address, WindowResult]] = []
        sends: list[list[OutboundFrame]] = []
        failures: list[HandlerError] = []
        closing = False
        for address, outcome in zip(busy, self.batch.results, strict=True):
            if isinstance(outcome, WindowResult):
                results.append((address, outcome))
                if outcome.sends:
                    sends.append(outcome.sends)
                    if outcome.disconnected:
                        closing = True
            elif isinstance(outcome, HandlerError):
                failures.append(outcome)
            else:
                raise RuntimeError(f"{address}: host failed") from outcome
        if failures:
            self._journal.fail(results, failures)
        lines: list[list[LogLine]] = []  # the window's sources of lines with some, in merge order
        if kernel_lines := self._log.take():
            lines.append(kernel_lines)
        if closing:
            self._route_closing(sends)
        else:
            self.route(sends)
        if routing_lines := self._log.take():  # the sends the network dropped
            lines.append(routing_lines)
        exits = []
        next_timer = self.next_timer
        for address, result in results:
            if result.lines:
                lines.append(result.lines)
            self.delivered += result.delivered
            self.handled += result.delivered + result.timers
            self.rejected_frames += result.rejected
            if result.disk:
                disk = self.nodes[address.node].disk
                for command in result.disk:
                    disk.apply(command)
            # An unchanged time is still in the heap: a live entry leaves it only in its own
            # window, after which the actor's next timer is later.
            if result.next_timer_ms != next_timer.get(address):
                self.set_next_timer(address, result.next_timer_ms)
            if result.exited is not None:
                exits.append((address.node, result.exited))
        self._write(_merged(lines))
        return exits

    def route(self, sends: list[list[OutboundFrame]]) -> None:
        """Hand every send to the network in (time, sender, sequence) order (`sends`: what each
        actor that sent sent, in address order)."""
        network, nodes, pending = self.network, self.nodes, self.pending
        seq = self.seq  # nothing else takes a sequence number while this routes
        for ts, dst, frame, src in _merged(sends):
            node = nodes.get(dst.node)
            if node is not None and dst.node != src.node:
                node.peers.add(src)
            routed = network.transmit(ts, src.node, dst.node, frame)
            if type(routed) is str:  # held or dropped (a test without a call: per send)
                if routed is HELD:
                    connection = network.connection(src.node, dst.node)
                    network.hold(src.node, dst.node, (ts, 0, src, dst, frame, connection))
                    continue
                self.dropped += 1
                self._emit(
                    ts, "message_dropped", src=str(src), dst=str(dst), bytes=len(frame), reason=routed
                )
                continue
            for deliver_ms, delivered_frame, connection in routed:
                seq += 1
                heapq.heappush(pending, (deliver_ms, seq, src, dst, delivered_frame, connection))
        self.seq = seq

    def call(self, ts_ms: int, actor: Address, message: Any) -> bool:
        """Put the application's call `message` to `actor` in flight, due at `ts_ms`
        (`Kernel.tell`). False if it is not up to hear it."""
        node = self.nodes.get(actor.node)
        if node is None or not node.up or actor not in self.hosts:
            return False
        self.seq += 1
        src = Address(actor.node, APPLICATION)
        connection = self.network.connection(actor.node, actor.node)
        frame = encode_frame(message)
        heapq.heappush(self.pending, (ts_ms, self.seq, src, actor, frame, connection))
        return True

    def disconnect(self, ts_ms: int, peer: str, actor: Address) -> bool:
        """Tell `actor` that its connection to node `peer` closed, one latency after `ts_ms`
        (from the peer's side, on the connection as it is now). False if it is not up to hear."""
        node = self.nodes.get(actor.node)
        if node is None or not node.up or actor not in self.hosts:
            return False
        network = self.network
        notice = (ts_ms, 0, Address(peer, CONNECTION), actor, _disconnected_frame(peer), 0)
        if network.is_blocked(peer, actor.node):  # the close reaches it when the cut is lifted
            network.hold(peer, actor.node, notice)
            return True
        self.seq += 1
        heapq.heappush(
            self.pending,
            (
                ts_ms + network.latency_ms(),
                self.seq,
                *notice[2:5],
                network.connection(peer, actor.node),
            ),
        )
        return True

    # ----------------------------------------------------------------- cut links

    def hold_in_flight(self) -> None:
        """A partition cut links: what is in flight on them is held, in delivery order."""
        network = self.network
        held = [e for e in self.pending if network.is_blocked(e[2].node, e[3].node)]
        if not held:
            return
        self.pending[:] = [e for e in self.pending if not network.is_blocked(e[2].node, e[3].node)]
        heapq.heapify(self.pending)
        for entry in sorted(held):  # (delivery time, sequence): unique, each link in its order
            network.hold(entry[2].node, entry[3].node, entry)

    def release(self, ts_ms: int, links: list[tuple[str, str]]) -> int:
        """The cuts of `links` were lifted at `ts_ms`: what each held goes on, in order, each
        envelope with a fresh latency; returns how many envelopes went on. A closed
        connection's notice goes on the connection as it is now: it says the old one ended."""
        network, pending = self.network, self.pending
        released = 0
        for link in links:
            for _, _, src, dst, frame, connection in network.release(link):
                if src.actor == CONNECTION:
                    connection = network.connection(*link)
                routed = network.transmit(ts_ms, src.node, dst.node, frame)
                if type(routed) is str:  # a link fault dropped it
                    self._dropped(ts_ms, src, dst, frame, routed)
                    continue
                released += 1
                for deliver_ms, delivered_frame, _ in routed:
                    self.seq += 1
                    entry = (deliver_ms, self.seq, src, dst, delivered_frame, connection)
                    heapq.heappush(pending, entry)
        return released

    def purge_held(self, ts_ms: int, node: str) -> None:
        """`node` crashed or restarted: what its broken connections held is lost (a closed
        connection's notice is not: the peer still learns of the close when the cut lifts)."""
        network = self.network
        for link in network.holding(node):
            current = network.connection(*link)
            for _, _, src, dst, frame, _ in network.discard(
                link, lambda e, c=current: e[5] != c and e[2].actor != CONNECTION
            ):
                self._dropped(ts_ms, src, dst, frame, "connection_reset")

    def _route_closing(self, sends: list[list[OutboundFrame]]) -> None:
        """`route`, where some actor closed a connection: each close in its place among the
        sends, so that it loses what was held before it and nothing sent after it."""
        for send in _merged(sends):
            if send.frame is None:
                self._close(send.ts_ms, send.src, send.dst)
            else:
                self.route([[send]])

    def _close(self, ts_ms: int, src: Address, dst: Address) -> None:
        """`src` closed its connection to `dst`: what the links hold of it, both ways, is lost."""
        network = self.network
        for a, b in ((src, dst), (dst, src)):
            for _, _, held_src, held_dst, frame, _ in network.discard(
                (a.node, b.node), lambda e, a=a, b=b: e[2] == a and e[3] == b
            ):
                self._dropped(ts_ms, held_src, held_dst, frame, "connection_closed")

    def _dropped(self, ts_ms: int, src: Address, dst: Address, frame: bytes, reason: str) -> None:
        self.dropped += 1
        self._emit(
            ts_ms, "message_dropped", src=str(src), dst=str(dst), bytes=len(frame), reason=reason
        )


def _merged(sources: list[list[Any]]) -> Iterable[Any]:
    """The items of non-empty `sources`, each sorted by time, in time order, ties in source
    order (as `heapq.merge`). A window has a few items: one stable sort of them all, in C, costs
    less than merging them in Python; most windows have one source, which needs neither."""
    if len(sources) <= 1:
        return sources[0] if sources else ()
    joined = list(chain.from_iterable(sources))
    joined.sort(key=ts_of)
    return joined


_new_delivery = partial(tuple.__new__, Delivery)
"""`Delivery(*fields)` built in C: a NamedTuple's own constructor runs a Python `__new__`,
and this runs for every delivery."""


@cache
def _disconnected_frame(peer: str) -> bytes:
    return encode_frame(Disconnected(peer))
