"""Engine basics: tasks, output bindings and their modes, branches, validation up front, hooks and results."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from runtime import Engine, RunState, WorkflowBuilder
from runtime.checkpoint import InMemoryCheckpointer
from runtime.document import TaskNode
from runtime.engine import EngineOptions
from runtime.errors import InputValidationError, WorkflowValidationError
from runtime.paths import input_path, state_path
from runtime.state import SequentialIds
from runtime.tasks import TaskRegistry
from tests.runtime.engine_helpers import engine, registry


def pipeline() -> Any:
    g = WorkflowBuilder("pipeline", input_schema={"type": "object", "properties": {"x": {"type": "integer"}},
                                                  "required": ["x"]},
                        state_schema={"type": "object", "properties": {"doubled": {"type": "integer"},
                                                                       "total": {"type": "integer"}}})
    d = g.use("double", id="d", input=[{"target": "x", "path": input_path("x")}],
              output=[{"source": ".", "target": "doubled"}])
    a = g.use("add", id="a", input=[{"target": "a", "path": state_path("doubled")}, {"target": "b", "value": 1}],
              output=[{"source": ".", "target": "total"}])
    g.set_route(d, "ok", a)
    g.output("total", state_path("total"))
    g.output(".", input_path())
    return g.build()


def test_linear_tasks_commit_results_and_project_outputs() -> None:
    result = engine().run(pipeline(), {"x": 20})
    assert result.status == "completed"
    assert result.error is None
    assert result.state == {"doubled": 40, "total": 41}
    assert result.output == {"x": 20, "total": 41}
    assert result.run_state.status == "completed"
    assert result.interrupts == ()


def test_completed_run_state_holds_no_frames_or_lineages() -> None:
    rs = engine().run(pipeline(), {"x": 1}).run_state
    assert rs.frames == {} and rs.lineages == {} and rs.ready == []
    assert rs.activations == {} and rs.barriers == {} and rs.interrupts == {}
    assert list(rs.scopes) == ["root"]


def test_trace_names_each_node_start_and_completion_in_order() -> None:
    result = engine().run(pipeline(), {"x": 2})
    assert [(e.kind, e.node_id, e.label) for e in result.trace] == [
        ("run_started", "d", None),
        ("node_started", "d", None), ("node_completed", "d", "ok"),
        ("node_started", "a", None), ("node_completed", "a", "ok"),
        ("run_completed", None, None),
    ]
    assert [e.seq for e in result.trace] == list(range(6))
    assert all(e.run_id == result.run_id for e in result.trace)
    completed = [e for e in result.trace if e.kind == "node_completed"]
    assert [e.summary for e in completed] == [4, 5]
    assert all(e.duration is not None and e.duration >= 0 for e in completed)
    assert {e.frame_id for e in result.trace if e.frame_id} == {"frame_0000000000001"}


@pytest.mark.parametrize(("mode", "initial", "value", "expected"), [
    ("set", None, [1], [1]),
    ("set", 5, {"a": 1}, {"a": 1}),
    ("append", None, 3, [3]),
    ("append", [1, 2], [3], [1, 2, [3]]),
    ("extend", None, [3, 4], [3, 4]),
    ("extend", [1], [2, 3], [1, 2, 3]),
    ("merge", None, {"a": 1}, {"a": 1}),
    ("merge", {"a": 1, "b": 2}, {"b": 3, "c": 4}, {"a": 1, "b": 3, "c": 4}),
])
def test_output_binding_modes(mode: str, initial: Any, value: Any, expected: Any) -> None:
    g = WorkflowBuilder("modes", input_schema={"type": "object", "properties": {"value": {}}},
                        state_schema={"type": "object", "properties": {"acc": {} if initial is None
                                                                       else {"default": initial}}})
    g.use("echo", id="e", input=[{"target": "value", "path": input_path("value")}],
          output=[{"source": ".", "target": "acc", "mode": mode}])
    result = engine().run(g.build(), {"value": value})
    assert result.status == "completed", result.error
    assert result.state["acc"] == expected


@pytest.mark.parametrize(("mode", "initial", "value"), [
    ("append", {"not": "a list"}, 1),
    ("extend", [], "not a list"),
    ("extend", 3, [1]),
    ("merge", [], {"a": 1}),
    ("merge", {}, [1]),
])
def test_output_binding_type_clash_fails_the_node(mode: str, initial: Any, value: Any) -> None:
    g = WorkflowBuilder("clash", input_schema={"type": "object", "properties": {"value": {}}},
                        state_schema={"type": "object", "properties": {"acc": {"default": initial}}})
    g.use("echo", id="e", input=[{"target": "value", "path": input_path("value")}],
          output=[{"source": ".", "target": "acc", "mode": mode}])
    result = engine().run(g.build(), {"value": value})
    assert result.status == "failed"
    assert result.error is not None and result.error.details["cause"]["code"] == "binding.invalid"
    assert result.state["acc"] == initial  # nothing half-written


def test_nested_targets_and_sources_copy_on_write() -> None:
    g = WorkflowBuilder("nested", input_schema={"type": "object", "properties": {"value": {}}},
                        state_schema={"type": "object", "properties": {
                            "profile": {"type": "object", "default": {"name": "Ada", "tags": ["x"]}}}})
    e = g.use("echo", id="e", input=[{"target": "value.inner", "path": input_path("value")}],
              output=[{"source": "inner.city", "target": "profile.address.city"},
                      {"source": "inner.missing", "target": "profile.never"},
                      {"source": "inner.tag", "target": "profile.tags", "mode": "append"}])
    g.output("profile", state_path("profile"))
    workflow = g.build()
    eng = engine()
    result = eng.run(workflow, {"value": {"city": "London", "tag": "y"}})
    assert result.state["profile"] == {"name": "Ada", "tags": ["x", "y"], "address": {"city": "London"}}
    # the schema default object itself was not mutated by the run
    assert workflow.state_schema["properties"]["profile"]["default"] == {"name": "Ada", "tags": ["x"]}
    assert e.output[1].target.parts == ("profile", "never")


def test_missing_source_path_leaves_the_task_default_in_place() -> None:
    g = WorkflowBuilder("defaults", input_schema={"type": "object", "properties": {"b": {"type": "integer"}}},
                        state_schema={"type": "object", "properties": {"sum": {"type": "integer"}}})
    g.use("add", id="a", input=[{"target": "a", "value": 5}, {"target": "b", "path": input_path("b")}],
          output=[{"source": ".", "target": "sum"}])
    assert engine().run(g.build(), {}).state == {"sum": 5}
    assert engine().run(g.build(), {"b": 2}).state == {"sum": 7}


def branch_workflow(op: str, value: Any) -> Any:
    g = WorkflowBuilder("branching", input_schema={"type": "object", "properties": {"v": {}}},
                        state_schema={"type": "object", "properties": {"went": {"type": "string"}}})
    b = g.branch("b", input_path("v"), [{"label": "hit", "op": op, "value": value}])
    hit = g.use("echo", id="hit", input=[{"target": "value", "value": "hit"}], output=[{"target": "went"}])
    miss = g.use("echo", id="miss", input=[{"target": "value", "value": "miss"}], output=[{"target": "went"}])
    g.set_route(b, "hit", hit)
    g.set_route(b, "default", miss)
    return g.build()


BRANCH_CASES = [
    ("equals", 3, {"v": 3}, "hit"), ("equals", 3, {"v": 4}, "miss"), ("equals", 1, {"v": True}, "miss"),
    ("equals", {"a": [1]}, {"v": {"a": [1]}}, "hit"), ("equals", None, {}, "hit"),
    ("not_equals", 3, {"v": 4}, "hit"), ("not_equals", 3, {"v": 3}, "miss"),
    ("in", ["a", "b"], {"v": "b"}, "hit"), ("in", ["a", "b"], {"v": "c"}, "miss"), ("in", "abc", {"v": "bc"}, "hit"),
    ("exists", None, {"v": 0}, "hit"), ("exists", None, {}, "miss"), ("exists", None, {"v": None}, "miss"),
    ("truthy", None, {"v": [1]}, "hit"), ("truthy", None, {"v": []}, "miss"), ("truthy", None, {}, "miss"),
    ("gt", 5, {"v": 6}, "hit"), ("gt", 5, {"v": 5}, "miss"), ("gt", 5, {"v": "6"}, "miss"),
    ("gte", 5, {"v": 5}, "hit"), ("gte", 5, {"v": 4.9}, "miss"),
    ("lt", 5, {"v": 4}, "hit"), ("lt", 5, {"v": 5}, "miss"), ("lt", 5, {}, "miss"),
    ("lte", 5, {"v": 5.0}, "hit"), ("lte", "m", {"v": "a"}, "hit"), ("lte", 5, {"v": True}, "miss"),
]


@pytest.mark.parametrize(("op", "case_value", "run_input", "expected"), BRANCH_CASES)
def test_branch_operators(op: str, case_value: Any, run_input: dict[str, Any], expected: str) -> None:
    result = engine().run(branch_workflow(op, case_value), run_input)
    assert result.status == "completed", result.error
    assert result.state["went"] == expected


def test_branch_takes_the_first_matching_case_and_emits_its_label() -> None:
    g = WorkflowBuilder("first", input_schema={"type": "object", "properties": {"v": {"type": "integer"}}},
                        state_schema={"type": "object", "properties": {"went": {"type": "string"}}})
    b = g.branch("b", input_path("v"), [{"label": "big", "op": "gt", "value": 10},
                                        {"label": "positive", "op": "gt", "value": 0},
                                        {"label": "ten", "op": "equals", "value": 10}], default_label="other")
    for label in ("big", "positive", "ten", "other"):
        node = g.use("echo", id=f"to_{label}", input=[{"target": "value", "value": label}],
                     output=[{"target": "went"}])
        g.set_route(b, label, node)
    workflow = g.build()
    assert [engine().run(workflow, {"v": v}).state["went"] for v in (11, 10, 0)] == ["big", "positive", "other"]
    trace = engine().run(workflow, {"v": 11}).trace
    assert [(e.kind, e.label) for e in trace if e.node_id == "b"][-1] == ("node_completed", "big")


def test_task_route_label_chooses_the_next_node() -> None:
    g = WorkflowBuilder("route", input_schema={"type": "object", "properties": {"x": {"type": "integer"}}},
                        state_schema={"type": "object", "properties": {"went": {"type": "string"}}})
    s = g.use("size", id="s", input=[{"target": "x", "path": input_path("x")}])
    small = g.use("echo", id="small", input=[{"target": "value", "value": "small"}], output=[{"target": "went"}])
    big = g.use("echo", id="big", input=[{"target": "value", "value": "big"}], output=[{"target": "went"}])
    g.set_route(s, "small", small)
    g.set_route(s, "big", big)
    workflow = g.build()
    assert engine().run(workflow, {"x": 3}).state == {"went": "small"}
    assert engine().run(workflow, {"x": 30}).state == {"went": "big"}


def test_invalid_input_is_refused_before_anything_runs() -> None:
    cp = InMemoryCheckpointer()
    with pytest.raises(InputValidationError) as caught:
        engine(checkpointer=cp).run(pipeline(), {"x": "twenty"})
    assert caught.value.details["errors"][0]["field"] == "x"
    assert cp.saves == 0
    with pytest.raises(InputValidationError):
        engine(checkpointer=cp).run(pipeline(), {})
    with pytest.raises(InputValidationError):
        engine(checkpointer=cp).run(pipeline(), [1, 2])
    assert cp.saves == 0


def test_input_defaults_are_filled_in() -> None:
    g = WorkflowBuilder("d", input_schema={"type": "object", "properties": {"x": {"type": "integer", "default": 4}}},
                        state_schema={"type": "object", "properties": {"y": {"type": "integer"}}})
    g.use("double", id="d", input=[{"target": "x", "path": input_path("x")}], output=[{"target": "y"}])
    result = engine().run(g.build())
    assert result.state == {"y": 8}
    assert result.run_state.root_scope.input == {"x": 4}


def test_invalid_workflow_is_refused_with_the_analyzers_diagnostics() -> None:
    g = WorkflowBuilder("broken")
    g.use("no_such_task", id="n")
    cp = InMemoryCheckpointer()
    with pytest.raises(WorkflowValidationError) as caught:
        engine(checkpointer=cp).run(g.build(), {})
    assert caught.value.diagnostics
    assert any(d.node_id == "n" for d in caught.value.diagnostics)
    assert cp.saves == 0


def test_workflow_given_as_json_document_runs() -> None:
    result = engine().run(pipeline().model_dump(mode="json"), {"x": 1})
    assert result.output["total"] == 3


def test_checkpointer_gets_the_state_at_start_and_after_every_superstep() -> None:
    seen: list[tuple[int, list[str]]] = []
    cp = InMemoryCheckpointer()
    result = engine(checkpointer=cp, on_superstep=lambda rs, events: seen.append(
        (rs.step, [e.kind for e in events]))).run(pipeline(), {"x": 1})
    assert cp.saves == result.run_state.step + 1 == 3
    assert seen == [(0, ["run_started"]), (1, ["node_started", "node_completed"]),
                    (2, ["node_started", "node_completed", "run_completed"])]
    assert [e.identity() for e in cp.load_events(result.run_id)] == [e.identity() for e in result.trace]


def test_should_cancel_stops_before_the_next_superstep() -> None:
    asked: list[str] = []

    def should_cancel(run_id: str) -> bool:
        asked.append(run_id)
        return len(asked) > 1

    cp = InMemoryCheckpointer()
    result = engine(checkpointer=cp, should_cancel=should_cancel).run(pipeline(), {"x": 1}, run_id="run-42")
    assert result.status == "cancelled"
    assert asked == ["run-42", "run-42"]
    assert result.state == {"doubled": 2}  # the first superstep ran, the second never started
    assert result.trace[-1].kind == "run_cancelled"
    saved = cp.load("run-42")
    assert saved.status == "cancelled" and saved.ready == [saved.root_scope.root_frame_id]


def test_caller_chosen_run_id_names_state_and_events() -> None:
    result = engine().run(pipeline(), {"x": 1}, run_id="42")
    assert result.run_id == "42" == result.run_state.run_id
    assert {e.run_id for e in result.trace} == {"42"}


def test_save_failure_propagates_to_the_caller() -> None:
    class LostLease(Exception):
        pass

    class Failing(InMemoryCheckpointer):
        def save(self, run_state: RunState, events: Any = ()) -> None:
            if run_state.step == 1:
                raise LostLease("lease lost")
            super().save(run_state, events)

    with pytest.raises(LostLease):
        engine(checkpointer=Failing()).run(pipeline(), {"x": 1})


def test_result_to_dict_is_json_compatible() -> None:
    import json

    data = engine().run(pipeline(), {"x": 1}).to_dict(trace=True)
    assert json.loads(json.dumps(data)) == data
    assert data["status"] == "completed" and data["output"]["total"] == 3
    assert data["trace"][0]["kind"] == "run_started"


def test_empty_workflow_is_refused() -> None:
    with pytest.raises(WorkflowValidationError) as caught:
        Engine(TaskRegistry(), EngineOptions(ids=SequentialIds())).run(WorkflowBuilder("empty").build(), {})
    assert [d.code for d in caught.value.diagnostics] == ["workflow.no_start"]


def test_engine_compiles_each_document_once() -> None:
    eng = engine()
    workflow = pipeline()
    assert eng.compile(workflow) is eng.compile(workflow)
    eng.run(workflow, {"x": 1})
    assert eng.compile(workflow) is eng.compile(workflow)


def test_a_compiled_document_cannot_change_under_its_cached_plan() -> None:
    # The plan is cached per document object: were the document changed in place after it ran, the next
    # run would use the stale plan. Documents are frozen; a changed one is a new object with a plan of its own.
    eng = engine()
    workflow = pipeline()
    assert eng.run(workflow, {"x": 1}).output["total"] == 3
    add = workflow.node("a")
    assert isinstance(add, TaskNode)
    with pytest.raises(ValidationError, match="frozen"):
        add.input[1].value = 10
    with pytest.raises(ValidationError, match="frozen"):
        add.task = "double"
    with pytest.raises(ValidationError, match="frozen"):
        workflow.nodes = ()
    # Its lists are tuples all the way down: nothing can be appended, removed or replaced in place.
    with pytest.raises(AttributeError):
        workflow.nodes.append(add)  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        add.input.pop()  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        workflow.routes[0] = workflow.routes[0]  # type: ignore[index]
    # A list handed to model_copy is held as a tuple too, so changing that list afterwards changes nothing.
    nodes = [workflow.node("d"), add.model_copy(update={
        "input": [add.input[0], add.input[1].model_copy(update={"value": 10})]})]
    changed = workflow.model_copy(update={"nodes": nodes})
    assert isinstance(changed.nodes, tuple) and isinstance(changed.node("a").input, tuple)  # type: ignore[union-attr]
    assert eng.run(changed, {"x": 1}).output["total"] == 12
    nodes.pop()
    assert eng.run(changed, {"x": 1}).output["total"] == 12
    assert eng.run(workflow, {"x": 1}).output["total"] == 3


def test_default_registry_is_used_when_none_is_given() -> None:
    assert Engine().registry is not None
    assert "double" in registry()


def test_check_run_input_applies_the_same_checks_as_run() -> None:
    from runtime.inspect import check_run_input

    g = WorkflowBuilder("d", input_schema={"type": "object", "properties": {
        "x": {"type": "integer", "default": 4}, "name": {"type": "string"}}, "required": ["name"]})
    g.use("echo", id="e")
    workflow = g.build()
    assert check_run_input(workflow, {"name": "n"}) == {"name": "n", "x": 4}
    assert check_run_input(workflow.model_dump(mode="json"), {"name": "n", "x": 1}) == {"name": "n", "x": 1}
    with pytest.raises(InputValidationError) as caught:
        check_run_input(workflow, {"x": "no"})
    fields = {e["field"] for e in caught.value.details["errors"]}
    assert fields == {"", "x"}  # the missing required field is reported at the root, the bad type at x
