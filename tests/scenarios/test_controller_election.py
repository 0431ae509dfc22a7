"""Controller election through the ZooKeeper model (`KafkaController.elect`): the first broker to create
/controller wins, the multi bumps /controller_epoch, a paused controller loses its session and
resigns when it wakes."""

from __future__ import annotations

from typing import Any

from actors.controller.behavior import Controller, ControllerConfig
from actors.core import Address
from actors.zookeeper.behavior import ZooKeeper
from sim.cluster.invariants import Invariants
from sim.engine.kernel import ActorSpec, HostKind, Kernel, NodeSpec
from sim.engine.network import NetworkConfig

BROKERS = (1, 2, 3)


def _cluster(seed: int = 1) -> tuple[Kernel, list[dict[str, Any]]]:
    kernel = Kernel(seed=seed, run_id="election", network=NetworkConfig(1, 3), host=HostKind.PYKKA)
    events: list[dict[str, Any]] = []
    kernel.observe(lambda e: events.append(e) if e["event"] in WATCHED else None)
    kernel.observe(Invariants())  # single_controller_per_epoch after every event
    kernel.add_node(NodeSpec("zookeeper", (ActorSpec("zookeeper", ZooKeeper),)))
    for b in BROKERS:
        config = ControllerConfig(b)
        kernel.add_node(NodeSpec(f"broker-{b}", (ActorSpec("controller", lambda c=config: Controller(c)),)))
    return kernel, events


WATCHED = {"controller_elected", "controller_resigned", "broker_registered", "zk_session_expired", "zk_session_lost"}


def _candidate(kernel: Kernel, b: int) -> dict[str, Any]:
    return kernel.snapshot(Address(f"broker-{b}", "controller"))


def test_one_broker_wins_the_first_election_with_epoch_1() -> None:
    kernel, events = _cluster()
    kernel.run(1000)
    elected = [(e["broker_id"], e["controller_epoch"]) for e in events if e["event"] == "controller_elected"]
    assert len(elected) == 1 and elected[0][1] == 1
    winner = elected[0][0]
    states = {b: _candidate(kernel, b) for b in BROKERS}
    assert {b: s["state"] for b, s in states.items()} == {b: "active" if b == winner else "standby" for b in BROKERS}
    assert {s["active_controller"] for s in states.values()} == {winner}
    epochs = sorted(s["broker_epoch"] for s in states.values())
    assert len(set(epochs)) == 3  # the czxid of each registration
    znodes = kernel.snapshot(Address("zookeeper", "zookeeper"))["znodes"]
    assert (znodes["/controller_epoch"]["data"], znodes["/controller_epoch"]["version"]) == ("1", 1)
    assert sorted(znodes["/brokers/ids"]["children"]) == ["1", "2", "3"]
    kernel.shutdown()


def test_a_paused_controller_loses_its_session_and_resigns_when_it_wakes() -> None:
    """S11, steps 1, 2 and 5 in part: the controller pauses for 25 s; its session expires at
    about 18 s, /controller goes, another broker wins epoch 2; the old controller wakes, finds
    its session expired, resigns, registers with a new broker epoch and stands by."""
    kernel, events = _cluster()
    kernel.run(1000)
    [first] = [e for e in events if e["event"] == "controller_elected"]
    old = first["broker_id"]
    old_epoch = _candidate(kernel, old)["broker_epoch"]
    kernel.pause(f"broker-{old}", 25000)
    kernel.run(40000)
    elected = [(e["ts_ms"], e["broker_id"], e["controller_epoch"]) for e in events if e["event"] == "controller_elected"]
    assert len(elected) == 2
    t_second, new, epoch = elected[1]
    assert (epoch, new != old) == (2, True)
    [expired] = [e for e in events if e["event"] == "zk_session_expired"]
    assert 18000 <= expired["ts_ms"] < 19100 and t_second > expired["ts_ms"]
    [resigned] = [e for e in events if e["event"] == "controller_resigned"]
    assert (resigned["broker_id"], resigned["controller_epoch"], resigned["ts_ms"] >= 26000) == (old, 1, True)
    state = _candidate(kernel, old)
    assert (state["state"], state["active_controller"]) == ("standby", new)
    assert state["broker_epoch"] > old_epoch  # a bounced broker: a new broker epoch (KIP-380)
    kernel.shutdown()


def test_election_is_deterministic() -> None:
    def run(seed: int) -> str:
        kernel, _ = _cluster(seed)
        kernel.run(30000)
        kernel.shutdown()
        return kernel.event_log.digest

    assert run(4) == run(4)
