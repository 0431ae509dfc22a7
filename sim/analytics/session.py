"""The SparkSession: embedded `local[*]` by default, any cluster through `master`.

Quiet by default: Spark's own log goes to ERROR through a log4j2 file written
beside the run, the console progress bar is off, and the driver binds to loopback. Workers run
this interpreter (`PYSPARK_PYTHON`), so they can import the project.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["spark_session", "together"]

_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.pygw.name = org.apache.spark.api.python.PythonGatewayServer
logger.pygw.level = error
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
"""


def _log4j_file(level: str) -> Path:
    path = Path(tempfile.gettempdir()) / f"kafkasim-log4j2-{level}.properties"
    text = _LOG4J2.replace("level = error", f"level = {level}")
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


def spark_session(master: str = "local[*]", *, testing: bool = False, quiet: bool = False) -> Any:
    """A SparkSession for the analytics (one per process; `getOrCreate` reuses it).

    `quiet`: Spark logs only fatal errors, not its other errors (the command line turns a failure
    into one line of its own, and an interrupt's shutdown would log stack traces)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession  # noqa: PLC0415 - the JVM is only paid for when used

    level = "fatal" if quiet else "error"
    java_opts = f"-Dlog4j2.configurationFile=file:{_log4j_file(level)}"
    # The client compiler only. Spark's planning code is large and each query runs much of it
    # once: the server compiler spends most of a first run, and 40% of a second, compiling it
    # on a two-core machine. The client compiler's code runs the jobs' loops slower, which
    # the second run of the analytics bench (5 M events) pays back exactly; the first run,
    # which is every `kafkasim analyze`, takes 30% less. Its code is larger: a larger cache.
    java_opts += " -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m"
    if testing:
        java_opts += " -XX:+UseSerialGC"
    else:
        # The throughput collector: G1's concurrent marking takes a core from two-core
        # machines, and the jobs' own pauses are short (15% faster on the analytics bench).
        java_opts += " -XX:+UseParallelGC"
    builder = (
        SparkSession.builder.master(master)
        .appName("kafkasim")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2" if master.startswith("local") else "200")
        .config("spark.driver.extraJavaOptions", java_opts)
        .config("spark.sql.execution.pythonUDF.arrow.enabled", "false")
        # The formatted plan each query logs for the UI costs more than the query on deep plans.
        .config("spark.sql.ui.explainMode", "simple")
        # The jobs compile a few hundred distinct stages; with Spark's default cache of 100
        # generated classes a warm run compiles most of them again.
        .config("spark.sql.codegen.cache.maxEntries", "2000")
        # Runtime Bloom filters are for large tables joined with selective small ones; the jobs'
        # checkpoints carry no size Spark trusts, so it added one aggregation job per join.
        .config("spark.sql.optimizer.runtime.bloomFilter.enabled", "false")
        # Tungsten's memory page. Spark sizes it from the heap and the cores (16 MB for a 2 GB
        # driver on two cores), and a broadcast hash table keyed by anything but one long
        # takes a whole page, in the driver and in each executor that reads it. So every
        # broadcast of a few hundred rows held 16 MB until Spark's cleaner dropped it: the
        # old generation filled with them and brought full collections (0.8 to 1 GB live
        # after each, against 0.2 to 0.3 GB with 1 MB pages).
        .config("spark.buffer.pageSize", "1m")
    )
    if testing:
        builder = builder.config("spark.default.parallelism", "1").config("spark.driver.memory", "1g")
    elif master.startswith("local"):
        # The tasks run in the driver's JVM. In Spark's default heap, 1 GB, the jobs'
        # checkpointed steps bring full collections (the analytics bench's warm run takes
        # 8.4 s with 2 GB, 9.6 to 10.0 s without); `analyze` also caches every event it reads.
        builder = builder.config("spark.driver.memory", "2g")
    _launch_gateway(builder._options)  # noqa: SLF001 - the options getOrCreate would launch with
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(level.upper())
    return session


_INCUBATOR_NOTICE = b"WARNING: Using incubator modules:"
"""The JVM's line at start-up when a module of the incubator is resolved. Spark 4's launcher
adds `--add-modules=jdk.incubator.vector` to every driver's command line (`JavaModuleOptions`),
and no JVM option hides the notice, which tells a user of kafkasim nothing."""


def _launch_gateway(options: dict[str, Any]) -> None:
    """Start the driver's JVM as `getOrCreate` would, with the same options, but with its
    stderr passed through a thread that leaves out the incubator notice and hands on every
    other byte (Spark's own errors) to this process's stderr. A JVM already running (an
    earlier session of this process) is reused, as PySpark does."""
    from pyspark import SparkConf, SparkContext  # noqa: PLC0415
    from pyspark.java_gateway import launch_gateway  # noqa: PLC0415

    if SparkContext._gateway is not None:  # noqa: SLF001 - PySpark's one handle on its JVM
        return
    conf = SparkConf().setAll(list(options.items()))
    gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})
    threading.Thread(target=_pass_stderr, args=(gateway.proc.stderr,), name="spark-stderr", daemon=True).start()
    SparkContext._ensure_initialized(gateway=gateway)  # noqa: SLF001 - the session then uses this JVM


def _pass_stderr(stream: Any) -> None:
    """Copy the JVM's stderr to ours, line by line, without the incubator notice."""
    for line in iter(stream.readline, b""):
        if not line.startswith(_INCUBATOR_NOTICE):
            os.write(2, line)


def together(*work: Callable[[], Any]) -> list[Any]:
    """Each of these computations on the session at once; their results in order.

    Most stages of the analytics are short and many run one task, so one job alone leaves a
    core of a small machine idle; jobs submitted from several threads share the cores (Spark's
    scheduler takes tasks from every active job). The first runs in this thread, so that a
    failure or an interrupt in it is raised at once, and the others go on until the caller
    stops the session (the command line does); a failure of another is raised once all have
    ended, the first in order."""
    from pyspark import InheritableThread  # noqa: PLC0415 - the JVM is only paid for when used

    results: list[Any] = [None] * len(work)
    errors: list[BaseException | None] = [None] * len(work)

    def run(i: int) -> None:
        try:
            results[i] = work[i]()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            errors[i] = exc

    # Daemons: an interrupted caller stops the session and exits without waiting for them.
    threads = [InheritableThread(run, args=(i,), daemon=True) for i in range(1, len(work))]
    for thread in threads:
        thread.start()
    if work:
        results[0] = work[0]()
    for thread in threads:
        thread.join()
    for error in errors:
        if error is not None:
            raise error
    return results
