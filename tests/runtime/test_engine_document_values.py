"""The engine and a document's read-only JSON values: what flows from a document into a run (literals, schema
defaults, resume schemas) arrives as ordinary values a task may change, and a compiled plan cannot go stale."""

from __future__ import annotations

from typing import Any

import pytest

from runtime import Engine, RunState, Workflow, WorkflowBuilder
from runtime._document_json import FrozenDict, thaw
from runtime.errors import InputValidationError
from runtime.paths import input_path
from runtime.tasks import TaskRegistry
from tests.runtime.engine_helpers import engine


def grabbing_registry() -> TaskRegistry:
    reg = TaskRegistry()

    @reg.task
    def grab(value: Any = None) -> Any:
        """Changes its input in place, as a task may: the literal it was given must be its own copy."""
        value["items"].append(len(value["items"]))
        value["seen"] = True
        return value

    @reg.task
    def grab_object(value: dict[str, Any]) -> Any:
        value["items"].append(len(value["items"]))
        return value

    @reg.task
    def add_to(items: list[Any], extra: int = 0) -> list[Any]:
        items.append(extra)
        return items

    return reg


def literal_workflow(task: str, literal: Any, *, child: bool = False) -> Workflow:
    g = WorkflowBuilder("literal-child" if child else "literal",
                        state_schema={"type": "object", "properties": {"out": {}}})
    g.use(task, id="t", input=[{"target": "value", "value": literal}], output=[{"target": "out"}])
    g.output("out", "state.out")
    return g.build()


@pytest.mark.parametrize("task", ["grab", "grab_object"])
def test_a_task_changing_a_literal_input_changes_neither_the_document_nor_the_next_run(task: str) -> None:
    # Before the document's values were read-only the task got the document's own object: the second run saw
    # the first run's change ([1, 1, 2]) and the document kept it.
    doc = literal_workflow(task, {"items": [1]})
    eng = engine(registry=grabbing_registry())
    first, second = eng.run(doc, {}), eng.run(doc, {})
    assert first.status == second.status == "completed", first.error
    assert first.state["out"]["items"] == second.state["out"]["items"] == [1, 1]
    assert doc.nodes[0].input[0].value == {"items": [1]}  # type: ignore[union-attr]
    assert doc.model_dump(mode="json") == literal_workflow(task, {"items": [1]}).model_dump(mode="json")


def test_a_literal_given_to_a_subgraph_and_its_childs_literals_reach_tasks_as_their_own_copies() -> None:
    g = WorkflowBuilder("parent", state_schema={"type": "object", "properties": {"out": {}}})
    g.subgraph("literal-child", id="call", input=[{"target": "ignored", "value": {"items": [5]}}],
               output=[{"source": "out", "target": "out"}])
    g.output("out", "state.out")
    parent = g.build()
    child = literal_workflow("grab", {"items": [1]}, child=True)
    eng = engine(registry=grabbing_registry(), workflows={"literal-child": child})
    runs = [eng.run(parent, {}) for _ in range(2)]
    assert [run.output for run in runs] == [{"out": {"items": [1, 1], "seen": True}}] * 2, runs[0].error
    assert child.nodes[0].input[0].value == {"items": [1]}  # type: ignore[union-attr]


def test_state_and_input_defaults_reach_a_run_as_ordinary_values_and_grow_in_it() -> None:
    items = {"type": "array", "items": {"type": "integer"}, "default": [1, 2]}
    g = WorkflowBuilder("defaults", input_schema={"type": "object", "properties": {"given": items}},
                        state_schema={"type": "object", "properties": {"items": items}})
    g.use("add_to", id="t", input=[{"target": "items", "path": input_path("given")}, {"target": "extra", "value": 3}],
          output=[{"target": "items", "mode": "extend"}])
    g.output("items", "state.items")
    doc = g.build()
    eng = engine(registry=grabbing_registry())
    runs = [eng.run(doc, {}) for _ in range(2)]
    # The task appended 3 to its copy of the input default; the engine extended the state default with it.
    assert [run.output for run in runs] == [{"items": [1, 2, 1, 2, 3]}] * 2, runs[0].error
    assert type(runs[0].run_state.scopes["root"].input["given"]) is list
    assert doc.state_schema["properties"]["items"]["default"] == [1, 2]
    assert doc.input_schema["properties"]["given"]["default"] == [1, 2]


def test_an_interrupts_record_holds_its_resume_schema_as_a_loaded_state_would() -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}}}
    g = WorkflowBuilder("ask")
    g.interrupt("ask", prompt="ok?", resume_schema=schema)
    doc = g.build()
    waiting = engine().run(doc, {})
    record = waiting.interrupts[0]
    assert record.resume_schema == schema and type(doc.node("ask").resume_schema) is FrozenDict  # type: ignore[union-attr]
    assert type(record.resume_schema["properties"]["answer"]["enum"]) is list
    loaded = RunState.model_validate_json(waiting.run_state.model_dump_json())
    assert loaded.interrupts[record.interrupt_id] == waiting.run_state.interrupts[record.interrupt_id]


def test_a_plan_stays_the_documents_plan_after_an_attempt_to_change_the_document() -> None:
    g = WorkflowBuilder("w", input_schema={"type": "object", "properties": {"x": {"type": "integer"}},
                                           "required": ["x"]})
    g.use("echo", id="t", input=[{"target": "value", "path": input_path("x")}])
    doc = g.build()
    eng = engine()
    plan = eng.compile(doc)
    with pytest.raises(TypeError, match="immutable"):
        doc.input_schema["required"].append("y")
    with pytest.raises(TypeError, match="immutable"):
        doc.input_schema["properties"]["y"] = {"type": "integer"}
    assert eng.compile(doc) is plan
    assert eng.run(doc, {"x": 1}).status == "completed"
    # The way to change it: a new document, with a plan of its own.
    schema = thaw(doc.input_schema)
    schema["required"].append("y")
    changed = doc.model_copy(update={"input_schema": schema})
    assert eng.compile(changed) is not plan
    with pytest.raises(InputValidationError, match="'y' is a required property"):
        eng.run(changed, {"x": 1})
    assert eng.run(doc, {"x": 1}).status == "completed"


def test_a_document_made_without_validation_is_not_cached_so_a_change_to_it_is_seen() -> None:
    # model_construct skips validation, so such a document may hold plain dicts; its plan is never cached.
    valid = WorkflowBuilder("w").build()
    fields = {**thaw(valid.model_dump()), "nodes": valid.nodes, "routes": valid.routes, "outputs": valid.outputs}
    g = WorkflowBuilder("w")
    g.use("echo", id="t", input=[{"target": "value", "path": input_path("x")}])
    fields["nodes"] = g.build().nodes
    doc = Workflow.model_construct(**{**fields, "input_schema": {"type": "object", "required": []}})
    eng: Engine = engine()
    assert eng.compile(doc) is not eng.compile(doc)
    assert eng.run(doc, {}).status == "completed"
    doc.input_schema["required"].append("x")
    with pytest.raises(InputValidationError, match="'x' is a required property"):
        eng.run(doc, {})
