"""Kernel faults, told as a story.

Covers: crash kinds and what the disk keeps, a partition and its heal, a GC pause.
Scenario: examples/00_kernel_faults.toml, 3 nodes pinging each other every 200 ms; each actor
counts answered pings on disk and flushes the count every 5 answers.
What to look for: a process crash keeps the count (the page cache survived), a power loss rolls
it back to the last flush; an isolated node gets no answers until the partition heals.

Expected output (00_kernel_faults.out), and why each number is right. Each actor pings one
peer every 200 ms from t = 200; an answer comes back within 2 to 8 ms (1 to 4 ms each way), so
every ping sent before a cut-off is answered before the next one leaves.
- t=3000: pings at 200, 400, ..., 2800 are answered: 14.
- The process crash keeps the page cache: still 14 after the restart at 3000.
- By 6000 the restarted actor pinged at 3200, ..., 5800 (14 more): 28. Counts are flushed at
  every fifth answer, so the power loss rolls back to the last multiple of 5: 25.
- node-0 never crashed: 39 pings by 8000 (200 to 7800). Isolated from 8000, it gets no answer:
  its pings at 8000, 8200, ..., 9800 are held on the cut links (a partition closes no
  connection): still 39 at 10000.
- The heal comes before the actors' events of t=10000: the ten held pings go on, in order, and
  are answered, and so are the pings at 10000, 10200, ..., 10800: 39 + 10 + 5 = 54 by 11000.
- The digest is the sha256 of the event log: any change to what the simulation does shows here.

Run: .venv/bin/python examples/00_kernel_faults.py [--seed N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sim.cluster.harness import Cluster  # noqa: E402
from sim.cluster.scenario import load_scenario  # noqa: E402

HERE = Path(__file__).resolve().parent


def answered(cluster: Cluster, node: str) -> int:
    return cluster.state(node, "gossip-0")["pings_answered"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=7)
    seed = parser.parse_args().seed
    scenario = load_scenario(HERE / "00_kernel_faults.toml", [f"run.seed={seed}"])
    with Cluster(scenario) as cluster:
        cluster.run(until_ms=3000)
        print(f"t={cluster.now_ms}: node-1 has {answered(cluster, 'node-1')} answered pings")

        cluster.crash("node-1", "process")
        cluster.restart("node-1")
        cluster.run(for_ms=1)
        print(f"t={cluster.now_ms}: after a process crash node-1 has {answered(cluster, 'node-1')}")

        cluster.run(until_ms=6000)
        before = answered(cluster, "node-1")
        cluster.crash("node-1", "power_loss")
        cluster.restart("node-1")
        cluster.run(for_ms=1)
        after = answered(cluster, "node-1")
        print(f"t={cluster.now_ms}: power loss took node-1 from {before} to {after} (last flush)")

        cluster.run(until_ms=8000)
        cluster.isolate("node-0")
        held = answered(cluster, "node-0")
        cluster.run(until_ms=10000)
        print(f"t={cluster.now_ms}: isolated for 2 s, node-0 went from {held} to {answered(cluster, 'node-0')}")
        cluster.heal()
        cluster.run(until_ms=11000)
        print(f"t={cluster.now_ms}: healed, node-0 has {answered(cluster, 'node-0')}")

        cluster.run_to_end()
        print(f"t={cluster.now_ms}: the pause of node-2 at 12000 ms ended; run over")
        print(f"events digest {cluster.kernel.event_log.digest}")


if __name__ == "__main__":
    main()
