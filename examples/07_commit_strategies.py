"""Commit strategies side by side under the same faults.

Covers: auto-commit (the periodic one, the one before a rebalance, the one in close()),
commitSync and commitAsync after each poll's records, a commitSync in onPartitionsRevoked,
and no commits at all. Scenario: examples/07_commit_strategies.toml, one broker, a topic of
three partitions with 50 records a second each (5 every 100 ms), a group of three consumers
(range, eager; a 10 s session): consumer-2's application calls close() at 15 s, consumer-1's
process crashes at 25 s. Same seed, same faults; only `enable.auto.commit` and `commit`
change.
What to look for: a commit made before the partitions move (close(), the pre-rebalance
auto-commit, the listener) leaves nothing to repeat; a crash repeats what was processed since
the last commit, so the more often a strategy commits, the fewer it repeats, and the more
commits it makes. With no commits at all, every new assignment re-reads from
`auto.offset.reset` (earliest here).

Expected output (07_commit_strategies.out), and why each number is right. Generation 1 at
0.3 s: consumer-3 T-0, consumer-2 T-1, consumer-1 T-2. close() at 15 s starts generation 2
(consumer-3 T-0 and T-1, consumer-1 T-2) at about 15.3 s; consumer-1's session expires some
10 s after the crash, and generation 3, consumer-3 alone, forms at its next heartbeat, at about
36.3 s. Three rebalances in every row. At the crash consumer-1 has processed T-2 up to 1250
(25 s at 50 a second).
- auto-commit: close() commits T-1 at 750 and the pre-rebalance auto-commits T-0 and T-2 at
  770 (15.31 s), so generation 2 repeats nothing. consumer-1's commit timer restarted with
  its assignment at 15.35 s; its last auto-commit, at the first poll after 20.35 s (20.40 s),
  committed 1020: consumer-3 re-reads 1020 to 1250, 230 crash_before_commit. Commits: 11
  periodic, 1 in close(), 3 before rebalances: 15.
- commitSync: a commit after each poll's records, answered before the next poll: at every
  handover the committed offset is the position, so nothing repeats. 795 commits, one per poll
  that returned records: about ten a second per consumer.
- commitAsync: the same commits, not waited for; each landed here (no error, no rebalance in
  between to refuse one), so nothing repeats either; 795 here too.
- on_revoke: commits only when partitions are revoked: consumer-2's in close() at 15 s,
  consumer-1's and consumer-3's in the rebalance at 15.31 s, consumer-3's at 36.34 s: 4. The
  crash revokes nothing: consumer-3 re-reads T-2 from 770, committed at 15.31 s: 480
  crash_before_commit.
- none: nothing is ever committed. In generation 2 every partition starts at 0 again, the
  eager rebalance having revoked them all: T-0 and T-2 (770 each) and T-1 (750), 2290; in
  generation 3 consumer-3 starts T-0 and T-1 at 0 again (1820 each, 3640): 5930
  revoked_without_commit; and T-2 from 0, where consumer-1 had got to 1250 before crashing:
  1250 crash_before_commit.
- Another `--seed` draws other member ids, and range orders members by id: with seed 2
  consumer-1 holds T-0 and T-1 in generation 2, and the crash repeats both (460 with
  auto-commit, 985 with on_revoke); the order of the rows stays.

The same study as a sweep on Spark (one run per strategy and seed; the last grid is the
application's commit, the first whether auto-commit is on):
  .venv/bin/kafkasim sweep examples/07_commit_strategies.toml --seeds 3 \\
    --grid consumers.1.enable.auto.commit=true,false \\
    --grid consumers.1.commit=none,sync,async,on_revoke --out runs/commit-strategies-sweep

Run: .venv/bin/python examples/07_commit_strategies.py [--seed N] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sim.cluster.scenario import load_scenario  # noqa: E402
from sim.report.group_figures import causes_text, commits_sent, table  # noqa: E402
from sim.studies.variants import run_once, run_study  # noqa: E402

HERE = Path(__file__).resolve().parent
STRATEGIES = (
    ("auto-commit", "true", "none"),
    ("commitSync", "false", "sync"),
    ("commitAsync", "false", "async"),
    ("on_revoke", "false", "on_revoke"),
    ("none", "false", "none"),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="keep each run's directory under DIR")
    args = parser.parse_args()
    print(f"seed {args.seed}: consumer-2 calls close() at 15000 ms, consumer-1 crashes at 25000 ms")
    header = ("strategy", "enable.auto.commit", "commit", "commits", "rebalances", "duplicates", "skipped")
    rows: list[tuple[object, ...]] = [header]
    for name, auto, commit in STRATEGIES:
        overrides = [f"run.seed={args.seed}", f"consumers.1.enable.auto.commit={auto}", f"consumers.1.commit={commit}"]
        scenario = load_scenario(HERE / "07_commit_strategies.toml", overrides)
        summary, events = run_once(scenario, None if args.out is None else args.out / name)
        duplicates = causes_text(summary["duplicates_by_cause"])
        skipped = causes_text(summary["skipped_by_cause"])
        rows.append((name, auto, commit, commits_sent(events), summary["rebalances"], duplicates, skipped))
    print(table(rows))


if __name__ == "__main__":
    run_study(main)
