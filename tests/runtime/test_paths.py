"""Path values: structure, TOML dotted-key printing and parsing, and error messages."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.errors import PathSyntaxError
from runtime.paths import (
    GraphSourcePath,
    LocalPath,
    StatePath,
    context_path,
    input_path,
    parse_local_path,
    parse_source_path,
    parse_state_path,
    state_path,
)

# Any Unicode text except surrogates (which no UTF-8 document can carry).
segments = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
segment_tuples = st.lists(segments, max_size=5).map(tuple)
roots = st.sampled_from(["input", "state", "context"])

EXAMPLES = settings(max_examples=200, deadline=None)


def toml_keys(printed: str) -> tuple[str, ...]:
    """The key sequence ``tomllib`` reads from ``<printed> = 1``."""
    data: Any = tomllib.loads(f"{printed} = 1")
    keys: list[str] = []
    while isinstance(data, dict):
        assert len(data) == 1
        (key, data), = data.items()
        keys.append(key)
    assert data == 1
    return tuple(keys)


# --- structure -----------------------------------------------------------------------------------


def test_paths_are_positional_structural_values() -> None:
    assert GraphSourcePath("input", ("a", "b")) == GraphSourcePath(root="input", parts=("a", "b"))
    assert StatePath(("orders",)) == StatePath(parts=("orders",))
    assert LocalPath(("x",)) == LocalPath(parts=("x",))
    assert GraphSourcePath("state") == GraphSourcePath("state", ())
    assert GraphSourcePath("state", ("a",)) != GraphSourcePath("input", ("a",))
    assert StatePath(("a",)) != LocalPath(("a",))


def test_equal_paths_hash_equal_and_lists_become_tuples() -> None:
    a = GraphSourcePath("context", ["foreach", "orders", "item"])  # type: ignore[arg-type]
    b = context_path("foreach", "orders", "item")
    assert a == b and hash(a) == hash(b)
    assert isinstance(a.parts, tuple)
    assert len({a, b, StatePath(("x",)), StatePath(("x",))}) == 2


def test_paths_are_immutable() -> None:
    path = input_path("a")
    with pytest.raises(AttributeError):
        path.root = "state"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        StatePath(("a",)).parts = ("b",)  # type: ignore[misc]


def test_helpers_build_graph_source_paths() -> None:
    assert input_path("a", "b") == GraphSourcePath("input", ("a", "b"))
    assert state_path("orders") == GraphSourcePath("state", ("orders",))
    assert context_path() == GraphSourcePath("context", ())
    assert state_path("a").child("b.c") == GraphSourcePath("state", ("a", "b.c"))
    assert StatePath(("a", "b")).as_source() == state_path("a", "b")
    assert LocalPath().is_whole and not LocalPath(("a",)).is_whole


def test_parts_must_be_a_tuple_of_strings_not_dotted_text() -> None:
    with pytest.raises(PathSyntaxError, match="not the string 'a.b'"):
        GraphSourcePath("input", "a.b")  # type: ignore[arg-type]
    with pytest.raises(PathSyntaxError, match="segment 3 is not a string"):
        StatePath(("a", 3))  # type: ignore[arg-type]
    with pytest.raises(PathSyntaxError, match="at least one segment"):
        StatePath(())


# --- printing ------------------------------------------------------------------------------------


def test_bare_segments_stay_bare_and_others_are_quoted_as_one_segment() -> None:
    assert str(context_path("foreach", "orders", "item")) == "context.foreach.orders.item"
    assert str(context_path("foreach", "orders.v2", "item")) == 'context.foreach."orders.v2".item'
    assert str(StatePath(("totals", "eu-west", "a_b", "42"))) == "totals.eu-west.a_b.42"
    assert str(StatePath(("totals", "eu west"))) == 'totals."eu west"'
    assert str(LocalPath(("",))) == '""'
    assert str(LocalPath(())) == "."
    assert str(LocalPath((".",))) == '"."'
    assert str(state_path("café")) == 'state."café"'


def test_quoted_segments_use_toml_escapes() -> None:
    assert str(StatePath(('say "hi"',))) == '"say \\"hi\\""'
    assert str(StatePath(("back\\slash",))) == '"back\\\\slash"'
    assert str(StatePath(("a\nb\tc",))) == '"a\\nb\\tc"'
    assert str(StatePath(("\x00\x7f",))) == '"\\u0000\\u007F"'


def test_repr_shows_structure() -> None:
    assert repr(context_path("foreach", "a.b")) == "GraphSourcePath('context', ('foreach', 'a.b'))"
    assert repr(StatePath(("x",))) == "StatePath(('x',))"
    assert repr(LocalPath()) == "LocalPath(())"


# --- parsing -------------------------------------------------------------------------------------


def test_parse_source_path_reads_segments() -> None:
    assert parse_source_path("context.foreach.orders.item") == context_path("foreach", "orders", "item")
    assert parse_source_path('context.foreach."orders.v2".item') == context_path("foreach", "orders.v2", "item")
    assert parse_source_path("input") == GraphSourcePath("input", ())
    assert parse_source_path("state . a . 'lit.eral'") == state_path("a", "lit.eral")
    assert parse_source_path('input."\\u00e9\\U0001F600"') == input_path("é\U0001f600")


def test_parse_state_and_local_paths() -> None:
    assert parse_state_path('totals."eu-west"') == StatePath(("totals", "eu-west"))
    assert parse_local_path(".") == LocalPath(())
    assert parse_local_path('"."') == LocalPath((".",))
    assert parse_local_path("order.id") == LocalPath(("order", "id"))


def test_graph_source_path_rejects_output_root() -> None:
    with pytest.raises(PathSyntaxError) as parsed:
        parse_source_path("output.total")
    assert str(parsed.value).startswith(
        "invalid path 'output.total' at position 0: unknown root 'output'; expected one of input, state, context"
    )
    assert "there is no 'output' root" in str(parsed.value)
    assert parsed.value.expected == "one of input, state, context"
    assert parsed.value.position == 0
    with pytest.raises(PathSyntaxError, match="at position 2: unknown root 'outputs'"):
        parse_source_path("  outputs")
    with pytest.raises(PathSyntaxError) as built:
        GraphSourcePath("output", ("total",))  # type: ignore[arg-type]
    assert "unknown path root 'output'" in str(built.value)
    assert "input, state, context" in str(built.value)
    assert built.value.code == "path.syntax"


@pytest.mark.parametrize(
    ("text", "position", "found", "expected"),
    [
        ("", 0, "end of text", "a bare key"),
        ("input.", 6, "end of text", "a bare key"),
        ("input..a", 6, "'.'", "a bare key"),
        ("input.a b", 8, "'b'", "'.' or end of path"),
        ("input.$x", 6, "'$'", "a bare key"),
        ('input."open', 11, "end of text", "a closing '\"'"),
        ("input.'open", 11, "end of text", "a closing \"'\""),
        ('input."\\q"', 8, "'q'", "one of \\\" \\\\"),
        ('input."\\u12"', 8, "'u'", "4 hex digits"),
        ('input."\\uD800"', 8, "'u'", "a scalar value"),
        ('input."a\nb"', 8, "'\\n'", "an escape such as"),
        ("input.'a\x01'", 8, "'\\x01'", "a basic string with escapes"),
    ],
)
def test_parse_errors_name_position_and_expectation(text: str, position: int, found: str, expected: str) -> None:
    with pytest.raises(PathSyntaxError) as caught:
        parse_source_path(text)
    message = str(caught.value)
    assert f"at position {position}" in message
    assert f"(found {found})" in message
    assert "expected " + expected in message
    assert caught.value.position == position
    assert caught.value.text == text


def test_parse_rejects_non_text() -> None:
    with pytest.raises(PathSyntaxError, match="must be text, got int"):
        parse_state_path(3)  # type: ignore[arg-type]


# --- round trips (Hypothesis) --------------------------------------------------------------------


@EXAMPLES
@given(roots, segment_tuples)
def test_source_path_round_trips_and_matches_tomllib(root: str, parts: tuple[str, ...]) -> None:
    path = GraphSourcePath(root, parts)  # type: ignore[arg-type]
    printed = str(path)
    assert parse_source_path(printed) == path
    assert toml_keys(printed) == (root, *parts)


@EXAMPLES
@given(segment_tuples.filter(bool))
def test_state_path_round_trips_and_matches_tomllib(parts: tuple[str, ...]) -> None:
    path = StatePath(parts)
    assert parse_state_path(str(path)) == path
    assert toml_keys(str(path)) == parts


@EXAMPLES
@given(segment_tuples)
def test_local_path_round_trips_and_nonempty_ones_match_tomllib(parts: tuple[str, ...]) -> None:
    path = LocalPath(parts)
    assert parse_local_path(str(path)) == path
    if parts:
        assert toml_keys(str(path)) == parts


@EXAMPLES
@given(segments)
def test_one_segment_prints_as_one_key(segment: str) -> None:
    printed = str(LocalPath((segment,)))
    assert toml_keys(printed) == (segment,)
    assert ("." in segment) <= printed.startswith('"')


@EXAMPLES
@given(st.text(max_size=20))
def test_arbitrary_text_parses_like_tomllib_or_fails_cleanly(text: str) -> None:
    """Whatever we accept, tomllib reads as the same keys; whatever we refuse is a PathSyntaxError."""
    try:
        parts = parse_state_path(text).parts
    except PathSyntaxError as error:
        assert error.position is not None or "must be" in str(error)
        return
    assert toml_keys(text) == parts
