"""Built-in studies: the scenario `kafkasim run` uses when it is given none, and the standard
workload that `kafkasim bench` measures.

The default study is a small ZooKeeper-mode cluster under faults: three brokers, a topic of two
partitions replicated three times with min.insync.replicas 2 (broker 3 leads neither), a 3.9
producer (acks=all and idempotence by default) sending ten records a second, and broker 3
losing power for 40 s, then isolated; corruption on the wire in between. What to look for in the
log and the report, with seed 1:
- Broker 2 is the first controller. The producer sticks to partition 0 (KIP-794).
- 10 s: broker 3 loses power while still in both ISRs. The produce of 10 s waits in broker 1's
  purgatory, its connection muted: later batches queue behind it, five in flight at most.
- 24 s: broker 3's session expires (18 s after its last ping); the controller takes it out of
  both ISRs (leader epoch 1) and the waiting produce completes. But the corruption (20 to 25 s)
  damages its answer, and the controller's LeaderAndIsr to broker 2: broker 2 keeps fetching
  under epoch 0, is fenced, and partition 0's HW stalls again.
- 40 s: the producer's request times out after 30 s, its connection closes and the five batches
  in flight wait to be retried; the retry queues behind the produce parked at broker 1.
- 50 s: broker 3 comes back with an empty log (nothing was flushed), registers with a new
  broker epoch and rejoins.
- 54 s: the controller sends its LeaderAndIsr to broker 2 again (30 s without an answer);
  partition 0 moves on and the five retried batches are found duplicates: answered with
  their first offsets, written once.
- 60 s: broker 3 is isolated for 5 s. Nothing acknowledged is lost, nothing is written twice.
"""

from __future__ import annotations

DEFAULT_STUDY = """\
[run]
name = "default"
seed = 1
"duration.ms" = 120000

[kafka]
version = "3.9"

[network]
"latency.min.ms" = 1
"latency.max.ms" = 5

[cluster]
brokers = 3

[broker]
"min.insync.replicas" = 2

[[topics]]
name = "orders"
partitions = 2
"replication.factor" = 3

[[producers]]
topic = "orders"
records = 800
"interval.ms" = 100

[[faults]]
kind = "crash"
"at.ms" = 10000
node = "broker-3"
"crash.kind" = "power_loss"
"restart.after.ms" = 40000

[[faults]]
kind = "corrupt"
"at.ms" = 20000
probability = 0.02
"duration.ms" = 5000

[[faults]]
kind = "partition"
"at.ms" = 60000
isolate = ["broker-3"]
"duration.ms" = 5000
"""


STANDARD_WORKLOAD = """\
# The standard workload: 3 brokers in ZooKeeper mode, one topic of 12 partitions with
# replication factor 3 and min.insync.replicas 2, one acks=all producer at 1,000 records per
# simulated second, a group of 4 consumers with auto-commit (so the 50 partitions of
# __consumer_offsets are replicated too); broker-1's process crashes at 60 s and restarts at 90 s.
[run]
name = "standard"
seed = 1
"duration.ms" = 300000

[kafka]
version = "3.9"

[network]
"latency.min.ms" = 1
"latency.max.ms" = 5

[cluster]
brokers = 3

[broker]
"min.insync.replicas" = 2

[[topics]]
name = "T"
partitions = 12
"replication.factor" = 3
"min.insync.replicas" = 2

[[producers]]
topic = "T"
acks = "all"
records = 300000
"interval.ms" = 1

[[consumers]]
"group.id" = "standard"
topics = ["T"]
count = 4

[[faults]]
kind = "crash"
"at.ms" = 60000
node = "broker-1"
"crash.kind" = "process"
"restart.after.ms" = 30000
"""
