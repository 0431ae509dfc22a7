"""A poll loop slower than max.poll.interval.ms, and a zombie cut off from its coordinator.

Covers: the poll timeout (KIP-62: the heartbeat thread leaves the group for a dynamic member,
only resets a static one, KIP-345), expulsion by session timeout, and the fencing of the late
member's commits. Scenario: examples/06_slow_poll_zombie.toml: broker-1 coordinates the
group, broker-2 leads T's two partitions (50 records a second each); two consumers with
auto-commit every 5 s, a 10 s session, max.poll.interval.ms 8000, 20 records a poll.
consumer-1 (T-1; T-0 when static) is the one in trouble from 12 s, four ways: its application
stalls for 15 s; each record takes 500 ms for 15 s (`slow`); it is cut off from broker-1 alone
for 15 s (`zombie`); or it stalls as a static member (`group.instance.id`).
What to look for: the member is removed (LeaveGroup, or its session) while it still holds its
partition; the new owner starts from the last commit; the late member's commits fail, and it
learns it lost the partition only then. Every record it processed since its last commit is
processed twice, and so is every record both read while it was a zombie.

Expected output (06_slow_poll_zombie.out), and why each number is right. Consumer-1's last
auto-commit before 12 s is at 10.505 s (10.405 s for the static one): T-1 at 525 (T-0 at 520).
- stall: its last poll began at 11.906 s; at 19.906 s (+8000) the heartbeat thread sends
  LeaveGroup (removed 19910 ms, leave). consumer-2 learns of the rebalance from its heartbeat
  at 21.29 s and starts T-1 at 525; consumer-1 had processed up to 600: 75
  poll_interval_exceeded. At 27 s the stall ends: the pre-rebalance auto-commit fails in the
  client (COMMIT_FAILED: out of its generation), T-1 is lost, and it joins as a new member:
  generation 3. Three rebalances.
- slow: the polls of 12.008 s and 14.508 s return 5 records each (2.5 s at 500 ms), the poll
  of 17.008 s, after its auto-commit of T-1 at 610, 20 (10 s): at 25.008 s, 8000 ms after that
  poll, LeaveGroup (removed 25013 ms). consumer-1 finishes its batch at 27.008 s, as the spell
  ends; its next poll fails its commit in the client (COMMIT_FAILED), reports T-1 lost and
  joins as a new member before consumer-2 has learned of the rebalance (27.29 s), so
  generation 2 has both and gives T-1 back to consumer-1. It re-reads T-1 from its own commit,
  610: the 20 records to 630 it processed as a zombie, poll_interval_exceeded. Two rebalances.
- zombie: no poll timeout (it keeps polling); its heartbeats stop reaching broker-1. The
  coordinator last heard from it at 10.509 s (its commit) and removes it at 20.509 s
  (session_timeout). The client gives up its coordinator at 19.30 s, 10 s after its last
  answered heartbeat, failing its commit in flight (DISCONNECTED); its FindCoordinator goes to
  broker-1 (the broker it tries next with this seed) and is held in the cut, as TCP holds it.
  Meanwhile it goes on reading T-1 from broker-2, and so does consumer-2 from 21.35 s, at 525.
  The cut is lifted at 27 s: the held FindCoordinator goes on, the zombie finds broker-1 at
  27.008 s, its auto-commit is refused UNKNOWN_MEMBER_ID (27.012 s), it resets, its
  pre-rebalance commit fails in the client (COMMIT_FAILED) and it rejoins. Duplicates: 525 to
  1075, where it had got when consumer-2 caught up (21.4 s), then every T-1 record both read
  until 27.01 s, 1075 to 1355: 550 + 280 = 830 expelled_session_timeout. With seed 2 it asks
  broker-2 and is told broker-1 again (19.41 s); its heartbeats and commits to broker-1 are
  held until 27 s, a held heartbeat's UNKNOWN_MEMBER_ID resets it at 27.007 s and its held
  commits are refused at 27.009 s: 825 duplicates. Either way it lasts as long as the cut
  (under `request.timeout.ms`, which would close the connection and lose what it held).
- static: the poll timeout at 19.906 s resets the member in the client and sends nothing; the
  coordinator keeps it (its session would run out at 28.29 s, 10 s after its last heartbeat).
  At 27 s its commit fails in the client (COMMIT_FAILED), it joins with its instance id and
  replaces its old member id (27002 ms, replaced) in generation 1, with T-0 again and no
  rebalance: one generation in all. It re-reads T-0 from 520 itself, up to 600: 80
  static_poll_timeout_self_replay.

The same study as a sweep on Spark (one run per fault kind and seed):
  .venv/bin/kafkasim sweep examples/06_slow_poll_zombie.toml --seeds 3 \\
    --grid faults.1.kind=stall,zombie --out runs/slow-poll-sweep

Run: .venv/bin/python examples/06_slow_poll_zombie.py [--seed N] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sim.cluster.scenario import load_scenario  # noqa: E402
from sim.report.group_figures import causes_text, commit_errors, removal, table  # noqa: E402
from sim.studies.variants import run_once, run_study  # noqa: E402

HERE = Path(__file__).resolve().parent
NODE, AT_MS = "consumer-1", 12000
CASES = (
    ("stall", []),
    ("slow", ["faults.1.kind=slow", "faults.1.process.record.ms=500"]),
    ("zombie", ["faults.1.kind=zombie"]),
    ("static stall", ["consumers.1.group.instance.id=app"]),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="keep each run's directory under DIR")
    args = parser.parse_args()
    print(f"seed {args.seed}: {NODE} in trouble from {AT_MS} ms")
    header = ("case", "poll timeout", "removed from the group", "its commits failed", "rebalances", "duplicates", "skipped")
    rows: list[tuple[object, ...]] = [header]
    for name, overrides in CASES:
        scenario = load_scenario(HERE / "06_slow_poll_zombie.toml", [f"run.seed={args.seed}", *overrides])
        summary, events = run_once(scenario, None if args.out is None else args.out / name.replace(" ", "-"))
        timeouts = [e["ts_ms"] for e in events if e["event"] == "poll_timeout_expired" and e["node"] == NODE]
        left = removal(events, NODE, AT_MS)
        rows.append((
            name,
            f"{timeouts[0]} ms" if timeouts else "-",
            "-" if left is None else f"{left[0]} ms {left[1]}",
            ", ".join(commit_errors(events, NODE)) or "-",
            summary["rebalances"],
            causes_text(summary["duplicates_by_cause"]),
            causes_text(summary["skipped_by_cause"]),
        ))
    print(table(rows))


if __name__ == "__main__":
    run_study(main)
