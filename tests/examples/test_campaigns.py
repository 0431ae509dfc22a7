"""The campaign bases in examples/campaigns/ are unsafe configurations that `kafkasim check`
catches; each file in examples/campaigns/shrunk/ is what shrinking one of its failing seeds
wrote. Each shrunk file replays, through the ordinary runner, the check its header names, with
at most 10 fault events, and its base loads as a campaign base."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sim.cluster.harness import check_scenario
from sim.cluster.scenario import parse_scenario
from sim.studies.campaign import campaign_text
from sim.studies.shrink import run_checks

CAMPAIGNS = Path(__file__).resolve().parents[2] / "examples" / "campaigns"
BASES = sorted(CAMPAIGNS.glob("*.toml"))
SHRUNK = sorted((CAMPAIGNS / "shrunk").glob("*.toml"))


@pytest.mark.parametrize("base", BASES, ids=lambda p: p.stem)
def test_a_base_loads_and_draws_faults_over_it(base: Path) -> None:
    text = base.read_text(encoding="utf-8")
    check_scenario(parse_scenario(text, str(base)))
    drawn = parse_scenario(campaign_text(1, None, None, base=(text, str(base))), str(base))
    assert len(drawn.faults) >= 2  # noqa: PLR2004 - the generator draws two to six


def test_every_base_has_a_shrunk_failure() -> None:
    shrunk_from = set()
    for path in SHRUNK:
        header = re.search(r"^# shrunk from seed (\d+) of `kafkasim check examples/campaigns/(\w+)\.toml", path.read_text(), re.MULTILINE)
        assert header is not None, path
        assert path.name == f"{header[2]}-seed-{header[1]}.toml"
        shrunk_from.add(header[2])
    assert shrunk_from == {base.stem for base in BASES}


@pytest.mark.parametrize("path", SHRUNK, ids=lambda p: p.stem)
def test_a_shrunk_failure_replays_its_check(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    check = re.match(r"# kafkasim shrunk scenario: `kafkasim run` of this file fails the check '(.+)'\n", text)
    assert check is not None
    scenario = parse_scenario(text, str(path))
    assert 1 <= len(scenario.faults) <= 10  # noqa: PLR2004
    assert check[1] in run_checks(text, str(path))
