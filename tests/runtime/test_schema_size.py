"""A schema's expanded size is measured before anything is validated against it, and a schema above the
budget is refused (``schema.invalid``, "too complex") by the analyzer and by the runtime alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime import Engine, analyze
from runtime._analysis import _schemas as S
from runtime._schema_check import DEFAULT_DIALECT, MAX_SCHEMA_SUBSCHEMAS, _Walk, schema_defects
from runtime.errors import InputValidationError, WorkflowValidationError
from runtime.inspect import check_run_input
from tests.runtime.analysis_docs import route, shop_registry, task, workflow
from tests.runtime.schema_support import bomb, spy_on_validation

LIMIT_WORDS = f"the limit is {MAX_SCHEMA_SUBSCHEMAS}"


@pytest.fixture
def validations(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    return spy_on_validation(monkeypatch)


def test_the_spy_sees_ordinary_validation(validations: list[Any]) -> None:
    # Without this the zero-call assertions below could pass with a spy in the wrong place.
    doc = workflow([task("a")], [], input_schema=bomb(3))
    assert check_run_input(doc, {"x": 4}) == {"x": 4}
    assert validations == [{"x": 4}]


@pytest.mark.parametrize("levels", [19, 60])
def test_the_defs_bomb_is_refused_at_analysis_without_validating(levels: int, validations: list[Any]) -> None:
    doc = workflow([task("a")], [], input_schema=bomb(levels))

    [problem] = [d for d in analyze(doc).errors if d.code == "schema.invalid"]

    assert (problem.node_id, problem.field) == (None, "input_schema")
    assert f"too complex: more than {MAX_SCHEMA_SUBSCHEMAS} subschemas, {LIMIT_WORDS}" in problem.message
    assert "$ref" in problem.hint or "allOf" in problem.hint
    assert validations == []


def test_the_runtime_refuses_it_in_the_same_words_before_validating(validations: list[Any]) -> None:
    doc = workflow([task("a")], [], input_schema=bomb(19))

    with pytest.raises(InputValidationError, match=f"too complex: more than {MAX_SCHEMA_SUBSCHEMAS} subschemas"):
        check_run_input(doc, {"x": 1})
    with pytest.raises(WorkflowValidationError, match="too complex"):
        Engine(shop_registry()).run(doc, {"x": 1})
    assert validations == []


def test_state_and_resume_schemas_are_measured_too(validations: list[Any]) -> None:
    ask = {"id": "ask", "kind": "interrupt", "resume_schema": bomb(19)}
    doc = workflow([ask, task("a")], [route("ask", "ok", "a")],
                   state_schema=bomb(19))

    found = {(d.node_id, d.field) for d in analyze(doc).errors if "too complex" in d.message}

    assert found == {(None, "state_schema"), ("ask", "resume_schema")}
    assert validations == []


def test_the_analyzer_does_not_inline_a_schema_over_the_budget() -> None:
    # prepare() inlines $refs for type checks: on the bomb that would be exponential, so it gives up (any).
    assert S.prepare(bomb(40)) == {}
    small = S.prepare(bomb(2))
    assert small["properties"]["x"] == {"type": "integer"}


def test_a_large_legitimate_schema_is_accepted() -> None:
    wide = {"type": "object", "properties": {f"f{i}": {"type": "string", "maxLength": 10} for i in range(2000)}}
    tree = {"$defs": {"node": {"type": "object", "properties": {
        "left": {"$ref": "#/$defs/node"}, "right": {"$ref": "#/$defs/node"}, "label": {"type": "string"}}}},
        "$ref": "#/$defs/node"}

    assert schema_defects(wide) == ()
    assert schema_defects(tree) == ()  # recursion into the value costs as much as the value, not the schema
    assert schema_defects(bomb(8)) == ()


def test_counting_stops_at_the_limit() -> None:
    walk = _Walk(DEFAULT_DIALECT, bomb(200))
    walk.defects(limit=50)
    assert walk.expanded_size(50) == 51
    assert walk.expanded_size(10**80) > 2**200  # what it would really be: only the cap keeps it small


def _size(schema: Mapping[str, Any], limit: int = 10**12) -> int:
    walk = _Walk(DEFAULT_DIALECT, schema)
    walk.defects(limit=limit)
    return walk.expanded_size(limit)


_KEYWORD_MANY = ("allOf", "anyOf", "oneOf", "prefixItems")
_KEYWORD_ONE = ("not", "items", "additionalProperties", "if", "then", "else", "contains")


def naive_size(schema: Mapping[str, Any], root: Mapping[str, Any]) -> int:
    """The expansion written out: every subschema, and for each $ref the whole target again."""
    count = 1
    ref = schema.get("$ref")
    if isinstance(ref, str):
        count += naive_size(root["$defs"][ref.rsplit("/", 1)[-1]], root)
    for keyword in _KEYWORD_MANY:
        for sub in schema.get(keyword, ()):
            count += naive_size(sub, root)
    for keyword in _KEYWORD_ONE:
        if isinstance(schema.get(keyword), dict):
            count += naive_size(schema[keyword], root)
    for keyword in ("properties", "$defs"):
        for sub in schema.get(keyword, {}).values():
            count += naive_size(sub, root)
    return count


@st.composite
def acyclic_schemas(draw: st.DrawFn) -> dict[str, Any]:
    """Definitions that may refer (several times, through any keyword) to earlier ones."""
    names: list[str] = []
    defs: dict[str, Any] = {}

    def body(depth: int) -> Any:
        choices = ["leaf"] + (["ref"] if names else []) + (["many", "one", "props"] if depth < 3 else [])
        kind = draw(st.sampled_from(choices))
        if kind == "leaf":
            return {"type": draw(st.sampled_from(["integer", "string", "object"]))}
        if kind == "ref":
            return {"$ref": f"#/$defs/{draw(st.sampled_from(names))}"}
        if kind == "many":
            size = draw(st.integers(1, 3))
            return {draw(st.sampled_from(_KEYWORD_MANY)): [body(depth + 1) for _ in range(size)]}
        if kind == "one":
            return {draw(st.sampled_from(_KEYWORD_ONE)): body(depth + 1)}
        keys = draw(st.lists(st.sampled_from("abc"), min_size=1, max_size=3, unique=True))
        return {"properties": {key: body(depth + 1) for key in keys}}

    for index in range(draw(st.integers(0, 6))):
        defs[f"n{index}"] = body(0)
        names.append(f"n{index}")
    return {"$defs": defs, **body(0)}


@settings(max_examples=150, deadline=None)
@given(acyclic_schemas(), st.integers(1, 200))
def test_the_measure_equals_the_naive_expansion_capped(schema: dict[str, Any], limit: int) -> None:
    if schema_defects(schema) and not all(d.kind == "too_complex" for d in schema_defects(schema)):
        return  # e.g. "if"/"then" combinations the meta-schema refuses: not what is measured here
    expected = naive_size(schema, schema)
    assert _size(schema) == expected
    assert _size(schema, limit) == min(expected, limit + 1)
    assert any(d.kind == "too_complex" for d in schema_defects(schema)) == (expected > MAX_SCHEMA_SUBSCHEMAS)


TWICE = {"$defs": {"r": {"allOf": [{"$ref": "#/$defs/s"}, {"$ref": "#/$defs/s"}]},
                   "s": {"type": "object", "properties": {"x": {"$ref": "#/$defs/r"}}}},
         "type": "object", "properties": {"root": {"$ref": "#/$defs/r"}}}


def test_recursion_that_checks_a_nested_value_twice_is_refused(validations: list[Any]) -> None:
    # Tiny once expanded (recursion is counted once), yet x.x.x... is checked 2, 4, 8... times.
    [problem] = [d for d in analyze(workflow([task("a")], [], input_schema=TWICE)).errors]

    assert "too complex: a value is checked against the recursive schema at #/$defs/s/properties/x 2 or more " \
           "times for each level it nests (at key 'x')" in problem.message
    with pytest.raises(InputValidationError, match="validation work would double with every level"):
        check_run_input(workflow([task("a")], [], input_schema=TWICE), {"root": {"x": {"x": {}}}})
    assert validations == []


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"a": {"$ref": "#"}}, "patternProperties": {"^a": {"$ref": "#"}}},
    {"$defs": {"n": {"anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/b"}]},
               "a": {"properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/n"}}}},
               "b": {"properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/n"}}}}},
     "$ref": "#/$defs/n"},
])
def test_other_multiplying_recursions_are_refused(schema: dict[str, Any]) -> None:
    assert [d.kind for d in schema_defects(schema)] == ["too_complex"]


@pytest.mark.parametrize("schema", [
    # a binary tree: left and right are different places, each checked once
    {"$defs": {"t": {"type": "object", "properties": {"left": {"$ref": "#/$defs/t"}, "right": {"$ref": "#/$defs/t"}},
                     "additionalProperties": {"$ref": "#/$defs/t"}}}, "$ref": "#/$defs/t"},
    # a tuple head then the rest: prefixItems and items never apply to the same index
    {"type": "array", "prefixItems": [{"$ref": "#"}], "items": {"$ref": "#"}},
    # one optional recursion, as pydantic writes a recursive model
    {"$defs": {"Node": {"type": "object", "properties": {
        "next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}, "value": {"type": "integer"}}}},
     "$ref": "#/$defs/Node"},
])
def test_recursion_that_stays_linear_is_accepted(schema: dict[str, Any]) -> None:
    assert schema_defects(schema) == ()


def test_a_validation_stops_after_its_budget_of_keyword_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    from runtime import _schema_patterns

    # {"type": "array", "items": X} costs 2 checks, then X's two checks per item ("type", "properties"; the
    # item objects are empty): 2n + 2 in all, since an object item schema is counted per element.
    monkeypatch.setattr(_schema_patterns, "MAX_VALIDATION_STEPS", 52)
    doc = workflow([task("a")], [], input_schema={"type": "object", "properties": {
        "xs": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}}}}})
    # the object adds "type" and "properties": 2 more
    assert check_run_input(doc, {"xs": [{}] * 24}) == {"xs": [{}] * 24}
    with pytest.raises(InputValidationError, match="too large to check against this schema: validation stopped "
                                                   "after 52 keyword checks"):
        check_run_input(doc, {"xs": [{}] * 25})


def _int_list_doc(items: dict[str, Any]) -> Any:
    return workflow([task("a")], [], input_schema={"type": "object", "properties": {
        "xs": {"type": "array", "items": items}}})


def test_a_flat_item_schema_is_counted_once_not_per_element(monkeypatch: pytest.MonkeyPatch) -> None:
    from runtime import _schema_patterns

    # The same 52-check budget that refuses 25 objects above takes 10,000 bounded integers: the item
    # schema's checks are O(1) per element whatever the element, so they are counted as schema work.
    monkeypatch.setattr(_schema_patterns, "MAX_VALIDATION_STEPS", 52)
    doc = _int_list_doc({"type": "integer", "minimum": 0, "description": "a count"})
    assert check_run_input(doc, {"xs": list(range(10_000))})["xs"][-1] == 9_999


def test_a_million_integers_are_accepted_by_the_default_budget() -> None:
    doc = _int_list_doc({"type": "integer"})
    xs = list(range(1_000_000))
    assert check_run_input(doc, {"xs": xs})["xs"] is not None
    xs[7], xs[500_000], xs[9] = True, "x", 2.0  # 2.0 is an integer in 2020-12; True and "x" are not
    with pytest.raises(InputValidationError) as caught:
        check_run_input(doc, {"xs": xs})
    assert sorted(e["field"] for e in caught.value.details["errors"]) == ["xs.500000", "xs.7"]


def test_flat_items_that_are_not_quick_to_check_still_get_the_drafts_verdict() -> None:
    doc = _int_list_doc({"type": "number", "multipleOf": 0.5, "exclusiveMaximum": 10})
    assert check_run_input(doc, {"xs": [0.5, 1, 9.5]}) == {"xs": [0.5, 1, 9.5]}
    with pytest.raises(InputValidationError, match=r"xs\.1: 0\.3 is not a multiple of 0\.5"):
        check_run_input(doc, {"xs": [0.5, 0.3]})


_FLAT_ITEMS = st.fixed_dictionaries({"type": st.sampled_from(["integer", "number", "string", "boolean", "null"])},
                                    optional={"minimum": st.integers(-3, 3), "maximum": st.integers(-3, 3),
                                              "minLength": st.integers(0, 3), "maxLength": st.integers(0, 3),
                                              "exclusiveMinimum": st.integers(-3, 3), "title": st.just("t")})
_ELEMENTS = st.one_of(st.integers(-5, 5), st.floats(-5, 5, allow_nan=False), st.booleans(), st.none(),
                      st.text(max_size=5), st.just({}), st.just([1]))


@settings(max_examples=150, deadline=None)
@given(items=_FLAT_ITEMS, xs=st.lists(_ELEMENTS, max_size=6),
       draft=st.sampled_from(["https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft-07/schema#",
                              "http://json-schema.org/draft-04/schema#"]))
def test_the_flat_items_path_agrees_with_jsonschema(items: dict[str, Any], xs: list[Any], draft: str) -> None:
    import jsonschema

    if draft.endswith("draft-04/schema#") and "exclusiveMinimum" in items:
        items = {**items, "exclusiveMinimum": True, "minimum": items["exclusiveMinimum"]}  # draft 4's boolean form
    schema = {"$schema": draft, "type": "object", "properties": {"xs": {"type": "array", "items": items}}}
    expected = jsonschema.validators.validator_for(schema)(schema).is_valid({"xs": xs})
    doc = workflow([task("a")], [], input_schema=schema)
    try:
        check_run_input(doc, {"xs": xs})
        accepted = True
    except InputValidationError:
        accepted = False
    assert accepted == expected
