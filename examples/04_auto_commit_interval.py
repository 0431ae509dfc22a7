"""The auto-commit interval against the duplicates of a consumer crash.

Covers: auto-commit (`enable.auto.commit`, `auto.commit.interval.ms`) and what a crashed
consumer's successor reads again. Scenario: examples/04_auto_commit_interval.toml, one broker,
a topic of two partitions with 50 records a second each (5 every 100 ms), a group of two
consumers; consumer-1 (T-1 with seed 1) crashes and restarts 8 s later. The study runs it for four
intervals and five crash moments, 1.6 s apart over 12.2 to 18.6 s.
What to look for: consumer-2 takes T-1 from its last auto-commit once consumer-1's session
expires, and processes again what consumer-1 had processed since: 5 records per 100 ms since
that commit, all crash_before_commit. Where the crash falls in the commit cycle decides the
count, from 0 to about 50/s x the interval; over the cycle its mean is 50/s x interval / 2.

Expected output (04_auto_commit_interval.out), and why each number is right.
- Each cell is the duplicates of one run and, in brackets, the seconds from consumer-1's last
  auto-commit to the crash. A poll returns each tick's 5 records, and an auto-commit covers
  what the polls before it returned: so 5 duplicates per tick from the poll that committed
  (its own records come after the commit) to the crash, 50 a second. E.g. 8000 ms, crash at
  17.0 s: commits at 8.4 and 16.41 s, 0.59 s before it, 6 ticks: 30 duplicates.
- The group forms at about 0.3 s and the commit timer starts there; a commit is made at the
  first poll after the interval has passed, and polls follow the ticks, so the cycle is the
  interval plus up to 100 ms. For 4000 and 8000 the five moments fall at spread-out points of
  the cycle, and the mean (104, 190) is near 50/s x interval / 2 (100, 200). For 1000 and
  2000 the cycle drifts by the extra milliseconds: the moments sample it unevenly, and the
  means (22, 58) fall one below 25, one above 50, and under the most one cycle allows (55
  and 105).
- 2000 ms at 15.4 s: 0.70 s, 35; at 18.6 s: 1.90 s, 95 (the cycle nearly over).
- No other cause: the rebalances that follow (consumer-1's session expiry, its restart)
  revoke consumer-2's partitions after the pre-rebalance commit, so nothing else repeats.
- With another `--seed` the latencies (1 to 5 ms) move the commits by milliseconds (and the
  member ids, so which partition consumer-1 gets). For 4000 and 8000 a cell moves by a tick
  or two (5 or 10 records: with seed 2 the 4000 ms row reads 195, 75, 155, 30, 110). For 1000
  and 2000 the few milliseconds add up over the many cycles before the crash, and a cell can
  land anywhere in the cycle: with seed 2 the 1000 ms row reads 30, 10, 40, 15, 45, mean 28.
  The mean, not the cell, is what the interval sets.

The same study as a sweep on Spark (one run per configuration and seed, a table and a report):
  .venv/bin/kafkasim sweep examples/04_auto_commit_interval.toml --seeds 3 \\
    --grid consumers.1.auto.commit.interval.ms=1000,2000,4000,8000 \\
    --grid faults.1.at.ms=12200,13800,15400,17000,18600 --out runs/auto-commit-sweep

Run: .venv/bin/python examples/04_auto_commit_interval.py [--seed N] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sim.cluster.scenario import load_scenario  # noqa: E402
from sim.report.group_figures import last_commit_ms  # noqa: E402
from sim.studies.variants import run_once, run_study  # noqa: E402

HERE = Path(__file__).resolve().parent
INTERVALS_MS = (1000, 2000, 4000, 8000)
CRASHES_MS = (12200, 13800, 15400, 17000, 18600)
RATE_PER_S = 50
"""Records a second on consumer-1's partition: 5 every 100 ms."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="keep each run's directory under DIR")
    args = parser.parse_args()
    moments = ", ".join(f"{t / 1000:.1f}" for t in CRASHES_MS)
    print(f"seed {args.seed}: consumer-1 crashes at one of {moments} s")
    print("duplicates (seconds since consumer-1's last auto-commit)")
    crashes = "".join(f"{t / 1000:>12.1f}s" for t in CRASHES_MS)
    print(f"{'interval ms':>11}{crashes}{'mean':>8}{'50/s x I/2':>12}")
    causes: set[str] = set()
    skipped = 0
    for interval in INTERVALS_MS:
        cells, counts = [], []
        for crash in CRASHES_MS:
            overrides = [
                f"run.seed={args.seed}",
                f"consumers.1.auto.commit.interval.ms={interval}",
                f"faults.1.at.ms={crash}",
            ]
            scenario = load_scenario(HERE / "04_auto_commit_interval.toml", overrides)
            out = None if args.out is None else args.out / f"interval{interval}-crash{crash}"
            summary, events = run_once(scenario, out)
            committed = last_commit_ms(events, "consumer-1", crash)
            since = "-" if committed is None else f"{(crash - committed) / 1000:.2f}"
            cells.append(f"{summary['duplicates']:>6} ({since})")
            counts.append(summary["duplicates"])
            causes.update(summary["duplicates_by_cause"])
            skipped += summary["skipped"]
        mean = sum(counts) / len(counts)
        expected = RATE_PER_S * interval / 2000
        print(f"{interval:>11}" + "".join(f"{c:>13}" for c in cells) + f"{mean:>8.1f}{expected:>12.0f}")
    print(f"causes: {', '.join(sorted(causes)) or '-'}")
    print(f"skipped: {skipped} over every run")


if __name__ == "__main__":
    run_study(main)
