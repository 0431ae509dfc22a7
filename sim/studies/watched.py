"""A Spark job of one task per partition, watched from the driver while it runs.

`collect_watched` runs `fn` over `tasks` and calls `progress(done, total)` about twice a second
with `done(tasks)`, which counts what the tasks have written so far (their run directories'
files: the executors report nothing until the job ends). Ctrl-C cancels the job and waits for
Spark to kill its Python workers, so that no run goes on writing afterwards.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["collect_watched"]

Task = dict[str, Any]


def collect_watched(
    spark: Any,
    tasks: list[Task],
    fn: Callable[[Task], Any],
    done: Callable[[list[Task]], int],
    progress: Callable[[int, int], None] | None = None,
) -> list[Any]:
    """`fn` over `tasks` on Spark, one partition each; the results in Spark's order. A job's
    failure is raised here, in the calling thread."""
    sc = spark.sparkContext
    results: list[Any] = []
    errors: list[BaseException] = []

    def job() -> None:
        try:
            results.extend(sc.parallelize(tasks, len(tasks)).map(fn).collect())
        except BaseException as exc:  # noqa: BLE001 - re-raised in the calling thread
            errors.append(exc)

    thread = threading.Thread(target=job, name="kafkasim-spark-job", daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.5)
            if progress is not None:
                progress(done(tasks), len(tasks))
    except KeyboardInterrupt:
        sc.cancelAllJobs()
        thread.join(30)
        raise
    if errors:
        raise errors[0]
    return results
