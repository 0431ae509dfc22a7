"""Built-in studies: the scenario `kafkasim run` uses when it is given none.

The default study is a small Kafka cluster under faults a controller is not needed for (the
controller issue adds leader failover): three brokers, a topic of two partitions replicated three
times with min.insync.replicas 2 (broker 3 leads neither), a producer with acks=all, and broker 3
losing power for longer than replica.lag.time.max.ms (its ISR shrink and expansion), then
isolated; corruption on the wire in between. What to look for in the report: acks=all stalls
while a dead broker is still in the ISR (records sent in its first 5 s time out after 30 s); the
ISR shrinks at the first check more than replica.lag.time.max.ms after broker 3's last fetch;
broker 3 comes back with an empty log (nothing was flushed) and rejoins in one fetch; the
isolation stalls the HW until broker 3's fetch times out (replica.socket.timeout.ms); nothing
acknowledged is lost.
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
