"""Partition leader election, as pure functions (`PartitionLeaderElectionAlgorithms`,
`Election.scala`, `ReplicaStateMachine.removeReplicasFromIsr`, and the auto rebalance's
imbalance check). Candidates are scanned in assignment order, not ISR order, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from actors.controller.zkdata import NO_LEADER, LeaderIsr
from protocols.types import TopicPartition

__all__ = [
    "Elected",
    "controlled_shutdown_leader",
    "imbalanced_partitions",
    "offline_leader",
    "preferred_leader",
    "without_replica",
]


@dataclass(frozen=True, slots=True)
class Elected:
    leader: int
    isr: tuple[int, ...]
    unclean: bool = False


def offline_leader(
    assignment: tuple[int, ...], isr: tuple[int, ...], live: Collection[int], *, unclean: bool
) -> Elected | None:
    """`offlinePartitionLeaderElection`: the first live replica in the ISR; failing that, with
    unclean election on, the first live replica (its ISR is just itself). None: no leader."""
    for replica in assignment:
        if replica in live and replica in isr:
            return Elected(replica, tuple(r for r in isr if r in live))
    if unclean:
        for replica in assignment:
            if replica in live:
                return Elected(replica, (replica,), unclean=True)
    return None


def preferred_leader(assignment: tuple[int, ...], isr: tuple[int, ...], live: Collection[int]) -> Elected | None:
    """`preferredReplicaPartitionLeaderElection`: the first assigned replica, if it is live and
    in the ISR; the ISR does not change."""
    preferred = assignment[0]
    if preferred in live and preferred in isr:
        return Elected(preferred, isr)
    return None


def controlled_shutdown_leader(
    assignment: tuple[int, ...], isr: tuple[int, ...], live: Collection[int], shutting_down: Collection[int]
) -> Elected | None:
    """`controlledShutdownPartitionLeaderElection`: the first assigned replica that is live, in
    the ISR and not shutting down; the new ISR drops the shutting-down brokers."""
    for replica in assignment:
        if replica in live and replica in isr and replica not in shutting_down:
            return Elected(replica, tuple(r for r in isr if r not in shutting_down))
    return None


def without_replica(current: LeaderIsr, replica: int, controller_epoch: int) -> LeaderIsr | None:
    """`removeReplicasFromIsr` for one partition: None if `replica` is not in the ISR. A leader
    that goes leaves the partition leaderless; the last replica standing stays in the ISR."""
    if replica not in current.isr:
        return None
    leader = NO_LEADER if current.leader == replica else current.leader
    isr = current.isr if len(current.isr) == 1 else tuple(r for r in current.isr if r != replica)
    return current.new_leader_and_isr(leader, isr, controller_epoch)


def imbalanced_partitions(
    assignments: Mapping[TopicPartition, tuple[int, ...]],
    leaders: Mapping[TopicPartition, LeaderIsr],
    live: Collection[int],
    imbalance_percentage: int,
) -> list[TopicPartition]:
    """`checkAndTriggerAutoLeaderRebalance`: for each broker, the share of the partitions it
    is preferred for that it does not lead; above the threshold, those whose preferred replica
    can lead (live and in the ISR) go to preferred election."""
    by_preferred: dict[int, list[TopicPartition]] = {}
    for tp in sorted(assignments):
        if tp in leaders:
            by_preferred.setdefault(assignments[tp][0], []).append(tp)
    chosen: list[TopicPartition] = []
    for broker in sorted(by_preferred):
        partitions = by_preferred[broker]
        not_led = [tp for tp in partitions if leaders[tp].leader != broker]
        if len(not_led) * 100 > imbalance_percentage * len(partitions):
            chosen += [tp for tp in not_led if broker in live and broker in leaders[tp].isr]
    return sorted(chosen)
