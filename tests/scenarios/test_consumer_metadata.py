"""The consumer's metadata refreshes are spaced by `retry.backoff.ms` (`Metadata.timeToAllowUpdate`)
even while every fetch tells it its metadata is stale."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from protocols.codec import decode_frame
from protocols.metadata import MetadataRequest
from sim.cluster.harness import Cluster
from sim.cluster.scenario import parse_scenario
from sim.engine.kernel import HostKind
from sim.studies.builtin import STANDARD_WORKLOAD

# broker-1's process crashes at 20 s and restarts at 30 s, before its old ZooKeeper session
# expires: until then the controller still names it leader of its partitions, and it leads none.
RESTART_BEFORE_EXPIRY = ["run.duration.ms=36000", "faults.1.at.ms=20000", "faults.1.restart.after.ms=10000"]


def test_a_consumer_told_its_metadata_is_stale_asks_again_at_most_every_retry_backoff() -> None:
    sent: dict[str, list[int]] = defaultdict(list)
    with Cluster(parse_scenario(STANDARD_WORKLOAD, "standard", RESTART_BEFORE_EXPIRY), host=HostKind.DIRECT) as cluster:
        network = cluster.kernel.network
        transmit = network.transmit

        def counting(ts_ms: int, src: str, dst: str, frame: bytes) -> Any:
            if src.startswith("consumer-") and isinstance(decode_frame(frame).message, MetadataRequest):
                sent[src].append(ts_ms)
            return transmit(ts_ms, src, dst, frame)

        network.transmit = counting  # type: ignore[method-assign]
        cluster.run_to_end()
        assert cluster.kernel.invariant_violations == []
    assert sorted(sent) == ["consumer-1", "consumer-2", "consumer-3", "consumer-4"]
    for times in sent.values():
        assert min(b - a for a, b in zip(times, times[1:])) >= 100
    # While broker-1 leads nothing, every fetch from it says the metadata is stale: each consumer
    # refreshes about ten times a second, not once per round trip.
    stale = [t for times in sent.values() for t in times if 30_000 <= t < 36_000]
    assert 100 <= len(stale) <= 4 * 60
