"""Path options: what the designer's path pickers list at a node."""

from __future__ import annotations

from runtime import analyze
from runtime.paths import GraphSourcePath
from tests.runtime.analysis_docs import bind, foreach, out, route, shop_registry, task, workflow

INPUT = {"type": "object", "properties": {
    "limit": {"type": "integer", "title": "Limit", "description": "How many to charge"},
    "currency": {"type": "string"},
}, "required": ["limit"]}


def analysis_of_shop() -> object:
    return analyze(workflow(
        [task("load", "load_customers", output=[out(".", "customers")]),
         foreach("customers", "state.customers", "customer"),
         foreach("orders", "context.foreach.customers.item.orders", "order"),
         task("charge", "charge", input=[bind("order", "context.order"), bind("customer", "context.customer.name")],
              output=[out("total", "totals", "append")])],
        [route("load", "ok", "customers"), route("customers", "loop", "orders"), route("orders", "loop", "charge"),
         route("charge", "ok", "orders"), route("orders", "done", "customers")],
        input_schema=INPUT, name="Shop",
    ), registry=shop_registry())


def test_options_cover_input_state_and_every_active_foreach() -> None:
    analysis = analysis_of_shop()
    assert analysis.ok, analysis.diagnostics  # type: ignore[attr-defined]
    options = {o.path_str: o for o in analysis.path_options("charge")}  # type: ignore[attr-defined]
    limit = options["input.limit"]
    assert (limit.type, limit.title, limit.description, limit.group, limit.foreach_id) == (
        "integer", "Limit", "How many to charge", "Input", None)
    assert limit.path == GraphSourcePath("input", ("limit",))
    assert options["input.currency"].type == "string | null"   # optional without default: may be missing
    assert options["state.customers"].type == "array<object>"
    assert "written by load" in options["state.customers"].description
    assert options["state.totals"].type == "array<number>"
    # arrays are offered as themselves; their items are reached through a foreach
    assert not any(p.startswith("state.customers.") for p in options)
    item = options["context.foreach.orders.item.qty"]
    assert (item.type, item.group, item.foreach_id) == ("integer", "Loop: orders", "orders")
    assert options["context.foreach.customers.item.name"].group == "Loop: customers"
    for name in ("index", "node_id", "activation_id", "frame_id", "scope_id", "lineage_id"):
        assert f"context.foreach.customers.{name}" in options
    assert options["context.loop_item"].foreach_id == "orders"
    assert options["context.customer"].foreach_id == "customers"
    assert options["context.order"].schema == options["context.foreach.orders.item"].schema
    assert all(o.compatibility is None for o in options.values())


def test_options_follow_the_region() -> None:
    analysis = analysis_of_shop()
    at_orders = [o.path_str for o in analysis.path_options("orders")]  # type: ignore[attr-defined]
    assert "context.foreach.customers.item.name" in at_orders
    assert not any(p.startswith("context.foreach.orders") for p in at_orders)
    at_load = [o.path_str for o in analysis.path_options("load")]  # type: ignore[attr-defined]
    assert not any(p.startswith("context.") for p in at_load)
    assert "input.limit" in at_load


def test_want_keeps_compatible_options_best_first() -> None:
    analysis = analysis_of_shop()
    numbers = analysis.path_options("charge", want={"type": "number"})  # type: ignore[attr-defined]
    paths = [o.path_str for o in numbers]
    assert "context.foreach.orders.item.sku" not in paths and "input.currency" not in paths
    levels = [o.compatibility for o in numbers]
    assert levels == sorted(levels, key=["exact", "compatible", "optional"].index)
    by_path = {o.path_str: o.compatibility for o in numbers}
    assert by_path["context.foreach.orders.item.qty"] == "compatible"      # integer into number
    assert by_path["context.foreach.orders.item.price"] == "optional"      # nullable
    strings = analysis.path_options("charge", want={"type": "string"})  # type: ignore[attr-defined]
    assert strings[0].compatibility == "exact"
    assert {"context.foreach.customers.item.name", "context.foreach.orders.item.sku"} <= {
        o.path_str for o in strings}
    orders = analysis.path_options("charge", want=shop_registry().get("charge").input_schema["properties"]["order"])  # type: ignore[attr-defined]
    assert orders[0].path_str in {"context.foreach.orders.item", "context.loop_item", "context.order"}
    assert orders[0].compatibility == "exact"


def test_options_are_cached_but_callers_get_their_own_list() -> None:
    analysis = analysis_of_shop()
    first = analysis.path_options("charge")  # type: ignore[attr-defined]
    first.clear()
    assert analysis.path_options("charge")  # type: ignore[attr-defined]
