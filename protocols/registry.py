"""The one registry of message schemas: what each message is (Kafka's `ApiKeys` and the JSON
message schemas its generator reads).

Every message is a frozen, slotted dataclass registered with `@message`: its key, the versions it
supports, its kind (request, response or one-way) and, for a request, its response type. Each
field may say from which version it exists (`since`) and until which (`until`), as Kafka's JSON
schemas do with `"versions": "1+"`; a field that a version lacks takes its default when decoded.
Nested structures are dataclasses registered with `@struct`.

The registry compiles, once per class, an encoder and a validating decoder from the type hints
(`protocols.schema`, which says what field types are supported and how nothing decoded is
trusted), and gives the class a faster `__init__` (`protocols.frozen`): messages are built for
every send. Left out: ApiVersions negotiation; a sender names the version it writes, by default
the highest the registry supports.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from enum import IntEnum
from typing import Any

from protocols.frozen import fast_init
from protocols.schema import FrameError, Schema, compile_schema

__all__ = [
    "Kind",
    "MessageType",
    "field",
    "lookup",
    "message",
    "message_type",
    "registered",
    "struct",
]


class Kind(IntEnum):
    """What a frame carries; part of the frame header."""

    REQUEST = 0
    RESPONSE = 1
    ONE_WAY = 2


def field(*, default: Any = dataclasses.MISSING, since: int = 0, until: int | None = None) -> Any:
    """Declare a field that exists only in versions `since..until` (inclusive)."""
    if isinstance(default, list | dict | set):
        msg = "mutable defaults are not allowed in messages; use a tuple"
        raise TypeError(msg)
    return dataclasses.field(default=default, metadata={"since": since, "until": until})


@dataclasses.dataclass(frozen=True, slots=True)
class MessageType:
    """A registered message: its key, versions, kind and schema."""

    key: int
    kind: Kind
    name: str
    cls: type
    min_version: int
    max_version: int
    response: type | None
    schema: Schema

    def encode_body(self, obj: Any, version: int) -> dict[str, Any]:
        return self.schema.encode(obj, version)

    def decode_body(self, body: Any, version: int) -> Any:
        return self.decoder(version)(body, self.name)

    def encoder(self, version: int) -> Callable[[Any], dict[str, Any]]:
        """The compiled body encoder of `version` (a `ValueError` if it is not supported)."""
        if not self.min_version <= version <= self.max_version:
            msg = f"{self.name} does not support version {version}"
            raise ValueError(msg)
        return self.schema.compiled(version)[0]

    def decoder(self, version: int) -> Callable[[Any, str], Any]:
        """The compiled, validating body decoder of `version`, called with the body and the
        message's name (what its errors start with); a `FrameError` if `version` is unsupported."""
        if not self.min_version <= version <= self.max_version:
            msg = f"{self.name}: unsupported version {version}"
            raise FrameError(msg)
        return self.schema.compiled(version)[1]


_BY_HEADER: dict[tuple[int, int], MessageType] = {}
_BY_CLASS: dict[type, MessageType] = {}
_STRUCTS: dict[type, Schema] = {}


def struct(cls: type) -> type:
    """Register a nested structure (a dataclass used as a field type; not versioned itself)."""
    _STRUCTS[cls] = compile_schema(cls, _STRUCTS)
    return fast_init(cls)


def message(
    key: int,
    *,
    kind: Kind,
    versions: tuple[int, int] = (0, 0),
    response: type | None = None,
) -> Callable[[type], type]:
    """Register a message class under `(kind, key)`.

    Refuses, when the class is defined: a second class for the same header, a request without a
    response type, a response that is not registered as the response of the same key, and a field
    that some supported version lacks but that has no default.
    """

    def register(cls: type) -> type:
        header = (int(kind), key)
        if header in _BY_HEADER:
            other = _BY_HEADER[header].name
            msg = f"{cls.__name__}: key {key} ({kind.name}) is already taken by {other}"
            raise TypeError(msg)
        if kind is Kind.REQUEST:
            if response is None:
                msg = f"{cls.__name__}: a request must name its response type"
                raise TypeError(msg)
            paired = _BY_CLASS.get(response)
            if paired is None or paired.kind is not Kind.RESPONSE or paired.key != key:
                msg = f"{cls.__name__}: {response.__name__} is not the response registered for {key}"
                raise TypeError(msg)
        schema = compile_schema(cls, _STRUCTS)
        low, high = versions
        for spec in schema.fields:
            if (spec.since > low or spec.until is not None) and not spec.has_default:
                msg = f"{cls.__name__}.{spec.name}: a versioned field needs a default"
                raise TypeError(msg)
        mtype = MessageType(
            key=key,
            kind=kind,
            name=cls.__name__,
            cls=cls,
            min_version=low,
            max_version=high,
            response=response,
            schema=schema,
        )
        _BY_HEADER[header] = mtype
        _BY_CLASS[cls] = mtype
        return fast_init(cls)

    return register


def message_type(cls: type) -> MessageType:
    """The registration of a message class."""
    try:
        return _BY_CLASS[cls]
    except KeyError:
        msg = f"{cls.__name__} is not a registered message"
        raise TypeError(msg) from None


def lookup(kind: int, key: int) -> MessageType | None:
    """The message registered under a frame header, or None."""
    return _BY_HEADER.get((kind, key))


def registered() -> list[MessageType]:
    """Every registered message, ordered by key then kind."""
    return sorted(_BY_HEADER.values(), key=lambda m: (m.key, m.kind))
