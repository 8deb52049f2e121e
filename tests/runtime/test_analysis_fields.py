"""Per-node facts the designer asks the analyzer for: labels, field schemas, result schemas, diagnostics."""

from __future__ import annotations

import pytest

from runtime import analyze
from runtime.errors import UnknownNodeError
from tests.runtime.analysis_docs import bind, chain, foreach, route, shop_registry, task, workflow

REGISTRY = shop_registry()


def doc() -> object:
    ask = {"kind": "interrupt", "id": "ask", "labels": ["approve", "reject"],
           "resume_schema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}
    branch = {"kind": "branch", "id": "b", "path": "input.n", "cases": [{"label": "big", "op": "gt", "value": 3}]}
    child = {"kind": "subgraph", "id": "s", "workflow": {"id": "child"}}
    return workflow(
        [task("c", "check", input=[bind("value", "input.n")]), ask, branch, foreach("f", "input.xs"), child,
         task("mystery", "unknown_task")],
        [*chain("c", "ask"), route("ask", "approve", "b"), route("b", "big", "f"), route("f", "loop", "s"),
         route("s", "ok", "f"), route("f", "done", "mystery"), route("mystery", "weird", "c")],
        input_schema={"type": "object", "properties": {"n": {"type": "integer"}, "xs": {"type": "array"}},
                      "required": ["n", "xs"]},
    )


CHILD = workflow([task("t")], [], id="child", input_schema={
    "type": "object", "properties": {"order": {"type": "object", "properties": {"sku": {"type": "string"}}}}})


def test_labels_per_kind() -> None:
    analysis = analyze(doc(), registry=REGISTRY, workflows={"child": CHILD})
    assert analysis.labels("c") == ("ok", "again", "error")
    # every node takes its error route when it fails (and one exists)
    assert analysis.labels("ask") == ("approve", "reject", "error")
    assert analysis.labels("b") == ("big", "default", "error")
    assert analysis.labels("f") == ("loop", "done", "error")
    assert analysis.labels("s") == ("ok", "error")
    # a task the registry does not know: the usual labels plus those its routes use
    assert analysis.labels("mystery") == ("ok", "error", "weird")
    with pytest.raises(UnknownNodeError):
        analysis.labels("nope")


def test_field_schema() -> None:
    analysis = analyze(doc(), registry=REGISTRY, workflows={"child": CHILD})
    assert analysis.field_schema("c", "input.value") == {"title": "Value", "type": "number"}
    assert analysis.field_schema("c", "input")["required"] == ["value"]
    assert analysis.field_schema("c", "input.nothing") is None
    assert analysis.field_schema("s", "input.order.sku") == {"type": "string"}
    assert analysis.field_schema("ask", "input.anything") == {}
    assert analysis.field_schema("f", "over") == {"type": "array"}
    assert analysis.field_schema("b", "path") == {}
    assert analysis.field_schema("mystery", "input.x") == {}   # unknown task: any
    assert analysis.field_schema("c", "over") is None
    # the field schema drives the path picker directly
    options = analysis.path_options("c", want=analysis.field_schema("c", "input.value"))
    assert [(o.path_str, o.compatibility) for o in options] == [("input.n", "compatible")]


def test_result_schema_and_node_diagnostics() -> None:
    analysis = analyze(doc(), registry=REGISTRY, workflows={"child": CHILD})
    assert analysis.result_schema("ask")["properties"] == {"ok": {"type": "boolean"}}
    assert analysis.result_schema("s") == {"type": "object", "properties": {}, "required": []}
    assert [d.code for d in analysis.node_diagnostics("mystery")] == ["task.unknown"]
    assert analysis.node_diagnostics("c") == ()
