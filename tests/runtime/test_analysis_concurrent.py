"""``state.concurrent_write``: state written once per item of a loop whose items run at the same time."""

from __future__ import annotations

from typing import Any

import pytest

from runtime import Workflow, analyze
from runtime._analysis import Analysis
from tests.runtime.analysis_docs import foreach, out, route, subgraph, task, workflow

STATE = {"type": "object", "properties": {"orders": {"type": "array"}, "lines": {"type": "array"},
                                          "by_customer": {"type": "array"}}}


def nested(*, outer_concurrency: int = 4, inner_results: str | None = "lines", fetch_mode: str = "set") -> Workflow:
    """customers (concurrency ``outer_concurrency``) > fetch writes state.orders > orders > price; after: report."""
    outer = {**foreach("customers", "input.customers"), "name": "Customers", "max_concurrency": outer_concurrency,
             "results": "by_customer"}
    inner = {**foreach("orders", "state.orders"), "name": "Orders"}
    if inner_results:
        inner["results"] = inner_results
    return workflow(
        [outer, task("fetch", output=[out(".", "orders", fetch_mode)]), inner, task("price"), task("report")],
        [route("customers", "loop", "fetch"), route("fetch", "ok", "orders"), route("orders", "loop", "price"),
         route("price", "ok", "orders"), route("orders", "done", "customers"), route("customers", "done", "report")],
        state_schema=STATE)


def found(analysis: Analysis) -> dict[tuple[str | None, str | None], Any]:
    return {(d.node_id, d.field): d for d in analysis.diagnostics if d.code == "state.concurrent_write"}


def test_inner_results_and_a_set_output_under_a_concurrent_loop_are_warnings_naming_the_loops_and_field() -> None:
    analysis = analyze(nested())
    warnings = found(analysis)
    assert set(warnings) == {("orders", "results"), ("fetch", "output.orders")}
    inner = warnings["orders", "results"]
    assert inner.severity == "warning" and analysis.ok  # a warning: the document still runs
    assert "loop 'Orders' inside loop 'Customers'" in inner.message
    assert "state.lines" in inner.message and "4 items at once" in inner.message
    assert "last to finish wins" in inner.message
    assert "results list" in inner.hint and "append" in inner.hint
    assert inner.data == {"target": "state.lines", "concurrent_foreach": "customers", "inner_foreach": "orders"}
    fetch = warnings["fetch", "output.orders"]
    assert "node 'fetch' in loop 'Customers' sets state.orders" in fetch.message
    assert fetch.data == {"target": "state.orders", "concurrent_foreach": "customers"}


@pytest.mark.parametrize("doc", [
    nested(outer_concurrency=1),  # one item at a time: the loop's items never race
    nested(inner_results=None, fetch_mode="append"),  # append keeps every item's value
], ids=["sequential", "append"])
def test_sequential_loops_and_collecting_writes_are_not_reported(doc: Workflow) -> None:
    assert found(analyze(doc)) == {}


def test_the_outer_loops_own_results_and_writes_outside_the_loop_are_not_reported() -> None:
    doc = workflow(
        [task("setup", output=[out(".", "orders")]),
         {**foreach("f", "input.xs"), "max_concurrency": 8, "results": "lines"}, task("b"),
         task("after", output=[out(".", "orders")])],
        [route("setup", "ok", "f"), route("f", "loop", "b"), route("b", "ok", "f"), route("f", "done", "after")],
        state_schema=STATE)
    assert found(analyze(doc)) == {}


def test_a_concurrent_inner_loop_under_a_sequential_one_names_the_inner_loop() -> None:
    doc = workflow(
        [foreach("outer", "input.xs"), {**foreach("inner", "input.ys"), "max_concurrency": 2},
         task("b", output=[out(".", "lines")])],
        [route("outer", "loop", "inner"), route("inner", "loop", "b"), route("b", "ok", "inner"),
         route("inner", "done", "outer")], state_schema=STATE)
    (warning,) = found(analyze(doc)).values()
    assert warning.node_id == "b" and warning.data["concurrent_foreach"] == "inner"
    assert "node 'b' in loop 'inner' sets state.lines" in warning.message


def test_a_subgraph_calls_own_writes_stay_in_its_scope_but_its_output_into_the_callers_state_is_reported() -> None:
    child = workflow([task("c", output=[out(".", "lines")])], [], id="child", state_schema=STATE)
    parent = workflow(
        [{**foreach("f", "input.xs"), "max_concurrency": 3}, subgraph("s", "child", output=[out(".", "orders")])],
        [route("f", "loop", "s"), route("s", "ok", "f")], state_schema=STATE)
    analysis = analyze(parent, workflows={"child": child})
    assert set(found(analysis)) == {("s", "output.orders")}


def test_the_path_picker_after_the_loop_marks_the_overwritten_field_and_what_is_inside_it() -> None:
    analysis = analyze(nested())
    marked = {o.path_str: o.last_item_wins for o in analysis.path_options("report") if o.last_item_wins}
    assert marked == {"state.orders": "Customers", "state.lines": "Customers"}
    sequential = analyze(nested(outer_concurrency=1))
    assert not [o for o in sequential.path_options("report") if o.last_item_wins]

