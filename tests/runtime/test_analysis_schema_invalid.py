"""``schema.invalid``: a document's own schemas are judged when it is analyzed (saved), not when a run starts."""

from __future__ import annotations

from typing import Any

import pytest

from runtime import Engine, Workflow, analyze
from runtime._analysis import CODES
from runtime._diagnostics import Diagnostic
from runtime.errors import InputValidationError, WorkflowValidationError
from runtime.inspect import check_run_input
from runtime.tasks import builtin_registry
from tests.runtime.analysis_docs import route, subgraph, task, workflow


def _input(schema: dict[str, Any]) -> Workflow:
    return workflow([task("a")], [], input_schema=schema)


def _schema_problems(doc: Workflow, **options: Any) -> list[Diagnostic]:
    return [d for d in analyze(doc, **options).diagnostics if d.code == "schema.invalid"]


def _only(doc: Workflow) -> Diagnostic:
    found = _schema_problems(doc)
    assert len(found) == 1, found
    assert found[0].severity == "error" == CODES["schema.invalid"].severity
    assert found[0].hint
    return found[0]


@pytest.mark.parametrize("ref", ["http://127.0.0.1:9/amount.json", "file:///etc/passwd", "other.json",
                                 "https://json-schema.org/draft/2020-12/schema"])
def test_a_ref_leaving_the_schema_is_reported(ref: str) -> None:
    problem = _only(_input({"type": "object", "properties": {"amount": {"$ref": ref}}}))

    assert (problem.node_id, problem.field) == (None, "input_schema")
    assert f"$ref {ref!r} points outside the schema" in problem.message
    assert "#/properties/amount/$ref" in problem.message
    assert "$defs" in problem.hint


def test_a_dangling_ref_names_the_pointer() -> None:
    problem = _only(_input({"type": "object", "properties": {"a": {"$ref": "#/$defs/amout"}},
                            "$defs": {"amount": {"type": "integer"}}}))

    assert "$ref '#/$defs/amout' points at nothing inside the schema" in problem.message


def test_a_ref_to_something_that_is_not_a_schema_is_reported() -> None:
    problem = _only(_input({"type": "object", "properties": {"a": {"$ref": "#/properties"}}}))

    assert "not a schema" in problem.message


def test_a_ref_cycle_that_never_descends_is_reported_with_its_path() -> None:
    schema = {"$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"anyOf": [{"type": "string"},
                                                                          {"$ref": "#/$defs/a"}]}},
              "type": "object", "properties": {"x": {"$ref": "#/$defs/a"}}}
    problem = _only(_input(schema))

    assert "lead back to themselves" in problem.message
    assert "#/$defs/a" in problem.message and "#/$defs/b" in problem.message
    # The runtime agrees: validating against it is refused instead of recursing until RecursionError.
    with pytest.raises(InputValidationError, match="lead back to themselves"):
        check_run_input(_input(schema), {"x": 1})


def test_recursion_through_properties_and_items_is_fine() -> None:
    tree = {"$defs": {"node": {"type": "object", "properties": {
        "name": {"type": "string", "pattern": "^[a-z]+$"},
        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
        "type": "object", "properties": {"root": {"$ref": "#/$defs/node"}, "self": {"$ref": "#"}}}

    assert _schema_problems(_input(tree)) == []
    assert check_run_input(_input(tree), {"root": {"name": "a", "children": [{"name": "b"}]}})


def test_embedded_resources_with_their_own_id_are_inside_the_schema() -> None:
    schema = {"$id": "https://example.com/root.json", "type": "object",
              "properties": {"a": {"$ref": "item.json"}, "b": {"$ref": "item.json#short"}},
              "$defs": {"item": {"$id": "item.json", "type": "string", "$anchor": "short", "maxLength": 3}}}

    assert _schema_problems(_input(schema)) == []
    with pytest.raises(InputValidationError) as caught:
        check_run_input(_input(schema), {"a": "abcd"})
    assert caught.value.details["errors"][0]["field"] == "a"


@pytest.mark.parametrize("schema, fragment", [
    ({"type": "text"}, "'type' at #/type is not valid JSON Schema (draft 2020-12)"),
    ({"type": "object", "required": "name"}, "'required' at #/required"),
    ({"properties": {"a": {"minLength": -1}}}, "#/properties/a/minLength"),
    ({"$schema": "http://json-schema.org/draft-03/schema#"}, "is not a supported JSON Schema draft"),
    ({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
      "properties": {"a": {"$schema": "https://json-schema.org/draft/2020-12/schema"}}},
     "$schema may only appear at the top"),
    ({"type": "object", "patternProperties": {"^x-": {}}, "properties": {"a": {"unevaluatedProperties": False}}},
     "unevaluatedProperties cannot be combined with patternProperties"),
])
def test_schemas_that_are_not_usable_json_schema(schema: dict[str, Any], fragment: str) -> None:
    assert fragment in _only(_input(schema)).message


@pytest.mark.parametrize("pattern, fragment", [
    ("^(ab", "is not a valid regular expression"),
    (r"\p{L}+", "is not a valid regular expression"),
    ("(?:x{65535}){65535}", "too large once its repeat counts are multiplied out"),
])
def test_patterns_that_cannot_be_compiled_safely(pattern: str, fragment: str) -> None:
    problem = _only(_input({"type": "object", "properties": {"code": {"type": "string", "pattern": pattern}}}))

    assert fragment in problem.message and "#/properties/code/pattern" in problem.message


def test_pattern_property_keys_are_patterns_too() -> None:
    problem = _only(_input({"type": "object", "patternProperties": {"[unclosed": {}}}))

    assert "#/patternProperties/[unclosed" in problem.message


def test_state_and_resume_schemas_are_located_at_their_fields() -> None:
    doc = workflow(
        [task("a"), {"kind": "interrupt", "id": "ask", "resume_schema": {
            "type": "object", "properties": {"ok": {"$ref": "https://example.com/yes-no.json"}}}}],
        [route("a", "ok", "ask")],
        state_schema={"type": "object", "properties": {"n": {"type": "int"}}})

    found = {(d.node_id, d.field) for d in _schema_problems(doc)}

    assert found == {(None, "state_schema"), ("ask", "resume_schema")}


def test_a_childs_broken_schema_is_repeated_on_the_subgraph_node() -> None:
    child = workflow([task("c")], [], id="child", input_schema={"type": "object",
                                                               "properties": {"n": {"$ref": "#/$defs/n"}}})
    analysis = analyze(workflow([subgraph("s", "child")], []), workflows={"child": child})

    assert [(d.code, d.node_id, d.field) for d in analysis.errors] == [("schema.invalid", "s", "workflow")]


def test_the_engine_refuses_the_document_before_validating_any_input() -> None:
    doc = _input({"type": "object", "properties": {"a": {"type": "string", "pattern": "(?:x{65535}){65535}"}}})

    with pytest.raises(WorkflowValidationError) as caught:
        Engine(builtin_registry()).run(doc, {"a": "x"})

    assert ("schema.invalid", "input_schema") in {(d.code, d.field) for d in caught.value.diagnostics}


def test_ordinary_schemas_raise_nothing() -> None:
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
              "definitions": {"sku": {"type": "string", "pattern": "^[A-Z]{3}-\\d{1,6}$"}},
              "properties": {"sku": {"$ref": "#/definitions/sku"}, "tags": {"type": "array",
                                                                          "items": {"type": "string"}}},
              "patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": False}

    assert _schema_problems(_input(schema)) == []
    assert check_run_input(_input(schema), {"sku": "ABC-12", "x-note": "hi"}) == {"sku": "ABC-12", "x-note": "hi"}


@pytest.mark.parametrize(("schema", "where", "words"), [
    ({"type": "object", "properties": {"n": {"type": "integer", "default": "ten"}}},
     "#/properties/n/default", "the default \"ten\" breaks its own schema: 'ten' is not of type 'integer'"),
    ({"type": "object", "properties": {"n": {"$ref": "#/$defs/count", "default": -1}},
      "$defs": {"count": {"type": "integer", "minimum": 0}}},
     "#/properties/n/default", "the default -1 breaks its own schema: -1 is less than the minimum of 0"),
    ({"type": "object", "properties": {"o": {"type": "object", "properties": {
        "tags": {"type": "array", "items": {"type": "string"}, "default": ["a", 2]}}}}},
     "#/properties/o/properties/tags/default", "the default [\"a\", 2] breaks its own schema at /1: 2 is not of"),
])
def test_a_default_that_breaks_its_own_schema_is_reported(schema: dict[str, Any], where: str, words: str) -> None:
    problem = _only(_input(schema))
    assert words in problem.message and f"(at {where})" in problem.message
    assert "change the default" in problem.hint


def test_defaults_that_fit_are_fine_and_a_bad_one_does_not_stop_validation() -> None:
    good = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "default": 0},
                                             "s": {"enum": ["a", "b"], "default": "b"}}}
    assert _schema_problems(_input(good)) == []
    bad = _input({"type": "object", "properties": {"n": {"type": "integer", "default": "ten"}}})
    # The runtime validates as before: a given value passes, the filled-in bad default is refused.
    assert check_run_input(bad, {"n": 3}) == {"n": 3}
    with pytest.raises(InputValidationError, match="'ten' is not of type 'integer'"):
        check_run_input(bad, {})
