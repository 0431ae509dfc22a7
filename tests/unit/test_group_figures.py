"""The figures the example studies read from an event log (sim/report/group_figures.py), on short
histories with the fields docs/log-schema.md gives the events."""

from __future__ import annotations

from typing import Any

from sim.report.group_figures import (
    Handover,
    causes_text,
    commit_errors,
    commits_sent,
    handovers,
    last_commit_ms,
    removal,
    table,
    unowned_ms,
)


def ev(ts_ms: int, node: str, event: str, **fields: Any) -> dict[str, Any]:
    return {"ts_ms": ts_ms, "node": node, "event": event, **fields}


def assigned(ts_ms: int, node: str, member: str, *partitions: str) -> dict[str, Any]:
    return ev(ts_ms, node, "partitions_assigned", member_id=member, partitions=list(partitions), assignment=list(partitions))


def position(ts_ms: int, node: str, tp: str, offset: int) -> dict[str, Any]:
    topic, partition = tp.rsplit("-", 1)
    return ev(ts_ms, node, "fetch_position_set", topic=topic, partition=int(partition), offset=offset, source="committed")


def commit(ts_ms: int, node: str, commit_id: int, answered_ms: int, error: str) -> list[dict[str, Any]]:
    return [
        ev(ts_ms, node, "offset_commit_sent", commit_id=commit_id),
        ev(answered_ms, node, "offset_commit_answered", commit_id=commit_id, error=error),
    ]


def test_the_last_commit_is_the_last_one_answered_none_before_the_moment() -> None:
    """A refused commit does not count, nor one whose answer comes after the moment."""
    events = [*commit(5000, "c1", 1, 5010, "NONE"), *commit(10000, "c1", 2, 10010, "REBALANCE_IN_PROGRESS")]
    events += [*commit(10500, "c2", 3, 10510, "NONE"), *commit(14990, "c1", 4, 15005, "NONE")]
    events.sort(key=lambda e: e["ts_ms"])
    assert last_commit_ms(events, "c1", 15000) == 5000
    assert last_commit_ms(events, "c1", 15010) == 14990
    assert last_commit_ms(events, "c1", 5005) is None


def test_a_handover_names_the_next_owner_when_it_was_assigned_and_where_it_started() -> None:
    """The partitions the node owned at the moment, each with the first other consumer given it
    later; an assignment back to the node itself, or of a partition it did not own, is no
    handover, and a partition never taken is left out."""
    events = [
        assigned(300, "c1", "m1", "T-0", "T-1"),
        assigned(300, "c2", "m2", "T-2"),
        position(310, "c1", "T-0", 0),
        assigned(20_000, "c1", "m1b", "T-0"),
        assigned(21_300, "c2", "m2", "T-1", "T-2"),
        position(21_310, "c2", "T-1", 520),
        position(21_310, "c2", "T-2", 900),
    ]
    assert handovers(events, "c1", 12_000) == [Handover("T-1", "c2", 21_300, 520)]


def test_a_removal_is_found_by_the_member_id_the_node_had_at_the_moment() -> None:
    events = [
        assigned(300, "c1", "m1", "T-0"),
        ev(20_406, "broker-1", "group_member_removed", member_id="m1", reason="session_timeout"),
        assigned(23_000, "c1", "m1b", "T-0"),
        ev(30_000, "broker-1", "group_member_removed", member_id="m1b", reason="leave"),
    ]
    assert removal(events, "c1", 12_000) == (20_406, "session_timeout")
    assert removal(events, "c1", 25_000) == (30_000, "leave")
    assert removal(events, "c2", 12_000) is None


def test_commit_errors_are_listed_once_in_the_order_first_seen() -> None:
    events = [
        *commit(1000, "c1", 1, 1005, "NONE"),
        *commit(2000, "c1", 2, 2005, "DISCONNECTED"),
        *commit(3000, "c2", 3, 3005, "ILLEGAL_GENERATION"),
        *commit(4000, "c1", 4, 4005, "UNKNOWN_MEMBER_ID"),
        *commit(5000, "c1", 5, 5005, "DISCONNECTED"),
    ]
    assert commit_errors(events, "c1") == ["DISCONNECTED", "UNKNOWN_MEMBER_ID"]
    assert commits_sent(events) == 5


def test_causes_and_tables_read_as_the_studies_print_them() -> None:
    assert causes_text({"revoked_without_commit": 5930, "crash_before_commit": 1250}) == (
        "1250 crash_before_commit, 5930 revoked_without_commit"
    )
    assert causes_text({}) == "-"
    assert table([("case", "n"), ("stall", 80), ("zombie", "-")]) == "case    n\nstall   80\nzombie  -"


def _held(ts_ms: int, node: str, *partitions: str, group: str = "g") -> dict[str, Any]:
    return ev(ts_ms, node, "partitions_assigned", group_id=group, member_id=node, partitions=list(partitions), assignment=[])


def test_unowned_time_runs_from_a_release_to_the_next_assignment_per_partition() -> None:
    events = [
        _held(100, "c1", "T-0", "T-1"),
        _held(150, "c2", "T-2"),
        ev(1000, "c1", "partitions_revoked", group_id="g", partitions=["T-0", "T-1"], reason="rebalance"),
        _held(1400, "c2", "T-0"),  # T-0 unowned 400 ms
        ev(2000, "sim", "node_crashed", target="c2"),  # T-0 and T-2 from here to the end
        _held(2500, "c3", "T-1", group="other"),  # another group's assignment changes nothing
        ev(3000, "c1", "partitions_lost", group_id="g", partitions=["T-9"], reason="fenced"),  # not held
    ]
    # T-1: 1000 to 5000; T-0: 400 plus 2000 to 5000; T-2: 2000 to 5000; T-9 was never assigned.
    assert unowned_ms(events, "g", 5000) == 4000 + 400 + 3000 + 3000


def test_a_zombie_and_the_new_owner_both_holding_leave_no_gap() -> None:
    events = [
        _held(0, "c1", "T-0"),
        _held(500, "c2", "T-0"),  # the coordinator gave it away while c1 still held it
        ev(800, "c1", "partitions_lost", group_id="g", partitions=["T-0"], reason="fenced"),
    ]
    assert unowned_ms(events, "g", 1000) == 0
