"""A stand-in workload: gossip tokens and pings between actors.

It exercises every part of the kernel (sends, replies, timers, the disk and restarts) before the
Kafka actors exist, and it is the workload `kafkasim bench` measures: each actor keeps
`tokens` tokens moving between random peers, so the number of messages in flight stays constant
and deliveries per second measure the kernel, not the workload.

Durability: each actor writes its count of answered pings to a page-cache file and flushes it
every `flush_every` answers, so a power loss visibly rolls the count back and a process crash
does not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from actors.core import Address, Ctx, Inbound, Out
from actors.settings import setting
from protocols.workload import Gossip, PingRequest, PingResponse

__all__ = ["SETTINGS", "GossipActor", "GossipConfig", "gossip_configs"]

STATS_FILE = "ping-stats"

SETTINGS = (
    setting("kind", str, "gossip", choices=("gossip",)),
    setting("nodes", int, 0, low=0, high=1000, doc="the gossip stand-in's nodes; 0: none"),
    setting("actors.per.node", int, 1, low=1, high=100),
    setting("tokens.per.actor", int, 2, low=0, high=10000),
    setting("ping.interval.ms", int, 1000, low=0),
    setting("report.interval.ms", int, 5000, low=0),
)
"""The scenario's `[workload]` section."""


@dataclass(frozen=True, slots=True)
class GossipConfig:
    address: Address
    peers: tuple[Address, ...]
    tokens: int = 4
    ping_interval_ms: int = 1000
    report_interval_ms: int = 5000
    flush_every: int = 5


@dataclass(slots=True)
class GossipState:
    received: int = 0
    duplicates: int = 0
    pings_sent: int = 0
    pings_answered: int = 0
    next_token: int = 0
    hops_seen: dict[int, int] = field(default_factory=dict)
    """The furthest hop seen of each token, so a copy made by a `duplicate` fault dies here
    instead of circulating for ever."""


class GossipActor:
    """Passes tokens on to random peers; pings a random peer every `ping_interval_ms`."""

    def __init__(self, config: GossipConfig) -> None:
        assert config.peers, "a gossip actor needs at least one peer"
        self.config = config
        self.state = GossipState()

    def on_start(self, ctx: Ctx) -> Out:
        out = Out()
        self.state.pings_answered = ctx.disk.get(STATS_FILE, 0)
        for _ in range(self.config.tokens):
            token = self._new_token(ctx)
            out.send(self._random_peer(ctx), Gossip(token=token, hops=0, origin=str(ctx.address)))
        if self.config.ping_interval_ms > 0:
            out.set_timer("ping", self.config.ping_interval_ms)
        if self.config.report_interval_ms > 0:
            out.set_timer("report", self.config.report_interval_ms)
        out.emit("workload_started", pings_answered=self.state.pings_answered)
        return out

    def on_message(self, ctx: Ctx, inbound: Inbound) -> Out:
        out = Out()
        match inbound.message:
            case Gossip(token, hops, origin):
                if self.state.hops_seen.get(token, -1) >= hops:
                    self.state.duplicates += 1
                    return out
                self.state.hops_seen[token] = hops
                self.state.received += 1
                out.send(self._random_peer(ctx), Gossip(token=token, hops=hops + 1, origin=origin))
            case PingRequest(sent_ms):
                out.reply(inbound, PingResponse(sent_ms=sent_ms))
            case PingResponse(sent_ms):
                self.state.pings_answered += 1
                answered = self.state.pings_answered
                out.emit("ping_answered", peer=str(inbound.src), rtt_ms=ctx.now_ms - sent_ms)
                out.write_file(STATS_FILE, answered, sync=False)
                if answered % self.config.flush_every == 0:
                    out.flush(STATS_FILE)
        return out

    def on_timer(self, ctx: Ctx, key: str) -> Out:
        out = Out()
        if key == "ping":
            self.state.pings_sent += 1
            out.send(self._random_peer(ctx), PingRequest(sent_ms=ctx.now_ms))
            out.set_timer("ping", self.config.ping_interval_ms)
        elif key == "report":
            out.emit("tokens_received", total=self.state.received)
            out.set_timer("report", self.config.report_interval_ms)
        return out

    def snapshot(self) -> dict[str, Any]:
        s = self.state
        return {
            "received": s.received,
            "duplicates": s.duplicates,
            "pings_sent": s.pings_sent,
            "pings_answered": s.pings_answered,
        }

    def _random_peer(self, ctx: Ctx) -> Address:
        peers = self.config.peers
        return peers[int(ctx.rng.random() * len(peers))]

    def _new_token(self, ctx: Ctx) -> int:
        self.state.next_token += 1
        return ctx.rng.getrandbits(48) * 1000 + self.state.next_token


def gossip_configs(settings: dict[str, Any]) -> list[GossipConfig]:
    """The gossip actors of a `[workload]` section: `gossip-A` on nodes `node-N`, each one's
    peers all the others."""
    addresses = [
        Address(f"node-{n}", f"gossip-{a}") for n in range(settings["nodes"]) for a in range(settings["actors.per.node"])
    ]
    return [
        GossipConfig(
            address,
            tuple(p for p in addresses if p != address) or (address,),
            tokens=settings["tokens.per.actor"],
            ping_interval_ms=settings["ping.interval.ms"],
            report_interval_ms=settings["report.interval.ms"],
        )
        for address in addresses
    ]
