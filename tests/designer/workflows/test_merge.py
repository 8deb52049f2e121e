"""The merge rules of live co-editing: what an edit touches, and when a stale edit still applies."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from designer.workflows import operations as ops
from designer.workflows.merge import EVERYTHING, Later, collide, conflicts, touches

NODES = [f"n{i}" for i in range(6)]


def document() -> dict[str, Any]:
    return {
        "id": "w",
        "nodes": [{"id": n, "kind": "task", "task": "set_value", "input": []} for n in NODES],
        "routes": [{"source": a, "label": "ok", "target": b} for a, b in zip(NODES, NODES[1:], strict=False)],
        "metadata": {"positions": {n: {"x": i * 10, "y": 0} for i, n in enumerate(NODES)}},
    }


def move(node: str, x: int) -> dict[str, Any]:
    return {"op": "move_nodes", "positions": {node: {"x": x, "y": 5}}}


def relabel(node: str, name: str) -> dict[str, Any]:
    return {"op": "set_basics", "node": node, "id": node, "name": name, "description": ""}


def bind(node: str, field: str, value: int) -> dict[str, Any]:
    return {"op": "bind_literal", "node": node, "field": f"input.{field}", "value": value}


def delete(node: str) -> dict[str, Any]:
    return {"op": "remove_nodes", "ids": [node]}


def later(*batches: list[dict[str, Any]]) -> list[Later]:
    return [Later(revision=2 + i, actor="Ada", ops=batch) for i, batch in enumerate(batches)]


def test_a_move_and_a_relabel_of_one_node_both_apply_but_two_relabels_conflict() -> None:
    assert conflicts([relabel("n1", "Charge")], later([move("n1", 40)])) == []
    kept = conflicts([relabel("n1", "Bill")], later([move("n1", 40)], [relabel("n1", "Charge")]))
    assert [(k.revision, k.actor, k.describe()) for k in kept] == [(3, "Ada", "the name and description of n1")]
    assert kept[0].to_dict()["node"] == "n1"


def test_bindings_conflict_on_one_field_and_on_a_key_inside_it_not_on_another_field() -> None:
    assert conflicts([bind("n1", "amount", 2)], later([bind("n1", "currency", 1)])) == []
    assert conflicts([bind("n1", "amount", 2)], later([bind("n2", "amount", 1)])) == []
    kept = conflicts([bind("n1", "values.count", 2)], later([bind("n1", "values", 1)]))
    assert kept and kept[0].to_dict()["field"] == "input.values"


def test_deleting_a_node_conflicts_with_anything_on_it_and_with_routes_into_it() -> None:
    assert conflicts([move("n1", 3)], later([delete("n1")]))
    assert conflicts([delete("n1")], later([bind("n1", "a", 1)]))
    assert conflicts([{"op": "connect", "source": "n4", "label": "ok", "target": "n1"}], later([delete("n1")]))
    assert conflicts([delete("n2")], later([delete("n1")])) == []


def test_unknown_operations_and_whole_document_saves_conflict_with_everything() -> None:
    assert touches({"op": "something_new"}) == {EVERYTHING}
    assert touches({"op": "set_fields", "set": {"routes": []}, "unset": []}) == {EVERYTHING}
    # A whole-document save (the API) is logged without operations.
    assert conflicts([move("n1", 3)], [Later(2, "Ada", [])])
    assert collide((), ("node", "n1")) and not collide(("node", "n1"), ("node", "n2"))


def test_a_rename_owns_the_node_under_both_ids() -> None:
    rename = {"op": "set_basics", "node": "n1", "id": "charge", "name": ""}
    assert touches(rename) == {("node", "n1"), ("node", "charge")}
    assert conflicts([move("n1", 3)], later([{"op": "set_basics", "node": "n1", "id": "charge", "name": ""}]))


def _edit(kind: str, node: str, n: int) -> dict[str, Any]:
    return {"move": lambda: move(node, n), "relabel": lambda: relabel(node, f"Step {n}"),
            "bind": lambda: bind(node, "amount", n), "delete": lambda: delete(node)}[kind]()


edits_on_distinct_nodes = st.permutations(NODES).flatmap(
    lambda order: st.tuples(
        st.lists(st.tuples(st.sampled_from(["move", "relabel", "bind", "delete"]), st.integers(0, 99)),
                 min_size=1, max_size=3),
        st.lists(st.tuples(st.sampled_from(["move", "relabel", "bind", "delete"]), st.integers(0, 99)),
                 min_size=1, max_size=3),
    ).map(lambda pair: (
        [_edit(kind, order[i], n) for i, (kind, n) in enumerate(pair[0])],
        [_edit(kind, order[3 + i], n) for i, (kind, n) in enumerate(pair[1])],
    ))
)


@settings(max_examples=150, deadline=None)
@given(edits_on_distinct_nodes)
def test_edits_of_different_nodes_rebase_cleanly_and_either_server_order_gives_one_document(pair: Any) -> None:
    first, second = pair
    assert conflicts(second, later(first)) == []
    assert conflicts(first, later(second)) == []
    one = ops.apply_all(ops.apply_all(document(), first).document, second).document
    other = ops.apply_all(ops.apply_all(document(), second).document, first).document
    assert one == other


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(NODES), st.sampled_from(["move", "relabel", "bind"]), st.integers(0, 99),
       st.integers(0, 99))
def test_two_values_for_one_field_always_conflict(node: str, kind: str, a: int, b: int) -> None:
    assert conflicts([_edit(kind, node, b)], later([_edit(kind, node, a)]))
