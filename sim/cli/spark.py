"""Spark from the command line: checking a master before the JVM starts, and running work on
a session whose failures and interrupts become one line."""

from __future__ import annotations

import contextlib
import logging
import re
import signal
from collections.abc import Callable
from typing import Any, TypeVar

from sim.cli.errors import RunDirError, SparkUnavailable

__all__ = ["check_master", "on_spark"]

T = TypeVar("T")


_MASTER_KINDS = ("local", "spark://", "yarn", "k8s://")


def check_master(master: str) -> None:
    """A standalone master (`spark://host:port`) that does not answer: said before the JVM
    starts, since Spark itself retries for a minute and then logs stack traces. A URL of no
    kind Spark knows is refused here too, as spark-submit would with a Java stack trace."""
    local = re.fullmatch(r"local(\[(\*|[1-9]\d*)(, ?[1-9]\d*)?\]|-cluster\[.*\])?", master)
    if not master.startswith(_MASTER_KINDS) or (master.startswith("local") and not local):
        msg = f"--master {master}: not a Spark master URL (local[N], spark://HOST:PORT, yarn, k8s://...)"
        raise RunDirError(msg)
    if not master.startswith("spark://"):
        return
    import socket  # noqa: PLC0415
    from urllib.parse import urlparse  # noqa: PLC0415

    for hostport in master.removeprefix("spark://").split(","):
        url = urlparse(f"spark://{hostport}")
        try:
            with socket.create_connection((url.hostname or "", url.port or 7077), timeout=3):
                return
        except (OSError, ValueError) as exc:
            reason = exc.strerror or str(exc) if isinstance(exc, OSError) else str(exc)
    msg = f"cannot reach the Spark master {master}: {reason}"
    raise SparkUnavailable(msg)


def on_spark(master: str, work: Callable[[Any], T]) -> T:
    """`work(session)` on a quiet session of `master`, stopped after. Spark's failures become
    SparkUnavailable (one line), Ctrl-C a KeyboardInterrupt."""
    from py4j.protocol import Py4JError  # noqa: PLC0415 - Spark only when asked
    from pyspark.errors import PySparkException  # noqa: PLC0415

    from sim.analytics.session import spark_session  # noqa: PLC0415

    # py4j logs a call broken by an interrupt with its traceback; the CLI says it in one line.
    logging.disable(logging.CRITICAL)
    # The JVM ignores Ctrl-C (PySpark starts it so), and an interrupt while PySpark waits for it
    # to start would leave it running with no one to stop it: the interrupt waits until then.
    deferred: list[bool] = []
    signal.signal(signal.SIGINT, lambda _signum, _frame: deferred.append(True))
    try:
        spark = spark_session(master, quiet=True)
    except (Py4JError, PySparkException, RuntimeError, OSError) as exc:
        msg = f"Spark did not start on {master}: {_first_line(exc)}"  # py4j reads it of the JVM
        _stop_gateway()
        raise SparkUnavailable(msg) from None
    except KeyboardInterrupt:  # from PySpark's own handler, once the JVM has started
        _stop_gateway()
        raise
    if deferred:
        spark.stop()
        raise KeyboardInterrupt
    # PySpark's own Ctrl-C handler calls into the JVM from inside the call it interrupts; and
    # py4j turns an interrupt inside a call into an error of its own.
    interrupted = []

    def interrupt(_signum: int, _frame: Any) -> None:
        interrupted.append(True)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupt)
    try:
        return work(spark)
    except (Py4JError, PySparkException) as exc:
        if interrupted:
            raise KeyboardInterrupt from None
        msg = f"the Spark job failed: {_first_line(exc)}"
        raise SparkUnavailable(msg) from None
    finally:
        with contextlib.suppress(Exception):
            spark.stop()


def _stop_gateway() -> None:
    """Stop the JVM of a session that failed to start, if PySpark had launched one."""
    from pyspark import SparkContext  # noqa: PLC0415

    gateway = SparkContext._gateway  # noqa: SLF001 - the only handle on it PySpark keeps
    with contextlib.suppress(Exception):
        if SparkContext._active_spark_context is not None:  # noqa: SLF001
            SparkContext._active_spark_context.stop()  # noqa: SLF001
    if gateway is not None:
        with contextlib.suppress(Exception):
            gateway.proc.kill()
        SparkContext._gateway = SparkContext._jvm = None  # noqa: SLF001 - a later session launches its own


def _first_line(exc: BaseException) -> str:
    """The line of an error that says what went wrong: for an error py4j relays from the JVM,
    the Java exception's message, not py4j's "An error occurred while calling ..."."""
    try:
        text = str(exc)  # py4j asks the JVM for its exception's text
    except Exception:  # noqa: BLE001 - a JVM gone with its text
        return type(exc).__name__
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].startswith("An error occurred while calling") and lines[1].startswith(": "):
        return lines[1].removeprefix(": ")
    return lines[0] if lines else type(exc).__name__
