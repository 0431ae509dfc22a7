"""Message keys.

Kafka messages use Kafka's API keys (`org.apache.kafka.common.protocol.ApiKeys`), so a log line
can be read beside Kafka's own. The coordination service (the ZooKeeper model) uses 1000 plus
ZooKeeper's opcode (`org.apache.zookeeper.ZooDefs.OpCode`). Messages that exist only inside the
simulator start at 2000.
"""

from __future__ import annotations

from enum import IntEnum


class ApiKey(IntEnum):
    """Kafka's API keys for the requests the simulator models."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    LEADER_AND_ISR = 4
    STOP_REPLICA = 5
    UPDATE_METADATA = 6
    CONTROLLED_SHUTDOWN = 7
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    DELETE_GROUPS = 42
    OFFSET_DELETE = 47
    ALTER_PARTITION = 56
    CONSUMER_GROUP_HEARTBEAT = 68


ZOOKEEPER_BASE = 1000
SIMULATOR_BASE = 2000


class SimKey(IntEnum):
    """Keys of messages that exist only inside the simulator."""

    PING = SIMULATOR_BASE
    GOSSIP = SIMULATOR_BASE + 1
    BROKER_REGISTERED = SIMULATOR_BASE + 2
    ISR_UPDATE = SIMULATOR_BASE + 3
    DISCONNECTED = SIMULATOR_BASE + 4
    COORDINATOR_ELECTED = SIMULATOR_BASE + 5
    COORDINATOR_RESIGNED = SIMULATOR_BASE + 6
    APPLICATION_CALL = SIMULATOR_BASE + 7
    SHUTDOWN_SIGNAL = SIMULATOR_BASE + 8
    ADMIN_COMMAND = SIMULATOR_BASE + 9
