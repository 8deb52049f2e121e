"""Bindings against task and child-workflow schemas, and state inference through output bindings."""

from __future__ import annotations

from runtime import analyze
from tests.runtime.analysis_docs import bind, chain, foreach, out, route, shop_registry, subgraph, task, workflow

REGISTRY = shop_registry()


def found(analysis: object) -> list[tuple[str, str, str | None, str | None]]:
    return [(d.code, d.severity, d.node_id, d.field) for d in analysis.diagnostics]  # type: ignore[attr-defined]


def test_missing_required_task_input() -> None:
    analysis = analyze(workflow([task("c", "charge", input=[bind("customer", "input.name")])], [],
                                input_schema={"type": "object", "properties": {"name": {"type": "string"}},
                                              "required": ["name"]}), registry=REGISTRY)
    # attempt has a default, order does not
    assert found(analysis) == [("binding.missing_required", "error", "c", "input.order")]
    assert "add an input binding with target 'order'" in analysis.errors[0].hint


def test_type_mismatch_error_and_nullable_warning() -> None:
    analysis = analyze(workflow(
        [task("a", "count", input=[bind("n", "input.ratio")]),
         task("b", "greet", input=[bind("name", "input.nickname")]),
         task("c", "add", input=[bind("a", "input.count"), bind("b", "input.ratio")])],
        chain("a", "b", "c"),
        input_schema={"type": "object", "properties": {
            "ratio": {"type": "number"}, "count": {"type": "integer"},
            "nickname": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
            "required": ["ratio", "count", "nickname"]},
    ), registry=REGISTRY)
    assert found(analysis) == [
        ("binding.type_mismatch", "error", "a", "input.n"),
        ("binding.type_mismatch", "warning", "b", "input.name"),
    ]
    assert "'input.ratio' is a number, but task 'count' expects an integer for 'n'" in analysis.errors[0].message
    assert analysis.ok is False


def test_literal_values_are_checked() -> None:
    analysis = analyze(workflow(
        [task("a", "count", input=[{"target": "n", "value": "three"}]),
         task("b", "count", input=[{"target": "n", "value": 3}])], chain("a", "b")), registry=REGISTRY)
    assert found(analysis) == [("binding.type_mismatch", "error", "a", "input.n")]


def test_binding_an_undeclared_task_input_field() -> None:
    analysis = analyze(workflow([task("a", "count", input=[bind("n", "input.x"), bind("m", "input.x")])], []),
                       registry=REGISTRY)
    # task inputs forbid extra fields, so this would fail at run time
    assert found(analysis) == [("path.unknown_field", "error", "a", "input.m")]


def test_unknown_task_and_labels_with_registry() -> None:
    analysis = analyze(workflow(
        [task("a", "nope"), task("b", "check", input=[{"target": "value", "value": 1.5}]), task("c")],
        [route("a", "ok", "b"), route("b", "ok", "c"), route("b", "retry", "a"), route("b", "again", "b"),
         route("c", "error", "a")]), registry=REGISTRY)
    assert found(analysis) == [
        ("task.unknown", "error", "a", "task"),
        ("route.unknown_label", "error", "b", "routes.retry"),
    ]
    assert "'ok', 'again', 'error'" in analysis.errors[1].hint


def test_without_registry_task_checks_are_skipped() -> None:
    analysis = analyze(workflow([task("a", "nope", input=[{"target": "n", "value": 1}])], []))
    assert analysis.ok


def test_task_label_without_route_in_body_never_returns() -> None:
    analysis = analyze(workflow(
        [foreach("f", "input.xs"), task("c", "check", input=[bind("value", "context.loop_index")])],
        [route("f", "loop", "c"), route("c", "ok", "f")]), registry=REGISTRY)
    assert found(analysis) == [("region.no_return", "error", "c", "routes.again")]
    # without an error route, a failure fails the run: no region problem
    assert "error" not in [d.field for d in analysis.diagnostics]


def test_output_bindings_make_state_fields_known() -> None:
    analysis = analyze(workflow(
        [task("load", "load_customers", output=[out(".", "customers"), out(".", "all", "extend")]),
         task("c", "charge", input=[bind("order", "input.order"), bind("customer", "input.who")],
              output=[out("total", "totals", "append"), out(".", "last"), out(".", "summary", "merge"),
                      out("count", "stats.count")]),
         task("g", "greet", input=[bind("name", "state.customers")]),
         task("s", "add", input=[bind("a", "state.last.total"), bind("b", "state.stats.count")])],
        chain("load", "c", "g", "s"),
        input_schema={"type": "object", "properties": {"order": {}, "who": {"type": "string"}},
                      "required": ["order", "who"]},
    ), registry=REGISTRY)
    state = analysis.state_schema["properties"]
    assert state["customers"]["type"] == "array" and state["customers"]["items"]["title"] == "Customer"
    assert state["all"] == state["customers"]                          # extend keeps the array
    assert state["totals"] == {"type": "array", "items": {"title": "Total", "type": "number"}}   # append
    assert state["last"]["title"] == "Receipt"                         # set
    assert set(state["summary"]["properties"]) == {"total", "count"}   # merge
    assert state["stats"]["properties"]["count"]["type"] == "integer"  # nested target
    assert found(analysis) == [("binding.type_mismatch", "error", "g", "input.name")]


def test_declared_state_takes_precedence_and_writes_are_checked() -> None:
    analysis = analyze(workflow(
        [task("c", "charge", input=[bind("order", "input.order"), bind("customer", "input.who")],
              output=[out("total", "total"), out("count", "names", "append"), out(".", "total", "extend"),
                      out("nope", "other")]),
         task("g", "count", input=[bind("n", "state.total")])],
        chain("c", "g"),
        input_schema={"type": "object", "properties": {"order": {}, "who": {"type": "string"}},
                      "required": ["order", "who"]},
        state_schema={"type": "object", "properties": {
            "total": {"type": "integer", "default": 0}, "names": {"type": "array", "items": {"type": "string"}}}},
    ), registry=REGISTRY)
    assert found(analysis) == [
        ("binding.type_mismatch", "error", "c", "output.total"),      # number into declared integer
        ("binding.type_mismatch", "error", "c", "output.names"),      # integer appended to array<string>
        ("binding.type_mismatch", "error", "c", "output.total"),      # extend with an object
        ("path.unknown_field", "error", "c", "output.other"),         # the result has no field 'nope'
    ]
    # readers see the declared type, not the written one
    assert analysis.state_schema["properties"]["total"]["type"] == "integer"


def test_interrupt_result_is_its_resume_schema() -> None:
    ask = {"kind": "interrupt", "id": "ask", "resume_schema": {
        "type": "object", "properties": {"approved": {"type": "boolean"}, "amount": {"type": "integer"}},
        "required": ["approved", "amount"]}, "output": [out("amount", "approved_amount")]}
    analysis = analyze(workflow([ask, task("n", "count", input=[bind("n", "state.approved_amount")])],
                                chain("ask", "n")), registry=REGISTRY)
    assert analysis.ok, analysis.diagnostics
    assert analysis.state_schema["properties"]["approved_amount"] == {"type": "integer"}


CHILD_INPUT = {"type": "object", "properties": {"order": {"type": "object", "properties": {
    "sku": {"type": "string"}}, "required": ["sku"]}, "label": {"type": "string"}}, "required": ["order"]}


def child_workflow() -> object:
    return workflow(
        [task("g", "greet", input=[bind("name", "input.order.sku")], output=[out(".", "greeting")])], [],
        id="child", input_schema=CHILD_INPUT,
        outputs=[{"target": "text", "path": "state.greeting"}, {"target": "meta.sku", "path": "input.order.sku"}],
    )


def test_subgraph_inputs_are_checked_against_child_input_schema() -> None:
    parent = workflow(
        [subgraph("a", "child", input=[bind("label", "input.n")]),
         subgraph("b", "child", input=[bind("order", "input.n")])],
        chain("a", "b"), input_schema={"type": "object", "properties": {"n": {"type": "integer"}},
                                       "required": ["n"]})
    analysis = analyze(parent, registry=REGISTRY, workflows={"child": child_workflow()})
    assert found(analysis) == [
        ("binding.type_mismatch", "error", "a", "input.label"),
        ("binding.missing_required", "error", "a", "input.order"),
        ("binding.type_mismatch", "error", "b", "input.order"),
    ]


def test_subgraph_result_carries_child_output_schema() -> None:
    parent = workflow(
        [task("load", "load_customers", output=[out(".", "customers")]),
         foreach("customers", "state.customers"), foreach("orders", "context.foreach.customers.item.orders"),
         subgraph("s", "child", input=[bind("order", "context.foreach.orders.item")],
                  output=[out(".", "results", "append")]),
         task("g", "greet", input=[bind("name", "state.results")])],
        [route("load", "ok", "customers"), route("customers", "loop", "orders"), route("orders", "loop", "s"),
         route("s", "ok", "orders"), route("orders", "done", "customers"), route("customers", "done", "g")])
    analysis = analyze(parent, registry=REGISTRY, workflows={"child": child_workflow()})
    child = analysis.subgraph("s")
    assert child is not None and child.ok
    assert child.output_schema["properties"]["text"]["type"] == "string"
    assert child.output_schema["properties"]["meta"]["properties"]["sku"] == {"type": "string"}
    results = analysis.state_schema["properties"]["results"]
    assert results["items"] == child.output_schema
    assert found(analysis) == [("binding.type_mismatch", "error", "g", "input.name")]


def test_unknown_workflow_and_static_recursion() -> None:
    missing = analyze(workflow([subgraph("s", "ghost")], []), registry=REGISTRY)
    assert found(missing) == [("subgraph.unknown_workflow", "error", "s", "workflow")]
    a = workflow([subgraph("to_b", "b")], [], id="a")
    b = workflow([task("t"), subgraph("to_a", "a")], chain("t", "to_a"), id="b")
    analysis = analyze(a, registry=REGISTRY, workflows={"a": a, "b": b})
    assert found(analysis) == [("subgraph.recursion", "error", "to_b", "workflow")]
    assert "a -> b -> a" in analysis.errors[0].message
    assert found(analysis.subgraph("to_b")) == [("subgraph.recursion", "error", "to_a", "workflow")]
    self_call = workflow([subgraph("me", "self")], [], id="self")
    assert found(analyze(self_call, workflows={})) == [("subgraph.recursion", "error", "me", "workflow")]


def test_workflow_outputs_are_checked() -> None:
    analysis = analyze(workflow([task("a")], [], outputs=[{"target": "x", "path": "state.nothing"},
                                                          {"target": "y", "path": "context.loop_item"}]))
    assert found(analysis) == [("path.unknown_field", "error", None, "outputs.x"),
                               ("path.unknown_context_field", "error", None, "outputs.y")]


def test_appends_from_several_writers_make_one_mixed_list() -> None:
    analysis = analyze(workflow(
        [task("a", "count", input=[{"target": "n", "value": 1}], output=[out(".", "log", "append")]),
         task("b", "greet", input=[{"target": "name", "value": "x"}], output=[out(".", "log", "append")]),
         task("c", "load_customers", output=[out(".", "log", "extend")])],
        chain("a", "b", "c")), registry=REGISTRY)
    assert analysis.ok, analysis.errors
    log = analysis.state_schema["properties"]["log"]
    # the engine appends to whatever list is there: [1, "x", {...}], not one of three uniform lists
    assert log["type"] == "array"
    assert [option.get("type") for option in log["items"]["anyOf"]] == ["integer", "string", "object"]
