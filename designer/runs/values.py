"""Finding runs by a value of their input or output: ``input.order = A-1042``, ``input.customers[*].id = C-200``.

A run's scalars are copied into ``RunValue`` rows, each under its path with every list position written ``[*]``
(so ``customers[*].id`` matches any customer), and its text: a string as it is, anything else as JSON (``42``,
``true``, ``null``). A query's value is compared as text, so ``= 42`` finds the number 42 and the string "42".
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from designer.core.errors import BadRequest

#: At most this many scalars of a side are kept per run (the first ones, depth first): enough for the ids and
#: names people search by, while a 100,000-item input costs a bounded number of rows.
MAX_VALUES = 500
#: Paths and texts longer than this are cut (so a search with a longer value finds nothing).
MAX_TEXT = 200

#: One search, as the API schema's pattern writes it too (so a request the schema allows is never refused).
_SEGMENT = r"[^.\[\]= \t\r\n]+"
LINE_PATTERN = rf"[ \t]*(input|output)((?:\.{_SEGMENT}|\[\*\])+)[ \t]*=[^\n]*"
_QUERY = re.compile(rf"^[ \t]*(input|output)((?:\.{_SEGMENT}|\[\*\])+)[ \t]*=\s*(.*?)\s*$", re.S)


@dataclass(frozen=True, slots=True)
class ValueQuery:
    side: str
    path: str
    text: str

    def __str__(self) -> str:
        return f"{self.side}.{self.path} = {self.text}"

    def stored(self) -> tuple[str, str]:
        """The path and text as ``RunValue`` rows keep them."""
        return _storable(self.path), _storable(self.text)


def _storable(text: str) -> str:
    """PostgreSQL's text columns refuse NUL, so it is kept as JSON writes it (the six characters ``\\u0000``).

    A query's path and value go through the same function, so a NUL in a search finds the same NUL in a run.
    """
    return text.replace("\x00", "\\u0000")[:MAX_TEXT]


def _text(value: Any) -> str:
    return _storable(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))


def _scalars(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _scalars(inner, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for inner in value:
            yield from _scalars(inner, f"{path}[*]")
    elif path:
        yield _storable(path), _text(value)


def pairs_of(value: Any) -> list[tuple[str, str]]:
    """The (path, text) pairs kept of one side of a run: distinct, the first ``MAX_VALUES``, depth first."""
    pairs: dict[tuple[str, str], None] = {}
    for pair in _scalars(value, ""):
        pairs.setdefault(pair)
        if len(pairs) >= MAX_VALUES:
            break
    return list(pairs)


def parse_query(text: str, *, field: str = "value") -> ValueQuery:
    """``input.customers[*].id = C-200``; a query that cannot mean anything is a ``BadRequest`` saying why."""
    found = _QUERY.match(text or "")
    if found is None:
        hint = ("write it as input.<path> = <value> or output.<path> = <value>, with [*] for any position of a "
                "list, e.g. input.customers[*].id = C-200")
        if re.search(r"\[\d+\]", text or ""):
            hint = "a list position is written [*] (any item), not a number; " + hint
        raise BadRequest(f"{text!r} is not a value search: {hint}", field=field)
    side, path, value = found.group(1), found.group(2).lstrip("."), found.group(3)
    if len(value) >= 2 and value.startswith('"') and value.endswith('"'):
        try:
            quoted = json.loads(value)
        except ValueError:
            quoted = None
        if isinstance(quoted, str):
            value = quoted  # "42" in quotes: the string, as JSON writes it
    return ValueQuery(side=side, path=path, text=value)
