"""The mutation check in the suite: every mutant of Kafka's rules is killed by the tests that
claim its rule, and those tests pass on an unmutated copy. The table is printed at the end of
the run (tests/mutation/conftest.py); `python -m tests.mutation` prints it alone."""

from __future__ import annotations

import pytest

from tests.mutation.harness import RESULTS_KEY, Result, run_all
from tests.mutation.mutants import MUTANTS

pytestmark = pytest.mark.mutation


@pytest.fixture(scope="module")
def results(request: pytest.FixtureRequest) -> dict[str, Result]:
    baseline, found = run_all(MUTANTS, jobs=2)
    results = {"baseline": baseline, **{r.name: r for r in found}}
    request.config.stash[RESULTS_KEY] = results
    return results


def test_every_claimed_test_passes_without_a_mutant(results: dict[str, Result]) -> None:
    baseline = results["baseline"]
    assert baseline.outcome == "passed", baseline.detail


@pytest.mark.parametrize("name", [m.name for m in MUTANTS])
def test_mutant_is_killed(results: dict[str, Result], name: str) -> None:
    result = results[name]
    assert result.outcome == "killed", f"{name}: {result.outcome} ({result.detail})"
