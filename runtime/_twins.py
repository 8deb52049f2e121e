"""Layout twins: how the engine builds frozen slotted dataclasses on its hot path at a third of the cost.

A frozen dataclass's generated ``__init__`` writes each field with ``object.__setattr__(self, name, value)``,
which finds the field's slot by name every time. A twin is a plain class with the same slots in the same
order: a factory fills one with ordinary attribute stores (a specialized bytecode each), then assigns the
real class to ``__class__``, which CPython allows between classes whose instance layouts are identical. The
result is an ordinary, frozen, hashable, picklable instance of the dataclass.

The per-field stores stay written out in each factory: a loop over the field names costs what it saves.
"""

from __future__ import annotations

from typing import Any


def layout_twin(cls: type) -> type[Any]:
    """A class with ``cls``'s slots in the same order, whose instances may become ``cls`` by ``__class__`` assignment.

    ``cls`` must be a slotted class (``@dataclass(slots=True)``) that defines every slot itself; anything else
    could not share its layout, so it is refused here, at import, rather than at the first assignment.
    """
    slots = cls.__dict__.get("__slots__")
    if not isinstance(slots, tuple) or any(base.__dict__.get("__slots__") for base in cls.__mro__[1:-1]):
        raise TypeError(f"{cls.__name__} has no slotted layout of its own to twin")
    return type(f"_{cls.__name__}Twin", (), {"__slots__": slots, "__module__": cls.__module__})
