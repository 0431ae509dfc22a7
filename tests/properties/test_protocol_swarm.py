"""The protocol swarm: the group swarm's random faults and membership changes
(tests/properties/group_swarm.py) under each rebalance protocol on Kafka 4.0 (eager range,
cooperative-sticky, static members, KIP-848's consumer protocol), 50 seeds each, the same seed
drawing the same commits and faults for every protocol.

For every run: the invariants checked after every event hold (no partition with two owners
once each has acted on its latest assignment, no partition epoch handed out twice, no member
epoch going back without a fence, no commit accepted against the fencing rules; 4.0 has none
of the version bugs that would excuse one), and the duplicates that summary.json reports equal
a recount from events.jsonl alone (tests/properties/group_recount.py); and no poll or send
anomaly of Jepsen's is left without its cause.

`KAFKASIM_SWARM_EXAMPLES=200` runs 200 seeds per protocol. A failure prints the seed's
scenario, which `kafkasim run` replays.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.properties.group_recount import Recount, recount_file
from tests.properties.group_swarm import PROTOCOLS, examples, protocol_plan, run

SEEDS = range(examples())

Outcome = tuple[dict[str, Any], Recount]


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, int], Outcome]:
    """Each (protocol, seed)'s summary.json and recount, run once for the module."""
    base = tmp_path_factory.mktemp("protocol-swarm")
    done: dict[tuple[str, int], Outcome] = {}

    def get(protocol: str, seed: int) -> Outcome:
        if (protocol, seed) not in done:
            result = run(seed, base / f"{protocol}-seed{seed}", protocol)
            done[(protocol, seed)] = (result.summary, recount_file(Path(result.run_dir) / "events.jsonl"))
        return done[(protocol, seed)]

    return get


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_protocol_keeps_the_invariants_and_the_recount_agrees(
    protocol: str, seed: int, outcome: Callable[[str, int], Outcome]
) -> None:
    summary, recounted = outcome(protocol, seed)
    scenario = protocol_plan(seed, protocol)
    assert summary["failure"] is None, scenario
    # A broker back from a power or disk loss inside the ISR is Kafka's known gap (KIP-966),
    # told as a finding: the plans crash brokers of every kind.
    known = [f for f in summary["known_bug_findings"] if f["label"] != "kip_966"]
    assert (summary["invariant_violations"], known) == ([], []), scenario
    assert recounted.consumed == summary["consumed"], scenario
    assert (recounted.duplicates, dict(sorted(recounted.by_cause.items()))) == (
        summary["duplicates"],
        summary["duplicates_by_cause"],
    ), scenario
    assert "unexplained" not in recounted.by_cause, scenario


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_no_poll_or_send_anomaly_is_unexplained_under_any_protocol(
    protocol: str, seed: int, outcome: Callable[[str, int], Outcome]
) -> None:
    """Jepsen's poll-skip, nonmonotonic-poll and nonmonotonic-send (sim/cluster/anomalies.py)
    have their cause in the log under every protocol: records processed after the consumer
    protocol's background thread gave their partition up count in the hold they were read in."""
    summary, _ = outcome(protocol, seed)
    assert [case for case in summary["anomaly_cases"] if case["cause"] is None] == [], protocol_plan(seed, protocol)


def test_the_protocols_differ_under_the_same_faults(outcome: Callable[[str, int], Outcome]) -> None:
    """Not a comparison of zeros: every protocol rebalances and repeats records under the
    seeds' faults, and they do not all count alike."""
    rebalances: dict[str, int] = {}
    duplicates: dict[str, Counter[str]] = {}
    for protocol in PROTOCOLS:
        rebalances[protocol] = sum(outcome(protocol, seed)[0]["rebalances"] for seed in SEEDS)
        duplicates[protocol] = Counter()
        for seed in SEEDS:
            duplicates[protocol].update(outcome(protocol, seed)[0]["duplicates_by_cause"])
    assert all(rebalances[p] > 0 and duplicates[p] for p in PROTOCOLS), (rebalances, duplicates)
    assert len(set(rebalances.values())) > 1, rebalances
    # Static members come back to their own partitions without a rebalance: fewer than eager.
    assert rebalances["static"] < rebalances["eager"], rebalances
