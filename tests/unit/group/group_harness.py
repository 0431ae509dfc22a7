"""A group coordinator driven by hand: messages in, the commands it returns out, its timers fired
in time order, and its appends answered as the broker would (acks=-1 succeeding at once unless a
test says otherwise). No kernel, no network; one coordinator whose every group maps to
`__consumer_offsets-0`."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from actors.addresses import broker_address
from actors.core import Address, CancelTimer, Ctx, Emit, Inbound, Out, Send, SetTimer
from actors.group.config import GroupCoordinatorConfig
from actors.group.coordinator import GroupCoordinator
from actors.profiles import Profile
from protocols.errors import ErrorCode
from protocols.group import (
    Assignment,
    CoordinatorElected,
    JoinGroupProtocol,
    JoinGroupRequest,
    JoinGroupResponse,
    Subscription,
    SyncGroupAssignment,
    SyncGroupRequest,
    TopicPartitions,
)
from protocols.replication import (
    ProducePartitionResponse,
    ProduceRequest,
    ProduceResponse,
    RecordBatch,
)

GROUP = "g"
BROKER = broker_address(1)
RANGE = (JoinGroupProtocol("range", Subscription(("T",))),)


def client(n: int) -> Address:
    return Address(f"client-{n}", "client")


@dataclass
class Harness:
    version: str = "3.9"
    settings: dict[str, Any] = field(default_factory=dict)
    answer_appends: bool = True
    """Answer every acks=-1 append with NONE as soon as it is sent."""
    now_ms: int = 0
    timers: dict[str, int] = field(default_factory=dict)
    replies: list[tuple[int, Address, Any]] = field(default_factory=list)
    events: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)
    appends: list[tuple[int, ProduceRequest]] = field(default_factory=list)
    """(correlation id, request) of every append not answered yet."""
    log: list[RecordBatch] = field(default_factory=list)
    """What the appends wrote, as the partition's log."""

    def __post_init__(self) -> None:
        settings = {"offsets_topic_num_partitions": 1, **self.settings}
        config = GroupCoordinatorConfig.for_profile(1, Profile.for_version(self.version), **settings)
        self.coordinator = GroupCoordinator(config)
        self.rng = random.Random(7)
        self._apply(self.coordinator.on_start(self._ctx()))

    def _ctx(self) -> Ctx:
        return Ctx(Address("broker-1", "group-coordinator"), self.now_ms, self.rng)

    def _apply(self, out: Out) -> None:
        for command in out:
            match command:
                case SetTimer(key, after_ms):
                    self.timers[key] = self.now_ms + after_ms
                case CancelTimer(key):
                    self.timers.pop(key, None)
                case Emit(event, fields):
                    self.events.append((self.now_ms, event, fields))
                case Send(dst, ProduceRequest() as request, correlation_id):
                    assert dst == BROKER
                    if request.acks != 0:
                        self.appends.append((correlation_id, request))
                    else:
                        self._write(request)
                case Send(dst, message):
                    self.replies.append((self.now_ms, dst, message))
        while self.answer_appends and self.appends:
            self.answer_append()

    def _write(self, request: ProduceRequest) -> int:
        [data] = request.partitions
        base = self.log[-1].end_offset if self.log else 0
        self.log.append(RecordBatch(base, 0, data.values))
        return base

    # ------------------------------------------------------------------ driving

    def send(self, message: Any, src: Address = client(1), correlation_id: int = 1) -> None:
        self._apply(self.coordinator.on_message(self._ctx(), Inbound(src, message, correlation_id, 0)))

    def answer_append(self, error: ErrorCode = ErrorCode.NONE) -> None:
        """Answer the oldest append in flight (and write it, unless it failed)."""
        correlation_id, request = self.appends.pop(0)
        base = self._write(request) if error is ErrorCode.NONE else -1
        [data] = request.partitions
        answer = ProduceResponse((ProducePartitionResponse(data.topic, data.partition, error, base),))
        self.send(answer, BROKER, correlation_id)

    def elect(self, leader_epoch: int = 0, batches: tuple[RecordBatch, ...] = ()) -> None:
        self.send(CoordinatorElected(0, leader_epoch, batches), BROKER)

    def advance(self, to_ms: int) -> None:
        """Fire every timer due up to `to_ms`, in time order (then key order), then stop there."""
        while True:
            due = sorted((t, k) for k, t in self.timers.items() if t <= to_ms)
            if not due:
                break
            t, key = due[0]
            del self.timers[key]
            self.now_ms = t
            self._apply(self.coordinator.on_timer(self._ctx(), key))
        self.now_ms = to_ms

    # ------------------------------------------------------------------ reading

    def answers(self, dst: Address, kind: type) -> list[Any]:
        return [m for _, d, m in self.replies if d == dst and isinstance(m, kind)]

    def last(self, dst: Address, kind: type) -> Any:
        return self.answers(dst, kind)[-1]

    def named(self, event: str) -> list[dict[str, Any]]:
        return [f | {"ts_ms": t} for t, e, f in self.events if e == event]

    def group(self, group_id: str = GROUP) -> dict[str, Any]:
        return self.coordinator.snapshot()["groups"][group_id]

    # ------------------------------------------------------------------ the protocol, as a client

    def join(self, n: int, member_id: str = "", *, session_ms: int = 10000, rebalance_ms: int = 60000, **kw: Any) -> None:
        request = JoinGroupRequest(GROUP, session_ms, rebalance_ms, member_id, protocols=kw.pop("protocols", RANGE), **kw)
        self.send(request, client(n))

    def join_as_member(self, n: int, **kw: Any) -> str:
        """KIP-394's two JoinGroups: the id handed out, then the join with it; the id."""
        self.join(n, **kw)
        member_id = self.last(client(n), JoinGroupResponse).member_id
        self.join(n, member_id, **kw)
        return member_id

    def sync(self, n: int, member_id: str, generation_id: int, assignment: dict[str, tuple[int, ...]] | None = None) -> None:
        assignments = tuple(
            SyncGroupAssignment(m, Assignment((TopicPartitions("T", ps),))) for m, ps in sorted((assignment or {}).items())
        )
        self.send(SyncGroupRequest(GROUP, generation_id, member_id, assignments=assignments), client(n))

    def stable_group(self, members: int = 1) -> list[str]:
        """A Stable group at generation 1 with `members` members (the first is the leader), every
        member having joined during the initial delay; their ids by client number."""
        self.elect()
        ids = [self.join_as_member(n + 1) for n in range(members)]
        self.advance(self.now_ms + 3000 * members)
        generation = self.group()["generation_id"]
        leader = self.group()["leader"]
        for n, member_id in enumerate(ids):
            assign = {m: (i,) for i, m in enumerate(sorted(ids))} if member_id == leader else None
            self.sync(n + 1, member_id, generation, assign)
        assert self.group()["state"] == "Stable", self.group()
        return ids
