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
