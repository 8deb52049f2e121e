"""``route.no_exit``: a route cycle nothing leaves is an error naming its nodes, in words and in data."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime import Engine, analyze
from runtime.errors import WorkflowValidationError
from tests.runtime.analysis_docs import chain, foreach, route, shop_registry, task, workflow

REGISTRY = shop_registry()
XS = {"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "integer"}}}, "required": ["xs"]}


def no_exit(nodes: list[dict[str, Any]], routes: list[dict[str, str]], **options: Any) -> list[Any]:
    options.setdefault("registry", REGISTRY)
    return [d for d in analyze(workflow(nodes, routes), **options).diagnostics if d.code == "route.no_exit"]


def test_a_closed_cycle_is_reported_once_with_its_nodes() -> None:
    [problem] = no_exit([task("start"), task("a"), task("b"), task("c")], chain("start", "b", "c", "a", "b"))

    assert (problem.severity, problem.node_id, problem.field) == ("error", "a", "routes")
    assert problem.data == {"nodes": ["a", "b", "c"]}  # document order, not discovery order
    assert problem.to_dict()["data"] == {"nodes": ["a", "b", "c"]}
    assert problem.message == (
        "nodes 'a', 'b', 'c' route only to each other: no route leaves the cycle, no label ends it and no "
        "interrupt waits in it, so a run that gets there never finishes (it fails at the step limit)")
    assert "a route from one of these nodes to a node outside the cycle" in problem.hint


def test_a_node_routing_to_itself_is_a_cycle_of_one() -> None:
    [problem] = no_exit([task("a")], [route("a", "ok", "a")])

    assert problem.data == {"nodes": ["a"]}
    assert problem.message.startswith("node 'a' routes only back to itself: no route leaves the cycle")


@pytest.mark.parametrize(("nodes", "routes"), [
    # a route out (the branch's "done" case leads on)
    ([task("a"), {"id": "b", "kind": "branch", "path": "input.xs", "cases": [
        {"op": "exists", "label": "done"}]}, task("end")],
     [*chain("a", "b"), route("b", "default", "a"), route("b", "done", "end")]),
    # an error route out
    ([task("a"), task("b"), task("oops")], [*chain("a", "b", "a"), route("b", "error", "oops")]),
    # a label left unrouted: the run ends when check says "again"
    ([task("a"), task("b", "check", input=[{"target": "value", "value": 1}])], chain("a", "b", "a")),
    # an interrupt waits in every round
    ([task("a"), {"id": "ask", "kind": "interrupt"}], chain("a", "ask", "a")),
    # a foreach body returning to its foreach: "done" has no route, so the items end the loop
    ([foreach("f", "input.xs"), task("b")], [route("f", "loop", "b"), route("b", "ok", "f")]),
])
def test_a_cycle_with_a_way_out_is_not_reported(nodes: list[dict[str, Any]], routes: list[dict[str, str]]) -> None:
    assert no_exit(nodes, routes) == []


def test_a_foreach_whose_done_route_stays_in_the_cycle_is_reported() -> None:
    [problem] = no_exit([foreach("f", "input.xs"), task("b"), task("again")],
                        [route("f", "loop", "b"), route("b", "ok", "f"), route("f", "done", "again"),
                         route("again", "ok", "f")])

    assert problem.data == {"nodes": ["f", "b", "again"]}


def test_a_cycle_inside_a_foreach_body_is_reported() -> None:
    [problem] = no_exit([foreach("f", "input.xs"), task("b1"), task("b2")],
                        [route("f", "loop", "b1"), *chain("b1", "b2", "b1")])

    assert problem.data == {"nodes": ["b1", "b2"]}


def test_unknown_labels_and_unreachable_cycles_are_not_judged() -> None:
    # Without a registry a task may emit labels nobody knows about; an unreachable cycle is node.unreachable.
    assert no_exit([task("a"), task("b")], chain("a", "b", "a"), registry=None) == []
    assert no_exit([task("s"), task("a"), task("b")], chain("a", "b", "a")) == []


def test_the_engine_refuses_to_run_it() -> None:
    with pytest.raises(WorkflowValidationError, match="route.no_exit"):
        Engine(REGISTRY).run(workflow([task("a"), task("b")], chain("a", "b", "a")), {})


@st.composite
def graphs(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    size = draw(st.integers(1, 7))
    ids = [f"n{i}" for i in range(size)]
    kinds = draw(st.lists(st.sampled_from(["noop", "check", "interrupt"]), min_size=size, max_size=size))
    nodes = [{"id": i, "kind": "interrupt"} if k == "interrupt" else
             task(i, k, input=[{"target": "value", "value": 1}] if k == "check" else None)
             for i, k in zip(ids, kinds, strict=True)]
    routes = []
    for node_id, kind in zip(ids, kinds, strict=True):
        for label in ("ok", "again") if kind == "check" else ("ok",):
            if draw(st.booleans()):
                routes.append(route(node_id, label, draw(st.sampled_from(ids))))
    return nodes, routes


@settings(max_examples=200, deadline=None)
@given(graphs())
def test_reported_when_and_only_when_a_reachable_node_can_never_reach_an_end(
        graph: tuple[list[dict[str, Any]], list[dict[str, str]]]) -> None:
    nodes, routes = graph
    labels = {n["id"]: ("ok", "again") if n.get("task") == "check" else ("ok",) for n in nodes}
    targets: dict[str, dict[str, str]] = {}
    for r in routes:
        targets.setdefault(r["source"], {}).setdefault(r["label"], r["target"])
    ends = {n["id"] for n in nodes if n["kind"] == "interrupt" or set(labels[n["id"]]) - set(targets.get(n["id"], {}))}

    def reach(start: str) -> set[str]:
        seen, todo = {start}, [start]
        while todo:
            for nxt in targets.get(todo.pop(), {}).values():
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    stuck = {n for n in reach(nodes[0]["id"]) if not reach(n) & ends}
    reported = {n for d in no_exit(nodes, routes) for n in d.data["nodes"]}
    # The cycles are reported, not the nodes leading into them: every stuck node runs into a reported one.
    assert reported <= stuck
    assert all(reach(n) & reported for n in stuck)
