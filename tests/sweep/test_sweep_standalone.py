"""`kafkasim sweep --master spark://...` against a standalone Spark cluster on loopback: a master
and one worker (one core) started from the installed pyspark's jars, since pip's pyspark ships no
`sbin/start-master.sh`. The runs execute in the worker's executor; the run directories are on
this machine, where the driver reads them."""

from __future__ import annotations

import csv
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
COMMIT = "consumers.1.auto.commit.interval.ms"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(log: Path, text: str, process: subprocess.Popen[bytes], timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            break
        time.sleep(0.3)
    pytest.fail(f"{log.name}: no {text!r} ({'exited' if process.poll() is not None else 'timed out'}):\n{log.read_text()[-2000:]}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def standalone(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A master and a worker; yields the master's URL and the worker's work directory."""
    java = shutil.which("java")
    if java is None:
        pytest.skip("no java on PATH")
    import pyspark  # noqa: PLC0415

    home = Path(pyspark.__file__).parent
    # The worker builds its executors' command from SPARK_HOME's jars; without spark-class's
    # environment it needs the Scala version said.
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_SCALA_VERSION": "2.13", "SPARK_LOCAL_IP": "127.0.0.1"}
    base = [java, "-Xmx256m", "-cp", f"{home / 'jars'}/*", "-Dspark.master.rest.enabled=false"]
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    work = tmp_path / "work"
    processes: list[subprocess.Popen[bytes]] = []
    try:
        master_log = tmp_path / "master.log"
        with master_log.open("wb") as out:
            master = subprocess.Popen(
                [*base, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port), "--webui-port", "0"],
                stdout=out, stderr=subprocess.STDOUT, env=env,
            )
        processes.append(master)
        _wait_for(master_log, "I have been elected leader", master)
        worker_log = tmp_path / "worker.log"
        with worker_log.open("wb") as out:
            worker = subprocess.Popen(
                [*base, "org.apache.spark.deploy.worker.Worker", url, "--cores", "1", "--memory", "1g",
                 "--webui-port", "0", "--work-dir", str(work)],
                stdout=out, stderr=subprocess.STDOUT, env=env,
            )
        processes.append(worker)
        _wait_for(worker_log, "Successfully registered with master", worker)
        yield url, work
    finally:
        for process in reversed(processes):  # the worker first: it stops its executors
            _stop(process)


def test_a_sweep_on_a_standalone_cluster(standalone: tuple[str, Path], tmp_path: Path) -> None:
    url, work = standalone
    (tmp_path / "s.toml").write_text((Path(__file__).parent / "crash_group.toml").read_text())
    result = subprocess.run(
        [sys.executable, "-m", "sim.cli", "sweep", "s.toml", "--seeds", "2", "--grid", f"{COMMIT}=1000,5000",
         "--master", url, "--out", "sweep"],
        capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:2] == [
        f"c1 {COMMIT}=1000: duplicates 0 (95% CI 0 to 0), n 2",
        f"c2 {COMMIT}=5000: duplicates 152 (95% CI 0 to 2083), n 2",
    ]
    out = tmp_path / "sweep"
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["c1-seed1", "c1-seed2", "c2-seed1", "c2-seed2"]
    with (out / "runs.csv").open() as f:
        assert [(r["config_id"], r["seed"], r["duplicates"]) for r in csv.DictReader(f)] == [
            ("c1", "1", "0"), ("c1", "2", "0"), ("c2", "1", "0"), ("c2", "2", "304"),
        ]
    assert (out / "configs.parquet").is_dir()
    assert (out / "report.html").is_file()
    # The tasks ran in the worker's executor, not in the driver.
    (app,) = work.glob("app-*")
    assert list(app.iterdir())
