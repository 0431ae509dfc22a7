"""A SyncGroup answer that waits for the application's next `poll()` while the heartbeat thread
resets the member's generation (here a poll timeout) is dropped: `joinGroupIfNeeded` runs
`onJoinComplete` only for a member still STABLE in its generation, and otherwise rejoins through
`onJoinPrepare` (`resetStateAndRejoin`), which reports the partitions it held lost.

The run is the revocation-gap timeline (tests/scenarios/test_revocation_gap.py) under
cooperative-sticky, with C1's `max.poll.interval.ms` at 4000 and its application stalled for
5000 ms from its poll at 12700 ms, the one that handles generation 2's JoinGroup answer and
sends its SyncGroup.
"""

from __future__ import annotations

from typing import Any

from sim.cluster.harness import Cluster
from sim.cluster.scenario import parse_scenario
from tests.scenarios.test_revocation_gap import GAP

STALLED = GAP.format(strategy="cooperative-sticky", commit="none").replace(
    '"client.id" = "c1"', '"client.id" = "c1"\n"max.poll.interval.ms" = 4000'
) + '\n[[faults]]\nkind = "stall"\nnode = "consumer-1"\n"at.ms" = 12700\n"duration.ms" = 5000\n'

ALL = [f"T-{n}" for n in range(6)]


def _consumer_1(events: list[dict[str, Any]]) -> list[tuple[int, str, int, list[str]]]:
    names = ("partitions_assigned", "partitions_lost", "partitions_revoked", "member_reset")
    return [
        (e["ts_ms"], e["event"], e["generation_id"], e.get("partitions", []))
        for e in events
        if e["node"] == "consumer-1" and e["event"] in names and 12_000 <= e["ts_ms"] <= 18_000
    ]


def test_an_assignment_answered_before_a_poll_timeout_is_dropped_and_the_member_rejoins() -> None:
    """Generation 2's SyncGroup answer (C1 keeps T-0 to T-2) reaches C1's heartbeat thread at
    12740, while its application stalls. Its poll timer, from the poll at 12700, expires at
    16700: the member resets its generation and leaves. The stall ends at 17700 and the next
    poll drops the answer: the six partitions it still held from generation 1 are lost, not
    revoked, and generation 2's assignment is never taken."""
    events: list[dict[str, Any]] = []
    with Cluster(parse_scenario(STALLED, "stalled.toml")) as cluster:
        cluster.kernel.observe(events.append)
        cluster.run_to_end()
        assert cluster.kernel.invariant_violations == []
    [sync] = [e for e in events if e["node"] == "consumer-1" and e.get("api") == "SyncGroup" and e["event"] == "response_received" and 12_000 < e["ts_ms"] < 13_000]
    assert (sync["ts_ms"], sync["error"]) == (12740, "NONE")
    assert _consumer_1(events) == [
        (16700, "member_reset", 2, []),
        (17700, "partitions_lost", -1, ALL),
    ]
    [rejoin] = [e for e in events if e["node"] == "consumer-1" and e["event"] == "request_sent" and e["api"] == "JoinGroup" and e["ts_ms"] > 17_000][:1]
    assert rejoin["ts_ms"] == 17700
