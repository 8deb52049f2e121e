"""The check the engine's fast factories share: each builds a frozen slotted dataclass through a layout twin
(``runtime._twins``) and must build exactly what the dataclass's constructor builds."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from collections.abc import Callable
from typing import Any

import pytest


def assert_same_as_constructor(cls: type, factory: Callable[..., Any]) -> None:
    """``factory`` takes ``cls``'s fields by position, in field order, and returns a real, frozen, hashable,
    picklable ``cls`` equal to the constructor's, every value in its own field.

    Each field gets a different value, so a value stored in the wrong slot shows; a field added to ``cls``
    without a parameter (or parameters in another order) fails the signature check.
    """
    names = [f.name for f in dataclasses.fields(cls)]
    assert list(inspect.signature(factory).parameters) == names
    values = {name: f"value-{position}" for position, name in enumerate(names)}
    built, expected = factory(*values.values()), cls(**values)
    assert type(built) is cls

    def fields_of(instance: Any) -> list[Any]:
        return [getattr(instance, name) for name in names]

    assert fields_of(built) == list(values.values()) and repr(built) == repr(expected)
    if cls.__eq__ is not object.__eq__:  # a class compared by identity (eq=False) has only its fields to compare
        assert built == expected and hash(built) == hash(expected)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(built, names[0], "other")
    assert fields_of(pickle.loads(pickle.dumps(built))) == fields_of(built)
    assert fields_of(dataclasses.replace(built, **{names[0]: "other"})) == fields_of(
        cls(**{**values, names[0]: "other"}))
