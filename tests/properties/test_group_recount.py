"""The group swarm (tests/properties/group_swarm.py): for every run, the duplicates that
summary.json reports, in total and by cause, equal a recount from events.jsonl alone
(tests/properties/group_recount.py), and across the seeds the faults produce duplicates of
several causes, so the comparison is not one of zeros.

It is a safe configuration (3.9, acks=all, replication factor 3, min.insync.replicas 2,
idempotence, `auto.offset.reset=earliest`, processing on the poll thread), so whatever the
faults and the commit strategy, the group skips nothing, and processes nothing the log loses
unless the brokers lost acknowledged records (two power losses moments apart). No poll or send
anomaly of Jepsen's is left without its cause.

CI runs 50 seeds; `KAFKASIM_SWARM_EXAMPLES=200 .venv/bin/python -m pytest
tests/properties/test_group_recount.py` runs 200. A failure prints the seed's scenario, which
`kafkasim run` replays.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.properties.group_recount import Recount, recount_file
from tests.properties.group_swarm import COMMITS, commit_of, examples, plan, run

SEEDS = range(examples())

Outcome = tuple[dict[str, Any], Recount]


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory) -> Callable[[int], Outcome]:
    """Each seed's summary.json and recount, run once for the module."""
    base = tmp_path_factory.mktemp("group-swarm")
    done: dict[int, Outcome] = {}

    def get(seed: int) -> Outcome:
        if seed not in done:
            result = run(seed, base / f"seed{seed}")
            done[seed] = (result.summary, recount_file(Path(result.run_dir) / "events.jsonl"))
        return done[seed]

    return get


@pytest.mark.parametrize("seed", SEEDS)
def test_the_summarys_duplicates_equal_a_recount_from_the_event_log(seed: int, outcome: Callable[[int], Outcome]) -> None:
    summary, recounted = outcome(seed)
    assert summary["failure"] is None, plan(seed)
    assert recounted.consumed == summary["consumed"], plan(seed)
    assert (recounted.duplicates, dict(sorted(recounted.by_cause.items()))) == (
        summary["duplicates"],
        summary["duplicates_by_cause"],
    ), plan(seed)
    assert "unexplained" not in recounted.by_cause, plan(seed)
    # The spans place every duplicate: per cause they add up to the same counts.
    spanned: Counter[str] = Counter()
    for span in summary["duplicate_spans"]:
        assert span["first_offset"] < span["end_offset"] and span["from_ms"] <= span["to_ms"], span
        spanned[span["cause"]] += span["end_offset"] - span["first_offset"]
    assert dict(sorted(spanned.items())) == summary["duplicates_by_cause"], plan(seed)


def test_the_faults_produce_duplicates_of_several_causes(outcome: Callable[[int], Outcome]) -> None:
    """Client faults alone give crashes, expulsions and poll timeouts their duplicates in any
    sample of 20 seeds; the seeds' other faults and configurations add more causes."""
    causes: Counter[str] = Counter()
    for seed in SEEDS:
        causes.update(outcome(seed)[0]["duplicates_by_cause"])
    assert {"crash_before_commit", "expelled_session_timeout", "poll_interval_exceeded"} <= set(causes), causes
    assert len(causes) >= 5, causes  # noqa: PLR2004 - several causes, not one
    assert sum(1 for seed in SEEDS if outcome(seed)[0]["duplicates"]) >= len(SEEDS) // 2, causes


@pytest.mark.parametrize("seed", SEEDS)
def test_a_safe_group_skips_nothing_and_loses_nothing_it_processed(seed: int, outcome: Callable[[int], Outcome]) -> None:
    summary, _ = outcome(seed)
    assert (summary["skipped"], summary["skipped_by_cause"], summary["skip_spans"]) == (0, {}, []), plan(seed)
    # Records the brokers lost (two replicas losing power moments apart: Kafka does not fsync
    # on acknowledging) may have been processed first; nothing else is processed then lost.
    assert summary["processed_then_lost"] == 0 or summary["lost_acked"] > 0, plan(seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_no_poll_or_send_anomaly_is_unexplained(seed: int, outcome: Callable[[int], Outcome]) -> None:
    """Jepsen's poll-skip, nonmonotonic-poll and nonmonotonic-send (sim/cluster/anomalies.py):
    whatever the faults, each one the run shows has its cause in the log."""
    summary, _ = outcome(seed)
    unexplained = [case for case in summary["anomaly_cases"] if case["cause"] is None]
    assert unexplained == [], plan(seed)
    assert all(counts["unexplained"] == 0 for counts in summary["anomalies"].values()), plan(seed)


def test_the_seeds_try_every_commit_strategy() -> None:
    assert {commit_of(seed) for seed in SEEDS} == set(COMMITS)
