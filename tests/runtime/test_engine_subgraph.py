"""Subgraphs: child scopes, input validation, outputs as the node's result, failures and bounded recursion."""

from __future__ import annotations

from typing import Any

import pytest

from runtime import Engine, Workflow, WorkflowBuilder
from runtime.document import WorkflowRef
from runtime.engine import EngineOptions
from runtime.paths import input_path, state_path
from runtime.state import SequentialIds
from runtime.tasks import TaskRegistry
from tests.runtime.engine_helpers import ANY_LIST, ITEMS, engine, registry


def child() -> Workflow:
    g = WorkflowBuilder("child", input_schema={"type": "object", "properties": {"x": {"type": "integer"}},
                                               "required": ["x"]},
                        state_schema={"type": "object", "properties": {"y": {"type": "integer"},
                                                                       "calls": {"type": "integer", "default": 7}}})
    d = g.use("double", id="d", input=[{"target": "x", "path": input_path("x")}], output=[{"target": "y"}])
    g.set_start(d)
    g.output("y", state_path("y"))
    g.output("calls", state_path("calls"))
    return g.build()


def caller(*, error_route: bool = False, value: Any = None) -> Workflow:
    g = WorkflowBuilder("caller", input_schema={"type": "object", "properties": {"n": {}}},
                        state_schema={"type": "object", "properties": {"result": {}, "y": {}}})
    binding = {"target": "x", "value": value} if value is not None else {"target": "x", "path": input_path("n")}
    call = g.subgraph("child", id="call", input=[binding],
                      output=[{"source": ".", "target": "result"}, {"source": "y", "target": "y"}])
    if error_route:
        handled = g.use("echo", id="handled", input=[{"target": "value", "value": "handled"}])
        g.set_route(call, "error", handled)
    g.output("result", state_path("result"))
    return g.build()


def test_child_outputs_are_the_subgraph_nodes_result() -> None:
    result = engine(workflows={"child": child()}).run(caller(), {"n": 4})
    assert result.status == "completed", result.error
    assert result.output == {"result": {"y": 8, "calls": 7}}
    assert result.state["y"] == 8
    assert "calls" not in result.state  # child state stays in the child scope


def test_trace_shows_the_scope_opening_and_closing_around_the_child() -> None:
    result = engine(workflows={"child": child()}).run(caller(), {"n": 1})
    steps = [(e.kind, e.node_id, e.scope_id == "root") for e in result.trace]
    assert steps == [
        ("run_started", "call", True),
        ("node_started", "call", True),
        ("scope_opened", "d", False),
        ("node_started", "d", False),
        ("node_completed", "d", False),
        ("scope_closed", "d", False),
        ("node_completed", "call", True),
        ("run_completed", None, True),
    ]
    opened = result.trace[2]
    assert opened.summary == {"workflow": "child", "caller_node_id": "call", "input": {"x": 1}}
    assert result.trace[-2].label == "ok"


def test_child_input_is_validated_against_the_child_schema() -> None:
    result = engine(workflows={"child": child()}).run(caller(), {"n": "four"})
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.details["node_id"] == "call"
    assert result.error.details["cause"]["code"] == "input.invalid"
    assert result.error.details["cause"]["errors"][0]["field"] == "x"


def broken_child() -> Workflow:
    broken = WorkflowBuilder("child", input_schema={"type": "object", "properties": {"x": {"type": "integer"}}})
    broken.use("boom", id="explode", input=[{"target": "message", "value": "inner trouble"}])
    broken.output("y", input_path("x"))
    return broken.build()


def test_child_failure_fails_the_subgraph_node_naming_the_inner_node() -> None:
    result = engine(workflows={"child": broken_child()}).run(caller(), {"n": 1})
    assert result.status == "failed"
    details = result.error.details  # type: ignore[union-attr]
    assert details["node_id"] == "explode" and details["scope_id"] != "root"
    assert details["via"] == ["call"]
    assert details["cause"] == {"type": "RuntimeError", "message": "inner trouble"}
    assert "inside subgraph 'call'" in result.error.message  # type: ignore[union-attr]
    rs = result.run_state
    # Nothing catches it: the child scope is kept (a redrive runs only the failed inner step), its caller
    # waiting on it, the inner frame failed.
    child_scope = next(s for s in rs.scopes.values() if s.scope_id != "root")
    frames = {f.node_id: f for f in rs.frames.values()}
    assert frames["call"].status == "waiting" and frames["call"].waiting_for == child_scope.scope_id
    assert frames["explode"].status == "failed" and frames["explode"].scope_id == child_scope.scope_id
    assert [(e.kind, e.node_id) for e in result.trace if e.kind in ("node_failed", "scope_closed")] == [
        ("node_failed", "explode"), ("node_failed", "call")]


def test_child_failure_takes_the_callers_error_route() -> None:
    result = engine(workflows={"child": broken_child()}).run(caller(error_route=True), {"n": 1})
    assert result.status == "completed", result.error
    error = result.state["result"]["error"]
    assert error["node_id"] == "call" and error["code"] == "node.failed"
    assert "explode" in error["message"]


def test_unknown_child_is_refused_up_front() -> None:
    from runtime.errors import WorkflowValidationError

    with pytest.raises(WorkflowValidationError):
        engine(workflows={}).run(caller(), {"n": 1})


def recursive(limit_hit_route: bool) -> Workflow:
    g = WorkflowBuilder("again", input_schema={"type": "object", "properties": {"depth": {"type": "integer"}}},
                        state_schema={"type": "object", "properties": {"deepest": {}}})
    inc = g.use("add", id="inc", input=[{"target": "a", "path": input_path("depth")}, {"target": "b", "value": 1}],
                output=[{"target": "deepest"}])
    nest = g.subgraph(WorkflowRef(id="again"), id="nest", input=[{"target": "depth", "path": state_path("deepest")}],
                      output=[{"source": "deepest", "target": "deepest"}])
    g.set_route(inc, "ok", nest)
    if limit_hit_route:
        stop = g.use("echo", id="stop")
        g.set_route(nest, "error", stop)
    g.output("deepest", state_path("deepest"))
    return g.build()


def _runtime_only(eng: Engine, *workflows: Workflow) -> None:
    """Compile without the analyzer, which (rightly) rejects a static subgraph cycle."""
    from runtime._compiled import compile_workflow

    for workflow in workflows:
        eng._compiled.put(workflow, compile_workflow(workflow, eng.registry))


def test_runtime_depth_limit_stops_runaway_recursion() -> None:
    workflow = recursive(limit_hit_route=False)
    eng = Engine(registry(), EngineOptions(workflows={"again": workflow}, ids=SequentialIds(), max_depth=5))
    _runtime_only(eng, workflow)
    result = eng.run(workflow, {"depth": 0})
    assert result.status == "failed"
    details = result.error.details  # type: ignore[union-attr]
    assert details["cause"]["code"] == "subgraph.depth"
    assert details["cause"]["limit"] == 5
    assert details["via"] == ["nest"] * 5


def test_depth_limit_error_can_be_routed_and_unwinds() -> None:
    workflow = recursive(limit_hit_route=True)
    eng = Engine(registry(), EngineOptions(workflows={"again": workflow}, ids=SequentialIds(), max_depth=3))
    _runtime_only(eng, workflow)
    result = eng.run(workflow, {"depth": 0})
    assert result.status == "completed", result.error
    assert result.output == {"deepest": 4}
    assert list(result.run_state.scopes) == ["root"]


def test_subgraph_inside_foreach_with_concurrency_keeps_scopes_apart() -> None:
    g = WorkflowBuilder("fan", input_schema={"type": "object", "properties": {"xs": ITEMS}},
                        state_schema={"type": "object", "properties": {"ys": ANY_LIST}})
    each = g.foreach("each", input_path("xs"), max_concurrency=3)
    call = g.subgraph("child", id="call", input=[{"target": "x", "path": each.item}],
                      output=[{"source": "y", "target": "ys", "mode": "append"}])
    g.chain(each, "loop", call, "ok", each)
    g.output("ys", state_path("ys"))
    scopes_seen: set[str] = set()
    eng = engine(workflows={"child": child()},
                 on_superstep=lambda rs, _: scopes_seen.update(s for s in rs.scopes if s != "root"))
    result = eng.run(g.build(), {"xs": [1, 2, 3, 4]})
    assert result.output == {"ys": [2, 4, 6, 8]}
    assert len(scopes_seen) == 4


def test_resolver_function_and_registry_merging() -> None:
    reg = TaskRegistry()

    @reg.task
    def double(x: int) -> int:
        return 2 * x

    @reg.task
    def echo(value: Any = None) -> Any:
        return value

    asked: list[str] = []

    def resolve(ref: WorkflowRef) -> Workflow:
        asked.append(ref.id)
        return child()

    result = Engine(registry=reg, options=EngineOptions(workflows=resolve)).run(caller(), {"n": 2})
    assert result.output["result"]["y"] == 4
    assert "child" in asked
