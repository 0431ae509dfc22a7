"""Producer retries with and without idempotence: who writes a record twice.

Covers: a produce request that outlives the producer's `request.timeout.ms`, the retry of the
batches in flight, and the broker's duplicate check for idempotent producers (KIP-98).
Scenario: examples/03_idempotent_retries.toml (its header tells the story of seed 1 with
idempotence): three brokers, min.insync.replicas 2, one acks=all producer sending a record every
100 ms; broker 3 loses power at 10 s while still in the ISRs, the wire corrupts 2% of the frames
from 20 to 25 s, broker 3 returns at 50 s and is isolated at 60 s. The study runs it with
`producers.1.enable.idempotence` true and false, seeds 1 to 5.
What to look for: the retries happen with both settings; without idempotence every retried
record is in the log twice, with it none is.

Why the retries. The produce of 10 s waits in its leader's purgatory (broker 1 or 2: the
producer sticks to one partition, KIP-794) for broker 3, dead but still in the ISR, until
broker 3's ZooKeeper session expires (about 24 s) and the controller shrinks the ISR.
Meanwhile that client connection is muted (Kafka's socket server reads no more requests from it
until the answer is sent), so the next requests queue behind it, five in flight at most
(`max.in.flight.requests.per.connection`), one batch of one record each. If the corruption hits
a frame the ISR change depends on (ZooKeeper's answer to the controller, the LeaderAndIsr to a
broker, a follower's fetch), the high watermark stalls again until that side gives up (a
ZooKeeper connection is declared lost after two thirds of the session timeout, a LeaderAndIsr
or a fetch is sent again after 30 s), past the producer's request timeout: 30 s after it was
sent, at 40 s, the oldest request in flight times out, the producer closes the connection
(`NetworkClient.handleTimedOutRequests`) and every batch in flight there is retried
(REQUEST_TIMED_OUT is retriable). The broker, which never saw the connection close, still
appends the queued first attempts in order, one each time the one before it is answered. So
every retried batch was, or will be, appended by its first attempt too.

Why idempotence removes the copies. An idempotent producer numbers its batches per partition
(producer id, epoch, base sequence); the broker keeps the last five batches of each producer
(`ProducerStateManager`, hence at most five requests in flight) and answers a batch it already
has with the offsets it was written at, appending nothing (`batch_deduplicated` in the log).
Without idempotence the broker cannot tell a retry from a new record: it appends it again.

Expected output (08_retries_idempotence.out), and why each number is right.
- acknowledged 800, lost 0 everywhere: 800 records at one per 100 ms are all sent by 80 s and
  answered within the 120 s run; min.insync.replicas 2 keeps every acknowledged record on two
  live replicas, and no broker with the only copy of anything dies.
- retried: the records sent again after a failed attempt. The two settings are different runs
  (the idempotent producer's InitProducerId moves every later random draw), so the corruption
  hits other frames:
  - 5: the produce of 10 s was not answered by 40 s (the corruption had hit a frame the ISR
    change depends on), so the five one-record batches in flight, sent from 10.0 to 10.4 s,
    time out and are retried. Seed 1 with idempotence is the story of 03's header.
  - 0 (seed 4 with idempotence, seed 3 without): the produce of 10 s is answered at about
    24 s, when the controller takes broker 3 out of the ISR, and no later request waits 30 s.
  - 140 (seed 5 with idempotence): the produce of 10 s is answered at 24.0 s, which frees a
    slot: the 136 records created meanwhile (105 to 240, 10.5 to 24.0 s) leave as one batch.
    Then the HW stalls again, and at 40.1 s, 30 s after the oldest request still in flight
    (record 101's), the five in flight are retried: four one-record batches and that one,
    4 + 136. (Retried idempotent batches go one at a time, in sequence order.)
- written twice = retried without idempotence (each retried record was appended by both of its
  attempts; the retries of the five batches land in reverse order, the newest first, as
  `RecordAccumulator.reenqueue` puts each failed batch back at the head of its queue), and 0
  with it (every retried batch was answered as a duplicate).

Run: .venv/bin/python examples/08_retries_idempotence.py [--seeds N] [--out DIR]
The same study as a sweep (its runs.csv and configs.csv hold acked, lost_acked and
log_duplicates per run and per setting, on the Pykka host, with the same figures):
  .venv/bin/kafkasim sweep examples/03_idempotent_retries.toml --seeds 5 \\
      --grid producers.1.enable.idempotence=true,false --out runs/08-sweep
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sim.studies.variants import StudyRuns, run_study  # noqa: E402

SCENARIO = Path(__file__).resolve().parent / "03_idempotent_retries.toml"
SETTINGS = ("true", "false")


def retried_records(batches_sent: Iterable[dict[str, Any]]) -> int:
    """Records sent again after a failed attempt (each retry counts its records)."""
    return sum(len(e["records"]) for e in batches_sent if e["attempt"] > 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="run seeds 1 to N (default 5)")
    parser.add_argument("--out", type=Path, default=None, help="keep the run directories here")
    args = parser.parse_args()
    if args.seeds < 1:
        parser.error(f"--seeds: {args.seeds} is not at least 1")
    totals: dict[str, tuple[int, int]] = {}
    with StudyRuns(SCENARIO, args.out) as runs:
        print(f"{SCENARIO.name}, seeds 1 to {args.seeds}")
        print(f"{'enable.idempotence':<19}{'seed':>4}{'acknowledged':>14}{'lost':>6}", end="")
        print(f"{'retried':>9}{'written twice':>15}")
        for setting in SETTINGS:
            retried = twice = 0
            for seed in range(1, args.seeds + 1):
                run = runs.run(
                    f"idempotence-{setting}-seed{seed}",
                    [f"producers.1.enable.idempotence={setting}", f"run.seed={seed}"],
                )
                s = run.summary
                resent = retried_records(run.named("batch_sent"))
                retried, twice = retried + resent, twice + s["log_duplicates"]
                print(
                    f"{setting:<19}{seed:>4}{s['acked']:>14}{s['lost_acked']:>6}"
                    f"{resent:>9}{s['log_duplicates']:>15}"
                )
            totals[setting] = (retried, twice)
    for setting, (retried, twice) in totals.items():
        print(f"enable.idempotence={setting}: {retried} records retried, {twice} written twice")


if __name__ == "__main__":
    run_study(main)
