"""A scripted actor for scenario tests: it sends what the script says when it says, records
every message it receives, and can answer AlterPartition as the controller would
(`KafkaController.tryProcessAlterPartition`: accept a request with the current leader epoch and
partition epoch, bump the partition epoch). Replication tests drive brokers with it, with
exact timings and no elections; tests/scenarios/test_controller.py runs the real controller."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from actors.addresses import BROKER_ACTOR
from actors.broker.behavior import Broker
from actors.broker.config import BrokerConfig
from actors.core import Address, Ctx, Inbound, Out
from actors.producer.behavior import Producer, ProducerConfig
from actors.profiles import Profile
from protocols.errors import ErrorCode
from protocols.replication import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterPartitionResult,
    LeaderAndIsrPartition,
    LeaderAndIsrRequest,
    ProducePartitionData,
    ProduceRequest,
    ProduceResponse,
)
from sim.cluster.invariants import Invariants
from sim.engine.disk import Disk
from sim.engine.kernel import ActorSpec, HostKind, Kernel, NodeSpec
from sim.engine.network import NetworkConfig

SCRIPT = Address("harness", "script")


@dataclass
class Script:
    """Sends `(at_ms, dst, message, correlation_id)` entries; records what comes back."""

    steps: list[tuple[int, Address, Any, int]] = field(default_factory=list)
    received: list[tuple[int, Address, Any]] = field(default_factory=list)
    partition_epochs: dict[tuple[str, int], int] = field(default_factory=dict)

    def on_start(self, ctx: Ctx) -> Out:
        out = Out()
        for i, (at, *_rest) in enumerate(self.steps):
            out.set_timer(f"step:{i}", max(0, at - ctx.now_ms))
        return out

    def on_timer(self, ctx: Ctx, key: str) -> Out:
        out = Out()
        _, dst, message, correlation_id = self.steps[int(key.split(":")[1])]
        out.send(dst, message, correlation_id)
        return out

    def on_message(self, ctx: Ctx, inbound: Inbound) -> Out:
        out = Out()
        self.received.append((ctx.now_ms, inbound.src, inbound.message))
        if isinstance(inbound.message, AlterPartitionRequest):
            results = []
            for item in inbound.message.partitions:
                key = (item.topic, item.partition)
                current = self.partition_epochs.get(key, item.partition_epoch)
                if item.partition_epoch != current:
                    results.append(AlterPartitionResult(item.topic, item.partition, ErrorCode.INVALID_UPDATE_VERSION))
                    continue
                self.partition_epochs[key] = current + 1
                results.append(
                    AlterPartitionResult(
                        item.topic, item.partition, ErrorCode.NONE, inbound.message.broker_id,
                        item.leader_epoch, item.new_isr, current + 1,
                    )
                )
            out.reply(inbound, AlterPartitionResponse(ErrorCode.NONE, tuple(results)))
        return out

    def snapshot(self) -> dict[str, Any]:
        return {"received": list(self.received)}


def leader_and_isr(
    leader: int, leader_epoch: int, isr: tuple[int, ...], replicas: tuple[int, ...] = (1, 2),
    *, controller_epoch: int = 1, partition_epoch: int = 0, topic: str = "T", partition: int = 0,
) -> LeaderAndIsrRequest:
    return LeaderAndIsrRequest(
        controller_id=0,
        controller_epoch=controller_epoch,
        partitions=(
            LeaderAndIsrPartition(
                topic, partition, controller_epoch, leader, leader_epoch, isr, partition_epoch, replicas
            ),
        ),
    )


def produce(values: tuple[str, ...], acks: int = -1) -> ProduceRequest:
    """A Produce of `values` to T-0, as a script step sends it."""
    return ProduceRequest(acks, 30000, (ProducePartitionData("T", 0, values),))


def produce_results(script: Script) -> list[tuple[int, ErrorCode, int]]:
    """Every Produce answer the script received: (time, error, base offset)."""
    return [
        (t, m.partitions[0].error_code, m.partitions[0].base_offset)
        for t, _, m in script.received
        if isinstance(m, ProduceResponse)
    ]


def build(
    version: str,
    brokers: tuple[int, ...],
    script: Script,
    *,
    disks: dict[int, Disk] | None = None,
    with_controller: bool = True,
    host: HostKind = HostKind.DIRECT,
    fail_on_violation: bool = True,
    producers: tuple[ProducerConfig, ...] = (),
    **settings: Any,
) -> Kernel:
    """Brokers `broker-N` (latency exactly 1 ms, so times are exact), the script, and real
    producers (`producer-N`, with fixed leaders) if given."""
    kernel = Kernel(seed=1, run_id="scenario", network=NetworkConfig(1, 1), host=host)
    kernel.observe(Invariants())  # every scenario runs with the invariants checked after each event
    kernel.fail_on_violation = fail_on_violation
    profile = Profile.for_version(version)
    kernel.add_node(NodeSpec("harness", (ActorSpec("script", lambda: script),)))
    for b in brokers:
        config = BrokerConfig.for_profile(
            b, profile, controller=SCRIPT if with_controller else None, **settings
        )
        kernel.add_node(
            NodeSpec(f"broker-{b}", (ActorSpec(BROKER_ACTOR, lambda c=config: Broker(c)),)),
            disk=(disks or {}).get(b),
        )
    for config in producers:
        kernel.add_node(NodeSpec(config.name, (ActorSpec("producer", lambda c=config: Producer(c)),)))
    return kernel


def partition_view(kernel: Kernel, broker: int, tp: str = "T-0") -> dict[str, Any]:
    return kernel.snapshot(Address(f"broker-{broker}", BROKER_ACTOR))["partitions"][tp]


def seeded_disk(
    values: list[tuple[str, int]],
    *,
    high_watermark: int,
    flushed: int | None = None,
    tp: str = "T-0",
) -> Disk:
    """A broker disk holding one partition: records `(value, leader_epoch)`, the first `flushed`
    of them durable (all by default), the HW checkpoint and the epoch checkpoint they imply."""
    from actors.broker.partition_log import PartitionLog, log_file
    from actors.core import Flush, Out
    from protocols.replication import RecordBatch
    from protocols.types import TopicPartition

    topic, _, partition = tp.rpartition("-")
    log = PartitionLog(TopicPartition(topic, int(partition)))
    records = tuple(RecordBatch(i, epoch, (value,), size_bytes=70) for i, (value, epoch) in enumerate(values))
    durable = len(records) if flushed is None else flushed
    out = Out()
    log.append_as_follower(out, records[:durable])
    out.append(Flush(log_file(log.tp)))
    log.append_as_follower(out, records[durable:])
    log.update_high_watermark(high_watermark)
    log.checkpoint_high_watermark(out)
    disk = Disk()
    for command in out:
        disk.apply(command)  # type: ignore[arg-type]
    return disk


def log_values(kernel: Kernel, broker: int, tp: str = "T-0") -> list[str]:
    return [value for _, _, value in partition_view(kernel, broker, tp)["log"]]


def final_replicas(kernel: Kernel, brokers: tuple[int, ...], tp: str = "T-0") -> dict[int, tuple[list[tuple[int, int, str]], int]]:
    """Each replica's (log, HW), the input of `sim.cluster.invariants.diverged_replicas`."""
    views = {b: partition_view(kernel, b, tp) for b in brokers}
    return {b: ([tuple(r) for r in v["log"]], v["high_watermark"]) for b, v in views.items()}
