"""The scenario's schema: every section and array of tables with its settings.

The actors' sections come from their packages (`actors/*/settings.py`): `[broker]` is the
broker's, the controller's and the group coordinator's keys together, as Kafka's
server.properties holds them; `[[producers]]` and `[[consumers]]` are the clients'. What is the
simulator's own is declared here: the run, the version, the network, the cluster's shape, the
topics an administrator creates before the run, and the faults.
"""

from __future__ import annotations

from typing import Any

from actors import workload
from actors.broker import settings as broker_settings
from actors.consumer import settings as consumer_settings
from actors.controller import settings as controller_settings
from actors.group import settings as group_settings
from actors.producer import settings as producer_settings
from actors.settings import Setting
from protocols.admin import ADMIN_OPERATIONS, RESET_TARGETS
from actors.settings import setting as _s

__all__ = ["ARRAYS", "FAULT_COMMON", "FAULT_KINDS", "FAULT_SETTINGS", "SECTIONS", "TOPIC_LOG_SETTINGS", "TOPIC_SETTINGS"]

SECTIONS: dict[str, tuple[Setting, ...]] = {
    "run": (
        _s("name", str, "default", doc="names the run id and the default output directory"),
        _s("seed", int, 1, low=0, high=2**63 - 1),
        _s("duration.ms", int, 60000, low=1),
        _s("max.events", int, 0, low=0, doc="stop after this many handler calls; 0: no limit"),
        _s(
            "invariants",
            str,
            "fail",
            choices=("fail", "report"),
            doc="fail the run on a violation, or report violations (a study of an unsafe setup)",
        ),
        _s("log.requests", bool, False, doc="log every request sent and every answer received (request_sent, response_received)"),
    ),
    "kafka": (_s("version", str, "3.9", doc="selects behaviour and defaults (actors/profiles.py)"),),
    "network": (
        _s("latency.min.ms", int, 1, low=1, high=60000),
        _s("latency.max.ms", int, 5, low=1, high=60000),
    ),
    "cluster": (
        _s("brokers", int, 0, low=0, high=100, doc="brokers broker-1 ... broker-N"),
        _s(
            "metadata.mode",
            str,
            "zookeeper",
            choices=("zookeeper", "static"),
            doc="zookeeper: a controller elected through ZooKeeper; static: no controller, leaders never move",
        ),
    ),
    "zookeeper": (_s("enabled", bool, True, doc="run the coordination service (node `zookeeper`)"),),
    "broker": (*broker_settings.SETTINGS, *controller_settings.SETTINGS, *group_settings.SETTINGS),
    "workload": workload.SETTINGS,
}

FAULT_KINDS = (
    "crash",
    "restart",
    "shutdown",
    "pause",
    "partition",
    "heal",
    "drop",
    "delay",
    "duplicate",
    "reorder",
    "corrupt",
    "close",
    "unsubscribe",
    "stall",
    "slow",
    "rolling_restart",
    "zombie",
    "admin",
)

_NODES = list[str]
FAULT_COMMON = (_s("kind", str, required=True, choices=FAULT_KINDS), _s("at.ms", int, 0, low=0))
_LINK = (
    _s("src", _NODES, [], doc="sending nodes; empty: any"),
    _s("dst", _NODES, [], doc="receiving nodes; empty: any"),
    _s("duration.ms", int, None, low=1, doc="how long the fault lasts; unset: to the end"),
)
_PROBABILITY = _s("probability", float, None, low=0.0, high=1.0, required=True)
FAULT_SETTINGS: dict[str, tuple[Setting, ...]] = {
    "crash": (
        _s("node", str, required=True),
        _s("crash.kind", str, "process", choices=("process", "power_loss", "disk_loss")),
        _s("restart.after.ms", int, None, low=1),
    ),
    "restart": (_s("node", str, required=True),),
    "shutdown": (
        _s("node", str, required=True, doc="a broker: the operator stops it (a controlled shutdown first)"),
        _s("exit.after.ms", int, 0, low=0, doc="the process exits no earlier than this after the signal"),
        _s("restart.after.ms", int, None, low=1, doc="restart this long after the process exits"),
    ),
    "pause": (_s("node", str, required=True), _s("duration.ms", int, None, low=1, required=True)),
    "partition": (
        _s("isolate", _NODES, [], doc="cut these nodes off from all the others"),
        _s("between", list[_NODES], [], doc="two groups of nodes to cut apart"),
        _s("one.way", bool, False, doc="block only traffic from the first group to the second"),
        _s("duration.ms", int, None, low=1, doc="heal after this long; unset: until a heal"),
    ),
    "heal": (),
    "drop": (_PROBABILITY, *_LINK),
    "duplicate": (_PROBABILITY, *_LINK),
    "corrupt": (_PROBABILITY, *_LINK),
    "reorder": (_PROBABILITY, _s("delay.ms", int, 50, low=0), *_LINK),
    "delay": (_s("delay.ms", int, None, low=1, required=True), *_LINK),
    "close": (_s("node", str, required=True, doc="a consumer: its application calls close()"),),
    "unsubscribe": (_s("node", str, required=True, doc="a consumer: its application calls unsubscribe()"),),
    "stall": (
        _s("node", str, required=True, doc="a consumer: its processing between two polls takes longer"),
        _s("duration.ms", int, None, low=1, required=True),
    ),
    "slow": (
        _s("node", str, required=True, doc="a consumer: each record it processes takes process.record.ms"),
        _s("process.record.ms", int, None, low=0, required=True),
        _s("duration.ms", int, None, low=1, doc="then back to the consumer's own; unset: to the end"),
    ),
    "rolling_restart": (
        _s("nodes", _NODES, [], doc="consumers or brokers, stopped and restarted in this order"),
        _s("group", str, None, doc="or every consumer of this group.id, in node order"),
        _s("interval.ms", int, 10000, low=0, doc="from one consumer's restart to the next one's close()"),
        _s("down.ms", int, 0, low=0, doc="how long each process stays down after close() returns"),
    ),
    "zombie": (
        _s("node", str, required=True, doc="a consumer: cut off from its group's coordinator only"),
        _s("duration.ms", int, None, low=1, doc="lift that cut after this long; unset: until a heal"),
    ),
    "admin": (
        _s("operation", str, required=True, choices=ADMIN_OPERATIONS, doc="the kafka-consumer-groups command"),
        _s("group", str, None, doc="the group.id (every operation but list_groups)"),
        _s("topic", str, None, doc="--topic; a reset without it takes every partition the group has an offset for"),
        _s("partitions", list[int], [], doc="the topic's partitions; empty: all of them"),
        _s("to", str, None, choices=RESET_TARGETS, doc="a reset's target"),
        _s("datetime.ms", int, None, low=0, doc="to = datetime: the simulated time to reset to"),
        _s("shift.by", int, None, doc="to = shift-by: how far to move the committed offsets"),
    ),
}
TOPIC_SETTINGS = (
    _s("name", str, required=True),
    _s("partitions", int, 1, low=1, high=10000),
    _s("replication.factor", int, 1, low=1, high=100),
    _s("replicas", list[list[int]], [], doc="broker ids per partition; empty: round robin"),
    _s("min.insync.replicas", int, None, low=1, doc="overrides [broker] min.insync.replicas"),
    _s("segment.bytes", int, None, low=14, high=broker_settings.INT_MAX, doc="overrides [broker] log.segment.bytes"),
    _s("segment.ms", int, None, low=1, doc="overrides [broker] log.roll.ms"),
    _s("retention.ms", int, None, low=-1, doc="overrides [broker] log.retention.ms"),
    _s("retention.bytes", int, None, low=-1, doc="overrides [broker] log.retention.bytes"),
)
TOPIC_LOG_SETTINGS = broker_settings.TOPIC_LOG_SETTINGS
ARRAYS: dict[str, Any] = {
    "faults": FAULT_SETTINGS,
    "topics": TOPIC_SETTINGS,
    "producers": producer_settings.SETTINGS,
    "consumers": consumer_settings.SETTINGS,
}
