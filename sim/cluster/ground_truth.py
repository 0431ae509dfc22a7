"""The end of a run against ground truth: each partition's final log (the live leader with the
highest epoch, else the longest replica) against what the producers had acknowledged.

`lost_acked` counts acknowledged records no longer in their partition's log (a record
acknowledged below the log start offset was deleted by retention, not lost), `reused_offsets`
acknowledged offsets that now hold another record, `log_duplicates` records written twice, and
`diverged_replicas` replicas whose committed prefixes differ (docs/run-directory.md). The final
logs also go to the count of skipped records (`sim.cluster.skips.FinalLog`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from actors.addresses import BROKER_ACTOR
from actors.broker.partition_log import PartitionLog, partitions_on_disk
from actors.core import Address
from protocols.records import LogEntries, Run, ValueRun
from sim.cluster.log_checks import ValueIndex, at_offsets, diverged_replicas, runs_of, written_twice
from sim.cluster.ranges import spans_of, subtract
from sim.cluster.skips import FinalLog, final_log
from sim.engine.kernel import Kernel

__all__ = ["log_figures", "replica_logs"]


def log_figures(
    specs: Sequence[Mapping[str, Any]], producers: Sequence[Mapping[str, Any]], replicas: dict[str, dict[int, dict[str, Any]]]
) -> tuple[dict[str, Any], dict[str, FinalLog]]:
    """The figures of the final logs, and the final logs: `specs` are the scenario's producers,
    `producers` their actors' states, `replicas` each partition's replicas (`replica_logs`)."""
    # Internal topics (`__consumer_offsets`) hold the coordinator's records, not a producer's.
    replicas = {tp: r for tp, r in replicas.items() if not tp.startswith("__")}
    final: dict[str, Sequence[Run]] = {}
    starts: dict[str, int] = {}
    duplicated: list[dict[str, Any]] = []
    diverged = []
    for tp in sorted(replicas):
        authoritative = _authoritative(replicas[tp])
        final[tp], starts[tp] = runs_of(authoritative), authoritative.start
        duplicated += written_twice(tp, final[tp])
        logs = {b: (r["log"], r["high_watermark"]) for b, r in replicas[tp].items()}
        diverged += [{"partition": tp, **d} for d in diverged_replicas(logs)]
    reused, moved = 0, []
    # Per partition, the offsets whose acknowledged record is still there, or was deleted by
    # retention (below the log start).
    acked: dict[str, list[tuple[int, int]]] = {}
    for k, (p, spec) in enumerate(zip(producers, specs, strict=True)):
        for partition, offset, first, count in p["acked_runs"].runs():
            tp = f"{spec['topic']}-{partition}"
            values = ValueRun(f"producer-{k + 1}:", first, count)
            other, absent = at_offsets(final.get(tp, ()), offset, values)
            reused += other
            acked.setdefault(tp, []).extend(subtract([(offset, offset + count)], spans_of(offset, absent)))
            acked[tp].append((offset, min(offset + count, starts.get(tp, 0))))
            # Offsets below the log start were deleted by retention: their records are not lost.
            absent = [i for i in absent if offset + i >= starts.get(tp, 0)]
            if absent:
                moved.append((tp, offset, values, absent))
    # Only records no longer where they were acknowledged may be lost: look for them anywhere.
    held = (values for runs in final.values() for _, _, values in runs) if moved else ()
    present = ValueIndex(held)
    lost_records = [  # where each was acknowledged: its producer is in its value
        {"partition": tp, "offset": offset + i, "value": values[i]}
        for tp, offset, values, absent in moved
        for i in absent
        if values[i] not in present
    ]
    figures = {
        "produced": sum(p["sent"] for p in producers),
        "acked": sum(p["acked"] for p in producers),
        "lost_acked": len(lost_records),
        "reused_offsets": reused,
        "log_duplicates": sum(len(d["offsets"]) - 1 for d in duplicated),
        "diverged_replicas": diverged,
        "lost_records": lost_records,
        "duplicated_records": duplicated,
    }
    return figures, {tp: final_log(starts[tp], final[tp], acked.get(tp, [])) for tp in final}


def replica_logs(kernel: Kernel, brokers: Iterable[int]) -> dict[str, dict[int, dict[str, Any]]]:
    """Each partition's replicas: a live broker's state, or what a down broker's disk kept."""
    found: dict[str, dict[int, dict[str, Any]]] = {}
    for b in brokers:
        node = f"broker-{b}"
        if kernel.is_up(node):
            partitions = kernel.snapshot(Address(node, BROKER_ACTOR))["partitions"]
        else:
            disk = kernel.disk(node).view()
            partitions = {}
            for tp in partitions_on_disk(disk):
                log = PartitionLog.recover(tp, disk)
                partitions[str(tp)] = {
                    "log_start_offset": log.log_start_offset,
                    "role": "offline",
                    "leader_epoch": -1,
                    "high_watermark": log.high_watermark,
                    "log": log.entries(),
                }
        for tp, view in partitions.items():
            found.setdefault(tp, {})[b] = view
    return found


def _authoritative(replicas: dict[int, dict[str, Any]]) -> LogEntries:
    """The log that counts: the live leader with the highest epoch, else the longest log."""
    leaders = [r for r in replicas.values() if r["role"] == "leader"]
    if leaders:
        return max(leaders, key=lambda r: r["leader_epoch"])["log"]
    return max(replicas.values(), key=lambda r: len(r["log"]))["log"]
