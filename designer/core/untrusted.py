"""Reading ids and JSON text that arrive from requests, so that no value can turn into a 500.

Path converters and query strings accept any run of digits, but databases store
ids as signed 64-bit integers (SQLite raises ``OverflowError`` beyond, through
foreign-key lookups), and ``str.isdigit`` also accepts digits ``int`` refuses
("²"). JSON nested deeper than anyone writes by hand exhausts the recursion
limit in the decoder, in pydantic or in ``json.dumps`` further down; refusing
it at the door gives one clear message instead of a crash somewhere later.
"""

from __future__ import annotations

import json
from typing import Any, Final

from designer.core.errors import BadRequest

#: The largest id a signed 64-bit integer column holds.
MAX_ID: Final = 2**63 - 1

#: How deeply objects and lists may nest in JSON a request sends. Documents,
#: schemas and run inputs stay far below; pydantic stops serializing near 255.
MAX_JSON_DEPTH: Final = 100


class JSONInputError(ValueError):
    """JSON text that parses but is not acceptable: too deep, or NaN/Infinity."""


def parse_id(value: object) -> int | None:
    """A database id from an int or a string of ASCII digits; None for anything that cannot be one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = value
    elif isinstance(value, str):
        text = value.strip()
        # 19 digits hold every 64-bit id; longer text is refused before int() parses it.
        if not (text.isascii() and text.isdigit()) or len(text) > 19:
            return None
        number = int(text)
    else:
        return None
    return number if 0 < number <= MAX_ID else None


def nesting_depth(value: Any) -> int:
    """How many objects/lists deep ``value`` goes (0 for a scalar); iterative, so any depth is measurable."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def _unencodable_text(value: Any) -> str | None:
    """The first string (or key) in ``value`` that is not valid Unicode, if any: an unpaired surrogate
    ("\\ud800"), which JSON text can spell as an escape but no database text column (nor UTF-8) can hold.

    NUL (``\\u0000``) is accepted: the JSON columns keep it exactly on every database (designer/core/fields.py).
    """
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            texts: Any = (item,)
        elif isinstance(item, dict):
            texts = item.keys()
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
            continue
        else:
            continue
        for text in texts:
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                return text
    return None


def _refuse_constant(name: str) -> Any:
    raise JSONInputError(f"{name} is not valid JSON; numbers must be finite")


def loads_json(text: str | bytes) -> Any:
    """``json.loads`` for request data: plain JSON only, at most ``MAX_JSON_DEPTH`` levels deep.

    Raises ``json.JSONDecodeError`` for malformed text and ``JSONInputError``
    for the rest (too deep, NaN/Infinity, an unpaired surrogate); NUL characters are kept;
    both are ``ValueError``s.
    """
    too_deep = JSONInputError(
        f"the JSON is nested more than {MAX_JSON_DEPTH} levels deep; flatten it (objects and lists inside "
        f"each other at most {MAX_JSON_DEPTH} times)"
    )
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise too_deep from None
    if nesting_depth(value) > MAX_JSON_DEPTH:
        raise too_deep
    bad = _unencodable_text(value)
    if bad is not None:
        raise JSONInputError(
            f"the JSON contains an unpaired surrogate (a lone \\ud800-\\udfff escape) in the text {bad[:40]!r}; "
            f"send valid Unicode (a surrogate pair, or the character itself)"
        )
    return value


def json_error_message(exc: ValueError) -> str:
    """What is wrong with JSON text, with the position when the decoder knows it."""
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} (line {exc.lineno}, column {exc.colno})"
    return str(exc)


def form_json(text: str, *, field: str | None, what: str, empty: Any = None) -> Any:
    """A form field (or request body) read as JSON with ``loads_json``; ``BadRequest`` naming ``field`` and
    saying where the text breaks (line and column) or why it is refused (too deep, NaN, a lone surrogate).

    ``what`` names the value in the message ("the sample input"). ``empty`` is what blank text (nothing but
    whitespace) stands for; with None, blank text is refused like any other text that is not JSON.
    """
    if empty is not None and not text.strip():
        return empty
    try:
        return loads_json(text)
    except json.JSONDecodeError as exc:
        raise BadRequest(f"{what} is not valid JSON: {json_error_message(exc)}", field=field) from None
    except JSONInputError as exc:
        raise BadRequest(f"{what}: {exc}", field=field) from None
