"""The version comparison's diff: a pure function on documents, checked by example and by Hypothesis."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from designer.workflows.diff import apply_changes, diff, labels_of, node_marks, normalized
from tests.designer.conftest import simple_document

# --- examples ------------------------------------------------------------------------


def test_nothing_differs_between_a_document_and_itself_or_a_moved_copy() -> None:
    doc = simple_document()
    moved = copy.deepcopy(doc)
    moved["metadata"] = {"positions": {"assess": {"x": 500, "y": 10}}}
    moved["routes"].reverse()
    assert diff(doc, doc) == []
    assert diff(doc, moved) == []


def test_each_kind_of_change_is_listed_with_its_node() -> None:
    a = simple_document()
    b = copy.deepcopy(a)
    b["nodes"][0]["input"][0]["path"] = "input.total"  # a binding of assess changed
    b["nodes"][1]["task"] = "ship_order"  # record's own field changed
    b["nodes"].append({"id": "extra", "kind": "task", "task": "sum_totals", "input": [], "output": []})
    b["routes"] = [r for r in b["routes"] if r["label"] != "review"]
    b["routes"].append({"source": "record", "label": "approved", "target": "extra"})
    b["input_schema"]["properties"]["note"] = {"type": "string"}
    b["outputs"] = []
    found = {(c.what, c.change, c.key) for c in diff(a, b)}
    assert found == {
        ("input", "changed", "amount"),
        ("node", "changed", "record"),
        ("node", "added", "extra"),
        ("route", "removed", "assess --review"),
        ("route", "added", "record --approved"),
        ("schema", "changed", "input_schema"),
        ("output_field", "removed", "decision"),
    }
    assert node_marks(diff(a, b)) == {"assess": "changed", "record": "changed", "extra": "added"}
    summaries = [c.summary for c in diff(a, b)]
    assert "node record changed" in summaries
    assert "route assess --review removed" in summaries


def _details(change: Any, labels: dict[str, str] | None = None) -> list[tuple[str, str | None, str | None]]:
    return [(d.field, d.before, d.after) for d in change.details(labels)]


def test_each_change_shows_its_before_and_after_values_with_nodes_by_label() -> None:
    a = simple_document()
    a["nodes"][0]["name"] = "Assess the request"
    a["nodes"][1]["name"] = "Record decision"
    b = copy.deepcopy(a)
    b["nodes"][0]["input"][0]["path"] = "input.total"
    b["nodes"][1]["input"][0]["value"] = False
    b["nodes"][1]["task"] = "ship_order"
    b["nodes"].append({"id": "extra", "name": "Sum it up", "kind": "task", "task": "sum_totals",
                       "input": [{"target": "items", "template": "{{ input.amount }}"}], "output": []})
    for route in b["routes"]:
        if route["label"] == "review":
            route["target"] = "extra"
    b["input_schema"]["properties"]["note"] = {"type": "string"}
    b["outputs"][0]["path"] = "state.decision.approved"
    labels = labels_of(a, b)
    changes = {(c.what, c.key): c for c in diff(a, b)}

    binding = changes[("input", "amount")]
    assert binding.describe(labels) == "input binding amount of Assess the request changed"
    assert _details(binding, labels) == [("source", "input.amount", "input.total")]
    # A literal is shown as JSON, so the boolean false is not mistaken for a path or text.
    assert _details(changes[("input", "approved")], labels) == [("source", "true", "false")]
    assert _details(changes[("node", "record")], labels) == [("task", "record_decision", "ship_order")]
    assert changes[("node", "record")].describe(labels) == "node Record decision changed"
    route = changes[("route", "assess --review")]
    assert route.describe(labels) == "route Assess the request --review changed"
    assert _details(route, labels) == [("target", "Record decision", "Sum it up")]
    added = _details(changes[("node", "extra")], labels)
    assert ("task", None, "sum_totals") in added and ("name", None, "Sum it up") in added
    assert ("input items", None, 'template "{{ input.amount }}"') in added
    assert not any(field == "output" for field, _, _ in added)  # an empty list is not a value worth a line
    # A schema change is the one property that changed, not two whole schemas.
    assert _details(changes[("schema", "input_schema")]) == [("properties.note", None, '{"type": "string"}')]
    assert _details(changes[("output_field", "decision")]) == [("source", "state.decision",
                                                                "state.decision.approved")]
    as_dict = route.to_dict(labels)
    assert as_dict["summary"] == "route Assess the request --review changed"
    assert as_dict["details"] == [{"field": "target", "before": "Record decision", "after": "Sum it up"}]


def test_a_removed_node_and_a_moved_start_are_shown_by_label() -> None:
    a = simple_document()
    a["nodes"][1]["name"] = "Record decision"
    a["start"] = "assess"
    b = copy.deepcopy(a)
    b["start"] = "record"
    b["nodes"] = [n for n in b["nodes"] if n["id"] != "assess"]
    b["routes"] = []
    labels = labels_of(a, b)
    changes = {(c.what, c.key): c for c in diff(a, b)}
    removed = _details(changes[("node", "assess")], labels)
    assert ("task", "assess_request", None) in removed and ("input amount", "input.amount", None) in removed
    assert _details(changes[("setting", "start")], labels) == [("", "assess", "Record decision")]


def test_moving_the_implicit_start_is_a_change() -> None:
    a = simple_document()
    a.pop("start", None)
    b = copy.deepcopy(a)
    b["nodes"].reverse()
    assert [(c.what, c.key, c.before, c.after) for c in diff(a, b)] == [("setting", "start", "assess", "record")]


# --- properties ----------------------------------------------------------------------

IDS = st.sampled_from(["a", "b", "c", "d", "e"])
LEAF = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text("xyz", max_size=3))
BINDING = st.builds(lambda target, path: {"target": target, "path": path},
                    st.sampled_from(["x", "y", "z", "w.v"]), st.sampled_from(["input.a", "state.b", "input.c"]))


@st.composite
def documents(draw: Any) -> dict[str, Any]:
    ids = draw(st.lists(IDS, unique=True, max_size=5))
    nodes = []
    for node_id in ids:
        node: dict[str, Any] = {"id": node_id, "kind": draw(st.sampled_from(["task", "branch"]))}
        node["task"] = draw(st.sampled_from(["t1", "t2"]))
        if draw(st.booleans()):
            node["name"] = draw(st.text("ab", max_size=2))
        if draw(st.booleans()):
            node["input"] = draw(st.lists(BINDING, max_size=3, unique_by=lambda b: b["target"]))
        if draw(st.booleans()):
            node["output"] = draw(st.lists(BINDING, max_size=2, unique_by=lambda b: b["target"]))
        nodes.append(node)
    routes = []
    if ids:
        routes = draw(st.lists(st.builds(lambda s, label, t: {"source": s, "label": label, "target": t},
                                         st.sampled_from(ids), st.sampled_from(["ok", "error", "loop"]),
                                         st.sampled_from(ids)),
                               max_size=6, unique_by=lambda r: (r["source"], r["label"])))
    doc: dict[str, Any] = {"id": "wf", "nodes": nodes, "routes": routes,
                           "input_schema": draw(st.dictionaries(st.sampled_from(["type", "title"]), LEAF, max_size=2)),
                           "outputs": draw(st.lists(BINDING, max_size=2, unique_by=lambda b: b["target"]))}
    if draw(st.booleans()):
        doc["state_schema"] = {"type": "object"}
    if ids and draw(st.booleans()):
        doc["start"] = draw(st.sampled_from(ids))
    if draw(st.booleans()):
        doc["name"] = draw(st.text("nm", max_size=2))
    if draw(st.booleans()):
        doc["metadata"] = {"positions": {i: {"x": 1, "y": 2} for i in ids}}
    return doc


@settings(max_examples=300, deadline=None)
@given(documents())
def test_a_document_never_differs_from_itself(doc: dict[str, Any]) -> None:
    assert diff(doc, copy.deepcopy(doc)) == []


@settings(max_examples=400, deadline=None)
@given(documents(), documents())
def test_applying_the_listed_changes_explains_every_difference(a: dict[str, Any], b: dict[str, Any]) -> None:
    before = copy.deepcopy(a)
    changes = diff(a, b)
    assert as_json(normalized(apply_changes(a, changes))) == as_json(normalized(b))
    assert a == before  # pure: neither the diff nor the replay touched the original
    # and the list is empty exactly when nothing that matters differs
    assert (changes == []) == (as_json(normalized(a)) == as_json(normalized(b)))


def as_json(value: Any) -> str:
    # Compared as JSON, not as Python values: False == 0 in Python, but a schema's false and 0 differ.
    return json.dumps(value, sort_keys=True)
