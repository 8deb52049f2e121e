"""Output bindings of nodes with an error route: they read the result or the engine's error payload.

The engine tests at the bottom run the real ``Engine`` with failing tasks and
check that every error payload it commits validates against the analyzer's
``ERROR_PAYLOAD_SCHEMA`` (closed objects, so a new engine field fails here),
and that the state a run leaves behind fits the analyzer's ``state_schema``.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel

from runtime import Engine, analyze
from runtime._analysis._error_payload import ERROR_PAYLOAD_SCHEMA, ERROR_SCHEMA
from runtime.engine import EngineOptions
from runtime.errors import TaskError
from runtime.state import SequentialIds
from runtime.tasks import TaskRegistry
from tests.runtime.analysis_docs import bind, foreach, out, route, shop_registry, subgraph, task, workflow

SHOP = shop_registry()


def found(analysis: Any) -> list[tuple[str, str, str | None, str | None]]:
    return [(d.code, d.severity, d.node_id, d.field) for d in analysis.diagnostics]


def charge_doc(outputs: list[dict[str, str]], *, error_route: bool, **extra: Any) -> Any:
    nodes = [task("c", "charge", input=[bind("order", "input.order"), bind("customer", "input.name")],
                  output=outputs)]
    if not error_route:
        return workflow(nodes, [], **extra)
    return workflow([*nodes, task("handler")], [route("c", "error", "handler")], **extra)


def test_error_field_needs_an_error_route() -> None:
    without = analyze(charge_doc([out("error.message", "problem")], error_route=False), registry=SHOP)
    assert found(without) == [("path.unknown_field", "error", "c", "output.problem")]
    assert "add a route 'c' --error-->" in without.errors[0].hint

    with_route = analyze(charge_doc([out("error.message", "problem")], error_route=True), registry=SHOP)
    assert found(with_route) == []
    # only the error route writes it: typed by the payload alone (required there, so not nullable)
    assert with_route.state_schema["properties"]["problem"] == {"type": "string", "title": "Message",
                                                               "description": "The error message"}


def test_unknown_on_both_sides_lists_both() -> None:
    analysis = analyze(charge_doc([out("nope", "x")], error_route=True), registry=SHOP)
    assert found(analysis) == [("path.unknown_field", "error", "c", "output.x")]
    message = analysis.errors[0].message
    assert "(it has: total, count)" in message and "nor does the error payload" in message
    # a field below 'error' the payload does not have
    analysis = analyze(charge_doc([out("error.reason", "x")], error_route=True), registry=SHOP)
    assert found(analysis) == [("path.unknown_field", "error", "c", "output.x")]


def test_whole_result_is_result_or_error_payload() -> None:
    analysis = analyze(charge_doc([out(".", "last"), out("total", "total")], error_route=True), registry=SHOP)
    assert analysis.ok, analysis.errors
    last = analysis.state_schema["properties"]["last"]
    assert [option.get("title") for option in last["anyOf"]] == ["Receipt", "Error payload"]
    assert last["anyOf"][1] == ERROR_PAYLOAD_SCHEMA
    # a field only the result has: the error route skips the binding, so no error-derived alternative
    assert analysis.state_schema["properties"]["total"] == {"title": "Total", "type": "number"}
    # readers see both sides
    options = {o.path_str: o.type for o in analysis.path_options("handler")}
    assert options["state.last.total"] == "number | null"
    assert options["state.last.error.message"] == "string | null"


def test_result_field_named_error_is_typed_by_both_sides() -> None:
    class Outcome(BaseModel):
        error: str | None = None
        value: int

    tasks = TaskRegistry()

    @tasks.task
    def attempt() -> Outcome:
        return Outcome(value=1)

    @tasks.task
    def noop() -> None:
        return None

    doc = workflow([task("a", "attempt", output=[out("error", "why")]), task("h", "noop")],
                   [route("a", "error", "h")])
    analysis = analyze(doc, registry=tasks)
    assert analysis.ok
    why = analysis.state_schema["properties"]["why"]["anyOf"]
    assert why == [{"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Error"}, ERROR_SCHEMA]


def test_modes_are_checked_against_the_error_payload() -> None:
    doc = workflow([task("l", "load_customers", output=[out(".", "people", "extend")]), task("h")],
                   [route("l", "error", "h")])
    analysis = analyze(doc, registry=SHOP)
    # the result is a list (fine), the payload an object: extend would fail the run on the error route
    assert found(analysis) == [("binding.type_mismatch", "error", "l", "output.people")]
    assert "on the error route '.' of the error payload is an object" in analysis.errors[0].message
    without_route = workflow([task("l", "load_customers", output=[out(".", "people", "extend")])], [])
    assert analyze(without_route, registry=SHOP).ok
    # merge of the payload is fine: it is an object
    merged = analyze(charge_doc([out(".", "info", "merge")], error_route=True), registry=SHOP)
    assert merged.ok
    assert set(merged.state_schema["properties"]["info"]["properties"]) == {"total", "count", "error"}


def test_declared_state_is_checked_per_side() -> None:
    state = {"type": "object", "properties": {"problem": {"type": "string"}, "receipt": {
        "type": "object", "properties": {"total": {"type": "number"}, "count": {"type": "integer"}},
        "required": ["total", "count"]}}}
    fits = analyze(charge_doc([out("error.message", "problem")], error_route=True, state_schema=state),
                   registry=SHOP)
    assert found(fits) == []
    wrong = analyze(charge_doc([out("error.attempts", "problem")], error_route=True, state_schema=state),
                    registry=SHOP)
    assert found(wrong) == [("binding.type_mismatch", "warning", "c", "output.problem")]
    assert "on the error route, 'error.attempts' of the error payload" in wrong.warnings[0].message
    # the declared type wins for readers; the payload landing in 'receipt' is reported, as a warning
    whole = analyze(charge_doc([out(".", "receipt")], error_route=True, state_schema=state), registry=SHOP)
    assert found(whole) == [("binding.type_mismatch", "warning", "c", "output.receipt")]
    assert "declare the state type to accept the error payload too" in whole.warnings[0].hint
    assert whole.ok
    assert whole.state_schema["properties"]["receipt"] == state["properties"]["receipt"]
    # a result-side mismatch stays an error
    bad = analyze(charge_doc([out("count", "problem")], error_route=True, state_schema=state), registry=SHOP)
    assert found(bad) == [("binding.type_mismatch", "error", "c", "output.problem")]


def test_subgraph_and_interrupt_error_routes() -> None:
    child = workflow([task("x")], [], id="child")
    doc = workflow(
        [subgraph("s", "child", output=[out("error.code", "code")]),
         {"kind": "interrupt", "id": "ask", "output": [{"source": "error.type", "target": "kind"}]},
         task("h")],
        [route("s", "ok", "ask"), route("s", "error", "h"), route("ask", "error", "h")])
    analysis = analyze(doc, registry=SHOP, workflows={"child": child})
    assert analysis.ok, analysis.errors
    assert analysis.error_schema("s") == ERROR_PAYLOAD_SCHEMA
    assert analysis.error_schema("h") is None
    assert analysis.state_schema["properties"]["code"]["anyOf"][0]["type"] == "string"


def test_error_schema_is_a_copy() -> None:
    analysis = analyze(charge_doc([], error_route=True), registry=SHOP)
    schema = analysis.error_schema("c")
    assert schema is not None
    schema["properties"].clear()
    assert analysis.error_schema("c") == ERROR_PAYLOAD_SCHEMA


# ---------------------------------------------------------------------------
# the real engine


def failing_registry() -> TaskRegistry:
    tasks = TaskRegistry()

    @tasks.task
    def fail(kind: str = "task") -> dict[str, int]:
        if kind == "task":
            raise TaskError("refused on purpose", reason="test")
        raise ConnectionError("plain failure")

    @tasks.task
    def double(x: int) -> int:
        return x * 2

    @tasks.task
    def noop() -> None:
        return None

    return tasks


def payloads_of(result: Any) -> list[dict[str, Any]]:
    assert result.status == "completed", result.error
    return [*result.state.get("payloads", []), *result.state.get("items", [])]


def validate_all(payloads: list[dict[str, Any]]) -> None:
    assert payloads
    for payload in payloads:
        jsonschema.validate(payload, ERROR_PAYLOAD_SCHEMA)


@pytest.mark.parametrize("kind", ["task", "plain"])
def test_engine_error_payloads_validate(kind: str) -> None:
    tasks = failing_registry()
    doc = workflow(
        [{"kind": "task", "id": "f", "task": "fail", "input": [{"target": "kind", "value": kind}],
          "retry": {"max_attempts": 2, "backoff_seconds": 0},
          "output": [out(".", "payloads", "append")]},
         task("h", "noop")],
        [route("f", "error", "h")])
    assert analyze(doc, registry=tasks).ok
    payloads = payloads_of(Engine(registry=tasks, options=EngineOptions(ids=SequentialIds())).run(doc, {}))
    validate_all(payloads)
    error = payloads[0]["error"]
    assert error["attempts"] == 2 and error["node_id"] == "f"
    assert ("code" in error) == (kind == "task")


def test_engine_error_payloads_in_foreach_items_and_from_bindings_validate() -> None:
    tasks = failing_registry()
    doc = workflow(
        [foreach("each", "input.values"),
         task("d", "double", input=[bind("x", "context.foreach.each.item")],
              output=[out(".", "items", "append")]),
         task("end", "noop")],
        [route("each", "loop", "d"), route("d", "ok", "each"), route("d", "error", "each"),
         route("each", "done", "end")],
        input_schema={"type": "object", "properties": {"values": {"type": "array"}}, "required": ["values"]})
    analysis = analyze(doc, registry=tasks)
    assert analysis.ok, analysis.errors
    # "two" fails the task's input validation: a binding failure takes the error route too
    result = Engine(registry=tasks, options=EngineOptions(ids=SequentialIds())).run(doc, {"values": [1, "two", 3]})
    assert result.status == "completed", result.error
    items = result.state["items"]
    assert items[0] == 2 and items[2] == 6
    validate_all([items[1]])
    assert items[1]["error"]["index"] == 1 and items[1]["error"]["code"] == "input.invalid"
    assert "activation_id" in items[1]["error"]
    jsonschema.validate(result.state, analysis.state_schema)


def test_engine_subgraph_failure_payload_validates() -> None:
    tasks = failing_registry()
    child = workflow([task("f", "fail")], [], id="child")
    doc = workflow([subgraph("s", "child", output=[out(".", "payloads", "append"), out("error", "error")]),
                    task("h", "noop")], [route("s", "error", "h")])
    analysis = analyze(doc, registry=tasks, workflows={"child": child})
    assert analysis.ok, analysis.errors
    result = Engine(registry=tasks, options=EngineOptions(workflows={"child": child}, ids=SequentialIds())).run(doc, {})
    validate_all(payloads_of(result))
    assert result.state["error"]["type"] == "NodeFailedError" and result.state["error"]["code"] == "node.failed"
    jsonschema.validate(result.state, analysis.state_schema)


def test_state_after_success_and_failure_fits_the_analyzed_state_schema() -> None:
    class Out(BaseModel):
        total: int
        note: str | None = None

    tasks = TaskRegistry()

    @tasks.task
    def maybe(fail: bool) -> Out:
        if fail:
            raise TaskError("no")
        return Out(total=3)

    @tasks.task
    def noop() -> None:
        return None

    doc = workflow([task("m", "maybe", input=[bind("fail", "input.fail")],
                         output=[out(".", "last"), out("total", "total"), out("error", "why"),
                                 out(".", "log", "append")]),
                    task("h", "noop")],
                   [route("m", "error", "h")],
                   input_schema={"type": "object", "properties": {"fail": {"type": "boolean"}},
                                 "required": ["fail"]})
    analysis = analyze(doc, registry=tasks)
    assert analysis.ok, analysis.errors
    engine = Engine(registry=tasks, options=EngineOptions(ids=SequentialIds()))
    for fail in (False, True):
        result = engine.run(doc, {"fail": fail})
        assert result.status == "completed", result.error
        assert ("why" in result.state) == fail and ("total" in result.state) == (not fail)
        jsonschema.validate(result.state, analysis.state_schema)
