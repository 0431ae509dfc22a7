"""Built-in studies: the scenario `kafkasim run` uses when it is given none.

Until the Kafka actors exist, the default study is the gossip stand-in (actors/workload.py)
under the faults a Kafka study would use: a partition, a process crash with restart, a GC pause,
corruption and a lossy link. The later issues replace it with a real cluster.
"""

from __future__ import annotations

DEFAULT_STUDY = """\
[run]
name = "default"
seed = 1
"duration.ms" = 60000

[kafka]
version = "3.9"

[network]
"latency.min.ms" = 1
"latency.max.ms" = 5

[workload]
kind = "gossip"
nodes = 5
"actors.per.node" = 2
"tokens.per.actor" = 2
"ping.interval.ms" = 500

[[faults]]
kind = "partition"
"at.ms" = 10000
isolate = ["node-0"]
"duration.ms" = 5000

[[faults]]
kind = "crash"
"at.ms" = 20000
node = "node-1"
"crash.kind" = "power_loss"
"restart.after.ms" = 3000

[[faults]]
kind = "pause"
"at.ms" = 30000
node = "node-2"
"duration.ms" = 4000

[[faults]]
kind = "corrupt"
"at.ms" = 40000
probability = 0.02
"duration.ms" = 5000

[[faults]]
kind = "drop"
"at.ms" = 50000
probability = 0.1
src = ["node-3"]
"duration.ms" = 5000
"""
