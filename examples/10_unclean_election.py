"""An unclean leader election: the partition back sooner, acknowledged records lost.

Covers: `unclean.leader.election.enable` (the controller's `offlinePartitionLeaderElection`:
the first live ISR member, else, only when enabled, any live replica), the follower that falls
out of the ISR, the leader that then acknowledges alone, and what the returning leader does
when the new leader's log is shorter (it truncates to where the logs diverge, KIP-101/KIP-320).
Scenario: examples/10_unclean_election.toml (its header tells the story): one partition on
brokers [1, 3], leader 1; broker 3 stalls from 5 to 15 s, broker 1 crashes at 13 s and is back
at 43 s. The study runs it with unclean election enabled and disabled (canonical scenario S7).
What to look for: enabled, the partition has a leader again 17 s after the crash but 800
acknowledged records are gone; disabled, it waits 30 s for broker 1 and loses nothing.

Expected output (10_unclean_election.out), and why each number is right (seed 1).
- 5000 ms: broker 3 stalls. Its last fetch reached the log end at offset 500, and acks=all
  waits for every ISR member: nothing more is acknowledged for now.
- 10009 ms: broker 1's `isr-expiration` task (every replica.lag.time.max.ms / 2 = 2.5 s) finds
  broker 3 not caught up for more than 5 s and shrinks the ISR to [1]; with
  min.insync.replicas 1 the waiting records are acknowledged, and so are those to 13 s:
  offsets 500 to 1299 exist on broker 1 alone.
- 13000 ms: broker 1's process crashes. The controller does not know yet: broker 1's
  ZooKeeper session lasts until 30009 ms (18 s after the last ping ZooKeeper heard, at 12 s).
  Broker 3 wakes at 15 s with nothing to fetch from.
- enabled: at 30031 ms the controller finds no live ISR member and elects broker 3 uncleanly,
  leader epoch 1, its log ending at 500 (it leads from 30033 ms). The producer's batch of 13 s,
  records 1300 to 1309, is refused OUT_OF_ORDER_SEQUENCE_NUMBER: broker 3's producer state ends
  at sequence 499, and 1300 is not next. The batch fails for good (`canRetry`: it is the
  next in line, so nothing earlier will fill the gap), the producer bumps its epoch and numbers
  the rest from 0 (KIP-360), and they are written from offset 500. At 43000 ms broker 1 starts
  again, follows broker 3 and, fetching with its last epoch 0, is told that epoch 0 ends at 500
  on the leader: it truncates 1300 -> 500.
  - no leader 17033 ms: from the crash, 13000, to broker 3 leading, 30033.
  - acknowledged 4990: 5000 records but the ten of that batch.
  - lost 800, reused 800: records 500 to 1299, acknowledged at offsets 500 to 1299, are in no
    log; those offsets now hold the records written after the election.
- disabled: at 30027 ms the election fails (no live replica in the ISR), the controller keeps
  broker 1 as the ISR's last member and the partition has no leader. At 43035 ms broker 1,
  registered again, is elected (a clean election, leader epoch 2) and leads from 43050 ms with
  all its 1300 records; broker 3 follows it and catches up.
  - no leader 30050 ms: from 13000 to 43050. The producer's batches wait meanwhile (their
    delivery.timeout.ms, 120 s, is far off) and are all written then.
  - acknowledged 5000, lost 0, reused 0.
Both runs end with the invariants intact: an unclean election is a choice the configuration
allows, and what it loses is counted by the end-of-run checks, not by the invariants.
With another seed the controller may be broker 3, the one that stalls: then broker 1's ISR
change waits for it (AlterPartition, 2.7+) and the story changes.

Run: .venv/bin/python examples/10_unclean_election.py [--seed N] [--out DIR]
The same study as a sweep:
  .venv/bin/kafkasim sweep examples/10_unclean_election.toml --seeds 3 \\
      --grid broker.unclean.leader.election.enable=true,false --out runs/10-sweep
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sim.studies.variants import StudyRun, StudyRuns, run_study  # noqa: E402

SCENARIO = Path(__file__).resolve().parent / "10_unclean_election.toml"
FIRST_STARTS = {("node_started", 0, None), ("leader_elected", None, "new")}
"""The start of the run, not worth telling: first starts and the partition's first leader."""
TOLD = {
    "node_paused": "{target} stalls until {until_ms} ms",
    "node_crashed": "{target} crashes ({kind})",
    "node_started": "{target} starts again",
    "isr_shrunk": "{node} shrinks the ISR to {isr}",
    "leader_elected": "the controller elects broker {leader}{how}, leader epoch {leader_epoch}",
    "leader_election_failed": "the controller elects no one: {reason}",
    "became_leader": "{node} leads, its log ending at {log_end_offset}",
    "log_truncated": "{node} truncates {from_offset} -> {to_offset} ({reason})",
    "produce_completed": "{node}: records {first} to {last} fail: {error}",
}


def told(event: dict[str, Any]) -> str | None:
    """One line of the story for the events worth telling, else None."""
    name = event["event"]
    if name == "produce_completed" and event["error"] == "NONE":
        return None
    if name.startswith("node_") and not event["target"].startswith("broker-"):
        return None
    if (name, event.get("incarnation"), event.get("election")) in FIRST_STARTS:
        return None
    story = TOLD.get(name)
    if story is None:
        return None
    records = event.get("records", [0])
    how = " uncleanly" if event.get("unclean") else ""
    return story.format(**event, how=how, first=records[0], last=records[-1])


def leaderless_ms(events: Iterable[dict[str, Any]]) -> int:
    """How long the partition had no live leader: from the crash of its leader to the next
    `became_leader` (one partition, one outage)."""
    leader, crashed = None, None
    for e in events:
        if e["event"] == "became_leader":
            if crashed is not None:
                return e["ts_ms"] - crashed
            leader = e["node"]
        elif e["event"] == "node_crashed" and e["target"] == leader:
            crashed = e["ts_ms"]
    return 0


def report(setting: str, run: StudyRun) -> list[str]:
    events = run.named(*TOLD)
    story = [f"{e['ts_ms']:>7} ms  {line}" for e in events if (line := told(e)) is not None]
    s = run.summary
    return [
        f"unclean.leader.election.enable = {setting}",
        *story,
        f"  no leader {leaderless_ms(events)} ms; produced {s['produced']}, "
        f"acknowledged {s['acked']}, lost {s['lost_acked']}, offsets reused {s['reused_offsets']}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="keep the run directories here")
    args = parser.parse_args()
    with StudyRuns(SCENARIO, args.out) as runs:
        for setting in ("true", "false"):
            run = runs.run(
                f"unclean-{setting}-seed{args.seed}",
                [f"broker.unclean.leader.election.enable={setting}", f"run.seed={args.seed}"],
            )
            print("\n".join(report(setting, run)), end="\n\n" if setting == "true" else "\n")


if __name__ == "__main__":
    run_study(main)
