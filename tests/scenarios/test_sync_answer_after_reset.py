"""A SyncGroup answer that waits for the application's next `poll()` while the heartbeat thread
resets the member's generation (here a poll timeout) is dropped: `joinGroupIfNeeded` runs
`onJoinComplete` only for a member still STABLE in its generation, and otherwise rejoins through
`onJoinPrepare` (`resetStateAndRejoin`), which reports the partitions it held lost.

The run is the protocol swarm's seed 12 under cooperative-sticky (tests/properties/group_swarm.py):
consumer-1 stalls from 6959 ms for 4360 ms, past its `max.poll.interval.ms` of 4000; generation 2's
assignment reaches it during the stall, and its poll timer expires at 10957 ms.
"""

from __future__ import annotations

from typing import Any

from sim.cluster.harness import Cluster
from sim.cluster.scenario import parse_scenario
from sim.engine.kernel import HostKind
from tests.properties.group_swarm import protocol_plan


def _consumer_1(events: list[dict[str, Any]]) -> list[tuple[int, str, int, list[str]]]:
    names = ("partitions_assigned", "partitions_lost", "partitions_revoked", "member_reset")
    return [
        (e["ts_ms"], e["event"], e["generation_id"], e.get("partitions", []))
        for e in events
        if e["node"] == "consumer-1" and e["event"] in names and 10_000 <= e["ts_ms"] <= 12_000
    ]


def test_an_assignment_answered_before_a_poll_timeout_is_dropped_and_the_member_rejoins() -> None:
    scenario = parse_scenario(protocol_plan(12, "cooperative"), "swarm.toml", ["run.seed=12"])
    with Cluster(scenario, host=HostKind.DIRECT) as cluster:
        events: list[dict[str, Any]] = []
        cluster.kernel.observe(events.append)
        cluster.run_to_end()
        assert cluster.kernel.invariant_violations == []
    # No assignment out of a generation (-1): what it owned is lost at its next poll, and the
    # assignment generation 2 gave it (T-0 and T-1) never taken.
    assert _consumer_1(events) == [
        (10957, "member_reset", 2, []),
        (11319, "partitions_lost", -1, ["T-2"]),
    ]
