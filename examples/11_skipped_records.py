"""Records a group never processes: worker threads under auto-commit, and an operator's reset.

Covers: the other half of at-least-once, `skipped` and its causes in summary.json. Part one runs
examples/11_skipped_records.toml twice, the same workload and the same crash: one broker, a
topic of three partitions with 50 records a second each, a group of three auto-committing
consumers (one partition each) taking 15 ms a record; from 12 s consumer-1 slows to 40 ms a
record, behind its partition's 20 ms, and at 25 s its process crashes. First the records are
processed on the poll thread, as Kafka's own loop does; then they are handed to one worker
thread per consumer (`processing = "workers"`, a queue of 200 records), the poll loop going on
meanwhile. Part two runs examples/11_operator_reset.toml: the group closes at 20 s, an
operator resets it to the log end at 30 s (`kafka-consumer-groups --reset-offsets
--to-latest --execute`), and a consumer of the group starts again at 35 s.
What to look for: on the poll thread a commit never runs ahead of the processing, so nothing
is skipped; with workers, auto-commit commits what poll() returned, and records a worker had
not finished are skipped when the crash or a revocation throws them away. The reset skips
everything between where the group stopped and where the operator put it.

Expected output (11_skipped_records.out), and why each number is right.
- poll thread: an auto-commit, made in poll(), commits the records before it, once processed;
  at 40 ms a record consumer-1's batches grow (its last, 80 records, took 3.2 s), and the poll
  after it (24.605 s) committed 915, all it had processed, so consumer-1 had processed nothing past its last commit when it crashed: no
  duplicates, nothing skipped; 6000 records consumed once each.
- workers: consumer-1's worker falls behind and its queue fills to 200 records: T-2 is paused
  at 19.8 s (no more fetches of it; the poll loop and its heartbeats go on). Its last
  auto-commit before the crash (20.5 s) commits T-2 at 995, the position, while its worker
  had finished T-2 only to 920: the 75 records between die with the crash, and the next owner,
  consumer-2, starts at 995 (36.35 s). When the group rebalances (36.3 s) after consumer-1's
  session expires (34.3 s), consumer-2 and consumer-3 each make the pre-rebalance auto-commit
  of their position, 1820, and each one's revocation drops the task of [1815, 1820) its
  worker had not finished: 10 more. 85 skipped, all `committed_before_processed`; 5915
  consumed.
- operator's reset: the group committed 1000 on each partition when it closed at 20 s; the
  reset at 30 s moves it to each log end, 1505: 505 records a partition, 1515 in all, that
  no one in the group will process (`admin_reset`, spans from `admin`). The consumer started at
  35 s reads from 1505 on: 4485 consumed.
- With the records on worker threads, `commit = "processed"` (commit the offsets after what the
  workers finished, and wait for them in onPartitionsRevoked) skips nothing under the same
  crash (tests/scenarios/test_workers.py).

The same comparison as a sweep on Spark, over seeds:
  .venv/bin/kafkasim sweep examples/11_skipped_records.toml --seeds 3 \\
    --grid consumers.1.processing=poll_thread,workers --out runs/skipped-sweep

Run: .venv/bin/python examples/11_skipped_records.py [--seed N] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sim.cluster.scenario import load_scenario  # noqa: E402
from sim.report.group_figures import causes_text, table  # noqa: E402
from sim.studies.variants import run_once, run_study  # noqa: E402

HERE = Path(__file__).resolve().parent


def spans_text(summary: dict) -> list[str]:
    return [
        f"  {s['partition']} {s['first_offset']}-{s['end_offset'] - 1} at {s['from_ms']} ms by {s['consumer']}: {s['cause']}"
        for s in summary["skip_spans"]
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="keep each run's directory under DIR")
    args = parser.parse_args()
    print(f"seed {args.seed}: consumer-1 slows at 12000 ms and crashes at 25000 ms")
    rows: list[tuple[object, ...]] = [("processing", "consumed", "duplicates", "skipped")]
    spans = []
    for processing in ("poll_thread", "workers"):
        overrides = [f"run.seed={args.seed}", f"consumers.1.processing={processing}"]
        scenario = load_scenario(HERE / "11_skipped_records.toml", overrides)
        summary, _ = run_once(scenario, None if args.out is None else args.out / processing)
        rows.append((processing, summary["consumed"], causes_text(summary["duplicates_by_cause"]), causes_text(summary["skipped_by_cause"])))
        spans += spans_text(summary)
    print(table(rows))
    print("skipped records:")
    print("\n".join(spans))
    scenario = load_scenario(HERE / "11_operator_reset.toml", [f"run.seed={args.seed}"])
    summary, events = run_once(scenario, None if args.out is None else args.out / "operator-reset")
    [reset] = [e for e in events if e["event"] == "admin_offsets_reset"]
    print(f"operator's reset to latest at {reset['ts_ms']} ms ({reset['error']}): {reset['offsets']}")
    print(f"consumed {summary['consumed']}, skipped {causes_text(summary['skipped_by_cause'])}")
    print("\n".join(spans_text(summary)))


if __name__ == "__main__":
    run_study(main)
