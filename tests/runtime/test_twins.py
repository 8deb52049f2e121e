"""``layout_twin`` refuses, at import, a class whose instances a twin could not become."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from runtime._twins import layout_twin


@dataclass(frozen=True, slots=True)
class Point:
    x: int
    y: int


@dataclass(frozen=True, slots=True)
class Point3(Point):
    z: int


@dataclass(frozen=True)
class Loose:
    x: int


def test_a_twin_of_a_slotted_dataclass_becomes_one() -> None:
    twin = layout_twin(Point)
    assert twin.__slots__ == Point.__slots__ and twin is not Point
    built = twin()
    built.x, built.y = 1, 2
    built.__class__ = Point
    assert built == Point(1, 2)


@pytest.mark.parametrize("cls", [Loose, Point3], ids=["no slots", "slots inherited"])
def test_a_class_without_a_slotted_layout_of_its_own_is_refused(cls: type) -> None:
    with pytest.raises(TypeError, match=f"{cls.__name__} has no slotted layout of its own"):
        layout_twin(cls)
