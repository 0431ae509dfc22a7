"""Built-in studies: the scenario `kafkasim run` uses when it is given none, and the standard
workload that `kafkasim bench` measures.

The default study is a consumer group under the two events that rebalance it most in practice:
a consumer that crashes, and a rolling restart of the application. Three brokers in ZooKeeper
mode; a topic `orders` of six partitions replicated three times (min.insync.replicas 2); a 3.9
producer (acks=all, idempotent by default) sending a hundred keyed records a second; and the
group `billing` of three consumers with the 3.9 defaults (auto-commit every 5 s, a 45 s session,
range then cooperative-sticky offered, so range is used), each taking 2 ms per record. What to
look for, with seed 1 (the terminal's last lines and the report say the same):
- 6.1 s: generation 1, two partitions each.
- 31 s: consumer-2's process crashes, 4.8 s after its last auto-commit. Its partitions are not
  read while the coordinator still counts it as a member.
- 51 s: its process starts again and joins as a new member: the group starts a rebalance but
  must wait for the old member, which sends nothing and is not removed before its session
  times out.
- 75 s: the old member's session expires; generation 2 forms. The new owner of orders-2 and
  orders-3 (consumer-3) starts from the last commit and processes again what consumer-2 had
  processed since: 152 duplicates, all `crash_before_commit`.
- 90 s: the rolling restart: each consumer in turn is closed (commitSync, revocation,
  LeaveGroup), its process exits and starts again, 5 s apart: three more generations, and no
  duplicate, since `close()` commits what was processed.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from sim.cluster.scenario import Scenario, load_scenario, parse_scenario

__all__ = ["DEFAULT_STUDY", "STANDARD_WORKLOAD", "load_study", "study_text"]

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
partitions = 6
"replication.factor" = 3

[[producers]]
topic = "orders"
records = 12000
"interval.ms" = 10
keys = 100

[[consumers]]
"group.id" = "billing"
topics = ["orders"]
count = 3
"auto.offset.reset" = "earliest"
"process.record.ms" = 2

[[faults]]
kind = "crash"
"at.ms" = 31000
node = "consumer-2"
"restart.after.ms" = 20000

[[faults]]
kind = "rolling_restart"
"at.ms" = 90000
group = "billing"
"interval.ms" = 5000
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


def load_study(path: str | Path | None, overrides: Iterable[str] = ()) -> Scenario:
    """A scenario file, or the default study when there is none (what `kafkasim run` runs)."""
    if path is None:
        return parse_scenario(DEFAULT_STUDY, "the default study", overrides)
    return load_scenario(path, overrides)


def study_text(path: str | Path | None) -> str:
    """The TOML text `load_study` reads."""
    return DEFAULT_STUDY if path is None else Path(path).read_text(encoding="utf-8")
