"""The fault campaign's generator: pure, seeded, valid, and every kind reachable."""

from __future__ import annotations

import re

import pytest

from sim.cluster.harness import Cluster
from sim.cluster.scenario import parse_scenario
from sim.engine.kernel import HostKind
from sim.studies.campaign_plan import KIND_DOCS, KINDS, PROFILES, SAFE_KINDS, drawn_kinds, enabled_kinds, plan


def test_the_same_seed_and_arguments_give_byte_identical_text():
    for seed in (0, 1, 17, 123456789):
        assert plan(seed) == plan(seed)
        assert plan(seed, "3.9", ("crash", "slow"), safe=True) == plan(seed, "3.9", ("crash", "slow"), safe=True)
    assert plan(1) != plan(2)


def test_plan_draws_from_its_own_random_only():
    import random  # noqa: PLC0415

    random.seed(1)
    first = plan(5)
    random.seed(2)
    assert plan(5) == first


def test_every_kind_is_drawn_by_some_seed_among_the_first_50():
    drawn = {kind for seed in range(50) for kind in drawn_kinds(plan(seed))}
    assert drawn == set(KINDS)


def test_every_kind_has_a_one_line_doc():
    assert len(set(KINDS)) == len(KINDS) == len(KIND_DOCS)
    assert all(doc and "\n" not in doc for _, doc in KIND_DOCS)


def test_kinds_restrict_the_faults_drawn():
    for seed in range(30):
        text = plan(seed, kinds=["session_expiry", "reset_offsets"])
        assert set(drawn_kinds(text)) <= {"session_expiry", "reset_offsets"}
        assert drawn_kinds(text)


def test_a_seed_enables_a_subset_of_the_kinds():
    """Swarm testing: most seeds leave some kinds out, and seeds differ in which."""
    subsets = set()
    for seed in range(30):
        text = plan(seed)
        enabled = enabled_kinds(text)
        assert set(drawn_kinds(text)) <= set(enabled)
        assert 0 < len(enabled) < len(KINDS)
        subsets.add(frozenset(enabled))
    assert len(subsets) == 30  # noqa: PLR2004
    assert enabled_kinds(plan(1, kinds=["slow", "crash"], safe=True)) == ["slow", "crash"]


@pytest.mark.parametrize("safe", [False, True])
def test_each_of_200_seeds_parses(safe):
    for seed in range(200):
        parse_scenario(plan(seed, safe=safe), f"campaign seed {seed}")


@pytest.mark.parametrize("profile", ["0.10.0", "0.11", "2.0", "2.4", *PROFILES, "4.1"])
def test_every_profile_gives_valid_scenarios_of_its_version(profile):
    for seed in range(25):
        scenario = parse_scenario(plan(seed, profile, safe=profile not in ("0.10.0",)), f"campaign seed {seed}")
        assert scenario.get("kafka", "version") == profile


def test_the_consumer_protocol_is_drawn_only_where_the_version_has_it():
    by_version = {profile: any('"group.protocol" = "consumer"' in plan(s, profile) for s in range(40)) for profile in PROFILES}
    assert by_version == {p: p in ("3.7", "3.9", "4.0") for p in PROFILES}


def test_the_safe_flavour_fixes_the_durability_settings_and_still_varies_the_commits():
    commits = set()
    for seed in range(40):
        scenario = parse_scenario(plan(seed, "3.9", safe=True), f"campaign seed {seed}")
        [topic] = scenario.topics
        [producer] = scenario.producers
        [consumer] = scenario.consumers
        assert scenario.get("kafka", "version") == "3.9"
        assert topic["replication.factor"] == 3  # noqa: PLR2004
        assert scenario.get("broker", "min.insync.replicas") == 2  # noqa: PLR2004
        assert scenario.get("broker", "unclean.leader.election.enable") is False
        assert producer["acks"] in ("all", -1)
        assert producer["enable.idempotence"] is True
        assert consumer["processing"] == "poll_thread"
        commits.add((consumer["commit"], consumer["enable.auto.commit"]))
    assert commits == {("none", True), ("sync", False), ("async", False), ("on_revoke", False), ("processed", False)}


def test_an_unknown_kind_or_profile_is_one_line_naming_it():
    with pytest.raises(ValueError, match=r"^unknown fault kind 'meteor' \(known: crash, power_loss, ") as kind:
        plan(1, kinds=["crash", "meteor"])
    assert "\n" not in str(kind.value)
    with pytest.raises(ValueError, match=r"^unknown profile '9\.9': '9\.9' is not supported") as profile:
        plan(1, profile="9.9")
    assert "\n" not in str(profile.value)
    with pytest.raises(ValueError, match=r"^unknown profile 'latest'"):
        plan(1, profile="latest")
    with pytest.raises(ValueError, match=r"^no fault kinds given"):
        plan(1, kinds=[])
    with pytest.raises(ValueError, match=r"^profile '0\.10\.0': the safe flavour needs an idempotent producer"):
        plan(1, profile="0.10.0", safe=True)


def test_a_coordinator_failover_stops_the_broker_coordinating_the_group():
    """The drawn node is the group's coordinator when the fault comes: the preferred leader of
    its `__consumer_offsets` partition, which no earlier fault moved (seeds whose
    `offsets.topic.num.partitions` put it on another broker than partition 0's)."""
    for seed in (0, 10, 13):
        text = plan(seed, "3.9", ["coordinator_failover"], duration_ms=10_000)
        first = re.search(r'"at\.ms" = (\d+)\n"node" = "(broker-\d)"', text.split("[[faults]]", 1)[1])
        assert first is not None
        at, node = int(first.group(1)), first.group(2)
        with Cluster(parse_scenario(text, f"seed {seed}"), host=HostKind.DIRECT) as cluster:
            cluster.run(until_ms=at - 1)
            assert cluster.coordinator_of("campaign") == node


@pytest.mark.parametrize(("seed", "safe"), [(2, False), (3, False), (5, False), (1, True), (7, True)])
def test_a_handful_of_seeds_run_with_no_invariant_violation(seed, safe):
    text = plan(seed, safe=safe, duration_ms=10_000)
    with Cluster(parse_scenario(text, f"campaign seed {seed}"), host=HostKind.DIRECT) as cluster:
        cluster.run_to_end()
        assert cluster.kernel.invariant_violations == []
        summary = cluster.summary()
    assert summary["produced"] > 0
    assert summary["consumed"] > 0
    assert summary["failure"] is None


def test_the_safe_flavour_draws_only_the_faults_kafka_promises_against():
    """Kafka acknowledges before it flushes, so power and disk losses are outside its promise,
    and TCP never duplicates or reorders; `kinds` given explicitly still win."""
    assert set(KINDS) - set(SAFE_KINDS) == {"power_loss", "disk_loss", "duplicate", "reorder"}
    drawn = set()
    for seed in range(60):
        text = plan(seed, safe=True)
        assert set(enabled_kinds(text)) <= set(SAFE_KINDS)
        drawn |= set(drawn_kinds(text))
        assert '"crash.kind" = "power_loss"' not in text
        assert '"crash.kind" = "disk_loss"' not in text
    assert drawn == set(SAFE_KINDS)
    assert set(drawn_kinds(plan(1, safe=True, kinds=["power_loss", "reorder"]))) == {"power_loss", "reorder"}


def test_a_safe_coordinator_failover_crashes_the_process_never_the_power():
    kinds = ["coordinator_failover"]
    unsafe = {m for seed in range(20) for m in re.findall(r'"crash\.kind" = "(\w+)"', plan(seed, "3.9", kinds))}
    safe = {m for seed in range(20) for m in re.findall(r'"crash\.kind" = "(\w+)"', plan(seed, "3.9", kinds, safe=True))}
    assert unsafe == {"process", "power_loss"}
    assert safe == {"process"}


def test_a_controller_failover_aims_at_the_controller_role_and_the_run_resolves_it():
    """The plan names the role; the run stops whichever broker holds /controller when each fault
    starts. Seed 9 draws a crash at 2408 ms, then pauses past the 3 s session at 3179 and 7968
    ms. The crash stops broker 1, the first controller; at 3179 ms its znode is still there (its
    session expires at about 5 s), so the role is vacant and the pause is skipped, saying why;
    broker 3 wins at 5012 ms and the pause at 7968 ms stops it; broker 2 follows."""
    text = plan(9, "3.9", ["controller_failover"], duration_ms=15_000)
    scenario = parse_scenario(text, "seed 9")
    assert [(f["kind"], f["at.ms"], f["node"]) for f in scenario.faults] == [
        ("crash", 2408, "controller"), ("pause", 3179, "controller"), ("pause", 7968, "controller"),
    ]  # fmt: skip
    assert drawn_kinds(text) == ["controller_failover"] * 3
    events: list[dict] = []
    with Cluster(scenario, host=HostKind.DIRECT) as cluster:
        cluster.kernel.observe(events.append)
        cluster.run_to_end()
    hits = [(e["ts_ms"], e["target"]) for e in events if e["event"] in ("node_crashed", "node_paused")]
    elected = [(e["ts_ms"], f"broker-{e['broker_id']}") for e in events if e["event"] == "controller_elected"]
    skipped = [(e["ts_ms"], e["reason"]) for e in events if e["event"] == "fault_skipped"]
    assert hits == [(2408, "broker-1"), (7968, "broker-3")]
    assert elected == [(12, "broker-1"), (5012, "broker-3"), (10012, "broker-2")]
    assert skipped == [(3179, "broker-1 holds /controller but is down")]
