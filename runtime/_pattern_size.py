"""How large a regular expression is once its repeats are unrolled, read from the pattern text.

``regex`` unrolls a repeat's minimum count when it compiles, so ``(?:x{65535}){65535}`` exhausts memory;
``runtime._schema_patterns`` refuses a pattern whose unrolled size is too large before compiling it. This
module measures that size with a small scanner of Python's ``re`` syntax (no private stdlib module), the
way ``re``'s own parser would count the pattern's elements:

- every element counts one: a literal character, an escape, a character class, ``.``, an anchor, a
  back-reference; a group, lookaround or conditional counts one plus its contents, except a plain
  ``(?:...)`` group, which stands for its contents; a repeat counts one plus its contents times its
  minimum count (at least one);
- an alternation counts one plus every alternative, after what ``re`` folds away: a first element all
  alternatives share is counted once, and alternatives of one literal or class each become one class.

The pattern is assumed to be valid ``re`` syntax (``re.compile`` decides that); the scanner never raises
on anything else but ``RecursionError`` for absurd nesting. ``lookbehinds`` lists where each lookbehind
group opens, so a caller can check the rest of the syntax with ``re.compile`` without ``re``'s
fixed-width rule for lookbehinds (``regex`` has no such rule).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: ``{m}``, ``{m,}``, ``{,n}``, ``{m,n}``; anything else after ``{`` makes the brace a literal.
_COUNTS = re.compile(r"\{(\d*)(,?)(\d*)\}")
#: Flags groups at the very start of a pattern (the only place ``re`` allows global flags).
_GLOBAL_FLAGS = re.compile(r"\(\?([aiLmsux]+)\)")
_SCOPED_FLAGS = re.compile(r"\(\?([aiLmsux]*)(?:-([imsx]+))?:")
_HEX = {"x": 2, "u": 4, "U": 8}
_CATEGORIES = frozenset("dDsSwW")
_ANCHORS = frozenset("AbBZ")


@dataclass(slots=True)
class _Element:
    size: int
    #: An atom's text, for the alternation folds (``re`` compares parsed atoms; groups never compare equal).
    key: str | None = None
    #: A literal or a class that is not negated: alternatives made of one such element fold into a class.
    settable: bool = False
    #: A ``(?:...)`` group without flags: its contents, which stand in the sequence in its place (what a
    #: repeat of it repeats).
    contents: list[_Element] | None = None


@dataclass(frozen=True, slots=True)
class PatternSize:
    size: int
    lookbehinds: tuple[int, ...]


def pattern_size(pattern: str) -> PatternSize:
    """The unrolled size of ``pattern`` and where its lookbehind groups open (see the module's docstring)."""
    scanner = _Scanner(pattern)
    verbose = False
    while match := _GLOBAL_FLAGS.match(pattern, scanner.at):
        verbose = verbose or "x" in match[1]
        scanner.at = match.end()
    elements = scanner.alternation(verbose)
    while scanner.at < len(pattern):  # an unbalanced ")": invalid, but count the rest rather than stop
        scanner.at += 1
        elements += scanner.alternation(verbose)
    return PatternSize(_total(elements), tuple(scanner.lookbehinds))


def _total(elements: list[_Element]) -> int:
    return sum(e.size for e in elements)


class _Scanner:
    def __init__(self, pattern: str) -> None:
        self.text = pattern
        self.at = 0
        self.lookbehinds: list[int] = []

    def peek(self, ahead: int = 0) -> str:
        index = self.at + ahead
        return self.text[index] if index < len(self.text) else ""

    def alternation(self, verbose: bool, *, alternatives: bool = True) -> list[_Element]:
        """The elements up to the closing ``)`` (or the end), alternatives folded as ``re`` folds them; with
        ``alternatives=False`` only the first sequence (a conditional's branch), leaving ``|`` unread.

        One function with the sequence loop inline and groups called from it directly: ``re``'s parser takes
        two frames per nesting level, and so does this (so both give up on nesting at the same depth).
        """
        branches: list[list[_Element]] = []
        while True:
            elements: list[_Element] = []
            while (char := self.peek()) and char not in "|)":
                if verbose and char.isspace():
                    self.at += 1
                elif verbose and char == "#":
                    end = self.text.find("\n", self.at)
                    self.at = len(self.text) if end < 0 else end + 1
                elif char in "*+?" and elements:
                    self.at += 1
                    elements[-1] = self.repeat(elements[-1], 0 if char != "+" else 1)
                elif char == "{" and elements and (counts := _COUNTS.match(self.text, self.at)) and counts[0] != "{}":
                    self.at = counts.end()
                    elements[-1] = self.repeat(elements[-1], int(counts[1] or 0))
                else:
                    element = self.group(verbose) if char == "(" else self.atom()
                    if element is not None:
                        elements.append(element)
            if any(e.contents is not None for e in elements):  # re unpacks a plain group that is not repeated
                elements = [inner for e in elements for inner in (e.contents if e.contents is not None else [e])]
            branches.append(elements)
            if not alternatives or self.peek() != "|":
                break
            self.at += 1
        if len(branches) == 1:
            return branches[0]
        folded: list[_Element] = []
        while all(branches):
            first = branches[0][0].key
            if first is None or any(branch[0].key != first for branch in branches[1:]):
                break
            folded.append(branches[0][0])
            for branch in branches:
                del branch[0]
        if all(len(branch) == 1 and branch[0].settable for branch in branches):
            return [*folded, _Element(1)]
        return [*folded, _Element(1 + sum(e.size for branch in branches for e in branch))]

    def repeat(self, element: _Element, low: int) -> _Element:
        if self.peek() in ("?", "+"):  # lazy or possessive
            self.at += 1
        inner = element.size if element.contents is None else _total(element.contents)
        return _Element(1 + inner * max(low, 1))

    def atom(self) -> _Element:
        start, char = self.at, self.peek()
        if char == "[":
            self.character_class()
            text = self.text[start:self.at]
            return _Element(1, text, settable=not text.startswith("[^"))
        if char == "\\":
            return self.escape()
        self.at += 1
        if char in ".^$":
            return _Element(1, char)
        return _Element(1, char, settable=True)

    def escape(self) -> _Element:
        start = self.at
        self.at += 1
        char = self.peek()
        self.at += 1
        settable = char not in _ANCHORS
        if char in _HEX:
            self.at += _HEX[char]
        elif char == "N" and self.peek() == "{":
            end = self.text.find("}", self.at)
            self.at = len(self.text) if end < 0 else end + 1
        elif char == "0":
            while self.peek() in "01234567" and self.peek() and self.at - start < 4:
                self.at += 1
        elif char.isdigit():  # a back-reference, or an octal escape of three digits
            digits = char
            while self.peek().isdigit() and len(digits) < 3:
                digits += self.peek()
                self.at += 1
            octal = len(digits) == 3 and all(d in "01234567" for d in digits)
            if not octal and len(digits) == 3:  # a two-digit group number followed by a literal digit
                self.at -= 1
            settable = octal
        return _Element(1, self.text[start:self.at], settable=settable or char in _CATEGORIES)

    def character_class(self) -> None:
        self.at += 1
        if self.peek() == "^":
            self.at += 1
        if self.peek() == "]":
            self.at += 1
        while (char := self.peek()) and char != "]":
            self.at += 2 if char == "\\" else 1
        self.at += 1

    def group(self, verbose: bool) -> _Element | None:
        text, start = self.text, self.at
        if not text.startswith("(?", start):
            self.at += 1
            return self.close(_Element(1 + _total(self.alternation(verbose))))
        opener = text[start + 2:start + 4]
        if opener[:1] == "#":
            end = text.find(")", start)
            self.at = len(text) if end < 0 else end + 1
            return None
        if opener in ("<=", "<!"):
            self.lookbehinds.append(start)
            self.at += 4
            return self.close(_Element(1 + _total(self.alternation(verbose))))
        if opener[:1] in ("=", "!", ">"):
            self.at += 3
            return self.close(_Element(1 + _total(self.alternation(verbose))))
        if opener == "P<":
            end = text.find(">", start)
            self.at = len(text) if end < 0 else end + 1
            return self.close(_Element(1 + _total(self.alternation(verbose))))
        if opener == "P=":
            end = text.find(")", start)
            self.at = len(text) if end < 0 else end + 1
            return _Element(1, text[start:self.at])
        if opener[:1] == "(":
            return self.conditional(verbose)
        if scoped := _SCOPED_FLAGS.match(text, start):
            self.at = scoped.end()
            if "x" in scoped[1]:
                verbose = True
            elif "x" in (scoped[2] or ""):
                verbose = False
            contents = self.alternation(verbose)
            plain = not scoped[1] and not scoped[2]
            return self.close(_Element(1 + _total(contents), contents=contents if plain else None))
        if flags := _GLOBAL_FLAGS.match(text, start):  # not at the start: re refuses it; count nothing
            self.at = flags.end()
            return None
        self.at += 1
        return self.close(_Element(1 + _total(self.alternation(verbose))))

    def conditional(self, verbose: bool) -> _Element:
        end = self.text.find(")", self.at + 3)
        self.at = len(self.text) if end < 0 else end + 1
        size = 1 + _total(self.alternation(verbose, alternatives=False))
        if self.peek() == "|":
            self.at += 1
            size += _total(self.alternation(verbose, alternatives=False))
        return self.close(_Element(size))

    def close(self, element: _Element) -> _Element:
        if self.peek() == ")":
            self.at += 1
        return element
