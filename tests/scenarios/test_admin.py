"""The operator's `kafka-consumer-groups` commands end to end: the admin client finds the
group's coordinator and sends real requests (DescribeGroups, OffsetFetch, Metadata, ListOffsets,
OffsetCommit, OffsetDelete, DeleteGroups, ListGroups) to the brokers and coordinators.

The base: three brokers, `T` of four partitions, a producer of 1,200 keyed records, one every
10 ms (the last near 12 s), and the group `my-group` of two consumers that both close at 9 s (the
group is then Empty), before the producer is done: the group's committed offsets are behind the
log end.
"""

from __future__ import annotations

from typing import Any

import pytest

from sim.cluster.faults import FaultError
from sim.cluster.harness import Cluster
from sim.cluster.scenario import ScenarioError, parse_scenario
from sim.engine.kernel import HostKind

BASE = """
[run]
name = "admin"
seed = 1
"duration.ms" = {duration}

[kafka]
version = "{version}"

[network]
"latency.min.ms" = 2
"latency.max.ms" = 4

[cluster]
brokers = 3

[broker]
"offsets.topic.num.partitions" = 5

[[topics]]
name = "T"
partitions = 4
"replication.factor" = 3

[[producers]]
topic = "T"
records = 1200
"interval.ms" = 10
keys = 16
"""

GROUP = """
[[consumers]]
"group.id" = "my-group"
topics = ["T"]
count = 2
"session.timeout.ms" = 10000
"auto.commit.interval.ms" = 500
"process.record.ms" = 1
"auto.offset.reset" = "earliest"
"""

CLOSE = """
[[faults]]
kind = "close"
node = "consumer-1"
"at.ms" = 9000

[[faults]]
kind = "close"
node = "consumer-2"
"at.ms" = 9000
"""


def admin(operation: str, at_ms: int, **keys: Any) -> str:
    lines = ["", "[[faults]]", 'kind = "admin"', f'operation = "{operation}"', f'"at.ms" = {at_ms}']
    for key, value in keys.items():
        name = key.replace("_", ".") if key in ("datetime_ms", "shift_by") else key
        lines.append(f'"{name}" = {value!r}'.replace("'", '"'))
    return "\n".join(lines) + "\n"


def scenario(*parts: str, duration: int = 16_000, version: str = "3.9") -> Any:
    return parse_scenario(BASE.format(duration=duration, version=version) + "".join(parts), "admin.toml")


def run(scn: Any) -> tuple[list[dict[str, Any]], Cluster]:
    cluster = Cluster(scn, host=HostKind.DIRECT)  # no Pykka threads or CPU hold to give back
    events: list[dict[str, Any]] = []
    cluster.kernel.observe(events.append)
    cluster.run_to_end()
    assert cluster.kernel.invariant_violations == [], cluster.kernel.invariant_violations[:3]
    return events, cluster


def where(events: list[dict[str, Any]], name: str, **match: Any) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == name and all(e.get(k) == v for k, v in match.items())]


def fields(event: dict[str, Any], *names: str) -> dict[str, Any]:
    return {n: event[n] for n in names}


def committed_at_close(events: list[dict[str, Any]]) -> dict[tuple[str, int], int]:
    found = {}
    for e in where(events, "offset_commit_completed", group_id="my-group", error="NONE"):
        if e["member_id"]:
            for topic, partition, offset in e["offsets"]:
                found[(topic, partition)] = offset
    return found


STOPPED = (281, 281, 113, 224)
"""What `my-group` committed for T-0 to T-3 when both consumers closed at 9 s."""
LOG_END = (375, 375, 150, 300)
"""T-0 to T-3's log end offsets (their HWs) once the producer's 1,200 records are in."""
DATETIME_5000 = (156, 156, 63, 125)
"""The first offsets of T-0 to T-3 their leaders appended at or after 5 s."""
ASSIGNED = {"consumer-1": ["T-0", "T-1"], "consumer-2": ["T-2", "T-3"]}
"""Generation 1's range assignment."""


def offsets(*values: int) -> list[list[Any]]:
    return [["T", p, v] for p, v in enumerate(values)]


def reset_events(events: list[dict[str, Any]]) -> list[tuple[str, Any, Any]]:
    """The reset's events from the admin node and the coordinator's answer to its commit."""
    found = []
    for e in events:
        if e["event"] in ("admin_offsets_reset_sent", "admin_offsets_reset"):
            found.append((e["event"], e["offsets"], e.get("error")))
        elif e["event"] == "offset_commit_completed" and e["member_id"] == "":
            found.append((e["event"], e["offsets"], e["error"]))
    return found


def test_a_stopped_group_is_reset_to_the_log_end() -> None:
    """`--reset-offsets --to-latest --execute` on an Empty group: DescribeGroups says Empty,
    ListOffsets latest answers each partition's HW, and the OffsetCommit at generation -1 with
    no member id is accepted by the coordinator (broker-3) and moves every committed offset
    from where the consumers stopped to the log end."""
    events, cluster = run(scenario(GROUP, CLOSE, admin("reset_offsets", 14000, group="my-group", to="latest", topic="T")))
    cluster.close()
    assert committed_at_close(events) == {("T", p): v for p, v in enumerate(STOPPED)}
    [completed] = where(events, "offset_commit_completed", member_id="")
    assert fields(completed, "node", "generation_id", "group_state") == {
        "node": "broker-3",
        "generation_id": -1,
        "group_state": "Empty",
    }
    assert reset_events(events) == [
        ("admin_offsets_reset_sent", offsets(*LOG_END), None),
        ("offset_commit_completed", offsets(*LOG_END), "NONE"),
        ("admin_offsets_reset", offsets(*LOG_END), "NONE"),
    ]
    [sent] = where(events, "admin_offsets_reset_sent")
    [done] = where(events, "admin_offsets_reset")
    assert (sent["node"], sent["ts_ms"], done["ts_ms"], done["target"]) == ("admin", 14029, 14049, "latest")


def test_the_reset_is_refused_while_the_group_has_members() -> None:
    """The tool resets only an inactive group: with `my-group` Stable at 8 s, DescribeGroups
    answers Stable and the reset ends NON_EMPTY_GROUP with no offsets and no OffsetCommit."""
    events, cluster = run(scenario(GROUP, CLOSE, admin("reset_offsets", 8000, group="my-group", to="earliest", topic="T")))
    cluster.close()
    assert reset_events(events) == [("admin_offsets_reset", [], "NON_EMPTY_GROUP")]
    assert committed_at_close(events) == {("T", p): v for p, v in enumerate(STOPPED)}


@pytest.mark.parametrize(
    ("shift", "expected"),
    [
        (-200, (81, 81, 0, 24)),  # T-2: 113 - 200 is below the log start, 0
        (60, (341, 341, 150, 284)),  # T-2: 113 + 60 is past the log end, 150
    ],
)
def test_shift_by_moves_the_committed_offsets_clamped_to_the_log(shift: int, expected: tuple[int, ...]) -> None:
    """`--shift-by n`: each committed offset plus n, clamped to [log start, log end] as
    `checkOffsetsRange` does (OffsetFetch, then ListOffsets earliest and latest)."""
    events, cluster = run(
        scenario(GROUP, CLOSE, admin("reset_offsets", 14000, group="my-group", to="shift-by", shift_by=shift))
    )
    cluster.close()
    assert reset_events(events)[-1] == ("admin_offsets_reset", offsets(*expected), "NONE")


def first_appended_at_or_after(events: list[dict[str, Any]], ts_ms: int) -> tuple[int, ...]:
    found: dict[int, int] = {}
    for e in where(events, "records_appended", topic="T"):
        if e["ts_ms"] >= ts_ms and e["partition"] not in found:
            found[e["partition"]] = e["base_offset"]
    return tuple(found[p] for p in range(4))


def test_to_datetime_finds_the_first_record_at_or_after_the_time() -> None:
    """`--to-datetime`: ListOffsets by timestamp gives, per partition, the first offset whose
    record's timestamp (its append time on the leader) is at or after 5 s: the base offset of
    the first batch the leader appended from then."""
    events, cluster = run(
        scenario(GROUP, CLOSE, admin("reset_offsets", 14000, group="my-group", to="datetime", datetime_ms=5000))
    )
    cluster.close()
    expected = first_appended_at_or_after(events, 5000)
    assert expected == DATETIME_5000
    assert reset_events(events)[-1] == ("admin_offsets_reset", offsets(*expected), "NONE")


def test_to_datetime_after_the_last_record_falls_back_to_the_log_end() -> None:
    """No record is as recent as 13 s (the producer ended at 12 s): ListOffsets answers
    UNKNOWN_OFFSET and the tool falls back to the latest offset."""
    events, cluster = run(
        scenario(GROUP, CLOSE, admin("reset_offsets", 14000, group="my-group", to="datetime", datetime_ms=13000))
    )
    cluster.close()
    assert reset_events(events)[-1] == ("admin_offsets_reset", offsets(*LOG_END), "NONE")


def test_offset_delete_is_refused_for_a_subscribed_topic_then_accepted_once_empty() -> None:
    """OffsetDelete (KIP-496): while `my-group` is Stable and subscribes to T, each partition is
    GROUP_SUBSCRIBED_TO_TOPIC and nothing is deleted; once Empty, T-0 and T-1 lose their
    offsets (tombstones) and T-2 and T-3 keep theirs."""
    events, cluster = run(
        scenario(
            GROUP,
            CLOSE,
            admin("delete_offsets", 8000, group="my-group", topic="T"),
            admin("delete_offsets", 12000, group="my-group", topic="T", partitions=[0, 1]),
        )
    )
    rows = cluster.lag("my-group")
    cluster.close()
    deleted = [fields(e, "node", "partitions", "error") for e in where(events, "group_offsets_deleted")]
    assert deleted == [
        {"node": "broker-3", "partitions": ["T-0", "T-1", "T-2", "T-3"], "error": "GROUP_SUBSCRIBED_TO_TOPIC"},
        {"node": "broker-3", "partitions": ["T-0", "T-1"], "error": "NONE"},
    ]
    answers = [fields(e, "error", "partition_errors") for e in where(events, "admin_offsets_deleted")]
    assert answers == [
        {
            "error": "GROUP_SUBSCRIBED_TO_TOPIC",
            "partition_errors": [[f"T-{p}", "GROUP_SUBSCRIBED_TO_TOPIC"] for p in range(4)],
        },
        {"error": "NONE", "partition_errors": [["T-0", "NONE"], ["T-1", "NONE"]]},
    ]
    assert [(r["partition"], r["current_offset"]) for r in rows] == [(2, 113), (3, 224)]


def test_delete_group_needs_an_empty_group() -> None:
    """DeleteGroups: NON_EMPTY_GROUP while Stable; once Empty the group goes Dead, its offsets
    with it; a second delete finds no group (GROUP_ID_NOT_FOUND)."""
    events, cluster = run(
        scenario(
            GROUP,
            CLOSE,
            admin("delete_group", 8000, group="my-group"),
            admin("delete_group", 12000, group="my-group"),
            admin("delete_group", 13000, group="my-group"),
        )
    )
    rows = cluster.lag("my-group")
    cluster.close()
    assert [(e["node"], e["error"]) for e in where(events, "group_deleted")] == [
        ("broker-3", "NON_EMPTY_GROUP"),
        ("broker-3", "NONE"),
        ("broker-3", "GROUP_ID_NOT_FOUND"),
    ]
    assert [e["error"] for e in where(events, "admin_group_deleted")] == ["NON_EMPTY_GROUP", "NONE", "GROUP_ID_NOT_FOUND"]
    dead = where(events, "group_state_changed", group_id="my-group", state="Dead")
    assert [(e["ts_ms"] // 1000, e["previous_state"]) for e in dead] == [(12, "Empty")]
    assert rows == []


def test_describe_group_shows_members_hosts_and_assignments_while_stable() -> None:
    """DescribeGroups while Stable: the state, protocol type and the chosen assignor, and each
    member with its client id, host (its node) and assignment; once Empty, no members."""
    events, cluster = run(
        scenario(
            GROUP,
            CLOSE,
            admin("describe_group", 8000, group="my-group"),
            admin("describe_group", 12000, group="my-group"),
        )
    )
    cluster.close()
    stable, empty = where(events, "admin_group_described")
    assert fields(stable, "error", "state", "protocol_type", "protocol") == {
        "error": "NONE",
        "state": "Stable",
        "protocol_type": "consumer",
        "protocol": "range",
    }
    members = sorted((m["client_host"], m["client_id"], m["assignment"]) for m in stable["member_details"])
    assert members == [
        ("consumer-1", "consumer-my-group-1", ASSIGNED["consumer-1"]),
        ("consumer-2", "consumer-my-group-1", ASSIGNED["consumer-2"]),
    ]
    assigned = {e["node"]: e["assignment"] for e in where(events, "partitions_assigned")}
    assert assigned == ASSIGNED
    assert fields(empty, "state", "protocol", "member_details") == {"state": "Empty", "protocol": "", "member_details": []}


def test_list_groups_asks_every_coordinator() -> None:
    """ListGroups goes to every live broker: `audit` (coordinated by broker-1) and `billing`
    (broker-2), made by resets of groups that did not exist (a commit at generation -1 creates
    a standalone group, with no protocol type), and `my-group` (broker-3)."""
    events, cluster = run(
        scenario(
            GROUP,
            CLOSE,
            admin("reset_offsets", 13000, group="audit", to="earliest", topic="T"),
            admin("reset_offsets", 13000, group="billing", to="earliest", topic="T"),
            admin("list_groups", 14000),
        )
    )
    cluster.close()
    assert [e["error"] for e in where(events, "admin_offsets_reset")] == ["NONE", "NONE"]
    [listed] = where(events, "admin_groups_listed")
    assert listed["listed_groups"] == [
        ["audit", "Empty", "", 1],
        ["billing", "Empty", "", 2],
        ["my-group", "Empty", "consumer", 3],
    ]


def test_lag_is_the_log_end_minus_the_committed_offset() -> None:
    """`lag(group)` as `--describe` prints it: with the group Stable at 8 s each partition has
    its owner; at 13 s (closed, producer done) each lags by the log end minus what it
    committed."""
    with Cluster(scenario(GROUP, CLOSE)) as cluster:
        cluster.run(until_ms=8000)
        stable = cluster.lag("my-group")
        cluster.run(until_ms=13000)
        stopped = cluster.lag("my-group")
    assert [(r["partition"], r["host"], r["client_id"]) for r in stable] == [
        (0, "consumer-1", "consumer-my-group-1"),
        (1, "consumer-1", "consumer-my-group-1"),
        (2, "consumer-2", "consumer-my-group-1"),
        (3, "consumer-2", "consumer-my-group-1"),
    ]
    assert [(r["current_offset"], r["log_end_offset"], r["lag"]) for r in stable] == [
        (238, 250, 12),
        (237, 250, 13),
        (96, 100, 4),
        (191, 199, 8),
    ]
    assert len({r["consumer_id"] for r in stable}) == 2
    assert [(r["current_offset"], r["log_end_offset"], r["lag"], r["consumer_id"]) for r in stopped] == [
        (c, e, e - c, None) for c, e in zip(STOPPED, LOG_END, strict=True)
    ]
    assert [r["lag"] for r in stopped] == [94, 94, 37, 76]


def test_the_python_api_answers_once_the_run_goes_on() -> None:
    """The API sends a command now; its outcome is there once its requests are answered."""
    with Cluster(scenario(GROUP, CLOSE)) as cluster:
        cluster.run(until_ms=13000)
        described = cluster.describe_group("my-group")
        listed = cluster.list_groups()
        assert not described.done
        cluster.run(until=lambda: listed.done)
        reset = cluster.reset_offsets("my-group", "shift-by", topic="T", partitions=[2], shift_by=-13)
        cluster.run(until=lambda: reset.done)
        rows = cluster.lag("my-group")
        assert described.result is not None and described.result["state"] == "Empty"
        assert listed.result is not None and listed.result["listed_groups"] == [["my-group", "Empty", "consumer", 3]]
        assert reset.result is not None and reset.result["offsets"] == [["T", 2, 100]]
    assert [r["current_offset"] for r in rows] == [281, 281, 100, 224]


def test_older_versions_lack_the_requests() -> None:
    """OffsetDelete came with 2.4 (KIP-496): on 2.3 the client fails it UNSUPPORTED_VERSION
    without sending it."""
    events, cluster = run(
        scenario(GROUP, CLOSE, admin("delete_offsets", 12000, group="my-group", topic="T"), version="2.3")
    )
    cluster.close()
    assert [e["error"] for e in where(events, "admin_offsets_deleted")] == ["UNSUPPORTED_VERSION"]
    assert where(events, "group_offsets_deleted") == []


def test_a_run_without_commands_has_no_admin_node() -> None:
    with Cluster(scenario(GROUP)) as cluster:
        cluster.run(until_ms=1000)
        assert "admin" not in cluster.nodes
        cluster.describe_group("my-group")
        assert "admin" in cluster.nodes


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        (
            'operation = "purge"\ngroup = "g"',
            "admin.toml: [[faults]] #1: operation: 'purge' is not one of reset_offsets, delete_offsets, "
            "delete_group, describe_group, list_groups",
        ),
        (
            'operation = "reset_offsets"\ngroup = "g"\nto = "yesterday"',
            "admin.toml: [[faults]] #1: to: 'yesterday' is not one of earliest, latest, datetime, shift-by",
        ),
    ],
)
def test_an_unknown_operation_or_target_is_one_line(keys: str, message: str) -> None:
    with pytest.raises(ScenarioError) as info:
        scenario(GROUP, f'\n[[faults]]\nkind = "admin"\n{keys}\n')
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ('operation = "delete_group"', "admin.toml: [[faults]] #1: delete_group needs `group` (a group.id)"),
        (
            'operation = "reset_offsets"\ngroup = "g"\nto = "datetime"',
            "admin.toml: [[faults]] #1: to = 'datetime' needs `datetime.ms`",
        ),
        (
            'operation = "delete_offsets"\ngroup = "g"\ntopic = "U"',
            "admin.toml: [[faults]] #1: topic: no topic named 'U' (the topics are T)",
        ),
        (
            'operation = "delete_offsets"\ngroup = "g"\ntopic = "T"\npartitions = [4]',
            "admin.toml: [[faults]] #1: partitions: T has partitions 0 to 3, got 4",
        ),
    ],
)
def test_a_command_missing_what_it_needs_is_one_line(keys: str, message: str) -> None:
    with pytest.raises(FaultError) as info:
        Cluster(scenario(GROUP, f'\n[[faults]]\nkind = "admin"\n{keys}\n')).close()
    assert str(info.value) == message



def test_a_reset_follows_its_coordinator_to_another_broker() -> None:
    """The coordinator's broker crashes just before the reset: the client's requests to it fail
    (its connections close), it looks the coordinator up again until the controller has moved
    the group's `__consumer_offsets` partition, and the commit lands on the new coordinator."""
    crash = '\n[[faults]]\nkind = "crash"\nnode = "broker-3"\n"at.ms" = 13000\n'
    events, cluster = run(
        scenario(GROUP, CLOSE, crash, admin("reset_offsets", 13100, group="my-group", to="earliest", topic="T"), duration=45_000)
    )
    cluster.close()
    [completed] = where(events, "offset_commit_completed", member_id="")
    [done] = where(events, "admin_offsets_reset")
    assert (completed["node"], completed["error"], done["error"], done["offsets"]) == (
        "broker-1",
        "NONE",
        "NONE",
        offsets(0, 0, 0, 0),
    )
    # broker-3's ZooKeeper session (18 s) expires about 30 s in; the controller then elects
    # broker-1 for the group's partition, and the next lookup finds it.
    assert (done["ts_ms"], where(events, "admin_offsets_reset_sent")[0]["ts_ms"]) == (30163, 30145)


LATER = """
[[consumers]]
"group.id" = "my-group"
topics = ["T"]
"process.record.ms" = 1
"auto.offset.reset" = "earliest"
"start.ms" = 15000
"""
"""A consumer of the group started after the operator's reset."""


def test_a_reset_to_latest_skips_what_the_stopped_group_had_not_read() -> None:
    """The group stopped at STOPPED; the operator moves it to the log end at 12 s. The records
    between are skipped because of the operator (`admin_reset`), the consumer started at 15 s
    reads only what comes after, and nothing is read twice."""
    events, cluster = run(scenario(GROUP, CLOSE, LATER, admin("reset_offsets", 12_000, group="my-group", to="latest"), duration=30_000))
    with cluster:
        checks = cluster.final_checks()
    assert reset_events(events)[-1] == ("admin_offsets_reset", offsets(*LOG_END), "NONE")
    skipped = sum(LOG_END) - sum(STOPPED)
    assert checks["skipped_by_cause"] == {"admin_reset": skipped}
    spans = sorted((s["partition"], s["first_offset"], s["end_offset"], s["consumer"]) for s in checks["skip_spans"])
    assert spans == [(f"T-{p}", STOPPED[p], LOG_END[p], "admin") for p in range(4)]
    assert checks["consumed"] == sum(STOPPED) == checks["acked"] - skipped
    assert checks["duplicates"] == 0


def test_a_reset_backwards_makes_the_group_read_again_because_of_the_operator() -> None:
    """`--shift-by -50` on the stopped group: the consumer started at 15 s reads 50 records of
    each partition a second time, `admin_reset` duplicates, then the rest once; nothing is
    skipped."""
    shift = admin("reset_offsets", 12_000, group="my-group", to="shift-by", shift_by=-50)
    events, cluster = run(scenario(GROUP, CLOSE, LATER, shift, duration=30_000))
    with cluster:
        checks = cluster.final_checks()
    assert reset_events(events)[-1] == ("admin_offsets_reset", offsets(*(c - 50 for c in STOPPED)), "NONE")
    assert checks["duplicates_by_cause"] == {"admin_reset": 200}
    assert checks["consumed"] == checks["acked"] + 200
    assert checks["skipped"] == 0
