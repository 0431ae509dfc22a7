"""A controller paused past its ZooKeeper session, told as a story (scenario S11).

Covers: the election multi and controller epochs, failover on session expiry, resignation,
and a bounced broker registering with a new broker epoch. Scenario:
examples/01_controller_failover.toml, three brokers, a topic of two partitions, an acks=all
producer; the controller pauses for 25 s at t = 5 s.
What to look for: another broker wins the next epoch about 18 s after the paused controller's
last ping; the old one wakes, finds its session gone, resigns and registers again. (When the
pause catches it with requests still queued, they are rejected and its next write is fenced:
tests/scenarios/test_controller.py plays that S11 exactly.)

Expected output (01_controller_failover.out), and why each number is right.
- Broker epochs are the czxid of each `/brokers/ids/N` (KIP-380), ZooKeeper's transaction id
  at its creation: zxids 1 to 4 made the topic's znodes before the run and 5 to 7 the top-level
  paths (`/brokers/ids`, `/isr_change_notification`, `/controller_epoch`), so the three
  registrations get 8, 9 and 10. Broker 3's session opened first (1 ms): it registers first
  and wins the election multi
  (`/controller_epoch` 0 -> 1): controller epoch 1. The topic's two partitions get their first
  leaders from the assignment ([1, 2, 3] and [2, 3, 1]): leaders 1 and 2, epoch 0.
- The last request ZooKeeper heard from broker 3's session arrived at 68 ms (its failover's
  reads); its next ping, a third of the 18000 ms session timeout after the session opened, falls
  inside the pause. So the session expires at 68 + 18000 = 18068 ms, deleting its ephemerals;
  the watch on `/controller` fires, and broker 1 wins epoch 2 eighteen milliseconds later (the
  watch, a read of `/controller_epoch` and the multi, each a round trip of 2 to 8 ms).
- The pause ends at 5000 + 25000 = 30000 ms; broker 3's first request is answered
  SESSIONEXPIRED, so it resigns epoch 1 at 30006, opens a new session and registers again: a
  new czxid, broker epoch 18.
- 300 records at one per 100 ms from 1000 ms are all sent by 30900, within the 40 s run.
  Broker 3 leads neither partition, and with min.insync.replicas 1 its pause only shrinks the
  ISRs, so every acks=all record is acknowledged and none is lost: 300, 300, 0.

Run: .venv/bin/python examples/01_controller_failover.py [--seed N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sim.cluster.harness import Cluster  # noqa: E402
from sim.cluster.scenario import load_scenario  # noqa: E402

HERE = Path(__file__).resolve().parent
TOLD = {
    "controller_elected": "broker {broker_id} is controller, epoch {controller_epoch}",
    "controller_resigned": "broker {broker_id} resigns epoch {controller_epoch} ({reason})",
    "controller_moved": "broker {broker_id}'s write under epoch {controller_epoch} fails: {error}",
    "zk_session_expired": "ZooKeeper expires session {session_id}, deleting {ephemerals}",
    "broker_registered": "broker {broker_id} registers, broker epoch {broker_epoch}",
    "leader_elected": "{topic}-{partition}: leader {leader}, epoch {leader_epoch}, ISR {isr} ({election})",
    "controller_request_rejected": "{node} rejects {request} from controller epoch {controller_epoch}: {error}",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    overrides = [] if args.seed is None else [f"run.seed={args.seed}"]
    scenario = load_scenario(HERE / "01_controller_failover.toml", overrides)
    told: list[str] = []

    def tell(event: dict) -> None:
        story = TOLD.get(event["event"])
        if story is not None:
            told.append(f"{event['ts_ms']:>6} ms  " + story.format(**event))

    with Cluster(scenario) as cluster:
        cluster.kernel.observe(tell)
        cluster.run(until_ms=5000)
        [controller] = [b for b in (1, 2, 3) if cluster.state(f"broker-{b}", "controller")["state"] == "active"]
        told.append(f"{cluster.now_ms:>6} ms  broker {controller} pauses for 25 s")
        cluster.pause(f"broker-{controller}", 25000)
        cluster.run_to_end()
        checks = cluster.final_checks()
    print("\n".join(told))
    print(f"produced {checks['produced']}, acknowledged {checks['acked']}, lost {checks['lost_acked']}")


if __name__ == "__main__":
    main()
