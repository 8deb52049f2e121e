"""The schema builder's pure half: inference from a sample, schema <-> fields <-> form round trips,
and defaults that break their own field."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from designer.workflows import schema_builder as sb

#: Text a database can store (no NUL, no lone surrogate), as every document is.
texts = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=8)
json_scalars = (st.none() | st.booleans() | st.integers(-10**6, 10**6)
                | st.floats(allow_nan=False, allow_infinity=False) | texts)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=25,
)
#: The builder asks every field for a name, so a sample for the form round trip has no empty keys.
named_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts.filter(bool), inner, max_size=4),
    max_leaves=25,
)


@settings(max_examples=150, deadline=None)
@given(json_values)
def test_the_inferred_schema_accepts_its_sample(sample: Any) -> None:
    schema = sb.infer_schema(sample)
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(sample)


@settings(max_examples=100, deadline=None)
@given(named_values)
def test_an_inferred_schema_survives_the_builder_and_its_form(sample: Any) -> None:
    schema = sb.infer_schema(sample)
    tree = sb.fields_of(schema)
    assert sb.schema_of(tree) == schema
    assert sb.schema_of(sb.from_form(sb.form_data(tree))) == schema


def test_inference_merges_list_items_and_marks_what_every_item_has() -> None:
    schema = sb.infer_schema({"customers": [
        {"name": "Ada", "orders": [{"total": 3}, {"total": 2.5, "note": None}]},
        {"name": "Bo", "orders": [], "vip": True},
    ]})
    customer = schema["properties"]["customers"]["items"]
    assert customer["required"] == ["name", "orders"]  # vip only on one customer: optional
    assert customer["properties"]["vip"] == {"type": "boolean"}
    order = customer["properties"]["orders"]["items"]
    assert order["properties"]["total"] == {"type": "number"}  # 3 and 2.5: a number, not an integer
    assert order["required"] == ["total"]
    assert sb.infer_schema([1, "a", None]) == {"type": "array", "items": {
        "anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]}}
    assert sb.infer_schema(["a", None]) == {"type": "array", "items": {"type": ["string", "null"]}}


field_names = st.text(alphabet="abcdefgh_", min_size=1, max_size=5)
extras = st.dictionaries(st.sampled_from(["title", "minLength", "format", "x-ui", "$comment"]),
                         texts | st.integers(0, 5), max_size=2)


@st.composite
def builder_schemas(draw: Any, depth: int = 0) -> dict[str, Any]:
    kind = draw(st.sampled_from(["string", "integer", "number", "boolean", "object", "array", "any"]
                                if depth < 3 else ["string", "integer", "boolean"]))
    schema: dict[str, Any] = {} if kind == "any" else {"type": [kind, "null"] if draw(st.booleans()) else kind}
    if draw(st.booleans()):
        schema["description"] = draw(texts.filter(bool))
    if kind == "string" and draw(st.booleans()):
        schema["enum"] = draw(st.lists(texts, min_size=1, max_size=3, unique=True))
    if kind == "object":
        names = draw(st.lists(field_names, max_size=3, unique=True))
        schema["properties"] = {name: draw(builder_schemas(depth + 1)) for name in names}
        required = [name for name in names if draw(st.booleans())]
        if required or draw(st.booleans()):
            schema["required"] = required
    if kind == "array" and draw(st.booleans()):
        schema["items"] = draw(builder_schemas(depth + 1))
    if kind == "integer" and draw(st.booleans()):
        schema["default"] = draw(st.integers(-5, 5))
    schema.update(draw(extras))
    return schema


@settings(max_examples=150, deadline=None)
@given(builder_schemas())
def test_schema_fields_and_form_round_trip(schema: dict[str, Any]) -> None:
    tree = sb.fields_of(schema)
    assert sb.schema_of(tree) == schema
    assert sb.from_form(sb.form_data(tree)) == tree


@pytest.mark.parametrize("schema", [
    {"anyOf": [{"type": "string"}, {"type": "integer"}], "description": "either"},
    {"type": ["string", "integer"]},
    {"type": "object", "required": ["ghost"]},
    {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "a"]},
    {"type": "object", "properties": {"a": True}},
    {"type": "array", "items": False},
    {"description": ""},
    {"$ref": "#/$defs/x", "$defs": {"x": {"type": "string"}}},
])
def test_what_the_builder_cannot_show_is_kept_exactly(schema: dict[str, Any]) -> None:
    tree = sb.fields_of(schema)
    assert sb.schema_of(tree) == schema
    assert sb.schema_of(sb.from_form(sb.form_data(tree))) == schema


def test_tree_edits_add_remove_and_retype() -> None:
    root = sb.fields_of({"type": "object", "properties": {}})
    root = sb.update(root, "f", sb.add_child)
    root = sb.update(root, "f.0", lambda f: sb.retype(f, "array"))
    root = sb.update(root, "f.0", sb.add_child)  # a property of the array's (now object) items
    root = sb.update(root, "f.0.i.0", lambda f: sb.replace(f, name="total", type="number", required=True))
    assert sb.schema_of(root) == {"type": "object", "properties": {"field_1": {"type": "array", "items": {
        "type": "object", "properties": {"total": {"type": "number"}}, "required": ["total"]}}}}
    root = sb.update(root, "f.0.i.0", lambda f: None)
    assert sb.schema_of(root)["properties"]["field_1"]["items"] == {"type": "object", "properties": {}}
    with pytest.raises(KeyError):
        sb.update(root, "f.3", lambda f: None)


def test_defaults_that_break_their_field_are_named() -> None:
    schema = {"type": "object", "properties": {
        "tier": {"type": "string", "enum": ["gold", "silver"], "default": "bronze"},
        "count": {"type": "integer", "minimum": 1, "default": 0},
        "ok": {"type": "integer", "default": 2},
        "lines": {"type": "array", "items": {"type": "object", "properties": {
            "qty": {"type": "integer", "default": "two"}}}},
    }}
    problems = dict(sb.default_problems(schema))
    assert set(problems) == {"tier", "count", "lines[].qty"}
    assert "bronze" in problems["tier"] or "gold" in problems["tier"]
    assert sb.default_error({"type": "integer"}, 3) == ""


def test_form_values_are_read_by_type_and_bad_ones_name_their_field() -> None:
    assert sb.parse_default("12", "integer", fid="f.0") == 12
    assert sb.parse_default("12", "string", fid="f.0") == "12"
    assert sb.parse_default("", "integer", fid="f.0") is sb.NO_DEFAULT
    assert sb.parse_enum("gold, silver", "string", fid="f.0") == ("gold", "silver")
    assert sb.parse_enum("1, 2", "integer", fid="f.0") == (1, 2)
    # Not JSON in a number field: kept as typed, so the default check names the problem where it was typed.
    assert sb.parse_default("twelve", "integer", fid="f.1") == "twelve"
    assert sb.default_error({"type": "integer"}, "twelve") != ""
    tree = sb.from_form({"f:type": "object", "f:count": "3", "f.0:type": "string", "f.0:name": "a",
                         "f.1:type": "string", "f.1:name": "a", "f.2:type": "string", "f.2:name": ""})
    assert sb.name_problems(tree) == {"f.1": "two fields are named 'a'", "f.0": "two fields are named 'a'",
                                      "f.2": "every field needs a name"}
    with pytest.raises(sb.FormError, match="kept keywords"):
        sb.from_form({"f:type": "object", "f:extra": "[1]"})


@pytest.mark.parametrize("field", [
    {"type": "string", "enum": ["gold", "silver"], "default": "bronze"},
    {"type": "integer", "minimum": 1, "default": 0},
    {"type": "array", "items": {"type": "string"}, "default": [1]},
])
def test_the_builder_refuses_the_defaults_the_analyzer_reports_as_schema_invalid(field: dict[str, Any]) -> None:
    from runtime import Workflow, analyze

    schema = {"type": "object", "properties": {"x": field}}
    assert [where for where, _ in sb.default_problems(schema)] == ["x"]
    codes = {d.code for d in analyze(Workflow.model_validate({"id": "w", "input_schema": schema})).diagnostics}
    assert "schema.invalid" in codes
    fine = {"type": "object", "properties": {"x": {**field, "default": field.get("enum", [None])[0]}}}
    if "enum" in field:  # and a default the field accepts passes both
        assert sb.default_problems(fine) == []
        assert "schema.invalid" not in {
            d.code for d in analyze(Workflow.model_validate({"id": "w", "input_schema": fine})).diagnostics}
