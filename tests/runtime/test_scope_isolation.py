"""Scope isolation: the seed's required tests; a subgraph is a new runtime scope."""

from __future__ import annotations

from typing import Any

from runtime import Workflow, WorkflowBuilder
from runtime.inspect import frame_context
from runtime.paths import input_path, state_path
from tests.runtime.engine_helpers import ANY_LIST, ITEMS, capture_input, engine


def child_capture(*, with_foreach: bool = False, interrupt: bool = False) -> Workflow:
    """A child that records its context; optionally with its own foreach named ``orders`` too."""
    g = WorkflowBuilder("child", input_schema={"type": "object", "properties": {
        "order": {"type": "integer"}, "orders": ITEMS}, "required": ["order"]},
        state_schema={"type": "object", "properties": {"seen": ANY_LIST}})
    capture = g.use("capture", id="capture", input=capture_input(),
                    output=[{"source": ".", "target": "seen", "mode": "append"}])
    if with_foreach:
        orders = g.foreach("orders", input_path("orders"), as_="order_line")
        g.set_start(orders)
        g.chain(orders, "loop", capture, "ok", orders)
        if interrupt:
            pause = g.interrupt("pause", resume_schema={"type": "object"})
            g.set_route(orders, "done", pause)
    elif interrupt:
        pause = g.interrupt("pause", resume_schema={"type": "object"})
        g.set_route(capture, "ok", pause)
    g.output("seen", state_path("seen"))
    g.output("order", input_path("order"))
    return g.build()


def parent(*, child_orders: bool = False) -> Workflow:
    g = WorkflowBuilder("parent", input_schema={"type": "object", "properties": {"orders": ITEMS}},
                        state_schema={"type": "object", "properties": {"children": ANY_LIST, "seen": ANY_LIST}})
    orders = g.foreach("orders", input_path("orders"), as_="order")
    look = g.use("capture", id="look", input=capture_input(),
                 output=[{"source": ".", "target": "seen", "mode": "append"}])
    bindings: list[dict[str, Any]] = [{"target": "order", "path": orders.item}]
    if child_orders:
        bindings.append({"target": "orders", "path": input_path("orders")})
    call = g.subgraph("child", id="call", input=bindings,
                      output=[{"source": ".", "target": "children", "mode": "append"}])
    g.chain(orders, "loop", look, "ok", call, "ok", orders)
    g.output("children", state_path("children"))
    g.output("seen", state_path("seen"))
    return g.build()


def test_child_subgraph_does_not_inherit_caller_foreach() -> None:
    result = engine(workflows={"child": child_capture()}).run(parent(), {"orders": [10, 20]})
    assert result.status == "completed", result.error
    for call in result.output["children"]:
        (seen,) = call["seen"]
        assert seen["bound"] == {"foreach": {}}
        assert seen["typed"] == {}
        assert seen["loop_item"] is None and seen["loop_index"] is None
        assert seen["scope_id"] != "root"
    # the caller itself did see its foreach right before the call
    assert [s["bound"]["order"] for s in result.output["seen"]] == [10, 20]


def test_parent_maps_foreach_item_into_child_input() -> None:
    result = engine(workflows={"child": child_capture()}).run(parent(), {"orders": [10, 20]})
    assert [call["order"] for call in result.output["children"]] == [10, 20]


def test_parent_and_child_reuse_same_foreach_id() -> None:
    eng = engine(workflows={"child": child_capture(with_foreach=True)})
    result = eng.run(parent(child_orders=True), {"orders": [10, 20]})
    assert result.status == "completed", result.error
    parent_entries = [s["bound"]["foreach"]["orders"] for s in result.output["seen"]]
    for call, parent_entry in zip(result.output["children"], parent_entries, strict=True):
        assert [s["bound"]["foreach"]["orders"]["item"] for s in call["seen"]] == [10, 20]
        for seen in call["seen"]:
            child_entry = seen["bound"]["foreach"]["orders"]
            assert list(seen["bound"]["foreach"]) == ["orders"]
            assert child_entry["scope_id"] == seen["scope_id"] != "root"
            assert child_entry["activation_id"] != parent_entry["activation_id"]
            assert seen["bound"]["order_line"] == child_entry["item"]
            # the child's alias never shadows or reveals the caller's
            assert "order" not in seen["bound"]


def test_context_ancestry_traversal_stops_at_child_scope() -> None:
    eng = engine(workflows={"child": child_capture(interrupt=True)})
    result = eng.run(parent(), {"orders": [10]})
    assert result.status == "interrupted"
    rs = result.run_state
    (interrupt,) = result.interrupts
    child_frame = rs.frames[interrupt.frame_id]
    child_scope = rs.scopes[child_frame.scope_id]
    assert child_scope.scope_id != "root" and child_scope.root_frame_id == child_frame.frame_id
    # Scheduling parent: the caller frame, an item frame of the caller's foreach in the root scope ...
    caller = rs.frames[child_frame.parent_frame_id]
    assert caller.frame_id == child_scope.caller_frame_id
    assert caller.scope_id == "root" and caller.metadata["foreach"]["node_id"] == "orders"
    assert frame_context(rs, caller.frame_id).foreach["orders"].item == 10
    # ... yet the child's context holds nothing of it.
    context = frame_context(rs, child_frame.frame_id)
    assert dict(context.foreach) == {}
    assert context.scope_id == child_scope.scope_id
    assert dict(context.to_mapping()) == {"foreach": {}}


def test_child_scope_is_pruned_and_its_state_stays_out_of_the_caller() -> None:
    eng = engine(workflows={"child": child_capture()})
    result = eng.run(parent(), {"orders": [10]})
    assert list(result.run_state.scopes) == ["root"]
    assert set(result.state) == {"children", "seen"}
    kinds = [e.kind for e in result.trace]
    assert kinds.count("scope_opened") == kinds.count("scope_closed") == 1
