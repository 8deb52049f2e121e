"""The unrolled size of a schema pattern, read without re's private parser (``runtime._pattern_size``).

The reference is the measure ``runtime._schema_patterns`` used to take from ``re._parser``'s tree: where
that private module still exists, generated patterns must measure the same by both.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime._pattern_size import pattern_size
from runtime._schema_patterns import PatternRefused, _compile, _without_lookbehinds

try:
    import re._constants as sre
    import re._parser as sre_parse
except ImportError:  # pragma: no cover - a Python without them: the examples below still run
    sre = sre_parse = None


def reference_size(pattern: str) -> int:
    """The element count of ``re``'s parse tree with every repeat's minimum unrolled (the old measure)."""
    repeats = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)
    total = 0
    stack: list[tuple[Any, int]] = [(sre_parse.parse(pattern), 1)]
    while stack:
        items, factor = stack.pop()
        for op, av in items:
            total += factor
            if op in repeats:
                stack.append((av[2], factor * max(av[0], 1)))
            elif op is sre.SUBPATTERN:
                stack.append((av[-1], factor))
            elif op is sre.ATOMIC_GROUP:
                stack.append((av, factor))
            elif op is sre.BRANCH:
                stack.extend((branch, factor) for branch in av[1])
            elif op in (sre.ASSERT, sre.ASSERT_NOT):
                stack.append((av[1], factor))
            elif op is sre.GROUPREF_EXISTS:
                stack.extend((part, factor) for part in av[1:] if part is not None)
    return total


@pytest.mark.parametrize(("pattern", "size"), [
    ("abc", 3),
    ("a{3}", 4),
    ("(?:x{65535}){65535}", 1 + 65535 * (1 + 65535)),
    ("(ab){2}", 1 + 2 * 3),
    ("a|b|c", 1),  # alternatives of one literal each are one class
    ("ab|ac", 2),  # the shared "a" is taken out, then b|c is a class
    ("ab|cd", 5),
    (r"[a-z]+\d*", 4),
    (r"^\w+@[\w.]+\.\w{2,}$", 11),
    ("(?=a)(?<!b)c", 5),
    ("(?P<x>a)(?(x)b|cd)", 6),
    ("(?x) a b  # spaces and comments do not count\n c", 3),
    (r"\x41\u0042\N{LATIN SMALL LETTER A}\0\101(a)\1", 8),
    ("a{,3}b{}", 5),  # {,3} repeats at least once; {} is two literal braces
    ("(?#comment)a", 1),
    ("(?i:ab)*", 4),
    ("(?:a)b|ac", 2),  # a plain group stands for its contents
    ("(?:ab){3}", 7),
    ("(?>ab)+", 4),
    ("[]a]|[^b]", 3),
])
def test_sizes(pattern: str, size: int) -> None:
    re.compile(pattern)
    assert pattern_size(pattern).size == size
    if sre_parse is not None:
        assert reference_size(pattern) == size


def test_lookbehinds_are_located() -> None:
    assert pattern_size(r"a(?<=a)b(?<!\(?<=)[(?<=]").lookbehinds == (1, 8)


_ATOMS = st.sampled_from(["a", "b", "c", ".", "^", "$", r"\d", r"\w", r"\b", r"\.", r"\x41", "[ab]", "[^a]",
                          "[a-c]", "[]x]", r"\1"])
_QUANTIFIERS = st.sampled_from(["", "", "*", "+", "?", "*?", "++", "{2}", "{0,3}", "{3,}", "{,2}", "{2,5}?"])


def _pattern() -> st.SearchStrategy[str]:
    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        sequence = st.lists(inner, min_size=1, max_size=4).map("".join)
        alternation = st.lists(sequence, min_size=1, max_size=3).map("|".join)
        opener = st.sampled_from(["(", "(?:", "(?i:", "(?=", "(?!", "(?<=", "(?>", "(?P<g>"])
        group = st.tuples(opener, alternation).map(lambda t: f"{t[0]}{t[1]})")
        return st.tuples(st.one_of(inner, group), _QUANTIFIERS).map("".join)

    atom = st.tuples(_ATOMS, _QUANTIFIERS).map("".join)
    body = st.recursive(atom, extend, max_leaves=12)
    return st.lists(st.lists(body, min_size=0, max_size=4).map("".join), min_size=1, max_size=3).map("|".join)


def _valid(pattern: str) -> bool:
    try:
        re.compile(pattern.replace("(?<=", "(?:=").replace("(?<!", "(?:!"))
    except (re.error, RecursionError, OverflowError):
        return False
    return True


@pytest.mark.skipif(sre_parse is None, reason="re._parser (the reference) is not in this Python")
@settings(max_examples=400, deadline=None)
@given(_pattern())
def test_the_size_agrees_with_res_own_parse_tree(pattern: str) -> None:
    if not _valid(pattern):
        return
    try:
        expected = reference_size(pattern)
    except re.error:  # what re's parser refuses, the schema check refuses before measuring
        return
    assert pattern_size(pattern).size == expected


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab()[]{}|*+?^$.\\-,:=!<>P#x0123456789 \n", max_size=40))
def test_any_text_is_measured_without_an_error(text: str) -> None:
    measured = pattern_size(text)
    assert measured.size >= 0
    assert all(text.startswith("(?<", at) for at in measured.lookbehinds)


def _parses(pattern: str) -> bool:
    try:
        sre_parse.parse(pattern)
    except (re.error, OverflowError, RecursionError):
        return False
    return True


def _compiles(pattern: str) -> bool:
    try:
        _compile(pattern)
    except PatternRefused as refused:
        return "not a valid regular expression" not in refused.problem and "nests" not in refused.problem
    return True


@pytest.mark.skipif(sre_parse is None, reason="re._parser (the reference) is not in this Python")
@settings(max_examples=300, deadline=None)
@given(st.one_of(_pattern(), st.text(alphabet="ab()[]{}|*+?^$.\\-,:=!<>P#x0123456789", max_size=30)))
def test_the_syntax_accepted_is_what_res_parser_accepts(pattern: str) -> None:
    # regex decides last (it knows less than re's syntax in places, e.g. some escapes): only what re's parser
    # refuses must be refused as invalid here too, and what it accepts is never refused as invalid syntax by re.
    if not _parses(pattern):
        assert not _compiles(pattern)
    else:
        try:
            re.compile(_without_lookbehinds(pattern, pattern_size(pattern).lookbehinds))
        except re.error as exc:  # pragma: no cover - the assertion's message
            pytest.fail(f"re refuses {pattern!r}, which its parser accepts: {exc}")


def test_a_variable_width_lookbehind_is_accepted_as_before() -> None:
    assert _compile(r"(?<=a+)b").search("aab")
    assert _compile(r"(?<!x|yy)b").search("ab")
