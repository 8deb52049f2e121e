"""The one ``$ref`` inliner (``runtime._schema_refs``) that task schemas and the analyzer share.

The two used to differ on recursion: task schemas kept a recursive reference (exact), the analyzer
unrolled it twice and cut it to *any*; and a dangling reference beside other definitions crashed the
task schema's inliner. Now the inliner keeps recursion exact and the analyzer reads a kept reference.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel

from runtime._analysis import _schemas as S
from runtime._schema_refs import SchemaTooLarge, inline_refs
from runtime._task_schema import json_schema_of
from tests.runtime.schema_support import bomb


class Tree(BaseModel):
    name: str
    children: list[Tree] = []


class Pair(BaseModel):
    left: Tree
    right: Tree | None = None


def test_a_recursive_model_keeps_its_reference_back_and_validates_exactly() -> None:
    schema = json_schema_of(Pair)
    left = schema["properties"]["left"]
    assert left["properties"]["name"] == {"title": "Name", "type": "string"}  # spelled out once
    assert left["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}  # then refers back
    assert set(schema["$defs"]) == {"Tree"}
    good = {"left": {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}}
    jsonschema.validate(good, schema)
    Pair.model_validate(good)
    bad = {"left": {"name": "a", "children": [{"name": "b", "children": [{"name": 3}]}]}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)  # three levels down: a cut-to-any schema would accept this


def _tree_levels(schema: dict[str, Any]) -> int:
    """How many levels of ``Tree`` are spelled out below ``schema`` before ``children`` items are *any*."""
    levels = 0
    while not S.is_any(schema):
        assert schema["properties"]["name"]["type"] == "string"
        levels += 1
        schema = schema["properties"]["children"]["items"]
    return levels


def test_the_analyzer_reads_a_kept_reference_once_more_then_as_any() -> None:
    raw = S.prepare(Pair.model_json_schema())
    assert "$defs" not in raw and "$ref" not in str(raw)
    assert _tree_levels(raw["properties"]["left"]) == 2
    # A task's schema arrives inlined already (the left tree spelled out once): read again, one more level.
    assert _tree_levels(S.prepare(json_schema_of(Pair))["properties"]["left"]) == 3


def test_mutual_recursion_keeps_every_definition_it_reaches() -> None:
    schema = {"$defs": {"a": {"type": "object", "properties": {"b": {"$ref": "#/$defs/b"}}},
                        "b": {"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}, "n": {"type": "integer"}}}},
              "$ref": "#/$defs/a"}
    inlined = inline_refs(schema)
    assert inlined["properties"]["b"]["properties"]["a"] == {"$ref": "#/$defs/a"}
    assert inlined["$defs"]["a"]["properties"]["b"]["properties"]["a"] == {"$ref": "#/$defs/a"}
    jsonschema.validate({"b": {"a": {"b": {"n": 1}}}}, inlined)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"b": {"a": {"b": {"n": "x"}}}}, inlined)


def test_a_reference_to_nothing_stays_as_written() -> None:
    schema = {"type": "object", "properties": {"n": {"$ref": "#/$defs/missing"}}, "$defs": {"y": {"type": "string"}}}
    assert inline_refs(schema)["properties"]["n"] == {"$ref": "#/$defs/missing"}
    assert S.prepare(schema)["properties"]["n"] == {"title": "missing"}  # any, named


def test_sibling_keywords_override_the_definition_and_the_input_is_untouched() -> None:
    schema = {"definitions": {"y": {"type": "string", "title": "Y"}},
              "properties": {"n": {"$ref": "#/definitions/y", "title": "N"}}}
    before = copy.deepcopy(schema)
    assert inline_refs(schema) == {"properties": {"n": {"type": "string", "title": "N"}}}
    assert schema == before


def test_a_defs_bomb_stops_at_the_budget() -> None:
    with pytest.raises(SchemaTooLarge):
        inline_refs(bomb(40), budget=10_000)
    assert S.prepare(bomb(40)) == {}
