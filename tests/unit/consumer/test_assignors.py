"""The consumer's partition assignors: Kafka's examples, stickiness, generations, properties."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.consumer.assignment import MemberSubscription, RebalanceProtocol, member_order
from actors.consumer.assignors import (
    ASSIGNORS,
    CooperativeStickyAssignor,
    StickyAssignor,
    UnknownAssignor,
    check_strategy,
    default_strategy,
    rebalance_protocol,
)
from protocols.types import TopicPartition

M = MemberSubscription


def tps(topic: str, *partitions: int) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(topic, p) for p in partitions)


def assign(name: str, partitions_per_topic: dict[str, int], *members: MemberSubscription) -> dict:
    return ASSIGNORS[name].assign(partitions_per_topic, list(members))


TWO_BY_THREE = {"t0": 3, "t1": 3}
C0, C1 = M("c0", None, ("t0", "t1")), M("c1", None, ("t0", "t1"))


# --------------------------------------------------------------------------- range, roundrobin


def test_range_gives_each_consumer_consecutive_partitions_of_each_topic() -> None:
    """Two consumers, two topics of three partitions: the first consumer gets two of each."""
    assert assign("range", TWO_BY_THREE, C1, C0) == {
        "c0": tps("t0", 0, 1) + tps("t1", 0, 1),
        "c1": tps("t0", 2) + tps("t1", 2),
    }


def test_roundrobin_deals_all_partitions_in_turn() -> None:
    """The same group under roundrobin alternates over the sorted partitions of both topics."""
    assert assign("roundrobin", TWO_BY_THREE, C1, C0) == {
        "c0": tps("t0", 0, 2) + tps("t1", 1),
        "c1": tps("t0", 1) + tps("t1", 0, 2),
    }


def test_uneven_counts_give_the_first_members_one_more() -> None:
    """Seven partitions over three members: 3, 2, 2, consecutive for range, dealt for roundrobin."""
    members = [M(f"c{i}", None, ("T",)) for i in (2, 0, 1)]
    assert assign("range", {"T": 7}, *members) == {
        "c0": tps("T", 0, 1, 2),
        "c1": tps("T", 3, 4),
        "c2": tps("T", 5, 6),
    }
    assert assign("roundrobin", {"T": 7}, *members) == {
        "c0": tps("T", 0, 3, 6),
        "c1": tps("T", 1, 4),
        "c2": tps("T", 2, 5),
    }


def test_range_shares_a_topic_only_among_its_subscribers() -> None:
    """A topic's partitions are divided among the members subscribed to it, not the group."""
    c0, c1 = M("c0", None, ("t0", "t1")), M("c1", None, ("t1",))
    assert assign("range", {"t0": 2, "t1": 2}, c0, c1) == {
        "c0": tps("t0", 0, 1) + tps("t1", 0),
        "c1": tps("t1", 1),
    }


def test_roundrobin_skips_members_not_subscribed_to_the_topic() -> None:
    """The example of `RoundRobinAssignor`'s javadoc, with three differently subscribed members."""
    members = [M("c0", None, ("t0",)), M("c1", None, ("t0", "t1")), M("c2", None, ("t0", "t1", "t2"))]
    assert assign("roundrobin", {"t0": 1, "t1": 2, "t2": 3}, *members) == {
        "c0": tps("t0", 0),
        "c1": tps("t1", 0),
        "c2": tps("t1", 1) + tps("t2", 0, 1, 2),
    }


def test_every_member_is_in_the_result_even_with_nothing() -> None:
    """A member that gets no partition maps to an empty tuple, under every assignor."""
    members = [M("c0", None, ("T",)), M("c1", None, ("T",)), M("c2", None, ("other",))]
    for name in ASSIGNORS:
        result = assign(name, {"T": 1}, *members)
        assert result == {"c0": tps("T", 0), "c1": (), "c2": ()}, name


def test_static_members_come_first_by_instance_id() -> None:
    """`MemberInfo.compareTo`: instance ids order static members, before every dynamic one."""
    dynamic = M("a-dynamic", None, ("T",))
    static_b, static_a = M("m1", "instance-b", ("T",)), M("m2", "instance-a", ("T",))
    assert member_order([dynamic, static_b, static_a]) == [static_a, static_b, dynamic]
    assert assign("range", {"T": 4}, dynamic, static_b, static_a) == {
        "m2": tps("T", 0, 1),
        "m1": tps("T", 2),
        "a-dynamic": tps("T", 3),
    }


# --------------------------------------------------------------------------- sticky


def test_sticky_keeps_a_balanced_assignment_unchanged() -> None:
    """Members that own a balanced assignment keep it, where range would reshuffle it."""
    members = [M(f"c{i}", None, ("T",), tps("T", i, i + 3), 5) for i in range(3)]
    for name in ("sticky", "cooperative-sticky"):
        assert assign(name, {"T": 6}, *members) == {f"c{i}": tps("T", i, i + 3) for i in range(3)}


def test_sticky_moves_only_the_partitions_of_a_departed_member() -> None:
    """When c1 leaves, its partitions fill c0 and c2, which keep what they had."""
    c0, c2 = M("c0", None, ("T",), tps("T", 0, 3), 5), M("c2", None, ("T",), tps("T", 2, 5), 5)
    assert assign("sticky", {"T": 6}, c0, c2) == {"c0": tps("T", 0, 1, 3), "c2": tps("T", 2, 4, 5)}
    assert assign("range", {"T": 6}, c0, c2) == {"c0": tps("T", 0, 1, 2), "c2": tps("T", 3, 4, 5)}


def test_sticky_gives_a_new_member_the_partitions_above_the_quota() -> None:
    """A joining member takes one partition from each of two full members; the cooperative
    assignor withholds both while their owners still hold them."""
    c0, c1 = M("c0", None, ("T",), tps("T", 0, 1, 2), 3), M("c1", None, ("T",), tps("T", 3, 4, 5), 3)
    c2 = M("c2", None, ("T",))
    assert assign("sticky", {"T": 6}, c0, c1, c2) == {
        "c0": tps("T", 0, 1),
        "c1": tps("T", 3, 4),
        "c2": tps("T", 2, 5),
    }
    assert assign("cooperative-sticky", {"T": 6}, c0, c1, c2) == {
        "c0": tps("T", 0, 1),
        "c1": tps("T", 3, 4),
        "c2": (),
    }


def test_owned_partitions_are_kept_by_partition_number_then_topic() -> None:
    """KAFKA-16277: a member over its quota keeps A-0 and B-0, not the first two it listed."""
    c0 = M("c0", None, ("A", "B"), tps("A", 0, 1) + tps("B", 0, 1), 2)
    c1 = M("c1", None, ("A", "B"))
    assert assign("sticky", {"A": 2, "B": 2}, c0, c1) == {
        "c0": tps("A", 0) + tps("B", 0),
        "c1": tps("A", 1) + tps("B", 1),
    }
    before = StickyAssignor(sort_owned_partitions=False).assign({"A": 2, "B": 2}, [c0, c1])
    assert before == {"c0": tps("A", 0, 1), "c1": tps("B", 0, 1)}


def test_generation_conflicts_go_to_the_newest_claim_or_to_nobody() -> None:
    """p1 goes to the generation-4 claim over the generation-3 one; p2, claimed twice in
    generation 4, is taken from both, assigned anew and, by the cooperative assignor, withheld."""
    c0 = M("c0", None, ("T",), tps("T", 0, 1), 3)
    c1 = M("c1", None, ("T",), tps("T", 1, 2), 4)
    c2 = M("c2", None, ("T",), tps("T", 2, 3), 4)
    assert assign("sticky", {"T": 4}, c0, c1, c2) == {
        "c0": tps("T", 0, 2),
        "c1": tps("T", 1),
        "c2": tps("T", 3),
    }
    assert assign("cooperative-sticky", {"T": 4}, c0, c1, c2) == {
        "c0": tps("T", 0),
        "c1": tps("T", 1),
        "c2": tps("T", 3),
    }


def test_cooperative_sticky_withholds_partitions_their_owner_still_holds() -> None:
    """A new member joins an owner of six partitions: the owner keeps p0-p2, and p3-p5 are
    withheld from the newcomer until the owner has revoked them."""
    c1 = M("c1-4f1e", None, ("T",), tps("T", 0, 1, 2, 3, 4, 5), 1)
    c2 = M("c2-9b0d", None, ("T",))
    assert assign("cooperative-sticky", {"T": 6}, c1, c2) == {"c1-4f1e": tps("T", 0, 1, 2), "c2-9b0d": ()}
    assert assign("sticky", {"T": 6}, c1, c2) == {"c1-4f1e": tps("T", 0, 1, 2), "c2-9b0d": tps("T", 3, 4, 5)}
    # The follow-up rebalance, once c1 has revoked p3-p5, completes the move.
    c1_after = M("c1-4f1e", None, ("T",), tps("T", 0, 1, 2), 2)
    c2_after = M("c2-9b0d", None, ("T",), (), 2)
    assert assign("cooperative-sticky", {"T": 6}, c1_after, c2_after) == {
        "c1-4f1e": tps("T", 0, 1, 2),
        "c2-9b0d": tps("T", 3, 4, 5),
    }


def test_unequal_subscriptions_balance_and_keep_owned_partitions() -> None:
    """With different subscriptions, the only-subscriber of t0 keeps it and t1 goes to the other
    member; the cooperative assignor withholds t1 while c0 still owns it."""
    c0 = M("c0", None, ("t0", "t1"), tps("t0", 0, 1) + tps("t1", 0, 1), 1)
    c1 = M("c1", None, ("t1",))
    assert assign("sticky", {"t0": 2, "t1": 2}, c0, c1) == {"c0": tps("t0", 0, 1), "c1": tps("t1", 0, 1)}
    assert assign("cooperative-sticky", {"t0": 2, "t1": 2}, c0, c1) == {"c0": tps("t0", 0, 1), "c1": ()}


# --------------------------------------------------------------------------- protocols, configuration


def test_each_assignor_names_itself_and_its_protocol() -> None:
    """Only cooperative-sticky supports COOPERATIVE; the names are Kafka's."""
    assert list(ASSIGNORS) == ["range", "roundrobin", "sticky", "cooperative-sticky"]
    assert all(a.name == name for name, a in ASSIGNORS.items())
    assert {name: a.protocol for name, a in ASSIGNORS.items()} == {
        "range": RebalanceProtocol.EAGER,
        "roundrobin": RebalanceProtocol.EAGER,
        "sticky": RebalanceProtocol.EAGER,
        "cooperative-sticky": RebalanceProtocol.COOPERATIVE,
    }
    assert ASSIGNORS["cooperative-sticky"] == CooperativeStickyAssignor()


def test_the_rebalance_protocol_is_the_best_all_assignors_support() -> None:
    """The 3.0 default list rebalances EAGER; cooperative-sticky alone, COOPERATIVE."""
    assert rebalance_protocol(["range", "cooperative-sticky"]) is RebalanceProtocol.EAGER
    assert rebalance_protocol(["cooperative-sticky"]) is RebalanceProtocol.COOPERATIVE
    assert rebalance_protocol(["cooperative-sticky", "sticky"]) is RebalanceProtocol.EAGER


def test_the_default_strategy_by_version() -> None:
    """Range alone before 3.0; range then cooperative-sticky from 3.0."""
    assert default_strategy((0, 10, 1)) == ("range",)
    assert default_strategy((2, 8, 2)) == ("range",)
    assert default_strategy((3, 0, 0)) == ("range", "cooperative-sticky")
    assert default_strategy((3, 9, 0)) == ("range", "cooperative-sticky")
    assert rebalance_protocol(default_strategy((3, 9, 0))) is RebalanceProtocol.EAGER


def test_check_strategy_names_the_unknown_assignor_and_the_valid_ones() -> None:
    """An unknown name is a one-line error listing the valid names; an empty list is refused."""
    check_strategy(["range", "cooperative-sticky"])
    with pytest.raises(UnknownAssignor) as error:
        check_strategy(["range", "CooperativeSticky"])
    assert str(error.value) == (
        "unknown partition.assignment.strategy 'CooperativeSticky'; "
        "valid: range, roundrobin, sticky, cooperative-sticky"
    )
    assert isinstance(error.value, ValueError)
    with pytest.raises(ValueError, match="names no assignor"):
        check_strategy([])
    with pytest.raises(UnknownAssignor):
        rebalance_protocol(["sticki"])


# --------------------------------------------------------------------------- properties


@st.composite
def groups(draw: st.DrawFn, *, equal: bool) -> tuple[dict[str, int], list[MemberSubscription]]:
    """Topics, and members that subscribe to all of them (`equal`) or to some, each owning a
    disjoint share of the partitions in some generation, in any order."""
    partitions_per_topic = draw(st.dictionaries(st.sampled_from(["a", "b", "c"]), st.integers(0, 9), min_size=1))
    topics = sorted(partitions_per_topic)
    ids = draw(st.lists(st.integers(0, 99), min_size=1, max_size=6, unique=True))
    everything = [TopicPartition(t, p) for t in topics for p in range(partitions_per_topic[t])]
    owners = draw(st.lists(st.integers(-1, len(ids) - 1), min_size=len(everything), max_size=len(everything)))
    members = []
    for i, number in enumerate(ids):
        subscribed = tuple(topics) if equal else tuple(draw(st.lists(st.sampled_from(topics), min_size=1, unique=True)))
        owned = [tp for tp, owner in zip(everything, owners, strict=True) if owner == i]
        members.append(
            M(
                f"consumer-{number}",
                draw(st.none() | st.sampled_from(["i0", "i1", "i2"]).map(lambda s, n=number: f"{s}-{n}")),
                subscribed,
                tuple(draw(st.permutations(owned))),
                draw(st.integers(-1, 4)),
            )
        )
    return partitions_per_topic, members


def _subscribed(partitions_per_topic: dict[str, int], members: list[MemberSubscription]) -> list[TopicPartition]:
    topics = sorted({t for m in members for t in m.topics})
    return [TopicPartition(t, p) for t in topics for p in range(partitions_per_topic[t])]


@given(groups(equal=True))
def test_equal_subscriptions_assign_every_partition_once_and_balance(
    group: tuple[dict[str, int], list[MemberSubscription]],
) -> None:
    """Range, roundrobin and sticky give each partition to one member, with counts within one
    of each other (for range, within each topic)."""
    partitions_per_topic, members = group
    everything = _subscribed(partitions_per_topic, members)
    for name in ("range", "roundrobin", "sticky"):
        result = ASSIGNORS[name].assign(partitions_per_topic, members)
        assert list(result) == [m.member_id for m in member_order(members)]
        assert sorted(tp for partitions in result.values() for tp in partitions) == everything
        assert all(list(partitions) == sorted(partitions) for partitions in result.values())
        topics = sorted(partitions_per_topic) if name == "range" else [None]
        for topic in topics:
            counts = [sum(topic in (None, tp.topic) for tp in partitions) for partitions in result.values()]
            assert max(counts) - min(counts) <= 1, (name, topic, result)


@given(groups(equal=True), st.data())
def test_sticky_leaves_a_balanced_complete_assignment_alone(
    group: tuple[dict[str, int], list[MemberSubscription]], data: st.DataObject
) -> None:
    """When the members own every partition, balanced, the sticky assignors change nothing."""
    partitions_per_topic, members = group
    dealt = data.draw(st.permutations(_subscribed(partitions_per_topic, members)))
    members = [replace(m, owned_partitions=tuple(dealt[i :: len(members)])) for i, m in enumerate(members)]
    for name in ("sticky", "cooperative-sticky"):
        result = ASSIGNORS[name].assign(partitions_per_topic, members)
        assert result == {m.member_id: tuple(sorted(m.owned_partitions)) for m in members}


@given(st.booleans().flatmap(lambda equal: groups(equal=equal)))
def test_cooperative_sticky_never_gives_a_partition_its_owner_still_holds(
    group: tuple[dict[str, int], list[MemberSubscription]],
) -> None:
    """No partition goes to a member other than its previous owner while that owner is in the
    group; the rest of the sticky assignment is unchanged."""
    partitions_per_topic, members = group
    owner = {tp: m.member_id for m in members for tp in m.owned_partitions}
    cooperative = ASSIGNORS["cooperative-sticky"].assign(partitions_per_topic, members)
    eager = ASSIGNORS["sticky"].assign(partitions_per_topic, members)
    assert all(n == 1 for n in Counter(tp for ps in cooperative.values() for tp in ps).values())
    for member_id, partitions in cooperative.items():
        assert set(partitions) <= set(eager[member_id])
        assert all(owner.get(tp, member_id) == member_id for tp in partitions)
        for tp in set(eager[member_id]) - set(partitions):
            assert owner[tp] != member_id


@given(groups(equal=False))
def test_unequal_subscriptions_assign_every_partition_to_a_subscriber(
    group: tuple[dict[str, int], list[MemberSubscription]],
) -> None:
    """Every assignor gives each subscribed partition to exactly one member subscribed to its
    topic, and the same input gives the same output."""
    partitions_per_topic, members = group
    everything = _subscribed(partitions_per_topic, members)
    subscriptions = {m.member_id: set(m.topics) for m in members}
    for name in ("range", "roundrobin", "sticky"):
        result = ASSIGNORS[name].assign(partitions_per_topic, members)
        assert sorted(tp for partitions in result.values() for tp in partitions) == everything
        assert all(tp.topic in subscriptions[m] for m, partitions in result.items() for tp in partitions)
        assert ASSIGNORS[name].assign(partitions_per_topic, list(reversed(members))) == result
