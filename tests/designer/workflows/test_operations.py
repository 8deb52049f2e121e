"""Every edit operation the editor sends, and its undo, as pure functions (no database, no browser)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from designer.core.errors import BadRequest
from designer.workflows import operations as ops
from designer.workflows.analysis import dump_document, parse_document
from tests.documents_support import routes

RAW: dict[str, Any] = {
    "id": "orders",
    "input_schema": {"type": "object", "properties": {"orders": {"type": "array", "items": {
        "type": "object", "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}}}}}},
    "nodes": [
        {"id": "each", "kind": "foreach", "over": "input.orders", "as": "order"},
        {"id": "charge", "kind": "task", "task": "set_value",
         "input": [{"target": "value", "path": "context.foreach.each.item.sku"}]},
        {"id": "pick", "kind": "branch", "path": "input.orders", "cases": [{"label": "yes", "op": "truthy"}]},
        {"id": "ask", "kind": "interrupt", "prompt": "ok?", "labels": ["ok", "no"]},
        {"id": "after", "kind": "task", "task": "set_value"},
    ],
    "routes": routes("each loop charge ok each done pick yes ask ok after"),
    "outputs": [{"target": "all", "path": "input.orders"}],
    "metadata": {"positions": {"each": {"x": 0, "y": 0}, "charge": {"x": 300, "y": 0}}},
}


def labels(node: Mapping[str, Any]) -> tuple[str, ...]:
    # What the analyzer answers for these kinds (designer.editor.edits asks it for real).
    return {"foreach": ("loop", "done", "error"), "branch": ("yes", "default", "error")}.get(
        str(node.get("kind")), ("ok", "error"))


CONTEXT = ops.Context(exit_labels=labels, field_schema=lambda node, name: {"type": "integer"} if name == "qty"
                      else {"type": "string"})


@pytest.fixture
def doc() -> dict[str, Any]:
    # As stored: the runtime's model dump, every default spelled out.
    return dump_document(parse_document(copy.deepcopy(RAW)))


def roundtrip(document: dict[str, Any], op: dict[str, Any]) -> ops.Applied:
    """Apply ``op``; its undo must give back exactly ``document``, and redo exactly the edit."""
    before = copy.deepcopy(document)
    applied = ops.apply(document, op, CONTEXT)
    assert document == before, "operations never change their input"
    assert applied.document != document, f"{op['op']} changed nothing"
    undone = ops.apply_all(applied.document, applied.undo, CONTEXT)
    assert undone.document == document
    redone = ops.apply_all(undone.document, undone.undo, CONTEXT)
    assert redone.document == applied.document
    parse_document(applied.document)  # still a document the runtime reads
    return applied


def node(document: dict[str, Any], node_id: str) -> dict[str, Any]:
    return next(n for n in document["nodes"] if n["id"] == node_id)


def route_map(document: dict[str, Any]) -> dict[tuple[str, str], str]:
    return {(r["source"], r["label"]): r["target"] for r in document["routes"]}


# --- canvas operations ---------------------------------------------------------------


def test_move_nodes_changes_only_positions_and_undo_forgets_new_places(doc: dict[str, Any]) -> None:
    moved = {"charge": {"x": 10.4, "y": -3}, "ask": {"x": 1, "y": 2}}
    applied = roundtrip(doc, {"op": "move_nodes", "positions": moved})
    assert applied.document["metadata"]["positions"] == {"each": {"x": 0, "y": 0}, "charge": {"x": 10, "y": -3},
                                                        "ask": {"x": 1, "y": 2}}
    assert applied.undo == [{"op": "move_nodes", "positions": {"charge": {"x": 300, "y": 0}, "ask": None}}]
    assert {k: v for k, v in applied.document.items() if k != "metadata"} == \
        {k: v for k, v in doc.items() if k != "metadata"}


@pytest.mark.parametrize("metadata", [None, {}, {"positions": "broken", "note": {"kept": True}}])
def test_move_nodes_starts_places_where_there_were_none_and_leaves_the_input_alone(
    doc: dict[str, Any], metadata: Any
) -> None:
    document = {k: v for k, v in doc.items() if k != "metadata"}
    if metadata is not None:
        document["metadata"] = metadata
    before = copy.deepcopy(document)
    applied = ops.apply(document, {"op": "move_nodes", "positions": {"each": {"x": 5, "y": 6}}}, CONTEXT)
    assert document == before
    assert applied.document["metadata"]["positions"] == {"each": {"x": 5, "y": 6}}
    if metadata and "note" in metadata:
        assert applied.document["metadata"]["note"] == {"kept": True}


@pytest.mark.parametrize("positions, wrong", [
    ({"ghost": {"x": 1, "y": 1}}, "no node 'ghost'"),
    ({"each": {"x": float("nan"), "y": 1}}, "finite number x"),
    ({"each": {"x": 1}}, "finite number y"),
    ({"each": [1, 2]}, "is an object"),
    ({}, "needs positions"),
])
def test_move_nodes_refuses_what_is_not_a_place(doc: dict[str, Any], positions: Any, wrong: str) -> None:
    with pytest.raises(BadRequest, match=wrong):
        ops.apply(doc, {"op": "move_nodes", "positions": positions})


def test_add_node_picks_a_free_id_places_it_and_selects_it(doc: dict[str, Any]) -> None:
    applied = roundtrip(doc, {"op": "add_node", "node": {"kind": "task", "task": "set_value"}, "id_hint": "charge",
                              "position": {"x": 5, "y": 6}})
    assert applied.select == "charge_2"
    assert node(applied.document, "charge_2")["task"] == "set_value"
    assert applied.document["metadata"]["positions"]["charge_2"] == {"x": 5, "y": 6}
    assert applied.document["routes"] == doc["routes"]
    assert applied.undo == [{"op": "remove_nodes", "ids": ["charge_2"]}]


def test_add_node_keeps_a_wanted_free_id_and_slugs_hints(doc: dict[str, Any]) -> None:
    assert ops.apply(doc, {"op": "add_node", "node": {"kind": "task", "task": "x"}, "id": "mine"}).select == "mine"
    assert ops.apply(doc, {"op": "add_node", "node": {"kind": "task", "task": "x"}, "id": "each"}).select == "each_2"
    assert ops.apply(doc, {"op": "add_node", "node": {"kind": "task", "task": "a.Send Mail!"}}).select == "send_mail"
    with pytest.raises(BadRequest, match="node object with its kind"):
        ops.apply(doc, {"op": "add_node", "node": "task"})


def test_add_node_into_a_loop_goes_before_the_route_back(doc: dict[str, Any]) -> None:
    applied = roundtrip(doc, {"op": "add_node", "node": {"kind": "task", "task": "set_value"}, "id_hint": "log",
                              "loop": "each", "position": {"x": 1, "y": 1}})
    routes = route_map(applied.document)
    assert routes[("charge", "ok")] == "log" and routes[("log", "ok")] == "each"
    assert ("log", "error") not in routes
    assert routes[("each", "loop")] == "charge"


def test_add_node_at_the_start_of_a_loop_body(doc: dict[str, Any]) -> None:
    applied = roundtrip(doc, {"op": "add_node", "node": {"kind": "task", "task": "set_value"}, "id_hint": "first",
                              "loop": "each", "at": "start"})
    routes = route_map(applied.document)
    assert routes[("each", "loop")] == "first" and routes[("first", "ok")] == "charge"
    assert routes[("charge", "ok")] == "each"


def test_a_loop_dropped_into_a_loop_offers_its_done_back_to_the_outer_loop(doc: dict[str, Any]) -> None:
    applied = roundtrip(doc, {"op": "add_node", "node": {"kind": "foreach", "over": "input.orders"},
                              "id_hint": "inner", "loop": "each"})
    routes = route_map(applied.document)
    assert routes[("charge", "ok")] == "inner" and routes[("inner", "done")] == "each"
    assert ("inner", "loop") not in routes  # its own body comes next


def test_add_node_into_an_empty_loop_makes_the_body(doc: dict[str, Any]) -> None:
    empty = ops.apply(doc, {"op": "add_node", "node": {"kind": "foreach", "over": "input.orders"}, "id": "outer"})
    applied = roundtrip(empty.document, {"op": "add_node", "node": {"kind": "branch", "path": "input.orders",
                                                                    "cases": [{"label": "yes", "op": "truthy"}]},
                                         "id": "b", "loop": "outer"})
    routes = route_map(applied.document)
    assert routes[("outer", "loop")] == "b"
    assert routes[("b", "yes")] == "outer" and routes[("b", "default")] == "outer"


def test_add_node_into_something_that_is_not_a_loop_is_refused(doc: dict[str, Any]) -> None:
    with pytest.raises(BadRequest, match="'charge' is not a foreach"):
        ops.apply(doc, {"op": "add_node", "node": {"kind": "task", "task": "x"}, "loop": "charge"}, CONTEXT)
    with pytest.raises(BadRequest, match="at is 'start'"):
        ops.apply(doc, {"op": "add_node", "node": {"kind": "task", "task": "x"}, "loop": "each", "at": "middle"})


def test_remove_nodes_takes_routes_places_and_start_and_undo_restores_order(doc: dict[str, Any]) -> None:
    started = ops.apply(doc, {"op": "set_start", "node": "each"}).document
    applied = roundtrip(started, {"op": "remove_nodes", "ids": ["charge", "each"]})
    assert [n["id"] for n in applied.document["nodes"]] == ["pick", "ask", "after"]
    assert route_map(applied.document) == {("pick", "yes"): "ask", ("ask", "ok"): "after"}
    assert applied.document["metadata"]["positions"] == {}
    assert applied.document["start"] is None
    with pytest.raises(BadRequest, match="no node 'ghost'"):
        ops.apply(doc, {"op": "remove_nodes", "ids": ["ghost"]})


def test_restore_nodes_refuses_an_id_taken_meanwhile(doc: dict[str, Any]) -> None:
    removed = ops.apply(doc, {"op": "remove_nodes", "ids": ["after"]})
    again = ops.apply(removed.document, {"op": "add_node", "node": {"kind": "task", "task": "x"}, "id": "after"})
    with pytest.raises(BadRequest, match="'after' exists again"):
        ops.apply_all(again.document, removed.undo)


def test_connect_adds_or_retargets_a_label_in_place(doc: dict[str, Any]) -> None:
    added = roundtrip(doc, {"op": "connect", "source": "after", "label": "ok", "target": "pick"})
    assert added.document["routes"][-1] == {"source": "after", "label": "ok", "target": "pick"}
    assert added.undo == [{"op": "disconnect", "source": "after", "label": "ok"}]
    moved = roundtrip(doc, {"op": "connect", "source": "pick", "label": "yes", "target": "after"})
    assert moved.document["routes"][3] == {"source": "pick", "label": "yes", "target": "after"}
    assert len(moved.document["routes"]) == len(doc["routes"])
    with pytest.raises(BadRequest, match="no node 'ghost'"):
        ops.apply(doc, {"op": "connect", "source": "pick", "label": "yes", "target": "ghost"})
    with pytest.raises(BadRequest, match="label"):
        ops.apply(doc, {"op": "connect", "source": "pick", "label": "", "target": "after"})


def test_disconnect_and_its_undo_keep_the_route_order(doc: dict[str, Any]) -> None:
    applied = roundtrip(doc, {"op": "disconnect", "source": "each", "label": "done"})
    assert ("each", "done") not in route_map(applied.document)
    assert ops.apply(doc, {"op": "disconnect", "source": "each", "label": "nope"}) == ops.Applied(doc, [])


# --- panel operations -----------------------------------------------------------------


@pytest.mark.parametrize("op", [
    {"op": "bind_path", "node": "after", "field": "input.value", "path": "input.orders"},
    {"op": "bind_path", "node": "each", "field": "over", "path": "input.orders"},  # same value: no-op, skipped
    {"op": "bind_literal", "node": "after", "field": "input.value", "value": {"a": 1}},
    {"op": "bind_literal", "node": "after", "field": "input.qty", "text": "3"},
    {"op": "unbind", "node": "charge", "field": "input.value"},
    {"op": "set_basics", "node": "after", "id": "after", "name": "After all", "description": "the end"},
    {"op": "set_start", "node": "pick"},
    {"op": "set_foreach", "node": "each", "as": "", "max_concurrency": "4"},
    {"op": "set_foreach", "node": "each", "as": "order", "max_concurrency": "1", "results": "state.priced"},
    {"op": "add_output", "node": "charge", "source": ".", "target": "state.total", "mode": "append"},
    {"op": "set_branch", "node": "pick", "case_label": ["big", "small"], "case_op": ["gt", "exists"],
     "case_value": ["10", ""], "default_label": "other"},
    {"op": "add_case", "node": "pick"},
    {"op": "remove_case", "node": "pick", "index": 0},
    {"op": "set_interrupt", "node": "ask", "prompt": "Sure?", "labels": "yes, no",
     "resume_schema": '{"type": "object"}'},
    {"op": "set_settings", "input_schema": '{"type": "object"}', "state_schema": "", "outputs": "[]",
     "start": "each"},
    {"op": "put_nodes", "nodes": [{"id": "after", "kind": "task", "task": "other"}]},
    {"op": "unbind_tree", "node": "charge", "field": "input.value"},
    {"op": "set_schema", "key": "state_schema", "schema": {"type": "object", "properties": {"n": {"type": "integer"}}}},
    {"op": "set_schema", "node": "ask", "key": "resume_schema", "schema": '{"type": "object"}'},
    {"op": "add_workflow_output", "target": "count", "path": "input.orders"},
    {"op": "remove_workflow_output", "index": 0},
    {"op": "set_fields", "set": {"name": "Renamed"}, "unset": ["metadata"]},
    {"op": "set_workflow_start", "start": "pick"},
    {"op": "set_workflow_start", "start": ""},
])
def test_every_panel_operation_undoes_exactly(doc: dict[str, Any], op: dict[str, Any]) -> None:
    before = copy.deepcopy(doc)
    applied = ops.apply(doc, op, CONTEXT)
    # An operation that edited its input in place would compute its undo from the
    # edited document: nothing to undo, and the caller's copy silently changed.
    assert doc == before
    if applied.document == before:
        assert applied.undo == []
        return
    roundtrip(doc, op)


def test_removing_an_array_item_moves_the_items_after_it_up_and_undo_puts_them_back(doc: dict[str, Any]) -> None:
    items = [{"target": "value.0", "path": "input.orders"}, {"target": "value.1.sku", "value": "b"},
             {"target": "value.1.qty", "value": 2}, {"target": "value.2", "value": "c"},
             {"target": "value.2x", "value": "a key, not an item"}]
    node(doc, "after")["input"] = items[:4]
    removed = roundtrip(doc, {"op": "unbind_tree", "node": "after", "field": "input.value.1"})
    assert node(removed.document, "after")["input"] == [{"target": "value.0", "path": "input.orders"},
                                                        {"target": "value.1", "value": "c"}]
    first = roundtrip(doc, {"op": "unbind", "node": "after", "field": "input.value.0"})
    assert [b["target"] for b in node(first.document, "after")["input"]] == ["value.0.sku", "value.0.qty", "value.1"]
    # one key of an item going leaves the item (its other key still fills it): nothing moves
    key = roundtrip(doc, {"op": "unbind", "node": "after", "field": "input.value.1.sku"})
    assert [b["target"] for b in node(key.document, "after")["input"]] == ["value.0", "value.1.qty", "value.2"]
    # keys that only look like numbers are never renumbered
    node(doc, "after")["input"] = [items[0], items[4]]
    other = ops.apply(doc, {"op": "unbind", "node": "after", "field": "input.value.0"}, CONTEXT)
    assert node(other.document, "after")["input"] == [items[4]]


def test_typed_literal_text_follows_the_field_schema(doc: dict[str, Any]) -> None:
    applied = ops.apply(doc, {"op": "bind_literal", "node": "after", "field": "input.qty", "text": "3"}, CONTEXT)
    assert {"target": "qty", "value": 3} in node(applied.document, "after")["input"]
    with pytest.raises(BadRequest, match="not a valid integer"):
        ops.apply(doc, {"op": "bind_literal", "node": "after", "field": "input.qty", "text": "three"}, CONTEXT)


def test_workflow_start_names_an_existing_node_or_none(doc: dict[str, Any]) -> None:
    assert ops.apply(doc, {"op": "set_workflow_start", "start": "pick"}).document["start"] == "pick"
    assert ops.apply(doc, {"op": "set_workflow_start", "start": " "}).document["start"] is None
    with pytest.raises(BadRequest, match="no node 'ghost'"):
        ops.apply(doc, {"op": "set_workflow_start", "start": "ghost"})


def test_remove_output_undo_puts_the_row_back(doc: dict[str, Any]) -> None:
    added = ops.apply(doc, {"op": "add_output", "node": "charge", "source": ".", "target": "state.t"}).document
    applied = roundtrip(added, {"op": "remove_output", "node": "charge", "index": 0})
    assert node(applied.document, "charge")["output"] == []


def test_rename_follows_routes_paths_and_positions_and_undo_renames_back(doc: dict[str, Any]) -> None:
    applied = roundtrip(doc, {"op": "set_basics", "node": "each", "id": "orders", "name": "", "description": ""})
    assert applied.select == "orders"
    assert route_map(applied.document)[("orders", "loop")] == "charge"
    assert node(applied.document, "charge")["input"][0]["path"] == "context.foreach.orders.item.sku"
    assert "orders" in applied.document["metadata"]["positions"]


def test_set_fields_only_touches_document_fields(doc: dict[str, Any]) -> None:
    with pytest.raises(BadRequest, match="cannot change id"):
        ops.apply(doc, {"op": "set_fields", "set": {"id": "other"}})


def test_batches_undo_last_first_and_unknown_operations_are_named(doc: dict[str, Any]) -> None:
    batch = [
        {"op": "disconnect", "source": "charge", "label": "ok"},
        {"op": "connect", "source": "charge", "label": "ok", "target": "after"},
        {"op": "move_nodes", "positions": {"charge": {"x": 1, "y": 1}}},
    ]
    applied = ops.apply_all(doc, batch, CONTEXT)
    assert ops.names(applied.undo) == ["move_nodes", "disconnect", "connect"]
    assert ops.apply_all(applied.document, applied.undo).document == doc
    with pytest.raises(BadRequest, match="unknown edit operation 'explode'; the editor knows add_case"):
        ops.apply(doc, {"op": "explode"})
    with pytest.raises(BadRequest, match="non-empty list"):
        ops.apply_all(doc, [])
    with pytest.raises(BadRequest, match="at most 200"):
        ops.apply_all(doc, [{"op": "set_start", "node": "each"}] * 201)
    with pytest.raises(BadRequest, match="needs the id of the node"):
        ops.apply(doc, {"op": "set_start"})


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([
    {"op": "move_nodes", "positions": {"ask": {"x": 7, "y": 7}}},
    {"op": "connect", "source": "after", "label": "ok", "target": "each"},
    {"op": "disconnect", "source": "pick", "label": "yes"},
    {"op": "remove_nodes", "ids": ["ask"]},
    {"op": "add_node", "node": {"kind": "task", "task": "set_value"}, "id_hint": "extra", "loop": "each"},
    {"op": "set_basics", "node": "after", "id": "finish", "name": "", "description": ""},
    {"op": "set_start", "node": "pick"},
]), min_size=1, max_size=6))
def test_any_sequence_of_edits_undoes_back_to_the_start(sequence: list[dict[str, Any]]) -> None:
    start = dump_document(parse_document(copy.deepcopy(RAW)))
    document, undo_stack = start, []
    for op in sequence:
        try:
            applied = ops.apply(document, op, CONTEXT)
        except BadRequest:
            continue  # e.g. a node this sequence already removed
        document = applied.document
        undo_stack.append(applied.undo)
    for undo in reversed(undo_stack):
        document = ops.apply_all(document, undo, CONTEXT).document if undo else document
    assert document == start


# --- one-click fixes ------------------------------------------------------------------


def test_fix_for_a_body_node_without_a_way_back_routes_it_to_its_innermost_loop(doc: dict[str, Any]) -> None:
    regions = {"charge": ["each"], "inner": ["each"]}
    fix = ops.fix_ops({"code": "region.no_return", "node_id": "charge", "field": "routes.skip"}, doc, regions)
    assert fix == [{"op": "connect", "source": "charge", "label": "skip", "target": "each"}]
    # Nothing obvious to do: a loop without a body, a node outside any loop, an unknown node.
    assert ops.fix_ops({"code": "region.no_return", "node_id": "each", "field": "routes.loop"}, doc, regions) == []
    assert ops.fix_ops({"code": "region.no_return", "node_id": "after", "field": "routes.ok"}, doc, regions) == []
    assert ops.fix_ops({"code": "region.no_return", "node_id": "ghost", "field": "routes.ok"}, doc, regions) == []


def test_fix_for_a_cycle_with_no_exit_unroutes_the_route_that_closes_it(doc: dict[str, Any]) -> None:
    cycled = ops.apply(doc, {"op": "connect", "source": "after", "label": "ok", "target": "pick"}).document
    cycled = ops.apply(cycled, {"op": "connect", "source": "ask", "label": "no", "target": "after"}).document
    diagnostic = {"code": "route.no_exit", "node_id": "pick", "field": "routes",
                  "data": {"nodes": ["pick", "ask", "after"]}}
    assert ops.fix_ops(diagnostic, cycled, {}) == [{"op": "disconnect", "source": "after", "label": "ok"}]
    errors_only = ops.apply_all(cycled, [{"op": "disconnect", "source": "after", "label": "ok"},
                                         {"op": "connect", "source": "after", "label": "error", "target": "pick"}])
    errors_only = errors_only.document
    assert ops.fix_ops(diagnostic, errors_only, {}) == []  # unrouting a failure would end nothing


def test_a_foreach_collects_results_into_a_state_field_set_and_cleared_in_the_loop_form(doc: dict[str, Any]) -> None:
    collecting = ops.apply(doc, {"op": "set_foreach", "node": "each", "as": "order", "max_concurrency": "2",
                                 "results": 'state.by."odd key"'}, CONTEXT).document
    assert node(collecting, "each")["results"] == 'by."odd key"'
    kept = ops.apply(collecting, {"op": "set_foreach", "node": "each", "as": "order", "max_concurrency": "3"},
                     CONTEXT).document
    assert node(kept, "each")["results"] == 'by."odd key"'  # a form without the field leaves it alone
    cleared = ops.apply(kept, {"op": "set_foreach", "node": "each", "as": "order", "max_concurrency": "3",
                               "results": ""}, CONTEXT).document
    assert "results" not in node(cleared, "each")
    with pytest.raises(BadRequest) as caught:
        ops.apply(doc, {"op": "set_foreach", "node": "each", "results": "a..b"}, CONTEXT)
    assert caught.value.details["field"] == "results"
