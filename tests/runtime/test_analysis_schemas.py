"""JSON Schema utilities and type compatibility used by the analyzer."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter

from runtime._analysis import _schemas as S

STR = {"type": "string"}
INT = {"type": "integer"}
NUM = {"type": "number"}
NULLABLE_STR = {"anyOf": [STR, {"type": "null"}]}


def schema_of(annotation: Any) -> dict[str, Any]:
    return S.prepare(TypeAdapter(annotation).json_schema())


@pytest.mark.parametrize(("source", "target", "level"), [
    (STR, STR, S.EXACT),
    (INT, NUM, S.COMPATIBLE),                # integer fits number
    (NUM, INT, S.NONE),                      # ... not the reverse
    ({}, INT, S.COMPATIBLE),                 # unknown fits anything, without a warning
    (INT, {}, S.EXACT),                      # anything fits an unconstrained field
    (NULLABLE_STR, STR, S.OPTIONAL),         # nullable into required non-nullable: warning
    (NULLABLE_STR, NULLABLE_STR, S.EXACT),
    ({"type": ["string", "null"]}, STR, S.OPTIONAL),
    ({"type": "null"}, STR, S.NONE),
    (STR, INT, S.NONE),
    ({"type": "boolean"}, INT, S.NONE),
    ({"anyOf": [INT, STR]}, INT, S.OPTIONAL),  # one alternative fits: may not fit
    ({"anyOf": [INT, NUM]}, NUM, S.COMPATIBLE),
    ({"enum": ["a", "b"]}, {"enum": ["a", "b", "c"]}, S.EXACT),
    ({"enum": ["a", "z"]}, {"enum": ["a", "b"]}, S.OPTIONAL),
    ({"enum": ["y", "z"]}, {"enum": ["a", "b"]}, S.NONE),
    (STR, {"enum": ["a", "b"]}, S.OPTIONAL),
    ({"const": "a"}, STR, S.COMPATIBLE),
    ({"const": 3}, {"enum": [1, 2, 3]}, S.EXACT),
    ({"type": "array", "items": INT}, {"type": "array", "items": NUM}, S.COMPATIBLE),
    ({"type": "array", "items": STR}, {"type": "array", "items": INT}, S.NONE),
    ({"type": "array"}, {"type": "array", "items": INT}, S.COMPATIBLE),
])
def test_fit_levels(source: dict[str, Any], target: dict[str, Any], level: int) -> None:
    assert S.fit(source, target) == level


def test_object_fit_follows_required_properties() -> None:
    target = {"type": "object", "properties": {"a": INT, "b": STR}, "required": ["a"]}
    assert S.fit({"type": "object", "properties": {"a": INT}, "required": ["a"]}, target) == S.EXACT
    assert S.fit({"type": "object", "properties": {"a": INT}}, target) == S.OPTIONAL  # a may be missing
    assert S.fit({"type": "object", "properties": {"b": STR}, "required": ["b"]}, target) == S.NONE
    assert S.fit({"type": "object", "properties": {"a": STR}, "required": ["a"]}, target) == S.NONE
    assert S.fit({"type": "object"}, target) == S.COMPATIBLE  # an open object: unknown contents
    assert S.fit({"type": "object", "additionalProperties": INT}, target) == S.COMPATIBLE


def test_pydantic_models_with_refs_and_optionals() -> None:
    class Item(BaseModel):
        sku: str
        qty: int

    class Cart(BaseModel):
        items: list[Item]
        note: str | None = None
        main: Item | None = None

    cart = schema_of(Cart)
    assert "$defs" not in cart and "$ref" not in str(cart)
    assert S.fit(cart, cart) == S.EXACT
    items, _ = S.descend(cart, ("items",))
    assert S.type_label(items) == "array<object>"
    assert S.fit(S.items_schema(items), schema_of(Item)) == S.EXACT
    # a field under an optional object may be missing: nullable
    sku, _ = S.descend(cart, ("main", "sku"))
    assert S.type_label(sku) == "string | null"
    assert S.fit(sku, STR) == S.OPTIONAL
    # defaults mean present
    note, _ = S.descend(cart, ("note",))
    assert S.type_label(note) == "string | null"
    assert S.descend(cart, ("items", "sku")) == (None, 1)
    assert S.descend(cart, ("nope",)) == (None, 0)


def test_recursive_models_are_cut_to_any() -> None:
    class Tree(BaseModel):
        name: str
        children: list[Tree] = []

    tree = schema_of(Tree)
    children, _ = S.descend(tree, ("children",))
    assert S.type_label(children) == "array<object>"
    child = S.items_schema(children)
    assert S.fit(child, tree) >= S.COMPATIBLE
    # one level of recursion is inlined, the next occurrence is "any"
    grand, _ = S.descend(child, ("children",))
    assert S.items_schema(grand) is not None


def test_allof_of_one_is_flattened() -> None:
    schema = S.prepare({"$defs": {"X": {"type": "object", "properties": {"a": INT}}},
                        "type": "object", "properties": {"x": {"allOf": [{"$ref": "#/$defs/X"}],
                                                               "description": "the x"}}})
    x = schema["properties"]["x"]
    assert x["type"] == "object" and x["description"] == "the x"
    assert S.descend(schema, ("x", "a"))[0] is not None


def test_type_labels() -> None:
    assert S.type_label({}) == "any"
    assert S.type_label(STR) == "string"
    assert S.type_label(NULLABLE_STR) == "string | null"
    assert S.type_label({"type": "array", "items": {"type": "array", "items": INT}}) == "array<array<integer>>"
    assert S.type_label({"enum": ["a", None]}) == "string | null"
    assert S.type_label({"properties": {}}) == "object"


def test_union_deduplicates_and_any_absorbs() -> None:
    assert S.union([STR, STR]) == STR
    assert S.union([STR, INT]) == {"anyOf": [STR, INT]}
    assert S.union([STR, {}]) == {}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_a_literal_fits_its_own_schema_and_any(value: object) -> None:
    schema = S.schema_of_value(value)
    assert S.fit(schema, schema) >= S.COMPATIBLE or value is None
    assert S.fit(schema, {}) == S.EXACT


CLOSED = {"type": "object", "properties": {"sku": STR, "qty": INT}, "required": ["sku"],
          "additionalProperties": False}


@pytest.mark.parametrize(("source", "level"), [
    ({"type": "object", "properties": {"sku": STR}, "required": ["sku"]}, S.EXACT),
    ({"type": "object", "properties": {"sku": STR, "note": STR}, "required": ["sku", "note"]}, S.NONE),
    ({"type": "object", "properties": {"sku": STR, "note": STR}, "required": ["sku"]}, S.OPTIONAL),
    ({"type": "object", "properties": {"sku": STR, "qty": INT}, "required": ["sku", "qty"]}, S.EXACT),
])
def test_a_closed_target_refuses_extra_fields(source: dict[str, Any], level: int) -> None:
    assert S.fit(source, CLOSED) == level


def test_not_is_a_value_nothing_is_known_to_fit_not_no_value() -> None:
    not_string = {"not": STR}
    assert S.atoms(not_string) == [not_string] and S.atoms({"not": {}}) == []
    assert S.fit(not_string, INT) == S.OPTIONAL  # was EXACT: "no value fits vacuously"
    assert S.fit(INT, not_string) == S.OPTIONAL  # was NONE
    assert S.fit({"type": "null"}, not_string) == S.OPTIONAL
    assert S.kind_text(not_string) == "anything but a string"
    assert S.kind_text({"not": {}}) == "no value at all (its schema allows none)"
    assert S.kind_text({"type": "array", "items": NULLABLE_STR}) == "an array<string | null>"
    assert S.descend({"not": STR}, ("a",))[0] is not None  # it may be an object with any field


@pytest.mark.parametrize(("source", "target", "words"), [
    ({"type": "object", "properties": {"a": INT}, "required": ["a"]}, {**CLOSED, "required": []},
     "it has field 'a', which is not allowed (additionalProperties is false)"),
    ({"type": "object", "properties": {"qty": INT}, "required": ["qty"]}, CLOSED,
     "it has no field 'sku', which is required"),
    ({"type": "object", "properties": {"sku": STR}}, CLOSED, "its field 'sku' may be missing, and it is required"),
    ({"type": "object", "properties": {"sku": INT}, "required": ["sku"]}, CLOSED,
     "its field 'sku' does not fit: an integer into a string"),
    ({"type": "object", "properties": {"o": {"type": "object", "properties": {}}}, "required": ["o"]},
     {"type": "object", "properties": {"o": {"type": "object", "properties": {"id": STR}, "required": ["id"]}},
      "required": ["o"]}, "its field 'o' does not fit: it has no field 'id', which is required"),
    ({"anyOf": [INT, STR]}, INT, "it may be a string, which does not fit"),
    (NULLABLE_STR, STR, "it may be null"),
    ({"enum": ["a", "z"]}, {"enum": ["a", "b"]}, "it may not be one of the allowed values"),
    ({"not": STR}, INT, "its schema only says what it is not ('not')"),
    (STR, INT, ""),  # the two types say it all
])
def test_why_not_names_the_field_at_fault(source: dict[str, Any], target: dict[str, Any], words: str) -> None:
    reason = S.why_not(source, target)
    assert reason.startswith(words) if words else reason == ""


keys = st.sampled_from(["a", "b"])
literals = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from(["x", "y"]),
    lambda children: st.lists(children, max_size=2) | st.dictionaries(keys, children, max_size=2),
    max_leaves=6,
)
targets = st.recursive(
    st.sampled_from([{"type": t} for t in ("null", "boolean", "integer", "number", "string", "array", "object")])
    | st.just({"enum": ["x", "z"]}) | st.just({}),
    lambda inner: (
        st.builds(lambda s: {"not": s}, inner)
        | st.builds(lambda s: {"type": "array", "items": s}, inner)
        | st.builds(lambda props, required, closed: {
            "type": "object", "properties": props, "required": [k for k in required if k in props],
            **({"additionalProperties": False} if closed else {})},
            st.dictionaries(keys, inner, max_size=2), st.lists(keys, max_size=2, unique=True), st.booleans())
        | st.builds(lambda a, b: {"anyOf": [a, b]}, inner, inner)
    ),
    max_leaves=5,
)


@settings(max_examples=150, deadline=None)
@given(literals, targets)
def test_fit_of_a_literal_agrees_with_the_validator(value: object, target: dict[str, Any]) -> None:
    """A literal's schema is exact, so "fits" and "does not fit" must both be what jsonschema says."""
    from jsonschema import Draft202012Validator

    level = S.fit(S.schema_of_value(value), target)
    valid = Draft202012Validator(target).is_valid(value)
    if level >= S.COMPATIBLE:
        assert valid
    if level == S.NONE:
        assert not valid
    if level >= S.COMPATIBLE:
        assert S.why_not(S.schema_of_value(value), target) == ""
