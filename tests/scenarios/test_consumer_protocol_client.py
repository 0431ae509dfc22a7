"""KIP-848's consumer-protocol client (`group.protocol = consumer`) against a scripted group
coordinator.

The consumer protocol's coordinator is not in the cluster yet, so these tests run the real
consumer actor (`actors.consumer.behavior.Consumer`, its poll loop, fetcher, commits and the
`ConsumerMembershipManager`) in a small driver of their own: its handlers are called with the
project's `Ctx` and `Inbound`, its `Out` commands are carried out (timers, sends, events), and
a scripted broker answers its requests `RTT` ms later: Metadata, FindCoordinator, ListOffsets
and OffsetFetch plainly, Fetch from a static log of `RECORDS` records per partition, and
ConsumerGroupHeartbeat and OffsetCommit by the test's script. Times and values are exact.
"""

from __future__ import annotations

import heapq
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest

from actors.consumer.behavior import Consumer
from actors.consumer.config import AppCommit, ConsumerConfig
from actors.consumer.consumer_membership import ConsumerMembershipManager
from actors.consumer.settings import consumer_config
from sim.cluster.scenario import parse_scenario
from actors.core import Address, CancelTimer, Ctx, Emit, Inbound, Out, Send, SetTimer
from actors.profiles import Profile
from protocols.application import ApplicationCall
from protocols.errors import ErrorCode
from protocols.group import (
    ConsumerGroupHeartbeatAssignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchPartition,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchTopic,
    PartitionError,
    TopicPartitions,
)
from protocols.metadata import MetadataPartition, MetadataRequest, MetadataResponse
from protocols.replication import (
    FetchedPartition,
    FetchRequest,
    FetchResponse,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    RecordBatch,
)

RTT = 10
RECORDS = 10_000
PER_FETCH = 10
ME = Address("consumer-1", "consumer")
BOTH = (TopicPartitions("T", (0, 1)),)
ONLY_0 = (TopicPartitions("T", (0,)),)


def config(version: str = "3.9", **changes: Any) -> ConsumerConfig:
    base = ConsumerConfig(
        name="consumer-1",
        group_id="g",
        topics=("T",),
        partitions=(("T", 2),),
        bootstrap=(1,),
        version=Profile.for_version(version).version,
        group_protocol="consumer",
        auto_offset_reset="earliest",
        max_poll_records=PER_FETCH,
        retry_backoff_ms=100,
        retry_backoff_max_ms=100,  # a constant back-off: no jitter drawn
        exponential_retry_backoff=True,
    )
    return replace(base, **changes)


@dataclass
class Heartbeat:
    ts_ms: int
    request: ConsumerGroupHeartbeatRequest


class Driver:
    """The consumer actor, its timers, and a scripted broker one round trip away."""

    def __init__(
        self,
        cfg: ConsumerConfig,
        heartbeat: Callable[[Driver, ConsumerGroupHeartbeatRequest], ConsumerGroupHeartbeatResponse | None],
        commit: Callable[[Driver, OffsetCommitRequest], tuple[ErrorCode, int]] | None = None,
        offset_fetch: Callable[[Driver, OffsetFetchRequest], ErrorCode] | None = None,
    ) -> None:
        self.consumer = Consumer(cfg)
        self.heartbeat_script = heartbeat
        self.commit_script = commit or (lambda _d, _r: (ErrorCode.NONE, RTT))
        self.offset_fetch_script = offset_fetch or (lambda _d, _r: ErrorCode.NONE)
        self.offset_fetches: list[tuple[int, OffsetFetchRequest]] = []
        self.now = 0
        self.seq = 0
        self.timers: dict[str, tuple[int, int]] = {}
        self.inbox: list[tuple[int, int, Inbound]] = []
        self.events: list[dict[str, Any]] = []
        self.heartbeats: list[Heartbeat] = []
        self.commits: list[tuple[int, OffsetCommitRequest]] = []
        self.committed: dict[tuple[str, int], int] = {}
        self.rng = random.Random(7)
        self._apply(self.consumer.on_start(self._ctx()))

    def _ctx(self) -> Ctx:
        return Ctx(ME, self.now, self.rng)

    def _next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def _apply(self, out: Out) -> None:
        for command in out:
            if isinstance(command, SetTimer):
                self.timers[command.key] = (self.now + command.after_ms, self._next_seq())
            elif isinstance(command, CancelTimer):
                self.timers.pop(command.key, None)
            elif isinstance(command, Emit):
                self.events.append({"ts_ms": self.now, "event": command.event, **command.fields})
            elif isinstance(command, Send):
                self._answer(command)

    def _deliver(self, delay: int, src: Address, message: Any, cid: int) -> None:
        heapq.heappush(self.inbox, (self.now + delay, self._next_seq(), Inbound(src, message, cid, 0)))

    def _answer(self, send: Send) -> None:
        m, cid = send.message, send.correlation_id
        if isinstance(m, MetadataRequest):
            parts = tuple(MetadataPartition("T", p, ErrorCode.NONE, 1, 0, (1,), (1,)) for p in (0, 1))
            self._deliver(RTT, send.dst, MetadataResponse((1,), 1, parts), cid)
        elif isinstance(m, FindCoordinatorRequest):
            self._deliver(RTT, send.dst, FindCoordinatorResponse(ErrorCode.NONE, 1), cid)
        elif isinstance(m, ListOffsetsRequest):
            answers = tuple(ListOffsetsPartitionResponse(p.topic, p.partition, ErrorCode.NONE, 0, 0) for p in m.partitions)
            self._deliver(RTT, send.dst, ListOffsetsResponse(answers), cid)
        elif isinstance(m, OffsetFetchRequest):
            self.offset_fetches.append((self.now, m))
            error = self.offset_fetch_script(self, m)
            if error is not ErrorCode.NONE:
                self._deliver(RTT, send.dst, OffsetFetchResponse(error), cid)
                return
            topics = tuple(
                OffsetFetchTopic(t.topic, tuple(OffsetFetchPartition(p, self.committed.get((t.topic, p), -1)) for p in t.partitions))
                for t in m.topics
            )
            self._deliver(RTT, send.dst, OffsetFetchResponse(ErrorCode.NONE, topics), cid)
        elif isinstance(m, FetchRequest):
            fetched = tuple(
                FetchedPartition(
                    p.topic,
                    p.partition,
                    ErrorCode.NONE,
                    RECORDS,
                    (RecordBatch(p.fetch_offset, 0, tuple(f"producer-1:{p.fetch_offset + i}" for i in range(PER_FETCH))),),
                )
                for p in m.partitions
            )
            self._deliver(RTT, send.dst, FetchResponse(fetched), cid)
        elif isinstance(m, ConsumerGroupHeartbeatRequest):
            self.heartbeats.append(Heartbeat(self.now, m))
            answer = self.heartbeat_script(self, m)
            if answer is not None:
                self._deliver(RTT, send.dst, answer, cid)
        elif isinstance(m, OffsetCommitRequest):
            self.commits.append((self.now, m))
            error, delay = self.commit_script(self, m)
            offsets = [(t.name, p.partition, p.committed_offset) for t in m.topics for p in t.partitions]
            if error is ErrorCode.NONE:
                self.committed.update({(t, p): o for t, p, o in offsets})
            answer = OffsetCommitResponse(tuple(PartitionError(t, p, error) for t, p, _ in offsets))
            self._deliver(delay, send.dst, answer, cid)

    def call(self, action: str, **fields: Any) -> None:
        self._apply(self.consumer.on_message(self._ctx(), Inbound(Address("sim", "kernel"), ApplicationCall(action, **fields), 0, 0)))

    def run(self, until_ms: int) -> None:
        while True:
            timer = min(((due, seq, key) for key, (due, seq) in self.timers.items()), default=None)
            message = self.inbox[0] if self.inbox else None
            if timer is not None and (message is None or (timer[0], timer[1]) <= (message[0], message[1])):
                due, _, key = timer
                if due > until_ms:
                    break
                del self.timers[key]
                self.now = due
                self._apply(self.consumer.on_timer(self._ctx(), key))
            elif message is not None:
                if message[0] > until_ms:
                    break
                heapq.heappop(self.inbox)
                self.now = message[0]
                self._apply(self.consumer.on_message(self._ctx(), message[2]))
            else:
                break
        self.now = until_ms

    # ------------------------------------------------------------------ reading the log

    def where(self, event: str, **fields: Any) -> list[dict[str, Any]]:
        return [e for e in self.events if e["event"] == event and all(e.get(k) == v for k, v in fields.items())]

    def processed(self, tp: str) -> list[tuple[int, int, int]]:
        """(time, first, end) of each batch of `tp` processed."""
        return [
            (e["ts_ms"], e["first_offset"], e["end_offset"])
            for e in self.where("records_processed")
            if f"{e['topic']}-{e['partition']}" == tp
        ]

    @property
    def membership(self) -> ConsumerMembershipManager:
        member = self.consumer.membership
        assert isinstance(member, ConsumerMembershipManager)
        return member


def group(
    revoke_at: int | None = None, *, member_id: str = "m-1", fail_join: ErrorCode | None = None
) -> Callable[[Driver, ConsumerGroupHeartbeatRequest], ConsumerGroupHeartbeatResponse]:
    """A coordinator with this one member: T-0 and T-1 at epoch 1; from `revoke_at`, T-0
    alone at epoch 2 (T-1 goes to someone else)."""

    def answer(d: Driver, r: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        if r.member_epoch < 0:
            return ConsumerGroupHeartbeatResponse(ErrorCode.NONE, r.member_id, r.member_epoch, 5000)
        if r.member_epoch == 0:
            if fail_join is not None:
                return ConsumerGroupHeartbeatResponse(fail_join)
            return ConsumerGroupHeartbeatResponse(
                ErrorCode.NONE, r.member_id or member_id, 1, 5000, ConsumerGroupHeartbeatAssignment(BOTH)
            )
        if revoke_at is not None and d.now >= revoke_at:
            changed = r.member_epoch == 1
            return ConsumerGroupHeartbeatResponse(
                ErrorCode.NONE, r.member_id, 2, 5000, ConsumerGroupHeartbeatAssignment(ONLY_0) if changed else None
            )
        return ConsumerGroupHeartbeatResponse(ErrorCode.NONE, r.member_id, r.member_epoch, 5000)

    return answer


def _fields(h: Heartbeat) -> tuple[Any, ...]:
    r = h.request
    return (h.ts_ms, r.member_id, r.member_epoch, r.rebalance_timeout_ms, r.subscribed_topic_names, r.server_assignor, r.topic_partitions)


# --------------------------------------------------------------------------- joining, cadence


def test_a_join_sends_every_field_and_later_heartbeats_only_what_changed() -> None:
    """3.9: FindCoordinator, then a heartbeat at epoch 0 with every field and no member id;
    the answer's assignment is reconciled at once and acknowledged at once with the owned
    partitions; then a heartbeat every interval the coordinator gave (5000 ms, from the send),
    with no optional field."""
    d = Driver(config(group_remote_assignor="range"), group())
    d.run(12_000)
    assert [_fields(h) for h in d.heartbeats] == [
        (10, "", 0, 300000, ("T",), "range", ()),
        (20, "m-1", 1, -1, None, None, BOTH),
        (5020, "m-1", 1, -1, None, None, None),
        (10020, "m-1", 1, -1, None, None, None),
    ]
    assert [(e["ts_ms"], e["partitions"], e["generation_id"]) for e in d.where("partitions_assigned")] == [(20, ["T-0", "T-1"], 1)]
    assert [(e["ts_ms"], e["previous_state"], e["state"]) for e in d.where("membership_state_changed")] == [
        (0, "UNSUBSCRIBED", "JOINING"),
        (20, "JOINING", "RECONCILING"),
        (20, "RECONCILING", "ACKNOWLEDGING"),
        (20, "ACKNOWLEDGING", "STABLE"),
    ]
    assert d.where("consumer_started")[0]["group_protocol"] == "consumer"


def test_from_4_0_the_client_makes_up_its_member_id_and_keeps_it_when_fenced() -> None:
    """KIP-1082: the join carries a UUID the client drew at start-up; a fenced member loses its
    partitions (no commit), and rejoins at once, at epoch 0, with every field and the same id.
    4.0 reconciles from the application's next poll() (every 100 ms here), then acknowledges."""
    fenced = []

    def script(d: Driver, r: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        if r.member_epoch == 1 and d.now >= 7000 and not fenced:
            fenced.append(d.now)
            return ConsumerGroupHeartbeatResponse(ErrorCode.FENCED_MEMBER_EPOCH)
        return group()(d, r)

    d = Driver(config("4.0"), script)
    d.run(12_000)
    first = d.heartbeats[0].request.member_id
    assert uuid.UUID(first).version == 4
    assert [_fields(h) for h in d.heartbeats] == [
        (10, first, 0, 300000, ("T",), None, ()),
        (100, first, 1, -1, None, None, BOTH),
        (5100, first, 1, -1, None, None, None),
        (10100, first, 1, -1, None, None, None),
        (10110, first, 0, 300000, ("T",), None, ()),
        (10210, first, 1, -1, None, None, BOTH),
    ]
    assert [(e["ts_ms"], e["reason"]) for e in d.where("member_reset")] == [(10110, "FENCED_MEMBER_EPOCH")]
    assert [(e["ts_ms"], e["partitions"], e["reason"]) for e in d.where("partitions_lost")] == [(10110, ["T-0", "T-1"], "fenced")]
    assert not [c for c in d.commits if c[0] == 10110]


# --------------------------------------------------------------------------- reconciliation


def _revocation(version: str) -> Driver:
    """The coordinator takes T-1 away at 10000; the commit before the revocation takes 500 ms."""

    def slow_commits(d: Driver, r: OffsetCommitRequest) -> tuple[ErrorCode, int]:
        return ErrorCode.NONE, 500 if d.now >= 10_000 else RTT

    d = Driver(config(version, process_record_ms=1, auto_commit_interval_ms=60_000), group(revoke_at=10_000), slow_commits)
    d.run(12_000)
    return d


def test_3_9_commits_before_marking_the_revoked_partitions_so_polls_go_on_returning_them() -> None:
    """KAFKA-16460 (3.7 to 3.9): the commit before the revocation is sent first; until its
    answer, 500 ms later, polls go on returning T-1's records, past the offset it commits."""
    d = _revocation("3.9")
    (commit,) = [e for e in d.where("offset_commit_sent") if e["kind"] == "join_prepare"]
    assert (commit["ts_ms"], commit["generation_id"], commit["offsets"]) == (10030, 2, [["T", 0, 4990], ["T", 1, 4990]])
    (revoked,) = d.where("partitions_revoked")
    assert (revoked["ts_ms"], revoked["partitions"], revoked["reason"]) == (10530, ["T-1"], "reconciliation")
    after = [b for b in d.processed("T-1") if b[1] >= 4990]
    assert (after[0][1], after[-1][2], after[-1][0]) == (4990, 5240, 10530)


def test_4_0_marks_the_revoked_partitions_first_and_reconciles_from_a_poll() -> None:
    """4.0 marks T-1 pending revocation before the commit, in the application's next poll():
    nothing of T-1 is returned past the committed offset."""
    d = _revocation("4.0")
    (commit,) = [e for e in d.where("offset_commit_sent") if e["kind"] == "join_prepare"]
    assert (commit["ts_ms"], commit["offsets"]) == (10110, [["T", 0, 4990], ["T", 1, 4990]])
    assert max(end for _, _, end in d.processed("T-1")) == 4990
    (revoked,) = d.where("partitions_revoked")
    assert (revoked["ts_ms"], revoked["partitions"]) == (10610, ["T-1"])


def test_the_commit_before_a_revocation_is_retried_with_the_newest_epoch() -> None:
    """STALE_MEMBER_EPOCH on the commit before a revocation is retried after the back-off
    (100 ms), with the member's epoch of then and the positions of then."""

    def stale_once(d: Driver, r: OffsetCommitRequest) -> tuple[ErrorCode, int]:
        stale = d.now >= 10_000 and len([c for c in d.commits if c[0] >= 10_000]) == 1
        return (ErrorCode.STALE_MEMBER_EPOCH if stale else ErrorCode.NONE), RTT

    d = Driver(config(auto_commit_interval_ms=60_000), group(revoke_at=10_000), stale_once)
    d.run(11_000)
    tries = [(t, r.generation_id, r.member_id) for t, r in d.commits if t >= 10_000]
    assert tries == [(10030, 2, "m-1"), (10140, 2, "m-1")]
    answers = [(e["ts_ms"], e["error"]) for e in d.where("offset_commit_answered") if e["kind"] == "join_prepare"]
    assert answers == [(10040, "STALE_MEMBER_EPOCH"), (10150, "NONE")]
    assert [e["ts_ms"] for e in d.where("partitions_revoked")] == [10150]


def test_the_listener_commits_the_revoked_partitions_at_the_next_poll() -> None:
    """`commit = on_revoke`, no auto-commit: the revocation waits for the application thread,
    whose next poll() (at 10030) runs `onPartitionsRevoked` and its commitSync of T-1; once
    answered, the partition goes and the acknowledgement follows at once."""
    d = Driver(config(app_commit=AppCommit.ON_REVOKE, enable_auto_commit=False, process_record_ms=1), group(revoke_at=10_000))
    d.run(11_000)
    assert [(e["ts_ms"], e["kind"], e["offsets"]) for e in d.where("offset_commit_sent")] == [(10030, "revoke", [["T", 1, 4990]])]
    assert [(e["ts_ms"], e["partitions"]) for e in d.where("partitions_revoked")] == [(10040, ["T-1"])]
    ack = d.heartbeats[-1]
    assert (ack.ts_ms, ack.request.member_epoch, ack.request.topic_partitions) == (10040, 2, ONLY_0)
    assert max(end for _, _, end in d.processed("T-1")) == 4990


# --------------------------------------------------------------------------- auto-commit


def test_3_9_auto_commits_in_the_background_what_the_application_has_not_processed() -> None:
    """KAFKA-18641 (3.7 to 3.9): the auto-commit at its interval commits the positions of the
    moment, ahead of the records the application is still processing; 4.0 commits at a poll()
    the positions of the polls before it, all processed."""
    runs = {}
    for version in ("3.9", "4.0"):
        d = Driver(config(version, process_record_ms=100), group())
        d.run(5_500)
        (auto,) = [e for e in d.where("offset_commit_sent") if e["kind"] == "auto" and e["offsets"]]
        done = {p: max((end for t, _, end in d.processed(f"T-{p}") if t <= auto["ts_ms"]), default=0) for p in (0, 1)}
        runs[version] = (auto["ts_ms"], auto["offsets"], done)
    # 3.9: at 5020 T-0's records 20 to 29 are in the application's hands (done at 5070).
    assert runs["3.9"] == (5020, [["T", 0, 30], ["T", 1, 20]], {0: 20, 1: 20})
    assert runs["4.0"] == (5130, [["T", 0, 30], ["T", 1, 20]], {0: 30, 1: 20})


# --------------------------------------------------------------------------- errors


def test_offset_fetch_names_the_member_and_its_epoch_and_a_refusal_is_asked_again() -> None:
    """OffsetFetch v9 carries `MemberInfo`: the member id and epoch once the epoch is positive.
    The first, right after the assignment at 20 ms, is refused STALE_MEMBER_EPOCH (as if the
    group had moved on); 3.9 throws it out of poll(), the application polls again, which asks
    again at once, and the positions come from the committed offsets."""

    def refuse_first(d: Driver, r: OffsetFetchRequest) -> ErrorCode:
        return ErrorCode.STALE_MEMBER_EPOCH if len(d.offset_fetches) == 1 else ErrorCode.NONE

    d = Driver(config(), group(), offset_fetch=refuse_first)
    d.committed.update({("T", 0): 40, ("T", 1): 70})
    d.run(1_000)
    asked = [(t, r.member_id, r.member_epoch, r.topics) for t, r in d.offset_fetches]
    assert [a[1:] for a in asked] == [("m-1", 1, BOTH), ("m-1", 1, BOTH)]
    assert [a[0] for a in asked] == [20, 30]  # the refusal's poll asks again at once
    assert [(e["ts_ms"], e["error"], e["member_id"]) for e in d.where("offset_fetch_failed")] == [(30, "STALE_MEMBER_EPOCH", "m-1")]
    positions = [(e["partition"], e["offset"], e["source"]) for e in d.where("fetch_position_set")]
    assert positions == [(0, 40, "committed"), (1, 70, "committed")]


def test_a_fatal_error_stops_the_consumer() -> None:
    """UNSUPPORTED_VERSION (among others) is fatal: `poll()` throws, the application stops,
    no heartbeat follows."""
    d = Driver(config(), group(fail_join=ErrorCode.UNSUPPORTED_VERSION))
    d.run(10_000)
    assert [(e["ts_ms"], e["error"]) for e in d.where("consumer_failed")] == [(20, "ConsumerGroupHeartbeat: UNSUPPORTED_VERSION")]
    assert len(d.heartbeats) == 1
    assert d.membership.state.value == "FATAL"


def test_coordinator_errors_rediscover_and_load_in_progress_backs_off() -> None:
    """NOT_COORDINATOR: the coordinator is looked up again and the next heartbeat (full) goes
    as soon as it is found; COORDINATOR_LOAD_IN_PROGRESS: the next one waits the back-off."""
    errors = {5020: ErrorCode.NOT_COORDINATOR, 10040: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}

    def script(d: Driver, r: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        if d.now in errors:
            return ConsumerGroupHeartbeatResponse(errors[d.now])
        return group()(d, r)

    d = Driver(config(), script)
    d.run(10_300)
    assert [_fields(h) for h in d.heartbeats][2:] == [
        (5020, "m-1", 1, -1, None, None, None),
        (5040, "m-1", 1, 300000, ("T",), None, BOTH),
        (10040, "m-1", 1, -1, None, None, None),
        (10150, "m-1", 1, 300000, ("T",), None, BOTH),
    ]
    assert [(e["ts_ms"], e["reason"]) for e in d.where("coordinator_lost")] == [(5030, "NOT_COORDINATOR")]


# --------------------------------------------------------------------------- leaving


@pytest.mark.parametrize(("instance", "epoch"), [(None, -1), ("i-1", -2)])
def test_close_commits_revokes_then_leaves(instance: str | None, epoch: int) -> None:
    """`close()`: the synchronous auto-commit, `onPartitionsRevoked`, then a heartbeat at epoch
    -1 (dynamic) or -2 (static), which close() waits for."""
    d = Driver(config(group_instance_id=instance), group())
    d.run(8_000)
    d.call("close")
    d.run(9_000)
    (close_commit,) = [e for e in d.where("offset_commit_sent") if e["kind"] == "close"]
    (revoked,) = d.where("partitions_revoked")
    leave = d.heartbeats[-1]
    assert close_commit["ts_ms"] < revoked["ts_ms"] <= leave.ts_ms
    assert (leave.request.member_epoch, leave.request.instance_id, leave.request.topic_partitions) == (epoch, instance, ())
    assert [e["ts_ms"] for e in d.where("consumer_closed")] == [leave.ts_ms + RTT]


def test_unsubscribe_leaves_without_committing() -> None:
    d = Driver(config(), group())
    d.run(8_000)
    commits = len(d.commits)
    d.call("unsubscribe")
    d.run(9_000)
    assert len(d.commits) == commits
    assert [e["reason"] for e in d.where("partitions_revoked")] == ["unsubscribe"]
    assert d.heartbeats[-1].request.member_epoch == -1


def test_a_poll_timeout_leaves_goes_stale_and_the_next_poll_rejoins() -> None:
    """`max.poll.interval.ms` (10 s) without poll(): the leave heartbeat at that moment, the
    partitions lost, STALE; the poll after the stall rejoins at epoch 0."""
    d = Driver(config(max_poll_interval_ms=10_000), group())
    d.run(2_000)
    d.call("stall", duration_ms=15_000)
    d.run(20_000)
    (expired,) = d.where("poll_timeout_expired")
    last_poll = expired["ts_ms"] - 10_000
    leave = next(h for h in d.heartbeats if h.request.member_epoch == -1)
    assert leave.ts_ms == expired["ts_ms"]
    assert [e["reason"] for e in d.where("partitions_lost")] == ["poll_timeout"]
    rejoin = next(h for h in d.heartbeats if h.ts_ms > leave.ts_ms and h.request.member_epoch == 0)
    assert rejoin.request.member_id == "m-1" and rejoin.request.rebalance_timeout_ms == 10_000
    assert last_poll < 2_000 + 15_000 <= rejoin.ts_ms


# --------------------------------------------------------------------------- construction


def test_a_scenario_entry_builds_a_consumer_protocol_consumer() -> None:
    text = (
        '[kafka]\nversion = "4.0"\n[cluster]\nbrokers = 1\n[[topics]]\nname = "T"\npartitions = 2\n'
        '[[consumers]]\n"group.id" = "g"\ntopics = ["T"]\n"group.protocol" = "consumer"\n"group.remote.assignor" = "uniform"\n'
    )
    entry = parse_scenario(text, "s.toml").consumers[0]
    cfg = consumer_config(
        "consumer-1", entry, Profile.for_version("4.0"), group_instance_id=None, partitions=(("T", 2),), bootstrap=(1,), offsets_partitions=50
    )
    assert (cfg.group_protocol, cfg.group_remote_assignor, cfg.app_commit) == ("consumer", "uniform", AppCommit.NONE)
    assert isinstance(Consumer(cfg).membership, ConsumerMembershipManager)
    assert not isinstance(Consumer(replace(cfg, group_protocol="classic")).membership, ConsumerMembershipManager)
