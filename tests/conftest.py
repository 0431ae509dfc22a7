"""Shared fixtures. Spark tests are marked `spark` and share one session-scoped SparkSession."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pykka
import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _no_leftover_actors() -> Iterator[None]:
    """Every test leaves no Pykka actor running (a leak would skew the registry tests)."""
    yield
    pykka.ActorRegistry.stop_all()


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from sim.analytics.session import spark_session  # noqa: PLC0415

    session = spark_session(master="local[1]", testing=True)
    yield session
    session.stop()
