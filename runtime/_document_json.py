"""Read-only JSON containers for the JSON values a workflow document holds (schemas, metadata, literals).

``Engine.compile`` caches a plan per document object, so nothing reachable from a document may change in
place: its lists are tuples (``_document.Items``) and its JSON values are ``FrozenDict``/``FrozenList``,
made once when the document is validated. They are ``dict``/``list`` subclasses, so everything that reads
JSON keeps working unchanged: ``isinstance`` checks (jsonschema's ``object``/``array``), ``json.dumps``,
pydantic's dumps and JSON Schema, equality with plain values, ``repr``. Only the mutators refuse.

Copying gives back ordinary values, as ``dict.copy``/``list.copy`` (inherited) already do: ``copy.copy`` a
shallow plain ``dict``/``list``, ``copy.deepcopy`` and ``thaw`` a deep one. That is what every copy-then-edit
caller wants (a schema default copied into run state, a literal handed to a task). A document itself stays
frozen through ``copy.deepcopy`` (``_document._Model.__deepcopy__`` shares these values). Pickle round-trips
to the frozen types.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar, NoReturn

_HOW = ("a workflow document and the JSON values in it are immutable (Engine.compile caches a plan per document): "
        "derive a changed document with model_copy(update=...), or change a copy (copy.deepcopy(value) is an "
        "ordinary dict/list)")


def _refusal(what: str) -> Callable[..., NoReturn]:
    def refuse(self: object, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError(f"cannot {what} this {'object' if isinstance(self, dict) else 'array'}: {_HOW}")

    return refuse


class _ReadOnly:
    """What the two read-only containers share: copies are ordinary values, pickling rebuilds the read-only type
    (the base types' own pickling would refill the object through its mutators, which refuse)."""

    __slots__ = ()
    _plain: ClassVar[type[Any]]  # the ordinary type: dict or list

    def __copy__(self) -> Any:
        return self._plain(self)

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Any:
        return thaw(self)

    def __reduce__(self) -> tuple[type[Any], tuple[Any]]:
        return type(self), (self._plain(self),)


class FrozenDict(_ReadOnly, dict[str, Any]):
    """A JSON object inside a workflow document: a ``dict`` whose mutators raise ``TypeError``."""

    __slots__ = ()
    _plain = dict


class FrozenList(_ReadOnly, list[Any]):
    """A JSON array inside a workflow document: a ``list`` whose mutators raise ``TypeError``."""

    __slots__ = ()
    _plain = list


def _refuse(kind: type, mutators: dict[str, str]) -> None:
    """Every mutator of ``kind``'s base type (name -> what it would have done) raising instead."""
    for name, what in mutators.items():
        setattr(kind, name, _refusal(what))


_refuse(FrozenDict, {"__setitem__": "set a key of", "__delitem__": "delete a key of", "__ior__": "update",
                     "clear": "clear", "pop": "pop a key of", "popitem": "pop an item of",
                     "setdefault": "set a default in", "update": "update"})
_refuse(FrozenList, {"__setitem__": "set an item of", "__delitem__": "delete an item of", "__iadd__": "extend",
                     "__imul__": "repeat", "append": "append to", "extend": "extend", "insert": "insert into",
                     "pop": "pop an item of", "remove": "remove an item of", "clear": "clear", "sort": "sort",
                     "reverse": "reverse"})


def thaw(value: Any) -> Any:
    """``value`` with every JSON object and array an ordinary, new ``dict``/``list`` (scalars as they are):
    what a document's literal becomes when it flows into a run, which may change it."""
    if isinstance(value, dict):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, list):
        return [thaw(item) for item in value]
    return value


class _NotJson(Exception):
    pass


def _frozen(value: Any) -> Any:
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is FrozenDict or kind is FrozenList:
        return value  # made by this module, so already checked
    if kind is float:
        if math.isfinite(value):
            return value
        raise _NotJson
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise _NotJson
        return FrozenDict({key: _frozen(item) for key, item in value.items()})
    if isinstance(value, list):
        return FrozenList([_frozen(item) for item in value])
    if isinstance(value, (str, int)):  # subclasses (a str or int enum member) are taken as they are
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    raise _NotJson


def freeze(value: Any) -> Any:
    """``value`` (plain JSON data) with every object and array read-only; ``ValueError`` naming where it is not
    JSON (a set, a tuple, NaN, a non-string key), since it would not survive a JSON round trip."""
    try:
        return _frozen(value)
    except _NotJson:
        raise ValueError(json_problem(value, "the value") or "the value is not JSON") from None


def json_problem(value: Any, where: str) -> str | None:
    """Why ``value`` is not plain JSON, or None. Anything else would not survive a JSON round trip."""
    if value is None or isinstance(value, (str, bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{where} is {value!r}, which JSON cannot represent"
    if isinstance(value, list):
        for index, item in enumerate(value):
            problem = json_problem(item, f"{where}[{index}]")
            if problem:
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{where} has the non-string key {key!r}; JSON object keys are strings"
            problem = json_problem(item, f"{where}[{key!r}]")
            if problem:
                return problem
        return None
    return f"{where} is a {type(value).__name__}, which is not JSON (use null, bool, number, string, list or object)"
