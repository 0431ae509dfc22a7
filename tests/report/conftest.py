"""A small sweep for the sweep report's tests: tests/sweep/crash_group.toml (one broker, two
consumers, consumer-1 crashes at 4.5 s) under two auto-commit intervals, two seeds each, run on
the suite's shared Spark session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

SWEPT_SCENARIO = Path(__file__).parents[1] / "sweep" / "crash_group.toml"
SWEPT_KEY = "consumers.1.auto.commit.interval.ms"


@pytest.fixture(scope="session")
def swept(tmp_path_factory: pytest.TempPathFactory, spark: Any) -> tuple[Path, dict[str, Any]]:
    from sim.studies.sweep import prepare_sweep_dir, run_sweep  # noqa: PLC0415
    from sim.studies.sweep_plan import plan_sweep  # noqa: PLC0415

    out = tmp_path_factory.mktemp("sweep") / "out"
    prepare_sweep_dir(out)
    plan = plan_sweep(str(SWEPT_SCENARIO), [], [f"{SWEPT_KEY}=1000,5000"], 2)
    return out, run_sweep(plan, out, spark=spark)
