"""Arithmetic and comparison built-ins."""

from __future__ import annotations

import math as _math
from typing import Any, Literal

from pydantic import StrictFloat, StrictInt

from runtime._errors import TaskError
from runtime._registry import Route

# Strict so that ``true`` is not silently the number 1 and ``"2"`` is not 2: payloads are JSON.
Number = StrictInt | StrictFloat
MathOp = Literal["add", "sub", "mul", "div", "min", "max", "sum"]
CompareOp = Literal["equals", "not_equals", "gt", "gte", "lt", "lte", "in", "contains"]

_BINARY = {"add", "sub", "mul", "div"}


def math(op: MathOp, a: Number | None = None, b: Number | None = None, values: list[Number] | None = None) -> Number:
    """Arithmetic. ``add``, ``sub``, ``mul`` and ``div`` take ``a`` and ``b``; ``min``, ``max`` and
    ``sum`` take ``values`` (or ``a`` and ``b``). Integers stay integers except through ``div``."""
    result: int | float
    try:
        if op in _BINARY:
            if a is None or b is None:
                missing = " and ".join(name for name, v in (("a", a), ("b", b)) if v is None)
                raise TaskError(f"math: {op!r} needs both a and b; {missing} not given", op=op)
            if op == "add":
                result = a + b
            elif op == "sub":
                result = a - b
            elif op == "mul":
                result = a * b
            else:
                if b == 0:
                    raise TaskError(f"math: division by zero ({a!r} / {b!r})", op=op)
                result = a / b
        else:
            items = list(values) if values is not None else [v for v in (a, b) if v is not None]
            if op == "sum":
                result = sum(items)
            elif not items:
                raise TaskError(f"math: {op!r} of no values; give a non-empty 'values' list", op=op)
            else:
                result = min(items) if op == "min" else max(items)
    except OverflowError as exc:
        raise TaskError(f"math: {op!r} overflowed: {exc}", op=op) from None
    if isinstance(result, float) and not _math.isfinite(result):
        raise TaskError(f"math: the result of {op!r} is {result!r}, which is not a finite number", op=op)
    return result


def compare(left: Any = None, op: CompareOp = "equals", right: Any = None) -> Route | bool:
    """Compare two JSON values and route ``true`` or ``false`` (the payload is the same boolean).

    Equality is JSON equality (``1 == 1.0``, but ``true != 1``). ``gt``/``gte``/``lt``/``lte``
    order two numbers or two texts. ``in`` tests ``left`` in ``right`` (a list item, an object key
    or a substring); ``contains`` is the same the other way round.
    """
    result = _evaluate(left, op, right)
    return Route("true" if result else "false", result)


def _evaluate(left: Any, op: str, right: Any) -> bool:
    if op == "equals":
        return json_equal(left, right)
    if op == "not_equals":
        return not json_equal(left, right)
    if op in ("in", "contains"):
        needle, haystack = (left, right) if op == "in" else (right, left)
        if isinstance(haystack, list):
            return any(json_equal(needle, item) for item in haystack)
        if isinstance(haystack, (dict, str)) and isinstance(needle, str):
            return needle in haystack
        raise TaskError(
            f"compare: {op!r} needs a list, an object or a text to look in, and text to look for in an object or "
            f"text; got {_kind(needle)} in {_kind(haystack)}",
            op=op,
        )
    numbers = all(_is_number(v) for v in (left, right))
    texts = all(isinstance(v, str) for v in (left, right))
    if not (numbers or texts):
        raise TaskError(f"compare: cannot order {_kind(left)} and {_kind(right)} with {op!r}; "
                        f"compare two numbers or two texts", op=op)
    if op == "gt":
        return bool(left > right)
    if op == "gte":
        return bool(left >= right)
    if op == "lt":
        return bool(left < right)
    return bool(left <= right)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if _is_number(value):
        return "a number"
    if isinstance(value, str):
        return "a text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


def json_equal(left: Any, right: Any) -> bool:
    """Equality as JSON sees it: Python's ``True == 1`` does not hold here."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left is right
    if _is_number(left) and _is_number(right):
        return bool(left == right)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(json_equal(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    return type(left) is type(right) and bool(left == right)
