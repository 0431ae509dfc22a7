"""Message schemas, the msgpack codec and Kafka's error codes."""

from protocols import (  # noqa: F401 - register their messages
    admin,
    application,
    connection,
    group,
    metadata,
    producer,
    replication,
    workload,
    zookeeper,
)
from protocols.codec import Frame, FrameError, decode_frame, encode_frame
from protocols.errors import ErrorCode
from protocols.registry import Kind, message_type, registered

__all__ = [
    "ErrorCode",
    "Frame",
    "FrameError",
    "Kind",
    "decode_frame",
    "encode_frame",
    "message_type",
    "registered",
]
