"""What the engine's per-call shortcuts must keep: the same answers as the general path they skip (issue 33)."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest

from runtime import Engine, RunResult, WorkflowBuilder
from runtime._compiled import ANY_OBJECT, schema_problems, schema_validator, with_defaults
from runtime._paths import is_item_index
from runtime.checkpoint import InMemoryCheckpointer
from runtime.engine import EngineOptions
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


def _whole_scope_echo() -> tuple[Any, TaskRegistry]:
    """A workflow whose one task receives the run's whole input and whole state, and writes nothing to the state."""
    tasks = TaskRegistry()

    @tasks.task
    def look(given: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
        return {"given": given, "state": state}

    graph = WorkflowBuilder("defaults", input_schema={"type": "object", "properties": {
        "n": {"type": "integer", "default": 1}, "name": {"type": "string", "default": "x"}}},
        state_schema={"type": "object", "properties": {"count": {"type": "integer", "default": 0},
                                                       "label": {"default": None}}})
    graph.use("look", "l", input=[{"target": "given", "path": "input"}, {"target": "state", "path": "state"}])
    graph.output("given", "input")
    graph.output("state", "state")
    return graph.build(), tasks


def test_a_run_without_input_gets_the_defaults_and_the_initial_state_as_objects_of_its_own() -> None:
    """The plan keeps the checked empty input and the initial state (objects of scalars) and copies them per run:
    what a caller does to one run's objects never reaches the next run."""
    workflow, tasks = _whole_scope_echo()
    engine = Engine(registry=tasks)
    expected = {"given": {"n": 1, "name": "x"}, "state": {"count": 0, "label": None}}
    first = engine.run(workflow)
    assert first.output == expected and first.state == expected["state"]
    first.state["count"] = 99  # the root scope's state object itself: nothing wrote to it, so it is the initial one
    first.run_state.scopes["root"].input["n"] = 99
    second = engine.run(workflow)
    assert second.output == expected and second.state == expected["state"]


def test_a_run_without_input_that_the_schema_refuses_is_refused_every_time() -> None:
    tasks = TaskRegistry()

    @tasks.task
    def echo(value: object = None) -> object:
        return value

    graph = WorkflowBuilder("needs", input_schema={"type": "object", "properties": {"x": {"type": "integer"}},
                                                   "required": ["x"]})
    graph.use("echo", "e", input=[{"target": "value", "path": "input.x"}])
    workflow = graph.build()
    engine = Engine(registry=tasks)
    for _ in range(2):
        with pytest.raises(InputValidationError) as refused:
            engine.run(workflow)
        assert refused.value.details["errors"] == [{"field": "", "message": "'x' is a required property"}]
    assert engine.run(workflow, {"x": 3}).status == "completed"


def test_a_state_default_that_is_a_container_is_still_a_new_one_each_run() -> None:
    tasks = TaskRegistry()

    @tasks.task
    def grow(items: list[Any]) -> list[Any]:
        items.append(len(items))  # in place, on the list the run's state holds
        return items

    graph = WorkflowBuilder("lists", state_schema={"type": "object", "properties": {
        "items": {"type": "array", "default": []}}})
    graph.use("grow", "g", input=[{"target": "items", "path": "state.items"}], output=[{"target": "items"}])
    graph.output("items", "state.items")
    workflow = graph.build()
    engine = Engine(registry=tasks)
    assert engine.run(workflow).output == {"items": [0]}
    assert engine.run(workflow).output == {"items": [0]}


def test_the_engine_builds_its_result_exactly_as_the_constructor_does() -> None:
    """``Engine._result`` fills RunResult's layout twin itself: every field must land in its own slot, for a run
    that completes, one that pauses at an interrupt and one that fails."""
    tasks = TaskRegistry()

    @tasks.task
    def boom() -> None:
        raise RuntimeError("no")

    failing = WorkflowBuilder("fails")
    failing.use("boom", "b")
    asking = WorkflowBuilder("asks")
    asking.interrupt("ask", prompt="?", resume_schema={"type": "object"})
    workflow, echo_tasks = _whole_scope_echo()
    checkpointed = Engine(registry=tasks, options=EngineOptions(checkpointer=InMemoryCheckpointer()))
    results = [Engine(registry=echo_tasks).run(workflow), checkpointed.run(failing.build()),
               checkpointed.run(asking.build())]
    assert [r.status for r in results] == ["completed", "failed", "interrupted"]
    for result in results:
        assert type(result) is RunResult
        names = [f.name for f in dataclasses.fields(RunResult)]
        rebuilt = RunResult(**{name: getattr(result, name) for name in names})
        assert rebuilt == result and repr(rebuilt) == repr(result)
        with pytest.raises(dataclasses.FrozenInstanceError):
            result.status = "failed"  # type: ignore[misc]
    assert results[1].error is not None and results[1].trace_kept_by == ("checkpointer",)
    assert len(results[2].interrupts) == 1 and results[0].interrupts == () and results[0].trace_kept_by == ()


@pytest.mark.parametrize(("outputs", "flat", "expected"), [
    ([("a", "state.a"), ("gone", "state.nothing"), ("b", "input.b")], True, {"a": 2, "b": [1, 2]}),
    ([("a", "state.a"), ("deep.inner", "input.b")], False, {"a": 2, "deep": {"inner": [1, 2]}}),
    ([("list.0", "state.a"), ("list.1", "state.nothing")], False, {"list": [2, None]}),
    ([(".", "input")], False, {"b": [1, 2]}),
])
def test_a_workflow_s_outputs_are_what_project_reads_whether_or_not_they_are_flat(
        outputs: list[tuple[str, str]], flat: bool, expected: dict[str, Any]) -> None:
    """Outputs that are all top-level fields are read as a task's flat payload is; what comes out is what
    ``project`` makes of them, a path that does not resolve left out (or ``None`` as an array item)."""
    from runtime._bindings import ScopeReader, project

    tasks = TaskRegistry()

    @tasks.task
    def two() -> int:
        return 2

    graph = WorkflowBuilder("outs", input_schema={"type": "object", "properties": {"b": {"type": "array"}}},
                            state_schema={"type": "object", "properties": {"a": {}, "nothing": {}}})
    graph.use("two", "t", output=[{"source": ".", "target": "a"}])
    for target, path in outputs:
        graph.output(target, path)
    workflow = graph.build()
    engine = Engine(registry=tasks)
    plan = engine.compile(workflow)
    assert (plan.flat_outputs is not None) == flat
    result = engine.run(workflow, {"b": [1, 2]})
    assert result.output == expected
    scope = result.run_state.scopes["root"]
    assert project(plan.outputs, ScopeReader(scope.input, scope.state, dict)) == expected


def test_a_step_outside_any_foreach_gets_its_own_frame_s_context() -> None:
    """The context of a scope's root frame is built by position: each field must hold its own value."""
    from runtime.state import RuntimeContext

    tasks = TaskRegistry()

    @tasks.task
    def look(ctx: RuntimeContext) -> dict[str, Any]:
        return dataclasses.asdict(ctx)

    graph = WorkflowBuilder("where")
    graph.use("look", "l", output=[{"source": ".", "target": "seen"}])
    graph.output("seen", "state.seen")
    result = Engine(registry=tasks).run(graph.build())
    started = next(e for e in result.trace if e.kind == "node_started")
    assert result.output == {"seen": dataclasses.asdict(RuntimeContext(
        run_id=result.run_id, workflow_id="where", scope_id="root", frame_id=started.frame_id,
        lineage_id=started.lineage_id, node_id="l"))}
    assert started.frame_id != started.lineage_id
