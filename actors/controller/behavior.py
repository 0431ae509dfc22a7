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

Once elected it runs `actors.controller.kafka_controller`, one event at a time
(`actors.controller.event_manager`).

Sessions. A request answered SESSIONEXPIRED (the node was paused past the timeout) makes the
client open a new session. A standby candidate then registers again, with a new broker epoch.
An active controller does not know yet that it was replaced: as Kafka queues an `Expire` event
behind the event in progress, the step in progress goes on, its ZooKeeper requests are sent
again on the new session, and its next write fails the controller-epoch check (BADVERSION,
`ControllerMovedException`). Then it resigns and registers again: a bounced broker (S11).

Before 2.7 the replica manager also writes ISR changes through this client (`IsrUpdateRequest`):
a conditional setData of the partition-state znode and an `/isr_change_notification` node.

The session itself is `actors.controller.zookeeper_client`; the broker's shutdown, which asks
the controller to move its leaderships first, is `actors.controller.shutdown`. The rest stays
in this module, somewhat over 400 lines: its registration, election and resignation are, in
Kafka, methods of one class, `KafkaController` (about 2,800 lines), with the events it runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from typing import Any

from actors.broker.behavior import broker_id_of
from actors.controller import zkdata as zk
from actors.controller.config import ControllerConfig
from actors.controller.event_manager import ControllerEventManager
from actors.controller.kafka_controller import KafkaController
from actors.controller.kafka_zk_client import (
    create_top_level_paths,
    isr_update_request,
    isr_update_response,
    register_broker,
    register_controller,
)
from actors.controller.shutdown import ControlledShutdown
from actors.controller.states import PartitionState
from actors.controller.zookeeper_client import ZooKeeperClient
from actors.core import Ctx, Inbound, Out
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
from protocols.zookeeper import (
    ConnectResponse,
    EventType,
    GetDataRequest,
    GetDataResponse,
    MultiResponse,
    WatchedEvent,
    ZkError,
)

__all__ = ["CandidateState", "Controller", "ControllerConfig"]

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


@dataclass(slots=True)
class _State:
    state: CandidateState = CandidateState.CONNECTING
    registered_session: int = 0
    broker_epoch: int = -1
    controller_epoch: int = -1
    """The epoch this broker won with, while ACTIVE."""
    attempted_epoch: int = -1
    """The epoch of its last election multi."""
    active_controller: int = -1


class Controller:
    def __init__(self, config: ControllerConfig) -> None:
        self.config = config
        self.s = _State()
        self.zk = ZooKeeperClient(config.broker_id, config.session_timeout_ms)
        self.kc: KafkaController | None = None
        self.events = ControllerEventManager(self, self.zk)
        self.shutdown = ControlledShutdown(config, self.zk)

    # ------------------------------------------------------------------ handlers

    def on_start(self, ctx: Ctx) -> Out:
        self.zk.now_ms = ctx.now_ms
        out = Out()
        self._connect(out)
        return out

    def on_timer(self, ctx: Ctx, key: str) -> Out:
        self.zk.now_ms = ctx.now_ms
        out = Out()
        kind, _, arg = key.partition(":")
        if kind == "ping":
            self.zk.ping(out)
        elif kind == "register" and self.s.state is CandidateState.REGISTERING:
            self._register(out)
        elif kind == "auto-rebalance":
            self.events.put(out, "auto-rebalance")
        elif kind == "channel" and self.kc is not None:
            self.kc.channel.on_timeout(out, int(arg))
        elif kind == "controlled-shutdown":
            self.shutdown.attempt(ctx, out, self.s.active_controller, self.s.broker_epoch)
        elif kind == "controlled-shutdown-timeout":
            self.shutdown.timed_out(ctx, out)
        elif kind == "exit":
            self.shutdown.exit(out)
        return out

    def on_message(self, ctx: Ctx, inbound: Inbound) -> Out:
        self.zk.now_ms = ctx.now_ms
        out = Out()
        msg = inbound.message
        match msg:
            case WatchedEvent():
                self._on_watch(out, msg)
            case AlterPartitionRequest():
                if self.kc is None:
                    out.reply(inbound, AlterPartitionResponse(ErrorCode.NOT_CONTROLLER))
                else:
                    self.events.put(out, "alter-partition", inbound)
            case IsrUpdateRequest():
                # Before 2.7: the replica manager's ISR write, on this broker's session.
                if not self.zk.session_id:
                    out.reply(inbound, IsrUpdateResponse(ErrorCode.NETWORK_EXCEPTION))
                else:
                    self.zk.request(out, isr_update_request(self.zk.session_id, msg), "isr-update", inbound)
            case ControlledShutdownRequest():
                if self.kc is None:
                    out.reply(inbound, ControlledShutdownResponse(ErrorCode.NOT_CONTROLLER))
                else:
                    self.events.put(out, "controlled-shutdown", inbound)
            case ShutdownSignal():
                self.shutdown.begin(ctx, out, msg, self.s.active_controller, self.s.broker_epoch)
            case ControlledShutdownResponse():
                self.shutdown.on_response(ctx, out, inbound, msg)
            case LeaderAndIsrResponse() | UpdateMetadataResponse() | StopReplicaResponse():
                if self.kc is not None:
                    self.kc.channel.on_response(out, broker_id_of(inbound.src), inbound.correlation_id)
            case Disconnected(peer):
                # A ZooKeeper session outlives its connection; a broker's closing matters to
                # the controller's channel, and to a controlled shutdown waiting on it.
                if self.kc is not None and peer.startswith("broker-"):
                    self.kc.channel.on_disconnected(out, broker_id_of(inbound.src))
                self.shutdown.disconnected(ctx, out, peer)
            case _:
                self._on_zookeeper_response(out, inbound)
        return out

    def snapshot(self) -> dict[str, Any]:
        view: dict[str, Any] = {
            "state": self.s.state.value,
            "session_id": self.zk.session_id,
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

    # ------------------------------------------------------------------ ZooKeeper session

    def _on_zookeeper_response(self, out: Out, inbound: Inbound) -> None:
        waiting = self.zk.take(inbound.correlation_id)
        if waiting is None:
            return
        msg = inbound.message
        if getattr(msg, "error", ZkError.OK) is ZkError.SESSIONEXPIRED:
            if waiting.purpose == "step":
                self.events.on_session_expired(out, waiting.arg, waiting.session_id)
            elif waiting.purpose == "isr-update":
                out.reply(waiting.arg, IsrUpdateResponse(ErrorCode.NETWORK_EXCEPTION))
            if waiting.session_id == self.zk.session_id and self.zk.session_id:
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
                out.reply(waiting.arg, isr_update_response(resp))
            case "step", _:
                self.events.on_response(out, waiting.arg, msg)
            case "close", _:
                self.shutdown.stop_replica_manager(out)
            case _:
                pass

    def _connect(self, out: Out) -> None:
        if self.s.state is not CandidateState.ACTIVE:
            self.s.state = CandidateState.CONNECTING
        self.zk.connect(out)

    def _connected(self, out: Out, session_id: int, timeout_ms: int) -> None:
        self.zk.connected(out, session_id, timeout_ms)
        self.events.resend(out)
        if self.s.state is CandidateState.CONNECTING:
            self.s.state = CandidateState.REGISTERING
            self._register(out)

    def _session_lost(self, out: Out) -> None:
        self.zk.session_lost(out)
        if self.s.state is CandidateState.ACTIVE:
            self.events.clear_and_put("expire")
        else:
            self.s.controller_epoch = -1
            self.s.active_controller = -1
        self._connect(out)
        self.events.run(out)

    # ------------------------------------------------------------------ candidate

    def _register(self, out: Out) -> None:
        """`createTopLevelPaths` then `registerBroker`, as one multi each (existing paths are fine)."""
        for request in create_top_level_paths(self.zk.session_id):
            self.zk.request(out, request, "ensure")
        self.zk.request(out, register_broker(self.zk.session_id, self.config.broker_id), "register")

    def _registered(self, out: Out, resp: MultiResponse) -> None:
        if resp.error is ZkError.NODEEXISTS:
            # `CheckedEphemeral`: the node may be this session's own, created by a request
            # sent again after its connection broke.
            path = zk.broker_path(self.config.broker_id)
            self.zk.request(out, GetDataRequest(self.zk.session_id, path), "register-check")
            return
        if resp.error is not ZkError.OK:
            self._registration_failed(out, resp.error.name)
            return
        stat = resp.results[0].stat
        self._register_done(out, stat.czxid if stat is not None else -1)

    def _registration_checked(self, out: Out, resp: GetDataResponse) -> None:
        if resp.error is ZkError.OK and resp.stat is not None and resp.stat.ephemeral_owner == self.zk.session_id:
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
        self.s.registered_session = self.zk.session_id
        out.emit("broker_registered", broker_id=self.config.broker_id, broker_epoch=self.s.broker_epoch)
        if self.config.replica_manager is not None:
            out.send(self.config.replica_manager, BrokerRegistered(self.s.broker_epoch))
        self.s.state = CandidateState.ELECTING
        self._read_epoch(out)

    def _read_epoch(self, out: Out) -> None:
        self.zk.request(out, GetDataRequest(self.zk.session_id, zk.CONTROLLER_EPOCH), "read-epoch")

    def _elect(self, out: Out, resp: GetDataResponse) -> None:
        if resp.error is not ZkError.OK or resp.stat is None:
            return
        epoch, version = int(resp.data), resp.stat.version
        request = register_controller(self.zk.session_id, self.config.broker_id, epoch + 1, version)
        self.s.controller_epoch = self.s.attempted_epoch = epoch + 1
        self.zk.request(out, request, "elect")

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
        self.zk.request(out, GetDataRequest(self.zk.session_id, zk.CONTROLLER, watch=True), "read-controller")

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
            lambda: self.zk.session_id,
        )
        self.events.put_first(out, "failover")

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
            self.zk.request(out, GetDataRequest(self.zk.session_id, zk.CONTROLLER_EPOCH), "check-epoch")

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
            self.events.put(out, "broker-change")
        elif event.path == zk.ISR_CHANGE_NOTIFICATION and event.type is EventType.NODE_CHILDREN_CHANGED:
            self.events.put(out, "isr-change")

    def controller_moved(self, out: Out) -> None:
        """A write failed the controller-epoch check: another broker is controller now."""
        out.emit(
            "controller_moved",
            broker_id=self.config.broker_id,
            controller_epoch=self.s.controller_epoch,
            error=ZkError.BADVERSION.name,
        )
        self.resign(out, "controller moved")

    def resign(self, out: Out, reason: str) -> None:
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
        self.events.resigned()
        self.s.controller_epoch = -1
        self.s.active_controller = -1
        if not self.zk.session_id:
            self.s.state = CandidateState.CONNECTING
        elif self.zk.session_id != self.s.registered_session:
            self.s.state = CandidateState.REGISTERING
            self._register(out)
        else:
            self.s.state = CandidateState.ELECTING
            self._read_epoch(out)
