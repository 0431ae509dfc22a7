"""Every rebalance protocol under the same workload and the same faults.

Covers: eager range, cooperative-sticky, static membership (range) and KIP-848's consumer
protocol (also with static members), on Kafka 4.0. Scenario: examples/12_rebalance_protocols.toml,
three brokers, a topic of six partitions with 20 records a second each, a group of three
consumers with the 4.0 defaults (45 s session, auto-commit every 5 s): a rolling restart of
the group from 10 s (close(), exit, a new process, 10 s apart), consumer-2's process crashes at
60 s and a new one starts at 65 s, and broker-1, the group's coordinator, is shut down at 110 s.
Same seed, same faults; only the protocol changes.

For each protocol: rebalances (classic: generations formed; the consumer protocol: target
assignments computed, as Kafka's coordinator counts them), the time the group's partitions went
without an owner (partition-seconds, from a revocation, loss, crash or exit to the next
assignment), duplicates and skipped records by cause, and the consumers that stopped on a
fatal error.

Expected output (12_rebalance_protocols.out), and why each number is right:
- eager range: the first generation, one per restart (each close() sends LeaveGroup, the new
  process joins: generations 2 to 4 at 12.4, 21.4 and 30.4 s), and one when the crashed member's
  session expires: the new consumer-2 joins at 65 s, and the group waits in PreparingRebalance
  for every member, the crashed one too, until its session expires at 102.4 s (45 s after its
  last heartbeat). Eager members revoke everything when they rejoin, so all six partitions go
  unowned for those 37 s: most of the 237 partition-seconds. The crash repeats what consumer-2
  processed since its last auto-commit (172 records at 40 a second).
- cooperative-sticky: the same five generations, but the members keep what they own while
  they rejoin: only the crashed member's two partitions wait for its session, from 60 s to
  102.4 s (about 85 of the 93 partition-seconds).
- static range: one rebalance. A static member's close() sends no LeaveGroup (before KIP-1092's
  CloseOptions in 4.1), and a process that starts with the same `group.instance.id` replaces the
  old member id with its assignment and no rebalance, the restarted consumer-2 too. Its
  partitions wait only while it is down: 5 s for two partitions, and little for each restart.
  The new consumer-2 reads again from its last commit (192 crash_before_commit).
- consumer protocol: a target assignment per change of the group epoch that a heartbeat finds:
  three joins at the start, one per restart (the leave and the join come before the next
  target), the new consumer-2's join at 65.0 s, and the crashed member's session expiry at
  100.2 s (45 s after its last heartbeat; heartbeats every 5 s): 8. No member stops for a
  rebalance: the new consumer-2 gets a partition from the others at once, but the crashed
  member's two partitions stay assigned to it until its session expires (about 80 of the 111
  partition-seconds).
- consumer protocol, static: the restarts replace each member (a -2 leave keeps the assignment
  for the member that takes its instance id: no new target), so only the three joins and the
  expiry compute one: 4. But a process that crashed never left: the new consumer-2's join with
  its instance id is answered UNRELEASED_INSTANCE_ID, fatal to the Java client, and it stops at
  65.0 s; its partitions go to the other two at 100.2 s.
- The coordinator's shutdown at 110 s changes nothing in any row: broker-2 loads the group from
  `__consumer_offsets` (the classic group's generation, the consumer group's members with their
  epochs), and the members find it and go on.
- The duplicates are all the crash's: the four to five seconds of consumer-2's records since its
  last auto-commit, whose timer restarts at each of its assignments, so the count differs a
  little by protocol. close() commits before it leaves in every protocol, so the rolling restart
  repeats nothing, and nothing is skipped.

Run: .venv/bin/python examples/12_rebalance_protocols.py [--seed N] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sim.cluster.scenario import load_scenario  # noqa: E402
from sim.report.group_figures import causes_text, table, unowned_ms  # noqa: E402
from sim.studies.variants import run_once, run_study  # noqa: E402

HERE = Path(__file__).resolve().parent
PROTOCOLS = (
    ("eager range", ["consumers.1.partition.assignment.strategy=range"]),
    ("cooperative-sticky", ["consumers.1.partition.assignment.strategy=cooperative-sticky"]),
    ("static range", ["consumers.1.partition.assignment.strategy=range", "consumers.1.group.instance.id=c"]),
    ("consumer protocol", ["consumers.1.group.protocol=consumer"]),
    ("consumer protocol, static", ["consumers.1.group.protocol=consumer", "consumers.1.group.instance.id=c"]),
)


def stopped(summary: dict) -> str:
    """The consumers whose poll() threw a fatal error, with it; `-` for none."""
    failures = summary["consumer_failures"]
    return ", ".join(f"{f['node']} at {f['ts_ms'] / 1000:.1f} s ({f['error'].split(': ')[-1]})" for f in failures) or "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="keep each run's directory under DIR")
    args = parser.parse_args()
    print(
        f"seed {args.seed}: a rolling restart of the group from 10 s, consumer-2 crashes at 60 s "
        "(back at 65 s), the coordinator's broker is shut down at 110 s"
    )
    header = ("protocol", "rebalances", "unowned", "duplicates", "skipped", "stopped")
    rows: list[tuple[object, ...]] = [header]
    for name, overrides in PROTOCOLS:
        scenario = load_scenario(HERE / "12_rebalance_protocols.toml", [f"run.seed={args.seed}", *overrides])
        label = name.replace(",", "").replace(" ", "_")
        summary, events = run_once(scenario, None if args.out is None else args.out / label)
        unowned = f"{unowned_ms(events, 'study', scenario.get('run', 'duration.ms')) / 1000:.1f} s"
        duplicates = causes_text(summary["duplicates_by_cause"])
        skipped = causes_text(summary["skipped_by_cause"])
        rows.append((name, summary["rebalances"], unowned, duplicates, skipped, stopped(summary)))
    print(table(rows))


if __name__ == "__main__":
    run_study(main)
