"""`fast_init`: the same construction as a frozen dataclass's own `__init__`, faster."""

from __future__ import annotations

import dataclasses

import pytest

from protocols.frozen import fast_init


def _example() -> type:
    """A new class each call: one keeps the dataclass's own `__init__`, one gets `fast_init`."""

    @dataclasses.dataclass(frozen=True, slots=True)
    class Example:
        a: int
        b: str = "b"
        c: tuple[int, ...] = dataclasses.field(default_factory=tuple)
        d: int = dataclasses.field(init=False, default=7)

    return Example


_Plain, _Fast = _example(), fast_init(_example())


@fast_init
@dataclasses.dataclass(frozen=True, slots=True)
class _Derived:
    items: tuple[int, ...]
    total: int = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "total", sum(self.items))


def _fields(obj: object) -> tuple[object, ...]:
    return tuple(getattr(obj, f.name) for f in dataclasses.fields(obj))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [((1,), {}), ((1, "x"), {}), ((1,), {"c": (2, 3)}), ((), {"a": 4, "b": "y", "c": (5,)})],
)
def test_builds_what_the_dataclass_init_builds(args: tuple[object, ...], kwargs: dict[str, object]) -> None:
    assert _fields(_Fast(*args, **kwargs)) == _fields(_Plain(*args, **kwargs))


def test_a_default_factory_is_called_for_each_object() -> None:
    @fast_init
    @dataclasses.dataclass(frozen=True, slots=True)
    class Holder:
        items: list[int] = dataclasses.field(default_factory=list)

    assert Holder().items is not Holder().items


def test_the_class_stays_frozen_and_post_init_runs() -> None:
    derived = _Derived((1, 2, 3))
    assert derived.total == 6
    with pytest.raises(dataclasses.FrozenInstanceError):
        derived.total = 0  # type: ignore[misc]


def test_a_missing_or_unknown_argument_fails_as_a_call_does() -> None:
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'a'"):
        _Fast()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        _Fast(1, z=2)  # type: ignore[call-arg]


def test_refuses_a_class_it_cannot_speed_up() -> None:
    @dataclasses.dataclass(slots=True)
    class Mutable:
        a: int

    @dataclasses.dataclass(frozen=True)
    class Unslotted:
        a: int

    with pytest.raises(TypeError, match="must be a frozen dataclass"):
        fast_init(Mutable)
    with pytest.raises(TypeError, match="must be a slotted dataclass"):
        fast_init(Unslotted)
