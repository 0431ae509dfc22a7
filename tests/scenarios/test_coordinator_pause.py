"""A group coordinator paused past its ZooKeeper session while a commit's append waits for its
followers (the scripted clients and 1 ms latency of `test_group_coordinator`).

C1 commits T-0 = 5 to broker 1 at 5000: appended at 5002 (offset 1 of `__consumer_offsets-0`,
leader epoch 0), fetched by both followers at 5003, whose next fetches would tell broker 1.
Broker 1 is paused at 5003 for 9000 ms. Its session expires at 10003 and broker 2 leads epoch 2
from 10029 with the record in its log: its coordinator loads the group (T-0 = 5) and stores
C1's commit of T-0 = 10 after it. When broker 1 resumes at 14003, the followers' fetches that
waited for it advance its HW to 2, so its delayed append completes and it answers the old
commit NONE at 14004, as Kafka's `DelayedProduce` would (`offsets.commit.timeout.ms` is raised
to 15000 so the append is still waiting then). Its record is earlier in the log than the
commit of 10: the group's offset stays 10, and `monotonic_committed_offset` holds.
"""

from __future__ import annotations

from protocols.group import OffsetCommitResponse, OffsetFetchResponse
from protocols.errors import ErrorCode
from sim.cluster.harness import Cluster
from sim.cluster.scenario import parse_scenario
from sim.engine.kernel import HostKind
from tests.scenarios.test_group_coordinator import (
    C1_PLAN,
    COORDINATOR_1,
    FETCH,
    FIND,
    SCENARIO,
    _start,
    commit,
    fetched,
    member_id,
    sync,
    where,
)


def test_an_old_leaders_commit_answered_late_does_not_move_the_groups_offset_back() -> None:
    plan = [
        *C1_PLAN,
        (4300, COORDINATOR_1, sync(lambda c: {member_id(c): (0, 1, 2)})),
        (5000, COORDINATOR_1, commit(None, {0: 5})),
        (12500, 2, FIND),
        (13000, 2, commit(None, {0: 10})),
        (15100, 1, FETCH),
    ]
    text = SCENARIO.replace('"duration.ms" = 60000', '"duration.ms" = 60000\ninvariants = "report"')
    scenario = parse_scenario(text, "group-coordinator", ["broker.offsets.commit.timeout.ms=15000"])
    with Cluster(scenario, host=HostKind.DIRECT) as cluster:
        events, clients = _start(cluster, c1=plan)
        cluster.run(until_ms=5003)
        cluster.pause("broker-1", 9000)
        cluster.run(until_ms=15200)
        violations = cluster.kernel.invariant_violations
    c1 = clients["c1"]
    completed = [(e["ts_ms"], e["node"], e["offsets"], e["error"], e["coordinator_epoch"]) for e in where(events, "offset_commit_completed")]
    assert completed == [
        (13005, "broker-2", [["T", 0, 10]], "NONE", 2),
        (14004, "broker-1", [["T", 0, 5]], "NONE", 0),
    ]
    [loaded] = where(events, "group_coordinator_loaded", node="broker-2", partition=0)
    assert (loaded["ts_ms"], loaded["leader_epoch"]) == (10030, 2)
    assert [(t, [p.error_code for p in a.partitions]) for t, a in c1.answers(OffsetCommitResponse)] == [
        (13006, [ErrorCode.NONE]),
        (14005, [ErrorCode.NONE]),
    ]
    # Broker 1 leads again from 15025 (epoch 3) and serves the log's last commit: 10.
    assert [(t, fetched(a)) for t, a in c1.answers(OffsetFetchResponse)] == [(15102, {"T-0": 10, "T-1": -1, "T-2": -1})]
    assert violations == []
