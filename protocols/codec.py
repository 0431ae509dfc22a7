"""The msgpack codec: frames in, frames out.

A frame is the msgpack array `[kind, key, version, correlation_id, body]`:
- `kind` is 0 for a request, 1 for a response, 2 for a one-way message (Kafka tells a response
  from a request by the connection; the simulator's hosts are symmetric, so the frame says it);
- `key` is Kafka's API key for Kafka messages (see `protocols.keys`);
- `body` is a map keyed by field name, written in declared order, so bytes are deterministic.

The array is followed by a 4-byte CRC-32 of it, as Kafka protects record batches with a CRC and
TCP protects segments: a frame damaged on the wire is rejected rather than read as another valid
message.

msgpack 1.x defaults are kept (`use_bin_type=True`, `raw=False`, `strict_map_key=True`): map keys
must be strings, which is why partition maps travel as arrays of structures.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgpack

from protocols.frozen import fast_init
from protocols.registry import Kind, lookup, message_type
from protocols.schema import FrameError

__all__ = ["Frame", "FrameError", "decode_frame", "encode_frame"]

_FRAME_LENGTH = 5
_CRC_BYTES = 4


@fast_init
@dataclass(frozen=True, slots=True)
class Frame:
    """A decoded frame."""

    kind: Kind
    version: int
    correlation_id: int
    message: Any


def encode_frame(message: Any, correlation_id: int = 0, version: int | None = None) -> bytes:
    """Encode a registered message; `version` defaults to the highest the registry supports."""
    wire = _ENCODERS.get((type(message), version))
    if wire is None:
        wire = _ENCODERS[(type(message), version)] = _encoder(type(message), version)
    kind, key, v, encode = wire
    payload = msgpack.packb([kind, key, v, correlation_id, encode(message)])
    return payload + zlib.crc32(payload).to_bytes(_CRC_BYTES, "big")


def decode_frame(data: bytes) -> Frame:
    """Decode and validate a frame; raise `FrameError` naming what is wrong."""
    payload, crc = data[:-_CRC_BYTES], data[-_CRC_BYTES:]
    if len(data) <= _CRC_BYTES or zlib.crc32(payload).to_bytes(_CRC_BYTES, "big") != crc:
        msg = "checksum mismatch"
        raise FrameError(msg)
    try:
        raw = msgpack.unpackb(payload)
    except Exception as exc:  # noqa: BLE001 - msgpack raises several types for bad bytes
        msg = f"not msgpack: {type(exc).__name__}"
        raise FrameError(msg) from None
    if type(raw) is not list or len(raw) != _FRAME_LENGTH:
        msg = "not a frame: expected [kind, key, version, correlation_id, body]"
        raise FrameError(msg)
    kind, key, version, correlation_id, body = raw
    if not (type(kind) is int and type(key) is int and type(version) is int):
        msg = "bad header: kind, key and version must be integers"
        raise FrameError(msg)
    if type(correlation_id) is not int:
        msg = "bad header: correlation_id must be an integer"
        raise FrameError(msg)
    wire = _DECODERS.get((kind, key, version))
    if wire is None:
        wire = _decoder(kind, key, version)  # raises for an unknown message or version
        _DECODERS[(kind, key, version)] = wire
    kind_, decode, name = wire
    return Frame(kind_, version, correlation_id, decode(body, name))


# Each (class, version) a sender names and each (kind, key, version) a valid frame carries is
# looked up once, so a hot message costs one dict lookup on each side instead of a chain of
# registry calls. Only registered, supported combinations are kept: the caches stay small
# whatever bytes arrive.
_ENCODERS: dict[tuple[type, int | None], tuple[int, int, int, Callable[[Any], Any]]] = {}
_DECODERS: dict[tuple[int, int, int], tuple[Kind, Callable[[Any, str], Any], str]] = {}


def _encoder(cls: type, version: int | None) -> tuple[int, int, int, Callable[[Any], Any]]:
    mtype = message_type(cls)
    v = mtype.max_version if version is None else version
    return int(mtype.kind), mtype.key, v, mtype.encoder(v)


def _decoder(kind: int, key: int, version: int) -> tuple[Kind, Callable[[Any, str], Any], str]:
    mtype = lookup(kind, key)
    if mtype is None:
        msg = f"unknown message: kind {kind}, key {key}"
        raise FrameError(msg)
    return mtype.kind, mtype.decoder(version), mtype.name
