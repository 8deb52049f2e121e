"""Path values and their TOML dotted-key syntax.

Three path types never mix: ``GraphSourcePath`` reads the current scope
(``input``, ``state`` or ``context``), ``StatePath`` names a state field to
write, and ``LocalPath`` addresses a field of one boundary payload. The
structural tuple form is authoritative; the string form exists for storage and
display, and is TOML dotted-key syntax so that ``tomllib`` agrees with us about
where segments begin and end.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

from runtime._errors import PathSyntaxError

SourceRoot = Literal["input", "state", "context"]
SOURCE_ROOTS: Final[tuple[str, ...]] = ("input", "state", "context")

_BARE = re.compile(r"[A-Za-z0-9_-]+")
_SIMPLE_ESCAPES: Final[dict[str, str]] = {
    '"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r",
}
_UNESCAPES: Final[dict[str, str]] = {
    '"': '"', "\\": "\\", "b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r",
}


def format_segment(segment: str) -> str:
    """One key segment in TOML syntax: bare when it can be, else a basic string."""
    if _BARE.fullmatch(segment):
        return segment
    out = ['"']
    for char in segment:
        escaped = _SIMPLE_ESCAPES.get(char)
        if escaped is not None:
            out.append(escaped)
        elif char < " " or char == "\x7f":
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def is_item_index(segment: str) -> bool:
    """Whether a segment of a payload target (``LocalPath``) addresses an array item.

    A canonical decimal number (``0``, ``1``, ``12``; no sign, no leading zero)
    builds an array at that point of an input binding's or workflow output's
    target: ``tags.0`` and ``tags.1`` make ``tags`` a two-item list. Reads take
    list elements by index anyway. State paths never build arrays: a digit
    segment there is an object key.
    """
    # ``0|[1-9][0-9]*`` without a regular expression: asked for each segment of each binding at every step.
    return segment.isascii() and segment.isdigit() and (segment[0] != "0" or segment == "0")


def format_key(parts: Iterable[str]) -> str:
    return ".".join(format_segment(part) for part in parts)


def _check_parts(parts: object, kind: str) -> tuple[str, ...]:
    if isinstance(parts, str):
        raise PathSyntaxError(
            f"{kind} parts must be a tuple of segments, not the string {parts!r}; "
            f"use parse_* to read dotted text",
            text=parts,
        )
    if not isinstance(parts, Iterable):
        raise PathSyntaxError(f"{kind} parts must be a tuple of strings, got {parts!r}")
    try:
        checked: tuple[object, ...] = tuple(parts)
    except TypeError:
        raise PathSyntaxError(f"{kind} parts must be a tuple of strings, got {parts!r}") from None
    strings: list[str] = []
    for part in checked:
        if not isinstance(part, str):
            raise PathSyntaxError(f"{kind} segment {part!r} is not a string")
        strings.append(part)
    return tuple(strings)


def _check_root(root: object) -> str:
    if root not in SOURCE_ROOTS:
        raise PathSyntaxError(
            f"unknown path root {root!r}: a graph path starts with one of "
            f"{', '.join(SOURCE_ROOTS)} (node results reach state through output bindings; "
            f"there is no 'output' root)",
            text=str(root),
            position=0,
            expected="one of " + ", ".join(SOURCE_ROOTS),
        )
    return str(root)


@dataclass(frozen=True, slots=True)
class GraphSourcePath:
    """A read of the current runtime scope: ``input``, ``state`` or ``context`` plus segments."""

    root: SourceRoot
    parts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", _check_root(self.root))
        object.__setattr__(self, "parts", _check_parts(self.parts, "GraphSourcePath"))

    def __str__(self) -> str:
        return format_key((self.root, *self.parts))

    def __repr__(self) -> str:
        return f"GraphSourcePath({self.root!r}, {self.parts!r})"

    def child(self, *segments: str) -> GraphSourcePath:
        """A deeper path; segments are literal, never re-parsed."""
        return GraphSourcePath(self.root, (*self.parts, *segments))


@dataclass(frozen=True, slots=True)
class StatePath:
    """The target of a write into state. Printed without a root: ``orders``."""

    parts: tuple[str, ...]

    def __post_init__(self) -> None:
        parts = _check_parts(self.parts, "StatePath")
        if not parts:
            raise PathSyntaxError("a StatePath needs at least one segment (the state field to write)")
        object.__setattr__(self, "parts", parts)

    def __str__(self) -> str:
        return format_key(self.parts)

    def __repr__(self) -> str:
        return f"StatePath({self.parts!r})"

    def as_source(self) -> GraphSourcePath:
        return GraphSourcePath("state", self.parts)


@dataclass(frozen=True, slots=True)
class LocalPath:
    """A field of one boundary payload. No parts means the whole payload, printed ``.``."""

    parts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "parts", _check_parts(self.parts, "LocalPath"))

    def __str__(self) -> str:
        return format_key(self.parts) if self.parts else "."

    def __repr__(self) -> str:
        return f"LocalPath({self.parts!r})"

    @property
    def is_whole(self) -> bool:
        return not self.parts


class _KeyParser:
    """A tiny recursive-descent reader of one TOML dotted key."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def error(self, what: str, expected: str) -> PathSyntaxError:
        shown = repr(self.text[self.pos]) if self.pos < len(self.text) else "end of text"
        return PathSyntaxError(
            f"invalid path {self.text!r} at position {self.pos}: {what} (found {shown}); expected {expected}",
            text=self.text,
            position=self.pos,
            expected=expected,
        )

    def skip_blanks(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t":
            self.pos += 1

    def parse(self) -> tuple[str, ...]:
        parts: list[str] = []
        self.skip_blanks()
        parts.append(self.segment())
        self.skip_blanks()
        while self.pos < len(self.text):
            if self.text[self.pos] != ".":
                raise self.error("unexpected character after a segment", "'.' or end of path")
            self.pos += 1
            self.skip_blanks()
            parts.append(self.segment())
            self.skip_blanks()
        return tuple(parts)

    def segment(self) -> str:
        if self.pos >= len(self.text):
            raise self.error("missing segment", 'a bare key [A-Za-z0-9_-]+, "basic" or \'literal\' string')
        char = self.text[self.pos]
        if char == '"':
            return self.basic_string()
        if char == "'":
            return self.literal_string()
        match = _BARE.match(self.text, self.pos)
        if match is None:
            raise self.error("invalid segment start", 'a bare key [A-Za-z0-9_-]+, "basic" or \'literal\' string')
        self.pos = match.end()
        return match.group()

    def basic_string(self) -> str:
        self.pos += 1
        out: list[str] = []
        while True:
            if self.pos >= len(self.text):
                raise self.error("unterminated quoted segment", "a closing '\"'")
            char = self.text[self.pos]
            if char == '"':
                self.pos += 1
                return "".join(out)
            if char == "\\":
                out.append(self.escape())
                continue
            if (char < " " and char != "\t") or char == "\x7f":
                raise self.error("control character in a quoted segment", "an escape such as \\n or \\u0001")
            out.append(char)
            self.pos += 1

    def escape(self) -> str:
        self.pos += 1
        if self.pos >= len(self.text):
            raise self.error("unterminated escape", "an escape character")
        char = self.text[self.pos]
        simple = _UNESCAPES.get(char)
        if simple is not None:
            self.pos += 1
            return simple
        if char in "uU":
            width = 4 if char == "u" else 8
            digits = self.text[self.pos + 1 : self.pos + 1 + width]
            if len(digits) != width or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise self.error(f"malformed \\{char} escape", f"{width} hex digits")
            code = int(digits, 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                raise self.error(f"\\{char}{digits} is not a Unicode scalar value", "a scalar value")
            self.pos += 1 + width
            return chr(code)
        raise self.error("unknown escape", 'one of \\" \\\\ \\b \\t \\n \\f \\r \\uXXXX \\UXXXXXXXX')

    def literal_string(self) -> str:
        start = self.pos + 1
        end = self.text.find("'", start)
        if end < 0:
            self.pos = len(self.text)
            raise self.error("unterminated literal segment", "a closing \"'\"")
        body = self.text[start:end]
        for offset, char in enumerate(body):
            if (char < " " and char != "\t") or char == "\x7f":
                self.pos = start + offset
                raise self.error("control character in a literal segment", "a basic string with escapes")
        self.pos = end + 1
        return body


def parse_key(text: str) -> tuple[str, ...]:
    """Split TOML dotted-key text into its literal segments."""
    if not isinstance(text, str):
        raise PathSyntaxError(f"a path must be text, got {type(text).__name__}")
    return _KeyParser(text).parse()


def parse_source_path(text: str) -> GraphSourcePath:
    """``"context.foreach.orders.item"`` -> ``GraphSourcePath("context", ("foreach", "orders", "item"))``."""
    parts = parse_key(text)
    if parts[0] not in SOURCE_ROOTS:
        position = len(text) - len(text.lstrip(" \t"))
        raise PathSyntaxError(
            f"invalid path {text!r} at position {position}: unknown root {parts[0]!r}; expected one of "
            f"{', '.join(SOURCE_ROOTS)}: a graph path starts with one of them (there is no 'output' root: "
            f"commit node results to state with output bindings)",
            text=text,
            position=position,
            expected="one of " + ", ".join(SOURCE_ROOTS),
        )
    return GraphSourcePath(parts[0], parts[1:])  # type: ignore[arg-type]


def parse_state_path(text: str) -> StatePath:
    """``"totals.\\"eu-west\\""`` -> ``StatePath(("totals", "eu-west"))``."""
    return StatePath(parse_key(text))


def parse_local_path(text: str) -> LocalPath:
    """``"."`` is the whole payload; anything else is a dotted key."""
    if isinstance(text, str) and text.strip() == ".":
        return LocalPath(())
    return LocalPath(parse_key(text))


def input_path(*parts: str) -> GraphSourcePath:
    return GraphSourcePath("input", parts)


def state_path(*parts: str) -> GraphSourcePath:
    return GraphSourcePath("state", parts)


def context_path(*parts: str) -> GraphSourcePath:
    return GraphSourcePath("context", parts)
