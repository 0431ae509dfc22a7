"""Swarm runs over every behaviour era: random fault plans against a three-broker cluster, with
every invariant checked after every event (tests/properties/swarm.py).

- A configuration Kafka promises to be safe (acks=all, RF 3, min ISR 2, unclean election off,
  2.1 or later, no loss of unflushed data) breaks no invariant, loses no acknowledged record,
  reuses no acknowledged offset and leaves no replicas diverged.
- An unsafe one may lose writes, but only through a cause the run shows (acks=1, an unclean
  election, a power loss, a version before KIP-320), and never breaks the invariants that do not
  depend on the configuration. The swarm must also find such losses: a checker that sees nothing
  proves nothing.

CI runs a few seeds per era; `KAFKASIM_SWARM_EXAMPLES=300 .venv/bin/python -m pytest
tests/properties` runs 300 per era. A failure prints the scenario to rerun with `kafkasim run`.
"""

from __future__ import annotations

import pytest

from tests.properties.swarm import ERAS, STRUCTURAL, Outcome, SwarmConfig, examples, run

SEEDS = range(examples())
SAFE_ERAS = [v for v in ERAS if SwarmConfig(v).promises_no_loss]
SEARCH_WIDTH = 40
"""How many seeds the search for an unsafe configuration's failure tries before it fails."""


UNSAFE_KNOBS = (("1", False, False), ("all", True, False), ("all", False, True), ("1", True, True))
"""(acks, unclean election, power losses): each breaks one condition of Kafka's promise."""


def _unsafe_config(version: str, seed: int) -> SwarmConfig:
    """A version before 2.1 is unsafe as it is; a later one gets unsafe knobs by the seed."""
    if version not in SAFE_ERAS:
        return SwarmConfig(version)
    acks, unclean, power = UNSAFE_KNOBS[seed % len(UNSAFE_KNOBS)]
    return SwarmConfig(version, acks, unclean, ("process", "power_loss") if power else ("process",))


def _explained(config: SwarmConfig, outcome: Outcome) -> bool:
    return (
        config.acks == "1"
        or outcome.unclean_elections > 0
        or outcome.power_losses > 0
        or not SwarmConfig(config.version).promises_no_loss
    )


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("version", SAFE_ERAS)
def test_a_safe_configuration_loses_nothing(version: str, seed: int) -> None:
    outcome = run(SwarmConfig(version), seed)
    checks = outcome.checks
    assert outcome.violations == (), outcome.scenario
    assert (checks["lost_acked"], checks["reused_offsets"], checks["diverged_replicas"]) == (0, 0, []), outcome.scenario
    assert checks["acked"] <= checks["produced"] == 120


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("version", ERAS)
def test_an_unsafe_configuration_loses_writes_only_as_kafka_allows(version: str, seed: int) -> None:
    config = _unsafe_config(version, seed)
    outcome = run(config, seed)
    assert STRUCTURAL.isdisjoint(outcome.violations), outcome.scenario
    if outcome.lost_writes or outcome.violations:
        assert _explained(config, outcome), outcome.scenario


def _diverged(o: Outcome) -> bool:
    return bool(o.checks["diverged_replicas"])


@pytest.mark.parametrize(
    ("config", "first_seed", "found"),
    [
        (SwarmConfig("0.10.2"), 0, lambda o: "weak_isr" in o.violations),
        (SwarmConfig("2.4", acks="1"), 0, lambda o: o.checks["lost_acked"] > 0),
        (SwarmConfig("3.9", acks="1"), 0, lambda o: o.checks["lost_acked"] > 0),
        # a follower still in the ISR comes back from a power loss without its unflushed records:
        # Kafka's known gap (KIP-966), told as a finding, not a violation
        (SwarmConfig("2.4", crash_kinds=("power_loss",)), 0, lambda o: any(f["label"] == "kip_966" for f in o.checks["known_bug_findings"])),
        # replicas diverge before KIP-320 (tests/properties/swarm.py); the search starts near
        # where a scan of 1,000 seeds found it. A deposed leader now takes at most one
        # unreplicated batch per producer connection (muted while it waits for its followers),
        # which makes the case rare: 1,600 seeds of 2.0 did not find it.
        (SwarmConfig("0.11.0"), 250, _diverged),
    ],
    ids=["truncation_to_hw_0.10.2", "acks_1_2.4", "acks_1_3.9", "power_loss_2.4", "unfenced_fetch_0.11"],
)
def test_the_swarm_finds_what_an_unsafe_configuration_loses(config: SwarmConfig, first_seed: int, found) -> None:  # noqa: ANN001
    """Each unsafe knob, searched seed by seed: the checkers must see its failure."""
    seeds = range(first_seed, first_seed + SEARCH_WIDTH)
    first = next((seed for seed in seeds if found(run(config, seed))), None)
    assert first is not None, f"{config}: nothing found in seeds {seeds}"
    assert _explained(config, run(config, first))


CRASH_KINDS = ("process", "power_loss", "disk_loss")
IDEMPOTENT_RUNS = [("3.9", seed) for seed in range(max(50, examples()))] + [
    (version, seed) for version in ERAS if version not in ("0.10.2", "3.9") for seed in SEEDS
]
"""Fifty seeds of 3.9 and the CI's few of each other era with idempotence (0.11 on)."""


@pytest.mark.parametrize(("version", "seed"), IDEMPOTENT_RUNS)
def test_an_idempotent_producer_writes_nothing_twice(version: str, seed: int) -> None:
    """Idempotence on, with crashes of every kind among the faults: no record is written twice,
    whatever the faults; and where Kafka promises it (2.1 or later, only process crashes) no
    acknowledged record is lost either. A power or disk loss may lose acknowledged records in
    Kafka itself (a follower in the ISR comes back without its unflushed tail, KIP-966), and so
    may the truncation protocols before 2.1."""
    outcome = run(SwarmConfig(version, crash_kinds=CRASH_KINDS, idempotence=True), seed)
    checks = outcome.checks
    assert (checks["log_duplicates"], checks["duplicated_records"]) == (0, []), outcome.scenario
    assert STRUCTURAL.isdisjoint(outcome.violations), outcome.scenario
    if outcome.power_losses == 0 and SwarmConfig(version).promises_no_loss:
        assert (checks["lost_acked"], checks["reused_offsets"]) == (0, 0), outcome.scenario
        assert outcome.violations == (), outcome.scenario


@pytest.mark.parametrize(("version", "seed"), IDEMPOTENT_RUNS)
def test_an_idempotent_producers_sends_go_back_only_where_a_leader_lost_the_ones_before(version: str, seed: int) -> None:
    """Jepsen's nonmonotonic-send (sim/cluster/anomalies.py): within one producer id and epoch,
    a batch lands past the one sent before it, unless a leader elected meanwhile lacked that one
    (`lost_acked`, a power or disk loss, the truncations before 2.1)."""
    outcome = run(SwarmConfig(version, crash_kinds=CRASH_KINDS, idempotence=True), seed)
    sends = outcome.checks["anomalies"]["nonmonotonic-send"]
    assert sends["unexplained"] == 0, (outcome.checks["anomaly_cases"], outcome.scenario)
    assert set(sends["by_cause"]) <= {"lost_acked"}, outcome.scenario


def test_a_broker_restarted_before_its_old_session_expired_leads_nothing_until_it_registers() -> None:
    """Regression, seed 34 of 3.9: broker-2 comes back from a power loss while its old ZooKeeper
    session still holds `/brokers/ids/2`, so its registration fails (NODEEXISTS) and is retried.
    The controller still counts the old registration as live and makes broker-2 leader of T-1.
    Had the new process acted on that LeaderAndIsr, it would have led T-1 with an empty log and
    broker-1 would have truncated 30 acknowledged records away. A broker processes requests only
    once registered (KafkaServer), and then that LeaderAndIsr carries a stale broker epoch."""
    outcome = run(SwarmConfig("3.9", crash_kinds=CRASH_KINDS, idempotence=True), 34)
    assert outcome.power_losses > 0
    assert (outcome.checks["lost_acked"], outcome.checks["reused_offsets"]) == (0, 0), outcome.scenario
