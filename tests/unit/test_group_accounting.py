"""Duplicates and their causes from short event stories, counted by `sim/cluster/accounting.py` (what
summary.json reports) and by the swarm's recount from the log (tests/properties/group_recount.py):
both must give the exact figures each story states. The stories are the cases where the two
disagreed in the group swarm, and the rule that settled each."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from actors.profiles import parse_version
from sim.cluster.accounting import GroupAccounting
from sim.cluster.group_invariants import GroupInvariants
from tests.properties.group_recount import recount

G = "g"


class Story:
    """Events in log order, with the fields docs/log-schema.md gives them."""

    def __init__(self, version: str = "3.9") -> None:
        self.version = version
        self.events: list[dict[str, Any]] = [{"ts_ms": 0, "node": "sim", "event": "run_started", "kafka_version": version}]
        self.now = 0

    def at(self, ts_ms: int) -> Story:
        self.now = ts_ms
        return self

    def _add(self, node: str, event: str, **fields: Any) -> Story:
        self.events.append({"ts_ms": self.now, "node": node, "event": event, **fields})
        return self

    def started(self, node: str, *, auto_commit: bool = True, commit: str = "none", instance: str | None = None) -> Story:
        return self._add(
            node, "consumer_started", group_id=G, group_instance_id=instance, enable_auto_commit=auto_commit, commit=commit
        )

    def high_watermark(self, tp: str, hw: int) -> Story:
        topic, partition = tp.rsplit("-", 1)
        return self._add(
            "broker-1", "replica_offsets_changed", topic=topic, partition=int(partition), role="leader", high_watermark=hw
        )

    def assigned(self, node: str, member: str, generation: int, *partitions: str) -> Story:
        return self._add(
            node, "partitions_assigned", group_id=G, member_id=member, generation_id=generation,
            partitions=list(partitions), assignment=list(partitions),
        )

    def processed(self, node: str, member: str, tp: str, first: int, end: int, *, epoch: int = 0) -> Story:
        topic, partition = tp.rsplit("-", 1)
        return self._add(
            node, "records_processed", group_id=G, member_id=member, generation_id=1, topic=topic,
            partition=int(partition), first_offset=first, end_offset=end, records=end - first, leader_epoch=epoch,
        )

    def revoked(self, node: str, member: str, reason: str, *partitions: str, lost: bool = False) -> Story:
        event = "partitions_lost" if lost else "partitions_revoked"
        return self._add(node, event, group_id=G, member_id=member, generation_id=1, partitions=list(partitions), reason=reason)

    def generation(self, *members: str) -> Story:
        """A new coordinator, which lost the group, forms generation 1 again."""
        return self._add(
            "broker-2", "generation_started", group_id=G, generation_id=1, protocol_name="range",
            leader_member_id=members[0], members=list(members),
        )

    def removed(self, member: str, reason: str) -> Story:
        return self._add("broker-1", "group_member_removed", group_id=G, member_id=member, generation_id=1, reason=reason)

    def poll_timeout(self, node: str, member: str, *, static: bool = False) -> Story:
        return self._add(node, "poll_timeout_expired", group_id=G, member_id=member, generation_id=1, static=static)

    def crashed(self, node: str) -> Story:
        return self._add("sim", "node_crashed", target=node, kind="process")

    def commit_answered(self, node: str, member: str, error: str) -> Story:
        return self._add(node, "offset_commit_answered", group_id=G, member_id=member, commit_id=1, kind="sync", error=error)

    def committed(self, tp: str, offset: int) -> Story:
        topic, partition = tp.rsplit("-", 1)
        return self._add(
            "broker-1", "offset_commit_completed", group_id=G, member_id="m1", generation_id=1,
            offsets=[[topic, int(partition), offset]], error="NONE", group_state="Stable",
        )

    def expired(self, tp: str) -> Story:
        return self._add("broker-1", "offsets_expired", group_id=G, partitions=[tp])

    def reset(self, node: str, member: str, tp: str, offset: int) -> Story:
        topic, partition = tp.rsplit("-", 1)
        return self._add(
            node, "fetch_position_set", group_id=G, member_id=member, generation_id=1, topic=topic,
            partition=int(partition), offset=offset, source="earliest", reason="out_of_range",
        )


def counted(story: Story) -> Iterator[tuple[str, int, dict[str, int]]]:
    """(who counted, duplicates, by cause) from the accounting and from the recount."""
    accounting = GroupAccounting(parse_version(story.version))
    for event in story.events:
        accounting(event)
    summary = accounting.summary()
    yield "sim/cluster/accounting.py", summary["duplicates"], summary["duplicates_by_cause"]
    again = recount(story.events)
    yield "recount", again.duplicates, dict(sorted(again.by_cause.items()))


def two_members(version: str = "3.9", *, auto_commit: bool = True) -> Story:
    """c1 (member m1) owns T-0 and processes [0, 50); c2 (m2) joins idle."""
    return (
        Story(version).started("c1", auto_commit=auto_commit).started("c2", auto_commit=auto_commit).high_watermark("T-0", 1000)
        .at(100).assigned("c1", "m1", 1, "T-0").assigned("c2", "m2", 1)
        .at(200).processed("c1", "m1", "T-0", 0, 50)
    )


STORIES = {
    "a crash: what it processed comes back to the next owner": (
        two_members().at(300).crashed("c1").at(400).assigned("c2", "m2", 2, "T-0").processed("c2", "m2", "T-0", 20, 60),
        30, {"crash_before_commit": 30},
    ),
    "expelled, then crashed: the expulsion moved the partition first": (
        two_members().at(300).removed("m1", "session_timeout").at(350).crashed("c1")
        .at(400).assigned("c2", "m2", 2, "T-0").processed("c2", "m2", "T-0", 20, 60),
        30, {"expelled_session_timeout": 30},
    ),
    "a poll-timeout zombie finishes its batch after the new owner processed it": (
        two_members().at(300).poll_timeout("c1", "m1").at(400).assigned("c2", "m2", 2, "T-0")
        .processed("c2", "m2", "T-0", 50, 90).at(500).processed("c1", "m1", "T-0", 50, 70)
        .revoked("c1", "", "generation_reset", "T-0", lost=True),
        20, {"poll_interval_exceeded": 20},
    ),
    "removed for not rejoining within the rebalance timeout while processing a long batch": (
        two_members().at(300).removed("m1", "not_rejoined").at(400).assigned("c2", "m2", 2, "T-0")
        .processed("c2", "m2", "T-0", 0, 90).at(500).processed("c1", "m1", "T-0", 50, 70),
        70, {"poll_interval_exceeded": 70},
    ),
    "a poll timeout, then unsubscribe(): the poll timeout ended the hold": (
        two_members().at(300).poll_timeout("c1", "m1").at(350).revoked("c1", "", "unsubscribe", "T-0", lost=True)
        .at(400).assigned("c2", "m2", 2, "T-0").processed("c2", "m2", "T-0", 10, 60),
        40, {"poll_interval_exceeded": 40},
    ),
    "a cooperative revocation with manual commits is a revocation without commit": (
        Story().started("c1", auto_commit=False, commit="async").started("c2", auto_commit=False, commit="async")
        .high_watermark("T-0", 1000).at(100).assigned("c1", "m1", 1, "T-0").assigned("c2", "m2", 1)
        .at(200).processed("c1", "m1", "T-0", 0, 50).at(300).revoked("c1", "m1", "cooperative", "T-0")
        .at(400).assigned("c2", "m2", 3, "T-0").processed("c2", "m2", "T-0", 40, 60),
        10, {"revoked_without_commit": 10},
    ),
    "a cooperative revocation with auto-commit is the revocation gap": (
        two_members().at(300).revoked("c1", "m1", "cooperative", "T-0")
        .at(400).assigned("c2", "m2", 3, "T-0").processed("c2", "m2", "T-0", 40, 60),
        10, {"cooperative_revocation_gap": 10},
    ),
    "a manual revocation after a rejected commit: the failed commit comes first": (
        Story().started("c1", auto_commit=False).started("c2", auto_commit=False)
        .high_watermark("T-0", 1000).at(100).assigned("c1", "m1", 1, "T-0").assigned("c2", "m2", 1)
        .at(200).processed("c1", "m1", "T-0", 0, 50).commit_answered("c1", "m1", "REBALANCE_IN_PROGRESS")
        .at(300).revoked("c1", "m1", "rebalance", "T-0")
        .at(400).assigned("c2", "m2", 2, "T-0").processed("c2", "m2", "T-0", 0, 60),
        50, {"commit_failed_or_fenced": 50},
    ),
    "a revocation after the coordinator went away": (
        two_members().commit_answered("c1", "m1", "DISCONNECTED").at(300).revoked("c1", "m1", "rebalance", "T-0")
        .at(400).assigned("c2", "m2", 2, "T-0").processed("c2", "m2", "T-0", 30, 60),
        20, {"coordinator_failover": 20},
    ),
    "records written again at truncated offsets are new records": (
        two_members().at(300).reset("c1", "m1", "T-0", 0)
        .processed("c1", "m1", "T-0", 0, 40).processed("c1", "m1", "T-0", 40, 60, epoch=1),
        40, {"log_truncation_or_reset": 40},
    ),
    "a member the new coordinator never knew: its zombie hold overlaps the new owner's": (
        two_members().at(300).started("c3")
        .at(400).generation("m3").assigned("c3", "m3", 1, "T-0")
        .processed("c3", "m3", "T-0", 0, 30).at(500).processed("c1", "m1", "T-0", 50, 60),
        30, {"coordinator_failover": 30},
    ),
    "3.2.0: an eager revocation with auto-commit is the version bug, even after a failed commit": (
        two_members("3.2.0").commit_answered("c1", "m1", "REBALANCE_IN_PROGRESS").at(300).revoked("c1", "m1", "rebalance", "T-0")
        .at(400).assigned("c2", "m2", 2, "T-0").processed("c2", "m2", "T-0", 30, 60),
        20, {"kafka_14024": 20},
    ),
    "3.2.1 and 3.2.2: records returned while the pre-rebalance commit is awaited": (
        two_members("3.2.2").at(300).revoked("c1", "m1", "rebalance", "T-0")
        .at(400).assigned("c2", "m2", 2, "T-0").processed("c2", "m2", "T-0", 40, 60),
        10, {"kafka_14196": 10},
    ),
    "3.2.3: the bug is fixed, and a failed commit labels the revocation": (
        two_members("3.2.3").commit_answered("c1", "m1", "REBALANCE_IN_PROGRESS").at(300).revoked("c1", "m1", "rebalance", "T-0")
        .at(400).assigned("c2", "m2", 2, "T-0").processed("c2", "m2", "T-0", 30, 60),
        20, {"commit_failed_or_fenced": 20},
    ),
    "3.2.1: the bug is the auto-commit's; manual commits revoke without commit": (
        two_members("3.2.1", auto_commit=False).at(300).revoked("c1", "m1", "rebalance", "T-0")
        .at(400).assigned("c2", "m2", 2, "T-0").processed("c2", "m2", "T-0", 40, 60),
        10, {"revoked_without_commit": 10},
    ),
    "3.2.1: a close is no rebalance": (
        two_members("3.2.1").at(300).revoked("c1", "m1", "close", "T-0")
        .at(400).assigned("c2", "m2", 2, "T-0").processed("c2", "m2", "T-0", 40, 60),
        10, {"commit_failed_or_fenced": 10},
    ),
    "offsets expired, then a reset to the log start: below the expired commit it is the expiry's": (
        two_members().committed("T-0", 30).at(300).crashed("c1").at(400).expired("T-0")
        .at(500).assigned("c2", "m2", 2, "T-0").reset("c2", "m2", "T-0", 0).processed("c2", "m2", "T-0", 0, 60),
        50, {"offsets_expired_reset": 30, "crash_before_commit": 20},
    ),
    "a new owner's reset below the group's commit: below it the reset's, above it the crash's": (
        two_members().committed("T-0", 30).at(300).crashed("c1")
        .at(400).assigned("c2", "m2", 2, "T-0").reset("c2", "m2", "T-0", 0).processed("c2", "m2", "T-0", 0, 60),
        50, {"log_truncation_or_reset": 30, "crash_before_commit": 20},
    ),
    "a commit after the expiry: a later reset below it is the reset's, not the expiry's": (
        two_members().committed("T-0", 30).at(300).crashed("c1").at(400).expired("T-0").committed("T-0", 10)
        .at(500).assigned("c2", "m2", 2, "T-0").reset("c2", "m2", "T-0", 0).processed("c2", "m2", "T-0", 0, 60),
        50, {"log_truncation_or_reset": 10, "crash_before_commit": 40},
    ),
    "unsubscribe() after a failed commit: the unsubscribe, which never commits, labels it": (
        two_members().commit_answered("c1", "m1", "REBALANCE_IN_PROGRESS").at(300).revoked("c1", "m1", "unsubscribe", "T-0")
        .at(400).assigned("c2", "m2", 2, "T-0").processed("c2", "m2", "T-0", 30, 60),
        20, {"unsubscribe_without_commit": 20},
    ),
    "a reset of the position re-reads under a new hold": (
        two_members().at(300).reset("c1", "m1", "T-0", 0).processed("c1", "m1", "T-0", 0, 60),
        50, {"log_truncation_or_reset": 50},
    ),
}


@pytest.mark.parametrize("name", list(STORIES))
def test_each_story_counts_the_same_exact_duplicates_both_ways(name: str) -> None:
    story, total, by_cause = STORIES[name]
    for who, duplicates, causes in counted(story):
        assert (duplicates, causes) == (total, by_cause), who


# ----------------------------------------------------------------------------- commit validity


def _commit_violations(version: str, *, generation: int, member: str, state: str, members: tuple[str, ...] = ("m1",)) -> list[str]:
    """The invariants one accepted commit breaks, in a group whose generation 1 has `members`."""
    accounting = GroupInvariants(parse_version(version))
    accounting({"ts_ms": 10, "node": "broker-1", "event": "generation_started", "group_id": G, "generation_id": 1,
                "protocol_name": "range", "leader_member_id": members[0] if members else None, "members": list(members)})
    found = accounting({"ts_ms": 20, "node": "broker-1", "event": "offset_commit_completed", "group_id": G,
                        "member_id": member, "generation_id": generation, "offsets": [["T", 0, 5]], "error": "NONE",
                        "group_state": state})
    return [v.invariant for v in found]


@pytest.mark.parametrize(
    ("version", "generation", "member", "state", "valid"),
    [
        pytest.param("3.9", 1, "m1", "Stable", True, id="a member of the generation, Stable"),
        pytest.param("3.9", 1, "m1", "PreparingRebalance", True, id="a member of the generation, PreparingRebalance"),
        pytest.param("3.9", 1, "m1", "CompletingRebalance", False, id="CompletingRebalance is REBALANCE_IN_PROGRESS"),
        pytest.param("3.9", 1, "m9", "Stable", False, id="not a member: UNKNOWN_MEMBER_ID"),
        pytest.param("3.9", 0, "m1", "Stable", False, id="another generation: ILLEGAL_GENERATION"),
        pytest.param("3.9", -1, "", "Empty", True, id="generation -1, nobody, Empty"),
        pytest.param("3.2.3", -1, "", "Empty", True, id="3.2.3: generation -1, nobody, Empty"),
        pytest.param("3.9", -1, "", "Stable", False, id="generation -1, nobody, Stable: UNKNOWN_MEMBER_ID"),
        pytest.param("3.9", -1, "m1", "Stable", False, id="a member with generation -1, Stable: ILLEGAL_GENERATION"),
        pytest.param("3.3", -1, "m1", "Empty", True, id="3.3: generation -1 with a member id, Empty (KAFKA-14201)"),
        pytest.param("3.9", -1, "m9", "Empty", True, id="3.9: generation -1 with a member id, Empty (KAFKA-14201)"),
        pytest.param("3.2.3", -1, "m1", "Empty", False, id="3.2.3: generation -1 with a member id, Empty: UNKNOWN_MEMBER_ID"),
        pytest.param("2.8", -1, "m9", "Empty", False, id="2.8: generation -1 with a member id, Empty: UNKNOWN_MEMBER_ID"),
    ],
)
def test_commit_accepted_only_when_valid_follows_validate_offset_commit_by_version(
    version: str, generation: int, member: str, state: str, valid: bool
) -> None:
    """`commit_accepted_only_when_valid` accepts what `validateOffsetCommit` stores in each
    version: a member of the current generation while Stable or PreparingRebalance, or
    generation -1 to an Empty group: from 3.3 (KAFKA-14201) whoever sends it, before only
    without a member id."""
    expected = [] if valid else ["commit_accepted_only_when_valid"]
    assert _commit_violations(version, generation=generation, member=member, state=state) == expected


# ----------------------------------------------------------------------------- rebalances


def test_rebalances_count_only_generations_formed_with_members() -> None:
    """`rebalances` counts the generations a group formed with members: one whose join completed
    with nobody (the group went Empty, `members` []) is no rebalance of any consumer."""
    accounting = GroupAccounting()
    for generation, members in ((1, ["m1", "m2"]), (2, ["m1"]), (3, []), (4, ["m3"])):
        accounting({"ts_ms": generation, "node": "broker-1", "event": "generation_started", "group_id": G,
                    "generation_id": generation, "protocol_name": "range" if members else None,
                    "leader_member_id": members[0] if members else None, "members": members})
    assert accounting.summary()["rebalances"] == 3
