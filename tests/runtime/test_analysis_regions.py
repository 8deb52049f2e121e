"""Control regions and the structural diagnostics derived from them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime import Workflow, analyze
from runtime._analysis import CODES
from runtime.errors import UnknownNodeError, UnreachableNodeError, WorkflowValidationError
from tests.runtime.analysis_docs import chain, foreach, route, task, workflow


def codes(analysis: object) -> list[str]:
    return [d.code for d in analysis.diagnostics]  # type: ignore[attr-defined]


def nested() -> Workflow:
    return workflow(
        [task("a"), foreach("customers", "input.customers", "customer"),
         foreach("orders", "context.foreach.customers.item.orders", "order"),
         task("work"), task("retry"), task("after")],
        [route("a", "ok", "customers"), route("customers", "loop", "orders"), route("orders", "loop", "work"),
         route("work", "ok", "orders"), route("work", "again", "retry"), route("retry", "ok", "work"),
         route("orders", "done", "customers"), route("customers", "done", "after")],
    )


def test_legal_nested_cycles_keep_owner_stack() -> None:
    analysis = analyze(nested())
    assert analysis.ok, analysis.diagnostics
    assert analysis.control_region("a") == ()
    assert analysis.control_region("customers") == ()
    assert analysis.control_region("orders") == ("customers",)
    # the retry cycle work -> retry -> work stays inside both bodies
    assert analysis.control_region("work") == ("customers", "orders")
    assert analysis.control_region("retry") == ("customers", "orders")
    assert analysis.control_region("after") == ()
    assert analysis.reachable == {"a", "customers", "orders", "work", "retry", "after"}


def test_plain_cycle_at_top_level_is_legal() -> None:
    analysis = analyze(workflow([task("a"), task("b")], [route("a", "ok", "b"), route("b", "again", "a")]))
    assert analysis.ok
    assert analysis.control_region("b") == ()


def test_unreachable_node_is_an_error_and_has_no_region() -> None:
    analysis = analyze(workflow([task("a"), task("b"), task("lost")], chain("a", "b")))
    assert codes(analysis) == ["node.unreachable"]
    assert analysis.errors[0].node_id == "lost"
    assert "lost" not in analysis.reachable
    with pytest.raises(UnreachableNodeError, match="not reachable"):
        analysis.control_region("lost")
    with pytest.raises(UnknownNodeError):
        analysis.control_region("nope")


def test_route_from_body_to_done_target_escapes() -> None:
    analysis = analyze(workflow(
        [foreach("f", "input.xs"), task("body"), task("after")],
        [route("f", "loop", "body"), route("body", "ok", "after"), route("f", "done", "after")],
    ))
    assert codes(analysis) == ["region.escape"]
    diagnostic = analysis.errors[0]
    assert (diagnostic.node_id, diagnostic.field) == ("body", "routes.ok")
    assert "leaves the body of foreach 'f'" in diagnostic.message
    assert "back to foreach 'f'" in diagnostic.hint
    # the node after the loop keeps the outside stack
    assert analysis.control_region("after") == ()


def test_back_edge_to_outer_foreach_escapes() -> None:
    analysis = analyze(workflow(
        [foreach("f", "input.xs"), foreach("g", "input.ys"), task("w")],
        [route("f", "loop", "g"), route("g", "loop", "w"), route("w", "ok", "f"), route("g", "done", "f")],
    ))
    assert codes(analysis) == ["region.escape"]
    assert analysis.errors[0].node_id == "w"
    assert "innermost" in analysis.errors[0].message


def test_node_shared_by_two_bodies_is_ambiguous() -> None:
    analysis = analyze(workflow(
        [foreach("f", "input.xs"), foreach("g", "input.ys"), task("shared"), task("end")],
        [route("f", "loop", "shared"), route("shared", "ok", "f"), route("f", "done", "g"),
         route("g", "loop", "shared"), route("g", "done", "end")],
    ))
    assert "region.ambiguous" in codes(analysis)
    ambiguous = [d for d in analysis.errors if d.code == "region.ambiguous"]
    assert [d.node_id for d in ambiguous] == ["shared"]
    # context that is active however the node is reached: none
    assert analysis.control_region("shared") == ()


def test_entering_a_body_from_outside_is_ambiguous_not_escape() -> None:
    analysis = analyze(workflow(
        [task("s"), foreach("f", "input.xs"), task("b1"), task("b2")],
        [route("s", "ok", "f"), route("s", "skip", "b2"), route("f", "loop", "b1"), route("b1", "ok", "b2"),
         route("b2", "ok", "f")],
    ))
    assert codes(analysis) == ["region.ambiguous"]
    assert analysis.errors[0].node_id == "b2"


def test_body_node_without_routes_never_returns() -> None:
    analysis = analyze(workflow([foreach("f", "input.xs"), task("body")], [route("f", "loop", "body")]))
    assert codes(analysis) == ["region.no_return"]
    assert analysis.errors[0].node_id == "body"


def test_branch_label_without_route_in_body_never_returns() -> None:
    branch = {"kind": "branch", "id": "b", "path": "context.loop_item",
              "cases": [{"label": "big", "op": "gt", "value": 10}]}
    analysis = analyze(workflow(
        [foreach("f", "input.xs"), branch, task("t")],
        [route("f", "loop", "b"), route("b", "big", "t"), route("t", "ok", "f")],
    ))
    assert codes(analysis) == ["region.no_return"]
    assert (analysis.errors[0].node_id, analysis.errors[0].field) == ("b", "routes.default")


def test_foreach_without_loop_route_is_reported() -> None:
    analysis = analyze(workflow([foreach("f", "input.xs"), task("t")], [route("f", "done", "t")]))
    assert codes(analysis) == ["region.no_return"]
    assert analysis.errors[0].field == "routes.loop"


def test_subgraph_node_must_route_ok_inside_a_body() -> None:
    sub = {"kind": "subgraph", "id": "s", "workflow": {"id": "child"}}
    analysis = analyze(workflow(
        [foreach("f", "input.xs"), sub], [route("f", "loop", "s"), route("s", "error", "f")],
    ), workflows={"child": workflow([task("c")], [], id="child")})
    assert "region.no_return" in codes(analysis)


def test_unknown_label_is_reported_for_foreach_and_interrupt() -> None:
    pause = {"kind": "interrupt", "id": "ask", "labels": ["approve", "reject"]}
    analysis = analyze(workflow(
        [pause, foreach("f", "input.xs"), task("t")],
        [route("ask", "approve", "f"), route("ask", "maybe", "t"), route("f", "loop", "t"), route("t", "ok", "f"),
         route("f", "finished", "t")],
    ))
    unknown = [(d.node_id, d.field) for d in analysis.errors if d.code == "route.unknown_label"]
    assert unknown == [("ask", "routes.maybe"), ("f", "routes.finished")]
    assert "'approve', 'reject', 'error'" in next(d.hint for d in analysis.errors if d.node_id == "ask")


def test_constructed_documents_report_unknown_targets_and_sources() -> None:
    good = workflow([task("a"), task("b")], chain("a", "b"))
    broken = good.model_copy(update={"routes": [
        *good.routes,
        good.routes[0].model_construct(source="a", label="other", target="ghost"),
        good.routes[0].model_construct(source="nobody", label="ok", target="b"),
    ]})
    analysis = analyze(broken)
    assert sorted(codes(analysis)) == ["route.unknown_source", "route.unknown_target"]


def test_raise_for_errors_lists_every_error() -> None:
    analysis = analyze(workflow([task("a"), task("x"), task("y")], []))
    with pytest.raises(WorkflowValidationError) as caught:
        analysis.raise_for_errors()
    assert [d.node_id for d in caught.value.diagnostics] == ["x", "y"]
    assert caught.value.to_dict()["diagnostics"][0]["code"] == "node.unreachable"
    analyze(workflow([task("a")], [])).raise_for_errors()


def test_raw_mapping_is_validated_first() -> None:
    assert analyze({"id": "w", "nodes": [{"kind": "task", "id": "a", "task": "t"}]}).ok
    with pytest.raises(WorkflowValidationError) as caught:
        analyze({"id": "w", "nodes": [{"kind": "nope", "id": "a"}]})
    assert caught.value.diagnostics[0].code == "document.invalid"


def test_empty_workflow_has_no_start() -> None:
    assert codes(analyze(workflow([], []))) == ["workflow.no_start"]


def test_every_node_kind_may_route_error() -> None:
    branch = {"kind": "branch", "id": "b", "path": "input.x", "cases": [{"label": "yes", "op": "truthy"}]}
    pause = {"kind": "interrupt", "id": "ask"}
    analysis = analyze(workflow(
        [branch, foreach("f", "input.xs"), task("t"), pause, task("handler")],
        [route("b", "yes", "f"), route("b", "default", "f"), route("b", "error", "handler"),
         route("f", "loop", "t"), route("t", "ok", "f"), route("f", "error", "handler"), route("f", "done", "ask"),
         route("ask", "error", "handler")],
    ))
    assert analysis.ok, analysis.diagnostics


node_kinds = st.sampled_from(["task", "foreach", "branch"])
labels = st.sampled_from(["ok", "loop", "done", "default", "again", "error"])


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_arbitrary_graphs_never_crash_and_regions_are_sane(data: st.DataObject) -> None:
    """Any structurally valid graph, however tangled: analysis finishes and its answers are consistent."""
    count = data.draw(st.integers(1, 8))
    kinds = data.draw(st.lists(node_kinds, min_size=count, max_size=count))
    nodes = []
    for i, kind in enumerate(kinds):
        if kind == "task":
            nodes.append(task(f"n{i}"))
        elif kind == "foreach":
            nodes.append(foreach(f"n{i}", "input.xs", data.draw(st.sampled_from([None, "a", "b"]))))
        else:
            nodes.append({"kind": "branch", "id": f"n{i}", "path": "input.x", "cases": [{"label": "again"}]})
    edges = data.draw(st.lists(st.tuples(st.integers(0, count - 1), labels, st.integers(0, count - 1)),
                               max_size=count * 3, unique_by=lambda e: (e[0], e[1])))
    doc = workflow(nodes, [route(f"n{a}", label, f"n{b}") for a, label, b in edges])
    analysis = analyze(doc)
    foreach_ids = {n["id"] for n in nodes if n["kind"] == "foreach"}
    assert {d.code for d in analysis.diagnostics} <= set(CODES)
    for node_id in analysis.reachable:
        stack = analysis.control_region(node_id)
        assert set(stack) <= foreach_ids and len(set(stack)) == len(stack)
        assert node_id not in stack
        context = analysis.context_schema(node_id)
        assert list(context["properties"]["foreach"]["properties"]) == list(stack)
        analysis.path_options(node_id)
    unreachable = {n["id"] for n in nodes} - analysis.reachable
    assert {d.node_id for d in analysis.diagnostics if d.code == "node.unreachable"} == unreachable
