"""Static context analysis: the seed's "Validation and schemas" tests and the path diagnostics around them."""

from __future__ import annotations

import pytest

from runtime import Workflow, analyze
from runtime.errors import UnreachableNodeError
from tests.runtime.analysis_docs import bind, foreach, out, route, shop_registry, subgraph, task, workflow

INPUT = {
    "type": "object",
    "properties": {
        "regions": {"type": "array", "items": {
            "type": "object",
            "properties": {"code": {"type": "string"}, "stores": {"type": "array", "items": {"type": "integer"}}},
            "required": ["code", "stores"],
        }},
    },
    "required": ["regions"],
}


def customers_and_orders(*, inner_alias: str = "order", outer_alias: str = "customer",
                         work_input: list[dict[str, str]] | None = None,
                         after_input: list[dict[str, str]] | None = None) -> Workflow:
    """load -> customers (state, written by a task) -> orders (the outer item's list) -> charge -> back."""
    return workflow(
        [task("load", "load_customers", output=[out(".", "customers")]),
         foreach("customers", "state.customers", outer_alias),
         foreach("orders", "context.foreach.customers.item.orders", inner_alias),
         task("charge", "charge", input=work_input if work_input is not None else [
             bind("order", "context.foreach.orders.item"), bind("customer", "context.foreach.customers.item.name")]),
         task("after", "greet" if after_input else "noop", input=after_input),
         task("orphan", "noop")],
        [route("load", "ok", "customers"), route("customers", "loop", "orders"), route("orders", "loop", "charge"),
         route("charge", "ok", "orders"), route("orders", "done", "customers"), route("customers", "done", "after")],
    )


def codes_at(analysis: object, node_id: str) -> list[str]:
    return [d.code for d in analysis.diagnostics if d.node_id == node_id]  # type: ignore[attr-defined]


def test_item_schema_under_each_entry_matches_collection_item_schema() -> None:
    registry = shop_registry()
    analysis = analyze(customers_and_orders(), registry=registry)
    assert [d.code for d in analysis.diagnostics] == ["node.unreachable"]
    customer_schema = registry.get("load_customers").result_schema["items"]
    context = analysis.context_schema("charge")
    entries = context["properties"]["foreach"]["properties"]
    assert list(entries) == ["customers", "orders"]
    # the outer entry's item is the items schema of state.customers (a task result committed to state)
    assert entries["customers"]["properties"]["item"] == analysis.state_schema["properties"]["customers"]["items"]
    assert entries["customers"]["properties"]["item"]["title"] == customer_schema["title"] == "Customer"
    # the inner entry's item is the items schema of the outer item's orders list
    assert entries["orders"]["properties"]["item"] == (
        entries["customers"]["properties"]["item"]["properties"]["orders"]["items"])
    assert set(entries["orders"]["properties"]["item"]["required"]) == {"sku", "qty"}
    for entry in entries.values():
        props = entry["properties"]
        assert props["index"]["type"] == "integer"
        for name in ("node_id", "activation_id", "frame_id", "scope_id", "lineage_id"):
            assert props[name]["type"] == "string"
        assert set(entry["required"]) == set(props)
    assert entries["orders"]["properties"]["node_id"]["const"] == "orders"
    # convenience fields: innermost item/index and both unique aliases
    assert context["properties"]["loop_item"] == entries["orders"]["properties"]["item"]
    assert context["properties"]["loop_index"]["type"] == "integer"
    assert context["properties"]["customer"] == entries["customers"]["properties"]["item"]
    assert context["properties"]["order"] == entries["orders"]["properties"]["item"]
    # one level out only the outer entry exists; at the top level none
    assert list(analysis.context_schema("orders")["properties"]["foreach"]["properties"]) == ["customers"]
    top = analysis.context_schema("after")
    assert top["properties"]["foreach"]["properties"] == {}
    assert "loop_item" not in top["properties"]


def test_item_schema_through_input_and_outer_loop_item() -> None:
    analysis = analyze(workflow(
        [foreach("regions", "input.regions"), foreach("stores", "context.foreach.regions.item.stores"),
         task("t")],
        [route("regions", "loop", "stores"), route("stores", "loop", "t"), route("t", "ok", "stores"),
         route("stores", "done", "regions")],
        input_schema=INPUT,
    ))
    assert analysis.ok, analysis.diagnostics
    entries = analysis.context_schema("t")["properties"]["foreach"]["properties"]
    assert entries["regions"]["properties"]["item"] == INPUT["properties"]["regions"]["items"]
    assert entries["stores"]["properties"]["item"] == {"type": "integer"}
    assert analysis.item_schema("stores") == {"type": "integer"}


def test_context_schema_is_a_copy() -> None:
    analysis = analyze(customers_and_orders(), registry=shop_registry())
    first = analysis.context_schema("charge")
    first["properties"].clear()
    assert analysis.context_schema("charge")["properties"]


def test_referencing_inactive_foreach_is_rejected() -> None:
    doc = customers_and_orders(after_input=[bind("name", "context.foreach.orders.item.sku")])
    analysis = analyze(doc, registry=shop_registry())
    problems = [d for d in analysis.errors if d.node_id == "after"]
    assert [(d.code, d.field) for d in problems] == [("path.inactive_foreach", "input.name")]
    assert "'orders'" in problems[0].message and "not active" in problems[0].message
    assert problems[0].hint


def test_inactive_alias_and_loop_item_outside_loops_are_rejected() -> None:
    analysis = analyze(workflow(
        [foreach("f", "input.xs", "x"), task("body"), task("after", "greet", input=[bind("name", "context.x")]),
         task("end", "greet", input=[bind("name", "context.loop_item")])],
        [route("f", "loop", "body"), route("body", "ok", "f"), route("f", "done", "after"),
         route("after", "ok", "end")],
    ), registry=shop_registry())
    assert codes_at(analysis, "after") == ["path.inactive_foreach"]
    assert codes_at(analysis, "end") == ["path.unknown_context_field"]


def test_referencing_missing_foreach_is_rejected() -> None:
    analysis = analyze(customers_and_orders(work_input=[
        bind("order", "context.foreach.invoices.item"), bind("customer", "context.foreach.load.item.name")]),
        registry=shop_registry())
    problems = [d for d in analysis.errors if d.node_id == "charge"]
    assert [(d.code, d.field) for d in problems] == [
        ("path.unknown_foreach", "input.order"), ("path.unknown_foreach", "input.customer")]
    assert "no such node" in problems[0].message
    assert "not a foreach" in problems[1].message
    assert "customers, orders" in problems[0].hint


def test_unknown_foreach_context_field_is_rejected() -> None:
    analysis = analyze(customers_and_orders(work_input=[
        bind("order", "context.foreach.orders.value"), bind("customer", "context.foreach.customers.index.x")]),
        registry=shop_registry())
    problems = [(d.code, d.field) for d in analysis.errors if d.node_id == "charge"]
    assert problems == [("path.unknown_context_field", "input.order"),
                        ("path.unknown_context_field", "input.customer")]


def test_referencing_cross_scope_foreach_is_rejected() -> None:
    child = workflow(
        [task("use", "greet", input=[bind("name", "context.foreach.customers.item.name")]),
         task("alias", "greet", input=[bind("name", "context.customer.name")])],
        [route("use", "ok", "alias")], id="child",
        input_schema={"type": "object", "properties": {"customer": {"type": "object"}}},
    )
    parent = workflow(
        [task("load", "load_customers", output=[out(".", "customers")]),
         foreach("customers", "state.customers", "customer"),
         subgraph("call", "child", input=[bind("customer", "context.foreach.customers.item")])],
        [route("load", "ok", "customers"), route("customers", "loop", "call"), route("call", "ok", "customers")],
    )
    registry = shop_registry()
    analysis = analyze(parent, registry=registry, workflows={"child": child})
    child_analysis = analysis.subgraph("call")
    assert child_analysis is not None
    cross = [d for d in child_analysis.errors if d.code == "path.cross_scope"]
    assert [(d.node_id, d.field) for d in cross] == [("use", "input.name"), ("alias", "input.name")]
    assert "pass it through the subgraph's input bindings" in cross[0].hint
    # the caller sees the child's errors on its subgraph node
    lifted = [d for d in analysis.errors if d.node_id == "call"]
    assert [d.code for d in lifted] == ["path.cross_scope", "path.cross_scope"]
    assert "in subgraph workflow 'child', node 'use'" in lifted[0].message
    # analysed on its own, the child cannot know the caller: the foreach is simply unknown there
    alone = analyze(child, registry=registry)
    assert [d.code for d in alone.errors] == ["path.unknown_foreach", "path.unknown_context_field"]
    # the caller mapping the item into input is the supported way, and child foreach ids may reuse the caller's
    fixed = workflow(
        [foreach("customers", "input.customer.orders"), task("use", "greet", input=[
            bind("name", "context.foreach.customers.item.sku")])],
        [route("customers", "loop", "use"), route("use", "ok", "customers")], id="child",
        input_schema={"type": "object", "properties": {"customer": {"type": "object", "properties": {
            "orders": {"type": "array", "items": {"type": "object", "properties": {"sku": {"type": "string"}},
                                                  "required": ["sku"]}}}, "required": ["orders"]}},
            "required": ["customer"]},
    )
    assert analyze(parent, registry=registry, workflows={"child": fixed}).errors == ()


def test_nested_active_alias_collisions_are_rejected() -> None:
    analysis = analyze(customers_and_orders(inner_alias="customer"), registry=shop_registry())
    collisions = [d for d in analysis.errors if d.code == "alias.collision"]
    assert [(d.node_id, d.field) for d in collisions] == [("orders", "as")]
    assert "'customers'" in collisions[0].message
    # a colliding alias is not exposed in the context at the inner body
    assert "customer" not in analysis.context_schema("charge")["properties"]


def test_alias_colliding_with_reserved_context_field_is_rejected() -> None:
    analysis = analyze(customers_and_orders(outer_alias="loop_item"), registry=shop_registry())
    assert [(d.code, d.node_id) for d in analysis.errors if d.code == "alias.collision"] == [
        ("alias.collision", "customers")]


def test_sibling_loops_may_share_an_alias() -> None:
    analysis = analyze(workflow(
        [foreach("a", "input.xs", "x"), task("ta"), foreach("b", "input.ys", "x"), task("tb")],
        [route("a", "loop", "ta"), route("ta", "ok", "a"), route("a", "done", "b"), route("b", "loop", "tb"),
         route("tb", "ok", "b")],
    ))
    assert analysis.ok


def test_legal_nested_cycles_keep_owner_stack() -> None:
    # a retry cycle inside the inner body, and the inner foreach cycling in the outer body
    doc = workflow(
        [foreach("customers", "input.customers"), task("prep"), foreach("orders", "input.orders"),
         task("charge", "check"), task("wait"), task("note")],
        [route("customers", "loop", "prep"), route("prep", "ok", "orders"), route("orders", "loop", "charge"),
         route("charge", "again", "wait"), route("wait", "ok", "charge"), route("charge", "ok", "orders"),
         route("orders", "done", "note"), route("note", "ok", "customers")],
        input_schema={"type": "object", "properties": {
            "customers": {"type": "array"}, "orders": {"type": "array", "items": {"type": "number"}}},
            "required": ["customers", "orders"]},
    )
    analysis = analyze(doc)
    assert analysis.ok, analysis.diagnostics
    assert analysis.control_region("charge") == ("customers", "orders")
    assert analysis.control_region("wait") == ("customers", "orders")
    assert analysis.control_region("note") == ("customers",)
    assert list(analysis.context_schema("wait")["properties"]["foreach"]["properties"]) == ["customers", "orders"]
    assert analysis.context_schema("wait")["properties"]["loop_item"] == {"type": "number"}


def test_unreachable_nodes_get_no_context_schema() -> None:
    analysis = analyze(customers_and_orders(), registry=shop_registry())
    assert "orphan" not in analysis.reachable
    assert [(d.code, d.node_id) for d in analysis.errors] == [("node.unreachable", "orphan")]
    with pytest.raises(UnreachableNodeError) as caught:
        analysis.context_schema("orphan")
    assert "'orphan' is not reachable" in str(caught.value)
    assert caught.value.code == "node.unreachable"
    with pytest.raises(UnreachableNodeError):
        analysis.path_options("orphan")


def test_unreachable_nodes_context_paths_are_not_judged() -> None:
    analysis = analyze(workflow(
        [task("a"), task("lost", "greet", input=[bind("name", "context.foreach.nowhere.item")])], []),
        registry=shop_registry())
    assert [(d.code, d.node_id) for d in analysis.errors] == [("node.unreachable", "lost")]


def test_foreach_over_non_array_is_a_type_mismatch() -> None:
    analysis = analyze(workflow(
        [foreach("f", "input.name"), task("t")], [route("f", "loop", "t"), route("t", "ok", "f")],
        input_schema={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}))
    assert [(d.code, d.field) for d in analysis.errors] == [("binding.type_mismatch", "over")]
    assert analysis.context_schema("t")["properties"]["loop_item"] == {}


def test_unknown_input_and_state_fields_are_rejected() -> None:
    analysis = analyze(workflow(
        [task("a", "greet", input=[bind("name", "input.regions.code")]),
         task("b", "greet", input=[bind("name", "state.missing")]),
         task("c", "greet", input=[bind("name", "input.nothing")])],
        [route("a", "ok", "b"), route("b", "ok", "c")], input_schema=INPUT), registry=shop_registry())
    problems = [(d.code, d.node_id) for d in analysis.errors]
    assert problems == [("path.unknown_field", "a"), ("path.unknown_field", "b"), ("path.unknown_field", "c")]
    assert "array" in analysis.errors[0].message
    assert "known fields: regions" in analysis.errors[2].message
