"""What the engine's per-call shortcuts must keep: the same answers as the general path they skip (issue 33)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from runtime import Engine, WorkflowBuilder
from runtime._compiled import ANY_OBJECT, schema_problems, schema_validator, with_defaults
from runtime._paths import is_item_index
from runtime.errors import InputValidationError
from runtime.tasks import TaskRegistry


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {}},
    {"type": "object"},
    {"type": "object", "title": "In", "properties": {"x": {}, "y": {"title": "Y", "default": 3}}},
    {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {"x": {}}},
])
def test_a_schema_that_only_asks_for_an_object_skips_jsonschema(schema: dict[str, Any]) -> None:
    validator = schema_validator(schema)
    assert validator is ANY_OBJECT
    assert schema_problems(validator, {"anything": [1, {"at": "all"}]}) == []
    assert schema_problems(validator, [1]) == [{"field": "", "message": "[1] is not of type 'object'"}]


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"x": {"type": "integer"}}},
    {"type": "object", "required": ["x"]},
    {"type": "object", "additionalProperties": False},
    {"type": "object", "properties": {"x": {"title": "X", "minimum": 1}}},
    {"type": ["object"]},
    {"$schema": "https://example.com/not-a-dialect", "type": "object"},
])
def test_a_schema_with_any_constraint_is_still_checked(schema: dict[str, Any]) -> None:
    assert schema_validator(schema) is not ANY_OBJECT


def test_a_run_through_the_shortcut_fills_defaults_and_refuses_what_it_did_before() -> None:
    tasks = TaskRegistry()

    @tasks.task
    def echo(x: Any, y: Any) -> Any:
        return {"x": x, "y": y}

    graph = WorkflowBuilder("shortcut", input_schema={"type": "object", "properties": {
        "x": {"title": "X"}, "y": {"default": [1, 2]}}})
    graph.use("echo", "echo", input=[{"target": "x", "path": "input.x"}, {"target": "y", "path": "input.y"}],
              output=[{"source": ".", "target": "out"}])
    graph.output("out", "state.out")
    workflow = graph.build()
    engine = Engine(registry=tasks)
    assert engine.run(workflow, {"x": "a"}).output == {"out": {"x": "a", "y": [1, 2]}}
    with pytest.raises(InputValidationError):
        engine.run(workflow, [1, 2])


def test_defaults_share_only_what_cannot_change() -> None:
    schema = {"type": "object", "properties": {"n": {"default": 0}, "tags": {"default": ["a"]},
                                               "meta": {"default": {"k": [1]}}}}
    first, second = with_defaults(schema, {}), with_defaults(schema, {})
    assert first == {"n": 0, "tags": ["a"], "meta": {"k": [1]}}
    first["tags"].append("b")
    first["meta"]["k"].append(2)
    assert second == {"n": 0, "tags": ["a"], "meta": {"k": [1]}}
    assert schema["properties"]["tags"]["default"] == ["a"]


_INDEX = re.compile(r"0|[1-9][0-9]*")


@pytest.mark.parametrize("segment", ["0", "1", "10", "123456", "01", "00", "", "a", "1a", "-1", " 1", "1 ", "²",
                                     "١", "12\n", "1_0"])
def test_an_item_index_is_a_canonical_ascii_decimal(segment: str) -> None:
    assert is_item_index(segment) == (_INDEX.fullmatch(segment) is not None and segment.isascii())


def test_a_compiled_plan_has_its_input_validator_built_before_the_first_run() -> None:
    """Compiling builds the validator every run checks its input with, so a run does not pay for building it."""
    from runtime import Engine, WorkflowBuilder
    from runtime.tasks import TaskRegistry

    g = WorkflowBuilder("eager", input_schema={"type": "object", "properties": {"items": {"type": "array"}}})
    g.use("echo", "e", input=[{"target": "value", "path": "input.items"}])
    workflow = g.build()
    tasks = TaskRegistry()

    @tasks.task
    def echo(value: object = None) -> object:
        return value

    plan = Engine(registry=tasks).compile(workflow)
    built = plan._validators.get("input")
    assert built is not None
    assert Engine(registry=tasks).run(workflow, {"items": [1]}).status == "completed"
    assert plan.validator("input", workflow.input_schema) is built
