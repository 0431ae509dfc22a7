"""A consumer that crashes, against one that calls close() or unsubscribe(), at the same moment.

Covers: how a member leaves its group (session expiry or LeaveGroup), what it commits on the
way out, and how long its partition goes unread. Scenario: examples/05_crash_vs_close.toml,
one broker, a topic of two partitions with 50 records a second each, a group of two
consumers with auto-commit every 5 s, a 10 s session and a heartbeat every 3 s; at 12 s
consumer-1 (T-1) crashes, or its application calls close(), or unsubscribe().
What to look for: the crash leaves T-1 without an owner for most of a session timeout, and
its successor re-reads from the last auto-commit; close() commits, leaves, and the partition
moves within a heartbeat, with nothing read twice; unsubscribe() moves it as fast but commits
nothing (`ClassicKafkaConsumer.unsubscribe`), so the same records are read twice.

Expected output (05_crash_vs_close.out), and why each number is right.
- By 12 s consumer-1 has processed T-1 up to offset 600 (5 records per tick from the first
  one: it reads from the earliest offset); its last auto-commit, at 10.41 s, committed 520.
- crash: the coordinator last heard from consumer-1 at 10.41 s (an OffsetCommit counts as a
  heartbeat), so it removes it at 20.41 s (session_timeout) and starts a rebalance;
  consumer-2 learns of it from its next heartbeat (they go at 0.295 + 3k s: 21.295 s),
  rejoins, and gets both partitions at 21.335 s: T-1 went 9335 ms without an owner. It starts
  T-1 at the committed 520 and processes 520 to 600 again: 80 crash_before_commit.
- close: the application was waiting in poll(), so close() runs at once: a synchronous
  commit of 600, answered at 12008 ms, then onPartitionsRevoked and LeaveGroup: the
  coordinator removes it at 12010 ms. consumer-2's heartbeat of 12.295 s gets
  REBALANCE_IN_PROGRESS; it rejoins and has T-1 at 12327 ms, 327 ms after the call, from 600:
  no duplicates. The wait is the phase of consumer-2's heartbeats, up to 3 s.
- unsubscribe: LeaveGroup at once, with no commit to wait for (removed at 12003 ms), and
  about as fast (334 ms: the network's latencies differ); but consumer-2 starts at 520 and
  processes 80 records again, unsubscribe_without_commit.
- Two rebalances in each: generation 1, then generation 2 with consumer-2 alone.

The same study as a sweep on Spark (one run per call and seed):
  .venv/bin/kafkasim sweep examples/05_crash_vs_close.toml --seeds 3 \\
    --grid faults.1.kind=crash,close,unsubscribe --out runs/crash-vs-close-sweep

Run: .venv/bin/python examples/05_crash_vs_close.py [--seed N] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sim.cluster.scenario import load_scenario  # noqa: E402
from sim.report.group_figures import causes_text, handovers, removal, table  # noqa: E402
from sim.studies.variants import run_once, run_study  # noqa: E402

HERE = Path(__file__).resolve().parent
CALLS = ("crash", "close", "unsubscribe")
NODE, AT_MS = "consumer-1", 12000


def processed_to(events: Iterable[Mapping[str, Any]], node: str, at_ms: int) -> dict[str, int]:
    """Per partition, the end of what `node` had processed by `at_ms`."""
    ends: dict[str, int] = {}
    for e in events:
        if e["event"] == "records_processed" and e["node"] == node and e["ts_ms"] <= at_ms:
            ends[f"{e['topic']}-{e['partition']}"] = e["end_offset"]
    return ends


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="keep each run's directory under DIR")
    args = parser.parse_args()
    rows = []
    for call in CALLS:
        overrides = [f"run.seed={args.seed}", f"faults.1.kind={call}"]
        scenario = load_scenario(HERE / "05_crash_vs_close.toml", overrides)
        summary, events = run_once(scenario, None if args.out is None else args.out / call)
        if call == "crash":
            ends = ", ".join(f"{tp} to {end}" for tp, end in sorted(processed_to(events, NODE, AT_MS).items()))
            print(f"seed {args.seed}: at {AT_MS} ms {NODE} has processed {ends}")
        left = removal(events, NODE, AT_MS)
        for h in handovers(events, NODE, AT_MS):
            rows.append((
                call,
                "-" if left is None else f"{left[0]} ms {left[1]}",
                f"{h.partition} {h.assigned_ms - AT_MS} ms",
                f"{h.owner} at {h.start_offset}",
                causes_text(summary["duplicates_by_cause"]),
                causes_text(summary["skipped_by_cause"]),
                summary["rebalances"],
            ))
    header = ("call", "removed from the group", "without owner", "next owner starts", "duplicates", "skipped", "rebalances")
    print(table([header, *rows]))


if __name__ == "__main__":
    run_study(main)
