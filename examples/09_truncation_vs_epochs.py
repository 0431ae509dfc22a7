"""Truncation to the high watermark against leader epochs, under a double failure (KIP-101).

Covers: what a follower cuts from its log when it follows a new leader, before leader epochs
(0.10.2: down to its high watermark) and after (0.11.0, KIP-101: to the end of the leader's
epoch, as the leader answers OffsetsForLeaderEpoch; 2.8+, KAFKA-10554: as the fetch answers a
diverging epoch), and what that does to acknowledged records and to the replicas.
Scenario: examples/09_truncation_vs_epochs.toml (its header tells the story), the same faults
under three profiles: the partition's leader, broker 1, stalls for 20 s at 10 s, and broker 2
crashes at 13 s; the third replica, broker 3, ends up leading. The canonical scenarios S2 (an
acknowledged record lost by truncation to the HW) and S4 (replicas diverged for ever) happen
here together, from one history: the two failures KIP-101 was written for.
What to look for: in 0.10.2 broker 3 truncates acknowledged records on its way to leadership,
and the old leader keeps them at offsets the new leader fills with other records; with leader
epochs neither happens.

Expected output (09_truncation_vs_epochs.out), and why each number is right (seed 1).
- Before the faults the producer has written records 0 to 999, ten per request with one request
  in flight, each acknowledged once all three replicas have it: the leader's HW is 1000 at 9.9 s.
  A follower learns the HW one fetch later (canonical scenario S1): brokers 2 and 3 hold 1000
  records with HW 990, and the fetch that would carry HW 1000 never comes, broker 1 stalling
  at 10 s.
- Broker 1's ZooKeeper session expires at 14.0 s (6 s after the last ping ZooKeeper heard); the
  controller, broker 3, elects the first live ISR member in assignment order, broker 2 (its
  session lasts until 18.0 s, though it crashed at 13 s), with leader epoch 1. Broker 3 becomes
  its follower:
  - 0.10.2 (`ReplicaManager.makeFollowers` truncates to the HW): "1000 -> 990", records 990 to
    999 are gone from broker 3.
  - 0.11.0 and 3.9: the follower asks broker 2 where its epoch 0 ends (OffsetsForLeaderEpoch,
    or from 2.8 the fetch itself) and truncates only to the answer. Broker 2 is down; no answer,
    no truncation: "none".
- At 18.0 s broker 2's session expires: broker 3, the last live ISR member, leads at epoch 2
  with the log it has: "leads from" 990 in 0.10.2, 1000 with epochs. The producer writes its
  second thousand records (20 to 30 s) there. In 0.10.2 they take offsets 990 to 1989.
- acknowledged 2000: every record was acknowledged (the first thousand by broker 1 before 10 s,
  the second by broker 3).
- lost 10, reused 10 (0.10.2): records 990 to 999 were acknowledged at offsets 990 to 999 and
  are not in the final log (broker 3's, the live leader of the highest epoch); those ten
  offsets now hold records 1000 to 1009. With epochs: 0 and 0.
- diverged (0.10.2) "1-2 at 990, 1-3 at 990": broker 1 wakes at 30 s with HW 1000, becomes
  broker 3's follower, truncates to that HW (nothing to cut) and fetches from offset 1000. Its
  offsets 990 to 999 keep the old records while brokers 2 and 3 hold the new ones there, all
  below every HW: the committed logs disagree, and nothing will ever repair them. (Broker 2,
  restarted at 30 s with the HW it had checkpointed, 990, truncates to it and copies broker 3.)
  With epochs broker 1 asks broker 3 where epoch 0 ends, 1000, and keeps everything: "none".
- invariants: in 0.10.2, weak_isr and strong_isr are violated from 14041 ms, when broker 3, a
  member of the ISR, no longer holds records below the HW of the leader it had (broker 1's
  1000); `[run] invariants = "report"` lists them instead of failing the run. None with epochs.
- 0.11.0 and 3.9 print the same row: nothing here needs KIP-279 (2.0: the loop of truncations
  when leaders change twice while a follower truncates), nor the fetch-based truncation of 2.8.
With another seed the controller may be broker 2, the one that crashes: then no controller acts
until its session expires, and the next one elects broker 3 straight away, which truncates
nothing in any version (seeds 3 and 4; 0.10.2 still reports weak_isr at 30 s, when broker 2
restarts and truncates to its checkpointed HW, 990, below the HW of broker 1, which wakes
believing it still leads).

Run: .venv/bin/python examples/09_truncation_vs_epochs.py [--seed N] [--out DIR]
The same study as a sweep (one series per profile):
  .venv/bin/kafkasim sweep examples/09_truncation_vs_epochs.toml --seeds 3 \\
      --grid 'kafka.version="0.10.2","0.11.0","3.9"' --out runs/09-sweep
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sim.studies.variants import StudyRun, StudyRuns, run_study  # noqa: E402

SCENARIO = Path(__file__).resolve().parent / "09_truncation_vs_epochs.toml"
PROFILES = ("0.10.2", "0.11.0", "3.9")
NEW_LEADER = "broker-3"


def truncations_before_leading(events: Iterable[dict[str, Any]], node: str) -> str:
    """The truncations `node` made before it first became leader after the start of the run."""
    cuts = []
    for e in events:
        if e["node"] != node:
            continue
        if e["event"] == "became_leader":
            break
        if e["event"] == "log_truncated":
            cuts.append(f"{e['from_offset']} -> {e['to_offset']}")
    return ", ".join(cuts) or "none"


def leads_from(events: Iterable[dict[str, Any]], node: str) -> int | None:
    """The log end offset `node` had when it first became leader."""
    leading = (e for e in events if e["event"] == "became_leader" and e["node"] == node)
    return next((e["log_end_offset"] for e in leading), None)


def diverged(pairs: list[dict[str, Any]]) -> str:
    """summary.json's diverged_replicas, short: `1-2 at 990`."""
    short = (f"{p['replicas'][0]}-{p['replicas'][1]} at {p['offset']}" for p in pairs)
    return ", ".join(short) or "none"


def violated(violations: list[dict[str, Any]]) -> str:
    """The invariants violated, in order of first violation, and when the first was."""
    if not violations:
        return "none"
    names = list(dict.fromkeys(v["invariant"] for v in violations))
    return f"{', '.join(names)} from {violations[0]['ts_ms']} ms"


def row(profile: str, run: StudyRun) -> str:
    s = run.summary
    events = run.named("log_truncated", "became_leader")
    start = leads_from(events, NEW_LEADER)
    cut = truncations_before_leading(events, NEW_LEADER)
    return (
        f"{profile:<8}{cut:<14}{start if start is not None else '-':>11}{s['acked']:>14}"
        f"{s['lost_acked']:>6}{s['reused_offsets']:>8}  {diverged(s['diverged_replicas'])}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="keep the run directories here")
    args = parser.parse_args()
    invariants = []
    with StudyRuns(SCENARIO, args.out) as runs:
        print(f"{SCENARIO.name}, seed {args.seed}: ", end="")
        print("broker-1 (leader) pauses at 10 s, broker-2 crashes at 13 s")
        print(f"{'profile':<8}{'broker-3 cut':<14}{'leads from':>11}", end="")
        print(f"{'acknowledged':>14}{'lost':>6}{'reused':>8}  diverged")
        for profile in PROFILES:
            overrides = [f'kafka.version="{profile}"', f"run.seed={args.seed}"]
            run = runs.run(f"{profile}-seed{args.seed}", overrides)
            print(row(profile, run))
            invariants.append(f"{profile}: {violated(run.summary['invariant_violations'])}")
    print("invariants violated (reported, not fatal):")
    print("\n".join(f"  {line}" for line in invariants))


if __name__ == "__main__":
    run_study(main)
