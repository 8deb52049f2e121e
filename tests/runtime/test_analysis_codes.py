"""Every diagnostic code in the analyzer's table is produced by some document, with a message and a hint."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from runtime import Workflow, analyze
from runtime._analysis import CODES, Analysis
from runtime.errors import WorkflowValidationError
from tests.runtime.analysis_docs import bind, chain, foreach, route, shop_registry, subgraph, task, workflow

REGISTRY = shop_registry()
TYPED_INPUT = {"type": "object", "properties": {"n": {"type": "integer"}, "xs": {"type": "array"}},
               "required": ["n", "xs"]}


def loop_with(body: list[dict[str, object]], routes: list[dict[str, str]], **extra: object) -> Workflow:
    return workflow([foreach("f", "input.xs", "x"), *body], [route("f", "loop", body[0]["id"]), *routes],  # type: ignore[arg-type]
                    **extra)


def _constructed_route(target: str, source: str = "a") -> Analysis:
    doc = workflow([task("a"), task("b")], chain("a", "b"))
    extra = doc.routes[0].model_construct(source=source, label="other", target=target)
    return analyze(doc.model_copy(update={"routes": [*doc.routes, extra]}))


EXAMPLES: dict[str, Callable[[], Analysis]] = {
    "path.unknown_foreach": lambda: analyze(workflow(
        [task("a", "greet", input=[bind("name", "context.foreach.ghost.item")])], []), registry=REGISTRY),
    "path.inactive_foreach": lambda: analyze(workflow(
        [foreach("f", "input.xs"), task("b"), task("c", "greet", input=[bind("name", "context.foreach.f.item")])],
        [route("f", "loop", "b"), route("b", "ok", "f"), route("f", "done", "c")]), registry=REGISTRY),
    "path.unknown_context_field": lambda: analyze(loop_with(
        [task("b", "greet", input=[bind("name", "context.foreach.f.value")])], [route("b", "ok", "f")]),
        registry=REGISTRY),
    "path.cross_scope": lambda: analyze(
        loop_with([subgraph("s", "child")], [route("s", "ok", "f")]),
        workflows={"child": workflow([task("c", "greet", input=[bind("name", "context.foreach.f.item")])], [],
                                     id="child")}, registry=REGISTRY).subgraph("s"),  # type: ignore[return-value]
    "path.unknown_field": lambda: analyze(workflow(
        [task("a", "count", input=[bind("n", "input.m")])], [], input_schema=TYPED_INPUT), registry=REGISTRY),
    "alias.collision": lambda: analyze(workflow([foreach("f", "input.xs", "foreach"), task("b")],
                                                [route("f", "loop", "b"), route("b", "ok", "f")])),
    "node.unreachable": lambda: analyze(workflow([task("a"), task("b")], [])),
    "region.ambiguous": lambda: analyze(workflow(
        [task("s"), foreach("f", "input.xs"), task("b1"), task("b2")],
        [route("s", "ok", "f"), route("s", "skip", "b2"), route("f", "loop", "b1"), route("b1", "ok", "b2"),
         route("b2", "ok", "f")])),
    "region.escape": lambda: analyze(loop_with([task("b"), task("after")],
                                               [route("b", "ok", "after"), route("f", "done", "after")])),
    "region.no_return": lambda: analyze(loop_with([task("b")], [])),
    "route.unknown_label": lambda: analyze(loop_with([task("b")], [route("b", "ok", "f"), route("f", "end", "b")])),
    "route.unknown_target": lambda: _constructed_route("ghost"),
    "route.unknown_source": lambda: _constructed_route("b", source="ghost"),
    "binding.missing_required": lambda: analyze(workflow([task("a", "count")], []), registry=REGISTRY),
    "binding.type_mismatch": lambda: analyze(workflow(
        [task("a", "count", input=[bind("n", "input.xs")])], [], input_schema=TYPED_INPUT), registry=REGISTRY),
    "subgraph.unknown_workflow": lambda: analyze(workflow([subgraph("s", "ghost")], [])),
    "subgraph.recursion": lambda: analyze(workflow([subgraph("s", "wf")], [])),
    "task.unknown": lambda: analyze(workflow([task("a", "no_such_task")], []), registry=REGISTRY),
    "workflow.no_start": lambda: analyze(workflow([], [])),
    "route.no_exit": lambda: analyze(workflow([task("a"), task("b")], chain("a", "b", "a")), registry=REGISTRY),
    "foreach.batch_interrupt": lambda: analyze(workflow(
        [{**foreach("f", "input.xs"), "batch_size": 10}, {"kind": "interrupt", "id": "ask"}],
        [route("f", "loop", "ask"), route("ask", "ok", "f")])),
    "foreach.batch_state_write": lambda: analyze(workflow(
        [{**foreach("f", "input.xs"), "batch_size": 10}, task("b", output=[{"source": ".", "target": "seen"}])],
        [route("f", "loop", "b"), route("b", "ok", "f")])),
    "state.concurrent_write": lambda: analyze(workflow(
        [{**foreach("f", "input.xs"), "max_concurrency": 4}, task("b", output=[{"source": ".", "target": "seen"}])],
        [route("f", "loop", "b"), route("b", "ok", "f")])),
    "foreach.batch_settings_unused": lambda: analyze(workflow(
        [{**foreach("f", "input.xs"), "max_batches_in_flight": 3}, task("b")],
        [route("f", "loop", "b"), route("b", "ok", "f")])),
    "schema.invalid": lambda: analyze(workflow(
        [task("a")], [], input_schema={"type": "object", "properties": {"n": {"$ref": "#/$defs/missing"}}})),
}
RAISED = {"document.invalid"}


def test_every_code_has_an_example() -> None:
    assert set(EXAMPLES) | RAISED == set(CODES)
    additions = {code for code, info in CODES.items() if info.addition}
    assert additions == {"task.unknown", "route.unknown_source", "workflow.no_start", "schema.invalid",
                         "document.invalid", "route.no_exit", "foreach.batch_interrupt",
                         "foreach.batch_state_write", "foreach.batch_settings_unused", "state.concurrent_write"}


@pytest.mark.parametrize("code", sorted(EXAMPLES))
def test_code_is_reported_with_message_and_hint(code: str) -> None:
    analysis = EXAMPLES[code]()
    matching = [d for d in analysis.diagnostics if d.code == code]
    assert matching, analysis.diagnostics
    for diagnostic in matching:
        assert diagnostic.severity == CODES[code].severity
        assert diagnostic.message and diagnostic.hint
        assert diagnostic.to_dict()["code"] == code


def test_document_invalid_is_raised_for_malformed_mappings() -> None:
    with pytest.raises(WorkflowValidationError) as caught:
        analyze({"id": "w", "routes": [{"source": "a"}]})
    assert {d.code for d in caught.value.diagnostics} == {"document.invalid"}


def test_every_problem_is_reported_in_one_pass() -> None:
    analysis = analyze(workflow(
        [task("a", "count", input=[bind("n", "input.m")]), foreach("f", "input.xs"), task("b", "nope"),
         task("lost")],
        [route("a", "ok", "f"), route("f", "loop", "b"), route("a", "bogus", "b")],
        input_schema=TYPED_INPUT), registry=REGISTRY)
    assert sorted({d.code for d in analysis.errors}) == [
        "node.unreachable", "path.unknown_field", "region.ambiguous", "route.unknown_label", "task.unknown"]


def test_batch_diagnostics_name_the_body_node_and_only_apply_to_batched_foreach_nodes() -> None:
    nodes = [foreach("f", "input.xs"), {"kind": "interrupt", "id": "ask"},
             task("b", output=[{"source": ".", "target": "seen"}])]
    routes = [route("f", "loop", "ask"), route("ask", "ok", "b"), route("b", "ok", "f")]
    assert not [d for d in analyze(workflow(nodes, routes)).diagnostics if d.code.startswith("foreach.batch")]
    batched = analyze(workflow([{**nodes[0], "batch_size": 50}, *nodes[1:]], routes))
    found = {(d.code, d.node_id) for d in batched.diagnostics if d.code.startswith("foreach.batch")}
    assert found == {("foreach.batch_interrupt", "ask"), ("foreach.batch_state_write", "b")}
    assert not batched.ok
