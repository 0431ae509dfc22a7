"""The controller candidate on every broker: its ZooKeeper session, its registration, and the
controller election (KafkaController.elect, KafkaZkClient.registerControllerAndIncrementControllerEpoch).

What it does, in Kafka's order:
1. open a session (`zookeeper.session.timeout.ms`) and ping every third of it;
2. create the top-level paths if missing (`/brokers/ids`, `/controller_epoch` = 0);
3. register `/brokers/ids/N` as an ephemeral; its czxid is the broker epoch (KIP-380);
4. read `/controller_epoch` (value and version), then race for the controller with one multi:
   create the ephemeral `/controller` and set `/controller_epoch` to value + 1 expecting that
   version. NODEEXISTS or BADVERSION: another broker won; watch `/controller`;
5. on the watch firing (the controller's session ended), race again.

A session that expired (the node was paused past the timeout) is found by the next request's
SESSIONEXPIRED: a controller resigns, and the candidate starts again from 1 with a new session,
and so a new broker epoch.

Not here yet: what the elected controller does (the partition and replica state machines,
LeaderAndIsr, UpdateMetadata); the issue builds them on top of `on_elected`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from actors.core import Address, Ctx, Inbound, Out
from protocols.zookeeper import (
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

__all__ = ["CandidateConfig", "CandidateState", "ControllerCandidate"]

ZOOKEEPER = Address("zookeeper", "zookeeper")
CONTROLLER_PATH = "/controller"
EPOCH_PATH = "/controller_epoch"


class CandidateState(Enum):
    """Where the candidate is.

    - CONNECTING: no session. Transition: REGISTERING on ConnectResponse.
    - REGISTERING: creating top-level paths and /brokers/ids/N. Transition: ELECTING.
    - ELECTING: reading /controller_epoch, then the election multi. Transition: ACTIVE if it
      won, STANDBY if another broker holds /controller.
    - ACTIVE: this broker is the controller. Transition: CONNECTING when its session expired.
    - STANDBY: watching /controller. Transition: ELECTING when the watch fires; CONNECTING when
      its session expired.
    """

    CONNECTING = "connecting"
    REGISTERING = "registering"
    ELECTING = "electing"
    ACTIVE = "active"
    STANDBY = "standby"


@dataclass(frozen=True, slots=True)
class CandidateConfig:
    broker_id: int
    session_timeout_ms: int = 18000


@dataclass(slots=True)
class _State:
    state: CandidateState = CandidateState.CONNECTING
    session_id: int = 0
    broker_epoch: int = -1
    controller_epoch: int = -1
    """The epoch this broker won with, while ACTIVE."""
    active_controller: int = -1
    next_correlation_id: int = 0
    waiting: dict[int, str] = field(default_factory=dict)
    """Correlation id -> what the request was for."""


class ControllerCandidate:
    def __init__(self, config: CandidateConfig) -> None:
        self.config = config
        self.s = _State()

    # ------------------------------------------------------------------ handlers

    def on_start(self, ctx: Ctx) -> Out:
        out = Out()
        self._connect(out)
        return out

    def on_timer(self, ctx: Ctx, key: str) -> Out:
        out = Out()
        if key == "ping" and self.s.session_id:
            self._request(out, ZkPingRequest(self.s.session_id), "ping")
            out.set_timer("ping", self.config.session_timeout_ms // 3)
        elif key == "register" and self.s.state is CandidateState.REGISTERING:
            self._register(out)
        return out

    def on_message(self, ctx: Ctx, inbound: Inbound) -> Out:
        out = Out()
        msg = inbound.message
        if isinstance(msg, WatchedEvent):
            controller_gone = msg.path == CONTROLLER_PATH and msg.type is EventType.NODE_DELETED
            if controller_gone and self.s.state is CandidateState.STANDBY:
                self._transition(CandidateState.ELECTING)
                self._read_epoch(out)
            return out
        purpose = self.s.waiting.pop(inbound.correlation_id, None)
        if purpose is None:
            return out
        if getattr(msg, "error", ZkError.OK) is ZkError.SESSIONEXPIRED:
            self._session_lost(out)
            return out
        match purpose, msg:
            case "connect", ConnectResponse(session_id, timeout_ms):
                self.s.session_id = session_id
                out.set_timer("ping", timeout_ms // 3)
                self._transition(CandidateState.REGISTERING)
                self._register(out)
            case "register", MultiResponse() as resp:
                self._registered(out, resp)
            case "read-epoch", GetDataResponse() as resp:
                self._elect(out, resp)
            case "elect", MultiResponse() as resp:
                self._election_result(out, resp)
            case "read-controller", GetDataResponse() as resp:
                self._observe_controller(out, resp)
            case _:
                pass
        return out

    def snapshot(self) -> dict[str, Any]:
        return {
            "state": self.s.state.value,
            "session_id": self.s.session_id,
            "broker_epoch": self.s.broker_epoch,
            "controller_epoch": self.s.controller_epoch,
            "active_controller": self.s.active_controller,
        }

    # ------------------------------------------------------------------ steps

    def _request(self, out: Out, message: Any, purpose: str) -> None:
        self.s.next_correlation_id += 1
        self.s.waiting[self.s.next_correlation_id] = purpose
        out.send(ZOOKEEPER, message, self.s.next_correlation_id)

    def _transition(self, to: CandidateState) -> None:
        self.s.state = to  # the facts worth logging are the elections, not every step

    def _connect(self, out: Out) -> None:
        self.s.session_id = 0
        self._transition(CandidateState.CONNECTING)
        self._request(out, ConnectRequest(self.config.session_timeout_ms), "connect")

    def _register(self, out: Out) -> None:
        """`createTopLevelPaths` then `registerBroker`, as one multi each (existing paths are fine)."""
        for path, data in (("/brokers", ""), ("/brokers/ids", ""), (EPOCH_PATH, "0")):
            self._request(out, MultiRequest(self.s.session_id, (Op(OpCode.CREATE, path, data),)), "ensure")
        me = f"/brokers/ids/{self.config.broker_id}"
        info = json.dumps({"version": 5, "host": f"broker-{self.config.broker_id}"}, sort_keys=True)
        op = Op(OpCode.CREATE, me, info, ephemeral=True)
        self._request(out, MultiRequest(self.s.session_id, (op,)), "register")

    def _registered(self, out: Out, resp: MultiResponse) -> None:
        if resp.error is not ZkError.OK:
            # NODEEXISTS: the previous session's node is still there until that session expires.
            # Kafka's broker fails to start; here it tries again, as a supervisor would restart it.
            out.emit("broker_registration_failed", broker_id=self.config.broker_id, error=resp.error.name)
            out.set_timer("register", 1000)
            return
        stat = resp.results[0].stat
        self.s.broker_epoch = stat.czxid if stat is not None else -1
        out.emit("broker_registered", broker_id=self.config.broker_id, broker_epoch=self.s.broker_epoch)
        self._transition(CandidateState.ELECTING)
        self._read_epoch(out)

    def _read_epoch(self, out: Out) -> None:
        self._request(out, GetDataRequest(self.s.session_id, EPOCH_PATH), "read-epoch")

    def _elect(self, out: Out, resp: GetDataResponse) -> None:
        if resp.error is not ZkError.OK or resp.stat is None:
            return
        epoch, version = int(resp.data), resp.stat.version
        ops = (
            Op(OpCode.CREATE, CONTROLLER_PATH, json.dumps({"version": 2, "brokerid": self.config.broker_id}), ephemeral=True),
            Op(OpCode.SET_DATA, EPOCH_PATH, str(epoch + 1), version=version),
        )
        self.s.controller_epoch = epoch + 1
        self._request(out, MultiRequest(self.s.session_id, ops), "elect")

    def _election_result(self, out: Out, resp: MultiResponse) -> None:
        if resp.error is ZkError.OK:
            self._transition(CandidateState.ACTIVE)
            self.s.active_controller = self.config.broker_id
            out.emit(
                "controller_elected",
                broker_id=self.config.broker_id,
                controller_epoch=self.s.controller_epoch,
                broker_epoch=self.s.broker_epoch,
            )
            return
        # NODEEXISTS or BADVERSION: ControllerMovedException; another broker is controller.
        self.s.controller_epoch = -1
        self._transition(CandidateState.STANDBY)
        self._request(out, GetDataRequest(self.s.session_id, CONTROLLER_PATH, watch=True), "read-controller")

    def _observe_controller(self, out: Out, resp: GetDataResponse) -> None:
        if resp.error is ZkError.NONODE:
            # It went between our multi and this read: race again.
            self._transition(CandidateState.ELECTING)
            self._read_epoch(out)
            return
        self.s.active_controller = json.loads(resp.data)["brokerid"]

    def _session_lost(self, out: Out) -> None:
        if self.s.state is CandidateState.ACTIVE:
            out.emit("controller_resigned", broker_id=self.config.broker_id, controller_epoch=self.s.controller_epoch)
        out.emit("zk_session_lost", broker_id=self.config.broker_id, session_id=self.s.session_id)
        self.s.controller_epoch = -1
        self.s.active_controller = -1
        self.s.waiting.clear()
        out.cancel_timer("ping")
        self._connect(out)
