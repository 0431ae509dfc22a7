"""How a registered message is encoded and decoded: the schema machinery behind
`protocols.registry` (Kafka's `protocol.types.Schema` and `Type`, and the `write`/`read` code its
message generator writes for each `*Data` class).

From a frozen, slotted dataclass's type hints a `Schema` compiles, once per version, an encoder
(one dict display) and a validating decoder.
Decoding never trusts the bytes: a body that is not a map of the declared fields with the declared
types raises `FrameError`, which the host turns into a rejected frame. Kafka's tagged fields and
its compact encodings are left out: the body is a msgpack map keyed by field name.

Supported field types: `int`, `bool`, `str`, `bytes`, an `IntEnum`, a `@struct` dataclass,
`tuple[X, ...]` of any of these, and `X | None`. Floats are not allowed: times are integer ms.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from enum import IntEnum
from typing import Any

__all__ = ["FieldSpec", "FrameError", "Schema", "compile_schema"]


class FrameError(ValueError):
    """A frame or body that does not decode to a registered message of the right shape."""


Encoder = Callable[[Any], Any]
Decoder = Callable[[Any], Any]


@dataclasses.dataclass(frozen=True, slots=True)
class FieldSpec:
    name: str
    since: int
    until: int | None
    has_default: bool
    default: Any
    encode: Encoder | None  # None: the value goes on the wire as it is
    decode: Decoder
    exact_type: type | None  # set for int, bool, str, bytes: checked inline, not by `decode`
    setter: Callable[[Any, Any], None]  # the slot's descriptor: builds frozen objects quickly

    def in_version(self, version: int) -> bool:
        return self.since <= version and (self.until is None or version <= self.until)


class Schema:
    """Encoder and validating decoder of one dataclass, compiled once per version.

    Each version gets a generated encoder (one dict display) and a generated decoder for the
    bodies this codec writes: exactly the version's fields, each of its declared type. Any other
    body, or a value that fails its check, goes to `decode_checked`, which fills defaults or
    raises the `FrameError` naming what is wrong; so validation costs a type test per field on
    the hot path and nothing is trusted.
    """

    __slots__ = ("_by_version", "_compiled", "cls", "fields")

    def __init__(self, cls: type, fields: tuple[FieldSpec, ...]) -> None:
        self.cls = cls
        self.fields = fields
        self._by_version: dict[int, tuple[tuple[FieldSpec, ...], tuple[FieldSpec, ...]]] = {}
        self._compiled: dict[int, tuple[Callable[[Any], dict[str, Any]], Callable[[Any, str], Any]]] = {}

    def compiled(self, version: int) -> tuple[Callable[[Any], dict[str, Any]], Callable[[Any, str], Any]]:
        """The generated (encoder, decoder) pair of `version`, compiled on first use."""
        compiled = self._compiled.get(version)
        if compiled is None:
            compiled = self._compiled[version] = _compile_codec(self, version)
        return compiled

    def _split(self, version: int) -> tuple[tuple[FieldSpec, ...], tuple[FieldSpec, ...]]:
        """(fields present in `version`, fields absent from it), computed once per version."""
        split = self._by_version.get(version)
        if split is None:
            present = tuple(s for s in self.fields if s.in_version(version))
            absent = tuple(s for s in self.fields if not s.in_version(version))
            split = self._by_version[version] = (present, absent)
        return split

    def encode(self, obj: Any, version: int) -> dict[str, Any]:
        return self.compiled(version)[0](obj)

    def decode(self, body: Any, version: int, path: str) -> Any:
        return self.compiled(version)[1](body, path)

    def decode_checked(self, body: Any, version: int, path: str) -> Any:
        """The validating decoder: defaults for absent fields, a `FrameError` for anything else."""
        if type(body) is not dict:
            msg = f"{path}: expected a map, got {type(body).__name__}"
            raise FrameError(msg)
        present, absent = self._split(version)
        # The dataclass is frozen; its slots are filled through their descriptors, which is
        # what its own __init__ does, minus the per-field object.__setattr__ calls.
        obj = object.__new__(self.cls)
        seen = 0
        for spec in present:
            name = spec.name
            if name in body:
                value = body[name]
                if spec.exact_type is not None:
                    if type(value) is not spec.exact_type:
                        got = type(value).__name__
                        msg = f"{path}.{name}: expected {spec.exact_type.__name__}, got {got}"
                        raise FrameError(msg)
                else:
                    try:
                        value = spec.decode(value)
                    except FrameError as exc:
                        raise FrameError(f"{path}.{name}{exc}") from None
                spec.setter(obj, value)
                seen += 1
            elif spec.has_default:
                spec.setter(obj, spec.default)
            else:
                msg = f"{path}.{name}: missing"
                raise FrameError(msg)
        if seen != len(body):
            known = {s.name for s in present}
            extra = sorted(str(k) for k in body if k not in known)
            msg = f"{path}: unknown field {extra[0]!r} in version {version}"
            raise FrameError(msg)
        for spec in absent:
            spec.setter(obj, spec.default)
        return obj


def _compile_codec(
    schema: Schema, version: int
) -> tuple[Callable[[Any], dict[str, Any]], Callable[[Any, str], Any]]:
    """Generate the encoder and the fast decoder of one schema version (see `Schema`)."""
    present, absent = schema._split(version)  # noqa: SLF001 - the schema's own helper
    ns: dict[str, Any] = {"new": object.__new__, "cls": schema.cls, "FrameError": FrameError}
    ns["checked"] = lambda body, path: schema.decode_checked(body, version, path)
    items, loads, checks, converts, sets = [], [], [], [], []
    for i, spec in enumerate(present):
        name = repr(spec.name)
        ns[f"set{i}"] = spec.setter
        if spec.encode is None:
            items.append(f"{name}: obj.{spec.name}")
        elif type(spec.encode) is _ListOf:  # a call less per field: the comprehension inline
            ns[f"enc{i}"] = spec.encode.item
            items.append(f"{name}: [enc{i}(x) for x in obj.{spec.name}]")
        elif type(spec.encode) is _Optional:
            ns[f"enc{i}"] = spec.encode.item
            items.append(f"{name}: None if (v{i} := obj.{spec.name}) is None else enc{i}(v{i})")
        else:
            ns[f"enc{i}"] = spec.encode
            items.append(f"{name}: enc{i}(obj.{spec.name})")
        loads.append(f"v{i} = body[{name}]")
        if spec.exact_type is not None:
            ns[f"t{i}"] = spec.exact_type
            checks.append(f"type(v{i}) is not t{i}")
        else:
            ns[f"dec{i}"] = spec.decode
            converts.append(f"v{i} = dec{i}(v{i})")
        sets.append(f"set{i}(obj, v{i})")
    for i, spec in enumerate(absent):
        ns[f"aset{i}"], ns[f"adef{i}"] = spec.setter, spec.default
        sets.append(f"aset{i}(obj, adef{i})")
    indent, body_indent = "\n        ", "\n    "
    source = f"""
def encode(obj):
    return {{{", ".join(items)}}}

def decode(body, path=""):
    if type(body) is not dict or len(body) != {len(present)}:
        return checked(body, path)
    try:
        {indent.join(loads) or "pass"}
    except KeyError:
        return checked(body, path)
    if {" or ".join(checks) or "False"}:
        return checked(body, path)
    try:
        {indent.join(converts) or "pass"}
    except FrameError:
        return checked(body, path)
    obj = new(cls)
    {body_indent.join(sets)}
    return obj
"""
    exec(compile(source, f"<codec {schema.cls.__name__} v{version}>", "exec"), ns)  # noqa: S102
    return ns["encode"], ns["decode"]


def _fail(detail: str) -> FrameError:
    """An error relative to the value being decoded; callers prefix where it was."""
    return FrameError(detail)


def _expect(kind: type, name: str) -> Decoder:
    def decode(value: Any) -> Any:
        if type(value) is not kind:
            raise _fail(f": expected {name}, got {type(value).__name__}")
        return value

    return decode


class _ListOf:
    """The encoder of `tuple[X, ...]` for an X with an encoder; a generated encoder inlines it
    as a comprehension (`_compile_codec`)."""

    __slots__ = ("item",)

    def __init__(self, item: Encoder) -> None:
        self.item = item

    def __call__(self, value: Any) -> list[Any]:
        return [self.item(v) for v in value]


class _Optional:
    """The encoder of `X | None` for an X with an encoder; inlined like `_ListOf`."""

    __slots__ = ("item",)

    def __init__(self, item: Encoder) -> None:
        self.item = item

    def __call__(self, value: Any) -> Any:
        return None if value is None else self.item(value)


_SIMPLE = {int: "int", bool: "bool", str: "str", bytes: "bytes"}
"""The plain field types, by the name an error gives them."""


def _compile_type(tp: Any, structs: Mapping[type, Schema]) -> tuple[Encoder | None, Decoder]:  # noqa: PLR0911 - one arm per type
    """Build the (encoder, decoder) pair for one annotated type."""
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) != 1:
            msg = f"only `X | None` unions are supported, not {tp}"
            raise TypeError(msg)
        enc, dec = _compile_type(args[0], structs)

        def decode_optional(value: Any) -> Any:
            return None if value is None else dec(value)

        return (None if enc is None else _Optional(enc)), decode_optional
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) != 2 or args[1] is not Ellipsis:  # noqa: PLR2004 - tuple[X, ...]
            msg = f"only homogeneous tuple[X, ...] is supported, not {tp}"
            raise TypeError(msg)
        enc, dec = _compile_type(args[0], structs)

        def name_fault(value: list[Any]) -> FrameError:
            for i, item in enumerate(value):  # again, to name the item at fault
                try:
                    dec(item)
                except FrameError as exc:
                    return _fail(f"[{i}]{exc}")
            return _fail(": invalid item")  # unreachable: some item failed

        def decode_list(value: Any) -> tuple[Any, ...]:
            if type(value) is not list:
                raise _fail(f": expected an array, got {type(value).__name__}")
            try:
                return tuple(map(dec, value))
            except FrameError:
                raise name_fault(value) from None

        exact = args[0] if args[0] in _SIMPLE else None

        def decode_exact_list(value: Any) -> tuple[Any, ...]:
            # Items of a plain type are checked in C (their set of types), not by a call each.
            if type(value) is not list:
                raise _fail(f": expected an array, got {type(value).__name__}")
            if value and set(map(type, value)) != {exact}:
                raise name_fault(value)
            return tuple(value)

        encode_list = list if enc is None else _ListOf(enc)
        return encode_list, decode_list if exact is None else decode_exact_list
    if isinstance(tp, type) and issubclass(tp, IntEnum):
        enum_cls = tp
        members = {int(m): m for m in enum_cls}  # a lookup, not the enum's slower call

        def decode_enum(value: Any) -> Any:
            if type(value) is not int:
                raise _fail(f": expected int, got {type(value).__name__}")
            member = members.get(value)
            if member is None:
                raise _fail(f": {value} is not a valid {enum_cls.__name__}")
            return member

        # msgpack writes an int subclass as the int it is: the member goes on the wire as it is.
        return None, decode_enum
    if tp in structs:
        return structs[tp].compiled(0)  # structs are not versioned
    if tp in _SIMPLE:
        return None, _expect(tp, _SIMPLE[tp])
    msg = f"unsupported message field type {tp!r}"
    raise TypeError(msg)


def compile_schema(cls: type, structs: Mapping[type, Schema]) -> Schema:
    """The schema of a message or struct class; `structs` are the nested structures registered
    so far, the only dataclasses its fields may name."""
    if not dataclasses.is_dataclass(cls):
        msg = f"{cls.__name__} must be a dataclass"
        raise TypeError(msg)
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    if not params.frozen:
        msg = f"{cls.__name__} must be frozen"
        raise TypeError(msg)
    if "__slots__" not in cls.__dict__ or "__dict__" in cls.__dict__:
        msg = f"{cls.__name__} must be a slotted dataclass (slots=True)"
        raise TypeError(msg)
    hints = typing.get_type_hints(cls)
    specs = []
    for f in dataclasses.fields(cls):
        has_default = f.default is not dataclasses.MISSING
        encode, decode = _compile_type(hints[f.name], structs)
        specs.append(
            FieldSpec(
                name=f.name,
                since=f.metadata.get("since", 0),
                until=f.metadata.get("until"),
                has_default=has_default,
                default=f.default if has_default else None,
                encode=encode,
                decode=decode,
                exact_type=hints[f.name] if hints[f.name] in (int, bool, str, bytes) else None,
                setter=cls.__dict__[f.name].__set__,
            )
        )
    return Schema(cls=cls, fields=tuple(specs))

