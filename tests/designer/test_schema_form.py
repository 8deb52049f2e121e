"""Forms generated from JSON Schema (run input, interrupt answers): widgets per type and text -> JSON."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from designer.core.schema_form import build_form, parse_form, with_error

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name"},
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "ok": {"type": "boolean"},
        "tier": {"enum": ["gold", "silver", 3]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "note": {"type": ["string", "null"]},
    },
    "required": ["name", "count"],
}


def kinds(schema: dict[str, Any]) -> dict[str, str]:
    return {f.name: f.kind for f in build_form(schema).fields}


def test_scalars_get_inputs_and_everything_else_json() -> None:
    assert kinds(SCHEMA) == {"name": "string", "count": "integer", "ratio": "number", "ok": "boolean",
                             "tier": "enum", "tags": "json", "note": "string"}


def test_a_schema_without_properties_is_edited_as_json_only() -> None:
    assert build_form({"type": "array"}).json_only
    assert build_form({}).json_only
    empty = build_form({"type": "object", "properties": {}})
    assert empty.json_only and empty.takes_nothing


def test_parsing_converts_each_widget_to_its_json_type() -> None:
    data = {"field.name": "Ada", "field.count": "3", "field.ratio": "0.5", "field.ok": "on",
            "field.tier": "3", "field.tags": '["a", "b"]', "field.note": ""}
    form, value = parse_form(SCHEMA, data)
    assert not form.has_errors
    assert value == {"name": "Ada", "count": 3, "ratio": 0.5, "ok": True, "tier": 3, "tags": ["a", "b"]}


def test_an_unchecked_boolean_is_false_not_missing() -> None:
    _, value = parse_form(SCHEMA, {"field.name": "x", "field.count": "1"})
    assert value["ok"] is False


def test_errors_name_the_field_and_keep_what_was_typed() -> None:
    form, _ = parse_form(SCHEMA, {"field.name": "", "field.count": "three", "field.tags": "[1,"})
    errors = {f.name: f.error for f in form.fields if f.error}
    assert errors["name"] == "This field is required."
    assert errors["count"] == "Enter a whole number."
    assert errors["tags"].startswith("Not valid JSON")
    assert {f.name: f.text for f in form.fields}["count"] == "three"


def test_enum_refuses_values_that_are_not_members() -> None:
    form, _ = parse_form(SCHEMA, {"field.name": "x", "field.count": "1", "field.tier": '"bronze"'})
    assert {f.name: f.error for f in form.fields}["tier"] == "Choose one of the listed values."


def test_json_mode_takes_the_whole_value_from_the_textarea() -> None:
    form, value = parse_form(SCHEMA, {"_mode": "json", "_json": '{"name": "Ada", "count": 2, "extra": [1]}'})
    assert not form.has_errors and form.mode == "json"
    assert value == {"name": "Ada", "count": 2, "extra": [1]}
    assert {f.name: f.text for f in form.fields}["name"] == "Ada"  # switching back keeps the values


def test_json_mode_reports_bad_json() -> None:
    form, _ = parse_form(SCHEMA, {"_mode": "json", "_json": "{nope"})
    assert form.has_errors and form.errors[0].startswith("Not valid JSON")


def test_initial_values_and_defaults_prefill_the_widgets() -> None:
    schema = {"type": "object", "properties": {"comment": {"type": "string", "default": "fine"},
                                               "approved": {"type": "boolean"}}}
    form = build_form(schema, {"approved": True})
    by_name = {f.name: f for f in form.fields}
    assert by_name["approved"].checked and by_name["comment"].text == "fine"
    assert json.loads(build_form(schema).json_text) == {"comment": "fine"}


def test_runtime_errors_attach_to_their_fields() -> None:
    form, _ = parse_form(SCHEMA, {"field.name": "x", "field.count": "1"})
    form = with_error(form, "workflow input is invalid", {"count": "must be >= 2"})
    assert form.errors == ["workflow input is invalid"]
    assert {f.name: f.error for f in form.fields}["count"] == "must be >= 2"


@settings(max_examples=200, deadline=None)
# Any valid Unicode, NUL included (the run's JSON columns keep it exactly; designer/core/fields.py).
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40),
       st.integers(min_value=-(10**12), max_value=10**12),
       st.floats(allow_nan=False, allow_infinity=False, width=32))
def test_values_round_trip_through_their_widgets(name: str, count: int, ratio: float) -> None:
    """What build_form shows for a value parses back to the same value."""
    value = {"name": name or "x", "count": count, "ratio": ratio}
    form = build_form(SCHEMA, value)
    data = {f.html_name: f.text for f in form.fields if f.text}
    parsed_form, parsed = parse_form(SCHEMA, data)
    assert not parsed_form.has_errors
    assert parsed["name"] == value["name"] and parsed["count"] == count
    assert parsed["ratio"] == ratio
