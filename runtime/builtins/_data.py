"""Data-shaping built-ins: JMESPath transforms, safe templates and small list helpers."""

from __future__ import annotations

import functools
import json
import re
from typing import Annotated, Any

import jmespath
import jmespath.exceptions
import jmespath.parser
from pydantic import Field

from runtime._errors import TaskError

MAX_TEMPLATE_CHARS = 100_000
MAX_RENDERED_CHARS = 1_000_000

_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
_KEY = re.compile(r"[A-Za-z0-9_-]+")
# A subset of Python's format mini-language, with widths and precisions of at most three and two
# digits, so a template cannot ask for a gigabyte of padding.
_SPEC = re.compile(r"(?:[^{}]?[<>^=])?[+\- ]?#?0?(?:\d{1,3})?[,_]?(?:\.\d{1,2})?[bcdeEfFgGnosxX%]?")


@functools.lru_cache(maxsize=256)
def _compiled(expression: str) -> jmespath.parser.ParsedResult:
    return jmespath.compile(expression)


def transform(expression: Annotated[str, Field(min_length=1, max_length=10_000)], data: Any = None) -> Any:
    """Reshape ``data`` with a JMESPath expression (https://jmespath.org), e.g. ``orders[?paid].id``.

    JMESPath is a query language, not code: nothing it says can run Python.
    """
    try:
        parsed = _compiled(expression)
    except jmespath.exceptions.JMESPathError as exc:
        raise _invalid(expression, exc) from None
    except MemoryError:
        raise  # the step's memory limit, not the expression's fault: the step fails as step.memory
    except Exception as exc:  # noqa: BLE001 - whatever the parser trips over is the expression's fault
        raise TaskError(f"transform: invalid JMESPath expression {expression!r}: {_reason(exc)}",
                        expression=expression) from None
    try:
        result = parsed.search(data)
        _refuse_expression_references(expression, result)
        return result
    except (TaskError, MemoryError):
        raise  # a MemoryError is the step's limit (step.memory), never the expression's failure
    except RecursionError:
        raise TaskError(f"transform: {expression!r} nests too deeply to evaluate", expression=expression) from None
    except Exception as exc:  # noqa: BLE001 - e.g. ValueError for a slice step of 0: the expression's error
        raise TaskError(f"transform: {expression!r} failed on this data: {_reason(exc)}",
                        expression=expression) from None


def _reason(exc: Exception) -> str:
    """The exception's own words, or its type when it has none (a message must never end empty)."""
    return str(exc) or type(exc).__name__


def _refuse_expression_references(expression: str, result: Any) -> None:
    """``&name`` evaluates to an expression reference (a function argument), which is no JSON value."""
    stack = [result]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif value is not None and not isinstance(value, str | int | float | bool):
            raise TaskError(
                f"transform: {expression!r} evaluates to an expression reference ('&...'), not a value; an "
                f"expression reference is only an argument of a function such as sort_by(@, &name)",
                expression=expression)


def _invalid(expression: str, exc: jmespath.exceptions.JMESPathError) -> TaskError:
    """A parse or lexer error, placed in the expression ("at the end" when the expression stopped short)."""
    position = getattr(exc, "lex_position", None)
    if position is None:
        position = getattr(exc, "lexer_position", None)
    # LexerError keeps its reason in .message (its .msg is generic); "incomplete" has only the generic one.
    message = getattr(exc, "message", None) if isinstance(exc, jmespath.exceptions.LexerError) else None
    if isinstance(exc, jmespath.exceptions.IncompleteExpressionError):
        message = "the expression is incomplete"
    message = message or getattr(exc, "msg", None) or str(exc)
    token = getattr(exc, "token_value", None)
    if token is None:
        token = getattr(exc, "lexer_value", None)
    if token in (None, ""):
        near = " (at the end of the expression)"
    else:
        near = f" (near {token!r})"
    where = f" at position {position}" if isinstance(position, int) else ""
    return TaskError(f"transform: invalid JMESPath expression {expression!r}{where}: {message}{near}",
                     expression=expression, position=position)


def template(
    template: Annotated[str, Field(max_length=MAX_TEMPLATE_CHARS)],
    values: dict[str, Any] | None = None,
) -> str:
    """Fill ``{name}`` placeholders from ``values``.

    ``{order.id}`` reads nested object keys; ``{total:.2f}`` applies a number or
    text format; ``{{`` and ``}}`` are literal braces. There is no attribute or
    index access and no expression: a placeholder only names keys. Text is
    inserted as is; other values are written as JSON (``true``, ``null``,
    ``[1, 2]``). A placeholder with no value is an error.
    """
    values = values or {}
    out: list[str] = []
    last = 0
    size = 0
    for match in _TOKEN.finditer(template):
        out.append(template[last:match.start()])
        size += match.start() - last
        last = match.end()
        token = match.group()
        if token in ("{{", "}}"):
            out.append(token[0])
            size += 1
            continue
        if match.group(1) is None:
            raise TaskError(
                f"template: unmatched {token!r} at position {match.start()}; write {token * 2!r} for a literal brace",
                position=match.start(),
            )
        piece = _render(match.group(1), values, match.start())
        size += len(piece)
        if size > MAX_RENDERED_CHARS:
            raise TaskError(f"template: the rendered text would exceed {MAX_RENDERED_CHARS} characters")
        out.append(piece)
    out.append(template[last:])
    return "".join(out)


def _render(inner: str, values: dict[str, Any], position: int) -> str:
    name, _, spec = inner.partition(":")
    name = name.strip()
    keys = name.split(".")
    if not name or not all(_KEY.fullmatch(key) for key in keys):
        raise TaskError(
            f"template: placeholder {{{inner}}} at position {position} is not a name; "
            f"use letters, digits, '_' or '-', with '.' between nested keys",
            position=position,
        )
    if not _SPEC.fullmatch(spec):
        raise TaskError(
            f"template: unsupported format {spec!r} in {{{inner}}} at position {position}; "
            f"use e.g. ':.2f', ':>10' or ':,' (width at most 999)",
            position=position,
        )
    value: Any = values
    for depth, key in enumerate(keys):
        if not isinstance(value, dict) or key not in value:
            where = ".".join(keys[:depth]) or "values"
            known = ", ".join(sorted(value)) if isinstance(value, dict) else f"a {type(value).__name__}"
            raise TaskError(
                f"template: placeholder {{{name}}} at position {position} has no value: "
                f"{where} has no key {key!r} (it has: {known or 'nothing'})",
                placeholder=name, position=position,
            )
        value = value[key]
    if spec:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise TaskError(
                f"template: format {spec!r} in {{{inner}}} needs a number or text, got {_json_type(value)}",
                position=position,
            )
        try:
            return format(value, spec)
        except ValueError as exc:
            raise TaskError(f"template: cannot format {{{inner}}} at position {position}: {exc}",
                            position=position) from None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


def set_value(value: Any = None) -> Any:
    """Return ``value`` unchanged: with output bindings, copies or assembles values into state."""
    return value


def collect(items: list[Any], unique: bool = False, drop_nulls: bool = False, flatten: bool = False) -> list[Any]:
    """Tidy a list: optionally flatten one level of nested lists, drop nulls and drop repeats (first kept)."""
    result: list[Any] = []
    for item in items:
        result.extend(item if flatten and isinstance(item, list) else [item])
    if drop_nulls:
        result = [item for item in result if item is not None]
    if unique:
        seen: set[str] = set()
        kept: list[Any] = []
        for item in result:
            # JSON text is the identity: it tells 1 from true and compares nested values by content.
            key = json.dumps(item, sort_keys=True, separators=(",", ":"))
            if key not in seen:
                seen.add(key)
                kept.append(item)
        result = kept
    return result


def length(value: list[Any] | dict[str, Any] | str) -> int:
    """The number of items in a list, keys in an object or characters in a text."""
    return len(value)
