"""Built-in studies: the scenario `kafkasim run` uses when it is given none, and the standard
workload that `kafkasim bench` measures.

The default study is a small ZooKeeper-mode cluster under faults: three brokers, a topic of two
partitions replicated three times with min.insync.replicas 2 (broker 3 leads neither), a
producer with acks=all, and broker 3 losing power for 40 s, then isolated; corruption on the
wire in between. With seed 1 broker 3 is also the first controller. What to look for in the
report and the log: acks=all stalls while the dead broker is still in the ISR (records sent in
its first seconds time out after 30 s); AlterPartition has no controller to go to until broker
3's session expires (18 s after its last ping), when broker 2 wins controller epoch 2 and takes
broker 3 out of both ISRs (leader epoch +1); broker 3 comes back with an empty log (nothing was
flushed), registers with a new broker epoch and rejoins in one fetch; the isolation stalls the
HW until broker 3's fetch times out (replica.socket.timeout.ms); nothing acknowledged is lost.
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
# The standard workload, producer side: 3 brokers in ZooKeeper mode, one topic of 12 partitions
# with replication factor 3 and min.insync.replicas 2, one acks=all producer at 1,000 records
# per simulated second; broker-1's process crashes at 60 s and restarts at 90 s.
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

[[faults]]
kind = "crash"
"at.ms" = 60000
node = "broker-1"
"crash.kind" = "process"
"restart.after.ms" = 30000
"""
