"""The controller actor on every broker: the broker's ZooKeeper client, its controller
candidate, and, once elected, the controller (`KafkaController`, `KafkaZkClient`).

As a candidate, in Kafka's order:
1. open a session (`zookeeper.session.timeout.ms`) and ping every third of it;
2. create the top-level paths if missing (`/brokers/ids`, `/controller_epoch` = 0, ...);
3. register `/brokers/ids/N` as an ephemeral; its czxid is the broker epoch (KIP-380), which
   the replica manager on this node is told;
4. read `/controller_epoch` (value and version), then race for the controller with one multi:
   create the ephemeral `/controller` and set `/controller_epoch` to value + 1 expecting that
   version. NODEEXISTS or BADVERSION: another broker won; watch `/controller`;
5. on the watch firing (the controller's session ended), race again.

Once elected it runs `actors.controller.kafka_controller`, one event at a time.

Sessions. A request answered SESSIONEXPIRED (the node was paused past the timeout) makes the
client open a new session. A standby candidate then registers again, with a new broker epoch.
An active controller does not know yet that it was replaced: as Kafka queues an `Expire` event
behind the event in progress, the step in progress goes on, its ZooKeeper requests are sent
again on the new session, and its next write fails the controller-epoch check (BADVERSION,
`ControllerMovedException`). Then it resigns and registers again: a bounced broker (S11).

Before 2.7 the replica manager also writes ISR changes through this client (`IsrUpdateRequest`):
a conditional setData of the partition-state znode and an `/isr_change_notification` node.

Shutdown (`KafkaServer.shutdown`). On the operator's signal, with `controlled.shutdown.enable`,
the broker asks the active controller to move its leaderships (ControlledShutdown), up to
`controlled.shutdown.max.retries` attempts `controlled.shutdown.retry.backoff.ms` apart while
the answer is an error, lists partitions it still leads, or does not come. Then, whatever the
outcome, it closes its ZooKeeper session (its registration goes at once, not after the session
timeout as for a crash) and hands the signal to the replica manager, which exits the process.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from actors.broker.behavior import broker_id_of
from actors.broker.config import controller_address
from actors.controller import zkdata as zk
from actors.controller.kafka_controller import (
    ControllerMoved,
    ControllerSettings,
    KafkaController,
    Step,
)
from actors.controller.states import PartitionState
from actors.core import Address, Ctx, Inbound, Out
from protocols.connection import Disconnected
from protocols.errors import ErrorCode
from protocols.metadata import (
    BrokerRegistered,
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    IsrUpdateRequest,
    IsrUpdateResponse,
    ShutdownSignal,
    StopReplicaResponse,
    UpdateMetadataResponse,
)
from protocols.replication import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    LeaderAndIsrResponse,
)
from protocols.types import TopicPartition
from protocols.zookeeper import (
    CloseSessionRequest,
    ConnectRequest,
    ConnectResponse,
    EventType,
    GetDataRequest,
    GetDataResponse,
    MultiRequest,
    MultiResponse,
    Op,
    OpCode,
    WatchedEvent,
    ZkError,
    ZkPingRequest,
)

__all__ = ["CandidateState", "Controller", "ControllerConfig"]

ZOOKEEPER = Address("zookeeper", "zookeeper")
TOP_LEVEL_PATHS = ("/brokers", zk.BROKER_IDS, zk.TOPICS, zk.ISR_CHANGE_NOTIFICATION)


class CandidateState(Enum):
    """Where the candidate is.

    - CONNECTING: no session. Transition: REGISTERING on ConnectResponse.
    - REGISTERING: creating top-level paths and /brokers/ids/N. Transition: ELECTING.
    - ELECTING: reading /controller_epoch, then the election multi. Transition: ACTIVE if it
      won, STANDBY if another broker holds /controller.
    - ACTIVE: this broker is the controller. Transition: CONNECTING or REGISTERING when it
      resigns (its session expired, or a write found another controller's epoch).
    - STANDBY: watching /controller. Transition: ELECTING when the watch fires; CONNECTING when
      its session expired.
    """

    CONNECTING = "connecting"
    REGISTERING = "registering"
    ELECTING = "electing"
    ACTIVE = "active"
    STANDBY = "standby"


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    broker_id: int
    session_timeout_ms: int = 18000
    settings: ControllerSettings = field(default_factory=ControllerSettings)
    replica_manager: Address | None = None
    """The broker actor on this node, told its broker epoch; None in tests of the election alone."""
    controlled_shutdown_enable: bool = True
    controlled_shutdown_max_retries: int = 3
    controlled_shutdown_retry_backoff_ms: int = 5000
    request_timeout_ms: int = 30000
    """How long the broker waits for the controller's answer to ControlledShutdown."""


@dataclass(slots=True)
class _Shutdown:
    """A shutdown under way."""

    started_ms: int
    exit_after_ms: int
    attempts: int = 0
    waiting: int = 0
    """The correlation id of the ControlledShutdown in flight; 0: none."""
    controller: int = -1


@dataclass(frozen=True, slots=True)
class _Waiting:
    purpose: str
    arg: Any
    session_id: int
    message: Any = None
    sent_ms: int = 0


@dataclass(slots=True)
class _State:
    state: CandidateState = CandidateState.CONNECTING
    session_id: int = 0
    registered_session: int = 0
    broker_epoch: int = -1
    controller_epoch: int = -1
    """The epoch this broker won with, while ACTIVE."""
    attempted_epoch: int = -1
    """The epoch of its last election multi."""
    active_controller: int = -1
    next_correlation_id: int = 0
    waiting: dict[int, _Waiting] = field(default_factory=dict)


@dataclass(slots=True)
class _Running:
    """The controller step in progress and the ZooKeeper requests it waits for."""

    number: int
    step: Step
    requests: list[Any] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)
    resend: list[int] = field(default_factory=list)
    """Requests answered SESSIONEXPIRED, sent again once a new session exists."""


class Controller:
    def __init__(self, config: ControllerConfig) -> None:
        self.config = config
        self.s = _State()
        self.kc: KafkaController | None = None
        self.events: list[tuple[str, Any]] = []
        self.running: _Running | None = None
        self.steps = 0
        self.shutdown: _Shutdown | None = None
        self.now_ms = 0

    # ------------------------------------------------------------------ handlers

    def on_start(self, ctx: Ctx) -> Out:
        self.now_ms = ctx.now_ms
        out = Out()
        self._connect(out)
        return out

    def on_timer(self, ctx: Ctx, key: str) -> Out:
        self.now_ms = ctx.now_ms
        out = Out()
        kind, _, arg = key.partition(":")
        if kind == "ping":
            self._check_connection(out)
            if self.s.session_id:
                self._request(out, ZkPingRequest(self.s.session_id), "ping")
            out.set_timer("ping", self.config.session_timeout_ms // 3)
        elif kind == "register" and self.s.state is CandidateState.REGISTERING:
            self._register(out)
        elif kind == "auto-rebalance":
            self._queue(out, "auto-rebalance")
        elif kind == "channel" and self.kc is not None:
            self.kc.channel.on_timeout(out, int(arg))
        elif kind == "controlled-shutdown":
            self._attempt_controlled_shutdown(ctx, out)
        elif kind == "controlled-shutdown-timeout" and self.shutdown is not None:
            self._controlled_shutdown_failed(ctx, out, "REQUEST_TIMED_OUT")
        elif kind == "exit":
            self._exit(out)
        return out

    def on_message(self, ctx: Ctx, inbound: Inbound) -> Out:
        self.now_ms = ctx.now_ms
        out = Out()
        msg = inbound.message
        match msg:
            case WatchedEvent():
                self._on_watch(out, msg)
            case AlterPartitionRequest():
                if self.kc is None:
                    out.reply(inbound, AlterPartitionResponse(ErrorCode.NOT_CONTROLLER))
                else:
                    self._queue(out, "alter-partition", inbound)
            case IsrUpdateRequest():
                self._update_isr(out, inbound, msg)
            case ControlledShutdownRequest():
                if self.kc is None:
                    out.reply(inbound, ControlledShutdownResponse(ErrorCode.NOT_CONTROLLER))
                else:
                    self._queue(out, "controlled-shutdown", inbound)
            case ShutdownSignal():
                self._begin_shutdown(ctx, out, msg)
            case ControlledShutdownResponse():
                self._on_controlled_shutdown_response(ctx, out, inbound, msg)
            case LeaderAndIsrResponse() | UpdateMetadataResponse() | StopReplicaResponse():
                if self.kc is not None:
                    self.kc.channel.on_response(out, broker_id_of(inbound.src), inbound.correlation_id)
            case Disconnected(peer):
                # A ZooKeeper session outlives its connection; a broker's closing matters to
                # the controller's channel, and to a controlled shutdown waiting on it.
                if self.kc is not None and peer.startswith("broker-"):
                    self.kc.channel.on_disconnected(out, broker_id_of(inbound.src))
                if self.shutdown is not None and self.shutdown.waiting and peer == f"broker-{self.shutdown.controller}":
                    self._controlled_shutdown_failed(ctx, out, "DISCONNECTED")
            case _:
                self._on_zookeeper_response(out, inbound)
        return out

    def snapshot(self) -> dict[str, Any]:
        view: dict[str, Any] = {
            "state": self.s.state.value,
            "session_id": self.s.session_id,
            "broker_epoch": self.s.broker_epoch,
            "controller_epoch": self.s.controller_epoch,
            "active_controller": self.s.active_controller,
        }
        if self.kc is not None:
            c = self.kc.ctx
            view["live_brokers"] = dict(sorted(c.live_brokers.items()))
            view["partitions"] = {
                str(tp): {
                    "leader": l.leader,
                    "leader_epoch": l.leader_epoch,
                    "isr": list(l.isr),
                    "partition_epoch": l.zk_version,
                    "state": c.partition_states.get(tp, PartitionState.NON_EXISTENT).value,
                }
                for tp, l in sorted(c.leadership.items())
            }
            view["queued_requests"] = {b: self.kc.channel.queued(b) for b in sorted(c.live_brokers)}
        return view

    # ------------------------------------------------------------------ ZooKeeper client

    def _request(self, out: Out, message: Any, purpose: str, arg: Any = None) -> None:
        self.s.next_correlation_id += 1
        waiting = _Waiting(purpose, arg, self.s.session_id, message, self.now_ms)
        self.s.waiting[self.s.next_correlation_id] = waiting
        out.send(ZOOKEEPER, message, self.s.next_correlation_id)

    def _check_connection(self, out: Out) -> None:
        """A request unanswered for the client's read timeout (two thirds of the session
        timeout) means its connection broke: over TCP an answer is not lost alone. As
        `ClientCnxn` does, every request pending on it fails (CONNECTIONLOSS) and, as Kafka's
        `ZooKeeperClient` does (`retryRequestsUntilConnected`), each is sent again; the session
        goes on if it has not expired."""
        read_timeout = self.config.session_timeout_ms * 2 // 3
        pending = sorted(self.s.waiting.items())
        if not any(self.now_ms - w.sent_ms >= read_timeout for _, w in pending):
            return
        out.emit("zk_connection_lost", broker_id=self.config.broker_id, session_id=self.s.session_id, pending=len(pending))
        self.s.waiting = {}
        for _, w in pending:
            if w.purpose != "ping" and (w.session_id == self.s.session_id or w.purpose == "connect"):
                self._request(out, w.message, w.purpose, w.arg)

    def _on_zookeeper_response(self, out: Out, inbound: Inbound) -> None:
        waiting = self.s.waiting.pop(inbound.correlation_id, None)
        if waiting is None:
            return
        msg = inbound.message
        if getattr(msg, "error", ZkError.OK) is ZkError.SESSIONEXPIRED:
            if waiting.purpose == "step" and self.running is not None and waiting.arg[0] == self.running.number:
                self.running.resend.append(waiting.arg[1])
                if self.s.session_id and waiting.session_id != self.s.session_id:
                    self._resend(out)  # a new session exists already
            elif waiting.purpose == "isr-update":
                out.reply(waiting.arg, IsrUpdateResponse(ErrorCode.NETWORK_EXCEPTION))
            if waiting.session_id == self.s.session_id and self.s.session_id:
                self._session_lost(out)
            return
        match waiting.purpose, msg:
            case "connect", ConnectResponse(session_id, timeout_ms):
                self._connected(out, session_id, timeout_ms)
            case "register", MultiResponse() as resp:
                self._registered(out, resp)
            case "register-check", GetDataResponse() as resp:
                self._registration_checked(out, resp)
            case "check-epoch", GetDataResponse() as resp:
                self._election_checked(out, resp)
            case "read-epoch", GetDataResponse() as resp:
                self._elect(out, resp)
            case "elect", MultiResponse() as resp:
                self._election_result(out, resp)
            case "read-controller", GetDataResponse() as resp:
                self._observe_controller(out, resp)
            case "isr-update", MultiResponse() as resp:
                self._isr_updated(out, waiting.arg, resp)
            case "step", _:
                self._step_response(out, waiting.arg, msg)
            case "close", _:
                self._stop_replica_manager(out)
            case _:
                pass

    def _connect(self, out: Out) -> None:
        self.s.session_id = 0
        if self.s.state is not CandidateState.ACTIVE:
            self.s.state = CandidateState.CONNECTING
        self._request(out, ConnectRequest(self.config.session_timeout_ms), "connect")
        out.set_timer("ping", self.config.session_timeout_ms // 3)

    def _connected(self, out: Out, session_id: int, timeout_ms: int) -> None:
        self.s.session_id = session_id
        out.set_timer("ping", timeout_ms // 3)
        self._resend(out)
        if self.s.state is CandidateState.CONNECTING:
            self.s.state = CandidateState.REGISTERING
            self._register(out)

    def _resend(self, out: Out) -> None:
        """The step in progress goes on, on the new session (see the module docstring)."""
        running = self.running
        if running is None:
            return
        for i in running.resend:
            request = replace(running.requests[i], session_id=self.s.session_id)
            self._request(out, request, "step", (running.number, i))
        running.resend.clear()

    def _session_lost(self, out: Out) -> None:
        out.emit("zk_session_lost", broker_id=self.config.broker_id, session_id=self.s.session_id)
        out.cancel_timer("ping")
        for correlation_id in sorted(self.s.waiting):
            if self.s.waiting[correlation_id].purpose not in ("step", "isr-update"):
                del self.s.waiting[correlation_id]
        if self.s.state is CandidateState.ACTIVE:
            # Kafka's `clearAndPut(Expire)`: queued events are dropped, the one running ends first.
            self.events = [("expire", None)]
        else:
            self.s.controller_epoch = -1
            self.s.active_controller = -1
        self._connect(out)
        self._run_events(out)

    # ------------------------------------------------------------------ candidate

    def _register(self, out: Out) -> None:
        """`createTopLevelPaths` then `registerBroker`, as one multi each (existing paths are fine)."""
        for path in TOP_LEVEL_PATHS:
            self._request(out, MultiRequest(self.s.session_id, (Op(OpCode.CREATE, path),)), "ensure")
        epoch = Op(OpCode.CREATE, zk.CONTROLLER_EPOCH, "0")
        self._request(out, MultiRequest(self.s.session_id, (epoch,)), "ensure")
        info = json.dumps({"host": f"broker-{self.config.broker_id}", "version": 5}, sort_keys=True)
        op = Op(OpCode.CREATE, zk.broker_path(self.config.broker_id), info, ephemeral=True)
        self._request(out, MultiRequest(self.s.session_id, (op,)), "register")

    def _registered(self, out: Out, resp: MultiResponse) -> None:
        if resp.error is ZkError.NODEEXISTS:
            # `CheckedEphemeral`: the node may be this session's own, created by a request
            # sent again after its connection broke.
            path = zk.broker_path(self.config.broker_id)
            self._request(out, GetDataRequest(self.s.session_id, path), "register-check")
            return
        if resp.error is not ZkError.OK:
            self._registration_failed(out, resp.error.name)
            return
        stat = resp.results[0].stat
        self._register_done(out, stat.czxid if stat is not None else -1)

    def _registration_checked(self, out: Out, resp: GetDataResponse) -> None:
        if resp.error is ZkError.OK and resp.stat is not None and resp.stat.ephemeral_owner == self.s.session_id:
            self._register_done(out, resp.stat.czxid)
        else:
            self._registration_failed(out, ZkError.NODEEXISTS.name)

    def _registration_failed(self, out: Out, error: str) -> None:
        # NODEEXISTS: the previous session's node is still there until that session expires.
        # Kafka's broker fails to start; here it tries again, as a supervisor would restart it.
        out.emit("broker_registration_failed", broker_id=self.config.broker_id, error=error)
        out.set_timer("register", 1000)

    def _register_done(self, out: Out, broker_epoch: int) -> None:
        self.s.broker_epoch = broker_epoch
        self.s.registered_session = self.s.session_id
        out.emit("broker_registered", broker_id=self.config.broker_id, broker_epoch=self.s.broker_epoch)
        if self.config.replica_manager is not None:
            out.send(self.config.replica_manager, BrokerRegistered(self.s.broker_epoch))
        self.s.state = CandidateState.ELECTING
        self._read_epoch(out)

    def _read_epoch(self, out: Out) -> None:
        self._request(out, GetDataRequest(self.s.session_id, zk.CONTROLLER_EPOCH), "read-epoch")

    def _elect(self, out: Out, resp: GetDataResponse) -> None:
        if resp.error is not ZkError.OK or resp.stat is None:
            return
        epoch, version = int(resp.data), resp.stat.version
        me = json.dumps({"brokerid": self.config.broker_id, "version": 2}, sort_keys=True)
        ops = (
            Op(OpCode.CREATE, zk.CONTROLLER, me, ephemeral=True),
            Op(OpCode.SET_DATA, zk.CONTROLLER_EPOCH, str(epoch + 1), version=version),
        )
        self.s.controller_epoch = self.s.attempted_epoch = epoch + 1
        self._request(out, MultiRequest(self.s.session_id, ops), "elect")

    def _election_result(self, out: Out, resp: MultiResponse) -> None:
        if resp.error is ZkError.OK:
            stat = resp.results[1].stat
            self._won(out, stat.version if stat is not None else -1)
            return
        # NODEEXISTS or BADVERSION: ControllerMovedException; another broker is controller.
        out.emit(
            "controller_election_lost",
            broker_id=self.config.broker_id,
            controller_epoch=self.s.controller_epoch,
            error=resp.error.name,
        )
        self.s.controller_epoch = -1
        self.s.state = CandidateState.STANDBY
        self._request(out, GetDataRequest(self.s.session_id, zk.CONTROLLER, watch=True), "read-controller")

    def _won(self, out: Out, epoch_zk_version: int) -> None:
        self.s.state = CandidateState.ACTIVE
        self.s.active_controller = self.config.broker_id
        out.emit(
            "controller_elected",
            broker_id=self.config.broker_id,
            controller_epoch=self.s.controller_epoch,
            controller_epoch_zk_version=epoch_zk_version,
            broker_epoch=self.s.broker_epoch,
        )
        self.kc = KafkaController(
            self.config.broker_id,
            self.s.controller_epoch,
            epoch_zk_version,
            self.config.settings,
            lambda: self.s.session_id,
        )
        self.events.insert(0, ("failover", None))
        self._run_events(out)

    def _observe_controller(self, out: Out, resp: GetDataResponse) -> None:
        if resp.error is ZkError.NONODE:
            # It went between our multi and this read: race again.
            self.s.state = CandidateState.ELECTING
            self._read_epoch(out)
            return
        self.s.active_controller = json.loads(resp.data)["brokerid"]
        if self.s.active_controller == self.config.broker_id and self.s.state is CandidateState.STANDBY:
            # `checkControllerAndEpoch`: our own election multi, sent again after its connection
            # broke, found its first application's node. The win stands if the epoch is ours.
            self._request(out, GetDataRequest(self.s.session_id, zk.CONTROLLER_EPOCH), "check-epoch")

    def _election_checked(self, out: Out, resp: GetDataResponse) -> None:
        if resp.error is ZkError.OK and resp.stat is not None and int(resp.data) == self.s.attempted_epoch:
            self.s.controller_epoch = self.s.attempted_epoch
            self._won(out, resp.stat.version)

    def _on_watch(self, out: Out, event: WatchedEvent) -> None:
        if event.path == zk.CONTROLLER and event.type is EventType.NODE_DELETED:
            if self.s.state is CandidateState.STANDBY:
                self.s.state = CandidateState.ELECTING
                self._read_epoch(out)
        elif event.path == zk.BROKER_IDS and event.type is EventType.NODE_CHILDREN_CHANGED:
            self._queue(out, "broker-change")
        elif event.path == zk.ISR_CHANGE_NOTIFICATION and event.type is EventType.NODE_CHILDREN_CHANGED:
            self._queue(out, "isr-change")

    def _resign(self, out: Out, reason: str) -> None:
        """`onControllerResignation`: forget the controller's state; then register again if the
        session changed, or race again (`maybeResign` -> `elect`)."""
        if self.kc is None:
            return
        out.emit(
            "controller_resigned",
            broker_id=self.config.broker_id,
            controller_epoch=self.s.controller_epoch,
            reason=reason,
        )
        self.kc.channel.clear(out)
        out.cancel_timer("auto-rebalance")
        self.kc = None
        if self.running is not None:
            self.running.step.close()
            self.running = None
        self.events = [e for e in self.events if e[0] == "expire"]
        self.s.controller_epoch = -1
        self.s.active_controller = -1
        if not self.s.session_id:
            self.s.state = CandidateState.CONNECTING
        elif self.s.session_id != self.s.registered_session:
            self.s.state = CandidateState.REGISTERING
            self._register(out)
        else:
            self.s.state = CandidateState.ELECTING
            self._read_epoch(out)

    # ------------------------------------------------------------------ controller events

    def _queue(self, out: Out, kind: str, arg: Any = None) -> None:
        if self.kc is None and kind != "expire":
            return
        self.events.append((kind, arg))
        self._run_events(out)

    def _run_events(self, out: Out) -> None:
        """Start queued events, one at a time, while none is waiting for ZooKeeper."""
        while self.running is None and self.events:
            kind, arg = self.events.pop(0)
            if kind == "expire":
                self._resign(out, "session expired")
                continue
            if self.kc is None:
                continue
            self.steps += 1
            self.running = _Running(self.steps, self._event_step(self.kc, kind, arg))
            self._advance(out, None)

    @staticmethod
    def _event_step(kc: KafkaController, kind: str, arg: Any) -> Step:
        match kind:
            case "failover":
                return kc.on_failover()
            case "broker-change":
                return kc.on_broker_change()
            case "isr-change":
                return kc.on_isr_change_notification()
            case "auto-rebalance":
                return kc.on_auto_rebalance()
            case "alter-partition":
                return kc.on_alter_partition(arg, arg.message)
            case "controlled-shutdown":
                return kc.on_controlled_shutdown(arg, arg.message)
        msg = f"unknown controller event {kind!r}"
        raise ValueError(msg)

    def _advance(self, out: Out, value: Any) -> None:
        """Resume the running step with `value` until it waits for ZooKeeper or ends."""
        running, kc = self.running, self.kc
        assert running is not None and kc is not None
        kc.out = out
        try:
            requests = running.step.send(value)
            while not requests:
                requests = running.step.send(())
        except StopIteration:
            self.running = None
        except ControllerMoved:
            self.running = None
            out.emit(
                "controller_moved",
                broker_id=self.config.broker_id,
                controller_epoch=self.s.controller_epoch,
                error=ZkError.BADVERSION.name,
            )
            self._resign(out, "controller moved")
        else:
            running.requests = list(requests)
            running.results = [None] * len(requests)
            for i, request in enumerate(requests):
                self._request(out, request, "step", (running.number, i))
            return
        self._run_events(out)

    def _step_response(self, out: Out, arg: tuple[int, int], response: Any) -> None:
        number, i = arg
        running = self.running
        if running is None or running.number != number:
            return
        running.results[i] = response
        if all(r is not None for r in running.results):
            self._advance(out, tuple(running.results))

    # ------------------------------------------------------------------ ISR writes before 2.7

    def _update_isr(self, out: Out, inbound: Inbound, req: IsrUpdateRequest) -> None:
        """`Partition.updateIsr` through `KafkaZkClient`: a conditional write of the state
        znode (not fenced by the controller epoch: a broker writes it), then the notification."""
        if not self.s.session_id:
            out.reply(inbound, IsrUpdateResponse(ErrorCode.NETWORK_EXCEPTION))
            return
        tp = TopicPartition(req.topic, req.partition)
        state = zk.LeaderIsr(req.leader, req.leader_epoch, tuple(req.isr), req.controller_epoch, req.zk_version)
        ops = (
            Op(OpCode.SET_DATA, zk.state_path(tp), zk.encode_state(state), req.zk_version),
            Op(OpCode.CREATE, zk.ISR_CHANGE_PREFIX, zk.encode_isr_change([tp]), sequential=True),
        )
        self._request(out, MultiRequest(self.s.session_id, ops), "isr-update", inbound)

    def _isr_updated(self, out: Out, inbound: Inbound, resp: MultiResponse) -> None:
        if resp.error is ZkError.OK and resp.results[0].stat is not None:
            out.reply(inbound, IsrUpdateResponse(ErrorCode.NONE, resp.results[0].stat.version))
        else:
            out.reply(inbound, IsrUpdateResponse(ErrorCode.INVALID_UPDATE_VERSION))

    # ------------------------------------------------------------------ shutdown

    def _begin_shutdown(self, ctx: Ctx, out: Out, signal: ShutdownSignal) -> None:
        if self.shutdown is not None:
            return
        self.shutdown = _Shutdown(ctx.now_ms, signal.exit_after_ms)
        controlled = self.config.controlled_shutdown_enable
        out.emit("broker_shutdown_started", broker_id=self.config.broker_id, controlled=controlled)
        if controlled:
            self._attempt_controlled_shutdown(ctx, out)
        else:
            self._finish_shutdown(ctx, out)

    def _attempt_controlled_shutdown(self, ctx: Ctx, out: Out) -> None:
        """One attempt of `doControlledShutdown`: to the controller this broker knows of; with
        none known (or not registered yet), the attempt is spent waiting the back-off."""
        shutdown = self.shutdown
        if shutdown is None or shutdown.waiting:
            return
        shutdown.attempts += 1
        controller = self.s.active_controller
        if controller < 0 or self.s.broker_epoch < 0:
            self._controlled_shutdown_failed(ctx, out, "CONTROLLER_NOT_AVAILABLE")
            return
        self.s.next_correlation_id += 1
        shutdown.waiting, shutdown.controller = self.s.next_correlation_id, controller
        request = ControlledShutdownRequest(self.config.broker_id, self.s.broker_epoch)
        out.send(controller_address(controller), request, shutdown.waiting)
        out.set_timer("controlled-shutdown-timeout", self.config.request_timeout_ms)

    def _on_controlled_shutdown_response(
        self, ctx: Ctx, out: Out, inbound: Inbound, response: ControlledShutdownResponse
    ) -> None:
        shutdown = self.shutdown
        if shutdown is None or inbound.correlation_id != shutdown.waiting:
            return
        shutdown.waiting = 0
        out.cancel_timer("controlled-shutdown-timeout")
        if response.error_code is ErrorCode.NONE and not response.remaining_partitions:
            self._controlled_shutdown_done(ctx, out, succeeded=True)
            return
        remaining = [f"{p.topic}-{p.partition}" for p in response.remaining_partitions]
        self._controlled_shutdown_failed(ctx, out, response.error_code.name, remaining)

    def _controlled_shutdown_failed(
        self, ctx: Ctx, out: Out, error: str, remaining: list[str] | None = None
    ) -> None:
        shutdown = self.shutdown
        assert shutdown is not None
        shutdown.waiting = 0
        out.cancel_timer("controlled-shutdown-timeout")
        out.emit(
            "controlled_shutdown_attempt_failed",
            broker_id=self.config.broker_id,
            attempt=shutdown.attempts,
            error=error,
            remaining=remaining or [],
        )
        if shutdown.attempts >= self.config.controlled_shutdown_max_retries:
            self._controlled_shutdown_done(ctx, out, succeeded=False)
        else:
            out.set_timer("controlled-shutdown", self.config.controlled_shutdown_retry_backoff_ms)

    def _controlled_shutdown_done(self, ctx: Ctx, out: Out, *, succeeded: bool) -> None:
        assert self.shutdown is not None
        out.emit(
            "controlled_shutdown_completed",
            broker_id=self.config.broker_id,
            succeeded=succeeded,
            attempts=self.shutdown.attempts,
        )
        self._finish_shutdown(ctx, out)

    def _finish_shutdown(self, ctx: Ctx, out: Out) -> None:
        """The rest of `KafkaServer.shutdown`, at the earliest when the operator's signal said."""
        assert self.shutdown is not None
        exit_ms = self.shutdown.started_ms + self.shutdown.exit_after_ms
        if exit_ms > ctx.now_ms:
            out.set_timer("exit", exit_ms - ctx.now_ms)
        else:
            self._exit(out)

    def _exit(self, out: Out) -> None:
        """Close the ZooKeeper session and wait for it to close (the ephemeral registration goes
        with it, so the controller sees the broker gone at once, not after the session timeout);
        then the replica manager stops the process."""
        if self.s.session_id:
            out.cancel_timer("ping")
            self._request(out, CloseSessionRequest(self.s.session_id), "close")
        else:
            self._stop_replica_manager(out)

    def _stop_replica_manager(self, out: Out) -> None:
        if self.config.replica_manager is not None:
            out.send(self.config.replica_manager, ShutdownSignal())
