"""A foreach's own result list (``ForeachNode.results``): index order, typing, analyzer options, resume."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from runtime import Engine, RunState, Workflow, WorkflowBuilder, analyze
from runtime.checkpoint import InMemoryCheckpointer
from runtime.document import ForeachNode
from runtime.engine import EngineOptions
from runtime.errors import WorkflowValidationError
from runtime.state import SequentialIds
from runtime.tasks import TaskRegistry
from tests.runtime.engine_helpers import XS_INPUT, asking
from tests.runtime.engine_helpers import registry as engine_registry


class Described(BaseModel):
    x: int
    even: bool


def tasks() -> TaskRegistry:
    """The engine tests' tasks (``double``...) and three more for results of a type, failures and sums."""
    registry = engine_registry()

    @registry.task
    def describe(x: int) -> Described:
        return Described(x=x, even=x % 2 == 0)

    @registry.task
    def fragile(x: int) -> int:
        if x < 0:
            raise ValueError(f"negative: {x}")
        return x

    @registry.task
    def total(values: list[int]) -> int:
        return sum(values)

    return registry


def engine(**kwargs: Any) -> Engine:
    return Engine(registry=tasks(), options=EngineOptions(ids=SequentialIds(), **kwargs))


def uneven(concurrency: int) -> Workflow:
    """Even items take three nodes, odd ones two, so with concurrency items arrive out of index order."""
    g = WorkflowBuilder("uneven", input_schema=XS_INPUT)
    each = g.foreach("each", "input.xs", max_concurrency=concurrency, results="described")
    check = g.branch("parity", path=each.item, cases=[{"label": "odd", "op": "in", "value": [1, 3, 5, 7, 9]}])
    first = g.use("double", "first", input=[{"target": "x", "path": each.item}])
    slow = g.use("describe", "slow", input=[{"target": "x", "path": each.item}])
    fast = g.use("describe", "fast", input=[{"target": "x", "path": each.item}])
    g.chain(each, "loop", check, "default", first, "ok", slow, "ok", each)
    g.chain(check, "odd", fast, "ok", each)
    g.output("described", "state.described")
    return g.build()


@pytest.mark.parametrize("concurrency", [1, 3, 10])
def test_results_are_in_index_order_whatever_order_items_arrive_in(concurrency: int) -> None:
    xs = [4, 1, 6, 3, 8, 5, 0, 7, 2, 9]
    arrivals: list[int] = []
    result = engine(on_superstep=lambda rs, events: arrivals.extend(
        e.index for e in events if e.kind == "item_completed")).run(uneven(concurrency), {"xs": xs})
    assert result.status == "completed"
    assert result.output == {"described": [{"x": x, "even": x % 2 == 0} for x in xs]}
    if concurrency > 1:
        assert arrivals != sorted(arrivals)  # the test really exercises out-of-order arrival


def test_an_empty_collection_collects_an_empty_list() -> None:
    assert engine().run(uneven(2), {"xs": []}).output == {"described": []}


def test_results_are_written_at_done_and_readable_after_it() -> None:
    g = WorkflowBuilder("sum", input_schema=XS_INPUT)
    each = g.foreach("each", "input.xs", max_concurrency=2, results="doubled")
    d = g.use("double", "d", input=[{"target": "x", "path": each.item}])
    t = g.use("total", "t", input=[{"target": "values", "path": "state.doubled"}], output=[{"source": ".",
                                                                                          "target": "sum"}])
    g.chain(each, "loop", d, "ok", each, "done", t)
    g.output("sum", "state.sum")
    seen: list[bool] = []
    result = engine(on_superstep=lambda rs, _: seen.append("doubled" in rs.root_scope.state)).run(
        g.build(), {"xs": [1, 2, 3, 4, 5]})
    assert result.output == {"sum": 30}
    assert result.state["doubled"] == [2, 4, 6, 8, 10]
    assert seen.index(True) == len(seen) - 2  # absent until the foreach is done, then written once


def test_an_error_route_back_to_the_foreach_collects_the_error_payload() -> None:
    g = WorkflowBuilder("errors", input_schema=XS_INPUT)
    each = g.foreach("each", "input.xs", results="out")
    f = g.use("fragile", "f", input=[{"target": "x", "path": each.item}])
    g.chain(each, "loop", f, "ok", each)
    g.set_route(f, "error", each)
    g.output("out", "state.out")
    out = engine().run(g.build(), {"xs": [1, -2, 3]}).output["out"]
    assert out[0] == 1 and out[2] == 3
    assert out[1]["error"]["type"] == "ValueError" and out[1]["error"]["index"] == 1


#: Rows of integers: ``{"rows": [[1, 2], [3]]}``.
ROWS_INPUT = {"type": "object", "properties": {"rows": {
    "type": "array", "items": {"type": "array", "items": {"type": "integer"}}}}, "required": ["rows"]}


def nested() -> Workflow:
    g = WorkflowBuilder("nested", input_schema=ROWS_INPUT)
    rows = g.foreach("rows", "input.rows", max_concurrency=2, results="sums")
    cells = g.foreach("cells", rows.item, max_concurrency=3, results="row_doubled")
    d = g.use("double", "d", input=[{"target": "x", "path": cells.item}])
    t = g.use("total", "t", input=[{"target": "values", "path": "state.row_doubled"}])
    g.chain(rows, "loop", cells, "loop", d, "ok", cells, "done", t, "ok", rows)
    g.output("sums", "state.sums")
    return g.build()


def test_nested_foreach_collect_per_outer_item() -> None:
    rows = [[1, 2], [3], [], [4, 5, 6]]
    assert engine().run(nested(), {"rows": rows}).output == {"sums": [6, 6, 0, 30]}


def test_results_survive_resumes_through_json_checkpoints() -> None:
    workflow = asking()
    cp = InMemoryCheckpointer()
    eng = engine(checkpointer=cp)
    result = eng.run(workflow, {"xs": list(range(7))})
    while result.status == "interrupted":
        # answer the highest index first, so results arrive out of order across resumes
        pending = max(result.interrupts, key=lambda i: i.payload["x"])
        state = RunState.from_json(cp.load(result.run_id).to_json())
        result = eng.resume(state, pending.interrupt_id, {"a": pending.payload["x"] * 10}, workflow=workflow)
    assert result.output == {"answers": [{"a": x * 10} for x in range(7)]}


# -- the analyzer ---------------------------------------------------------------


def test_the_analyzer_types_results_from_the_body_and_offers_them_after_done() -> None:
    g = WorkflowBuilder("typed", input_schema=XS_INPUT)
    each = g.foreach("each", "input.xs", results="described")
    d = g.use("describe", "d", input=[{"target": "x", "path": each.item}])
    t = g.use("total", "t", input=[{"target": "values", "path": "input.xs"}])
    g.chain(each, "loop", d, "ok", each, "done", t)
    analysis = analyze(g.build(), registry=tasks())
    assert analysis.ok, analysis.diagnostics
    schema = analysis.state_schema["properties"]["described"]
    assert schema["type"] == "array"
    assert schema["items"]["properties"]["even"]["type"] == "boolean"
    options = {str(o.path): o.schema for o in analysis.path_options("t")}
    assert options["state.described"]["type"] == "array"
    assert "state.described.x" not in options  # paths do not index arrays
    wanted = {str(o.path) for o in analysis.path_options("t", want={"type": "array",
                                                                    "items": {"type": "object"}})}
    assert "state.described" in wanted


def test_results_of_a_branch_and_an_error_route_are_typed_as_their_union() -> None:
    g = WorkflowBuilder("union", input_schema=XS_INPUT)
    each = g.foreach("each", "input.xs", results="out")
    f = g.use("fragile", "f", input=[{"target": "x", "path": each.item}])
    b = g.branch("b", path=each.item, cases=[{"label": "skip", "op": "equals", "value": 0}])
    g.chain(each, "loop", b, "skip", each)
    g.chain(b, "default", f, "ok", each)
    g.set_route(f, "error", each)
    analysis = analyze(g.build(), registry=tasks())
    items = analysis.state_schema["properties"]["out"]["items"]
    kinds = sorted(str(atom.get("type")) for atom in items.get("anyOf", [items]))
    assert kinds == ["integer", "null", "object"]


def test_a_declared_state_field_that_cannot_hold_the_results_is_a_type_mismatch() -> None:
    g = WorkflowBuilder("mismatch", input_schema=XS_INPUT,
                        state_schema={"type": "object", "properties": {"out": {"type": "string"}}})
    each = g.foreach("each", "input.xs", results="out")
    d = g.use("double", "d", input=[{"target": "x", "path": each.item}])
    g.chain(each, "loop", d, "ok", each)
    with pytest.raises(WorkflowValidationError) as caught:
        engine().run(g.build(), {"xs": [1]})
    problems = [(d.code, d.node_id, d.field) for d in caught.value.diagnostics]
    assert ("binding.type_mismatch", "each", "results") in problems


def test_results_round_trip_in_the_document_and_stay_out_when_unset() -> None:
    node = ForeachNode.model_validate({"id": "each", "over": "input.xs", "results": 'by."odd key"'})
    dumped = node.model_dump(mode="json", by_alias=True)
    assert dumped["results"] == 'by."odd key"'
    assert ForeachNode.model_validate(dumped) == node
    plain = ForeachNode.model_validate({"id": "each", "over": "input.xs"}).model_dump(mode="json", by_alias=True)
    assert "results" not in plain


def test_an_inner_foreach_routing_back_gives_its_result_list_to_the_outer_one() -> None:
    g = WorkflowBuilder("grid", input_schema=ROWS_INPUT)
    rows = g.foreach("rows", "input.rows", max_concurrency=2, results="grid")
    cells = g.foreach("cells", rows.item, max_concurrency=2, results="row")
    d = g.use("double", "d", input=[{"target": "x", "path": cells.item}])
    g.chain(rows, "loop", cells, "loop", d, "ok", cells, "done", rows)
    g.output("grid", "state.grid")
    workflow = g.build()
    analysis = analyze(workflow, registry=tasks())
    assert analysis.state_schema["properties"]["grid"]["items"]["items"]["type"] == "integer"
    rows_in = [[1, 2], [], [3, 4, 5]]
    assert engine().run(workflow, {"rows": rows_in}).output == {"grid": [[2, 4], [], [6, 8, 10]]}
