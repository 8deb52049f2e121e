"""Edit operations the mapping editor, the schema builder and the outputs panel add: pure functions
over the stored document, tested without a server."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from designer.core.errors import BadRequest
from designer.workflows import operations as edits


def _doc() -> dict[str, Any]:
    return {
        "id": "d",
        "input_schema": {"type": "object", "properties": {"name": {"type": "string"}}},
        "nodes": [
            {"id": "fill", "kind": "task", "task": "template", "input": [
                {"target": "template", "value": "{name}: {total}"},
                {"target": "values.name", "path": "input.name"},
                {"target": "values.order.total", "value": 3},
                {"target": "valuesx", "value": 1},
            ]},
            {"id": "ask", "kind": "interrupt", "prompt": "ok?", "labels": ["ok"]},
        ],
        "outputs": [{"target": "greeting", "path": "state.greeting"}],
    }


def _targets(doc: dict[str, Any]) -> list[str]:
    return [b["target"] for b in doc["nodes"][0]["input"]]


def test_unbind_tree_removes_a_composed_key_and_everything_below_it_only() -> None:
    doc = _doc()
    before = copy.deepcopy(doc)
    assert _targets(edits.unbind_tree(doc, "fill", "input.values.order")) == ["template", "values.name", "valuesx"]
    assert _targets(edits.unbind_tree(doc, "fill", "input.values")) == ["template", "valuesx"]
    assert _targets(edits.unbind_tree(doc, "fill", 'input."values"')) == ["template", "valuesx"]
    assert doc == before  # pure: the stored document is never changed in place
    with pytest.raises(BadRequest):
        edits.unbind_tree(doc, "fill", "values")  # not an input field


def test_sub_field_bindings_are_set_and_cleared_by_their_full_target() -> None:
    doc = edits.bind_path(_doc(), "fill", "input.values.total", "input.name")
    doc = edits.bind_literal(doc, "fill", "input.values.name", "Ada")  # replaces the path binding of that key
    assert doc["nodes"][0]["input"][-2:] == [{"target": "values.total", "path": "input.name"},
                                             {"target": "values.name", "value": "Ada"}]
    assert "values.total" not in _targets(edits.unbind(doc, "fill", "input.values.total"))


def test_set_schema_replaces_one_schema_and_refuses_a_default_that_breaks_its_field() -> None:
    schema = {"type": "object", "properties": {"tier": {"type": "string", "enum": ["a", "b"], "default": "a"}}}
    doc = edits.set_schema(_doc(), None, "state_schema", schema)
    assert doc["state_schema"] == schema
    resumed = edits.set_schema(_doc(), "ask", "resume_schema", schema)
    assert resumed["nodes"][1]["resume_schema"] == schema
    broken = {"type": "object", "properties": {"tier": {"type": "string", "enum": ["a", "b"], "default": "c"}}}
    with pytest.raises(BadRequest, match="default of 'tier' in the input schema breaks its own field"):
        edits.set_schema(_doc(), None, "input_schema", broken)
    with pytest.raises(BadRequest, match="not an interrupt"):
        edits.set_schema(_doc(), "fill", "resume_schema", schema)
    with pytest.raises(BadRequest, match="unknown schema"):
        edits.set_schema(_doc(), None, "output_schema", schema)
    with pytest.raises(BadRequest, match="JSON Schema object"):
        edits.set_schema(_doc(), None, "input_schema", [1])


def test_workflow_outputs_are_added_by_name_and_path_replacing_the_same_name_and_removed() -> None:
    doc = edits.add_workflow_output(_doc(), "count", "state.count")
    assert doc["outputs"][-1] == {"target": "count", "path": "state.count"}
    doc = edits.add_workflow_output(doc, "greeting", "input.name")
    assert doc["outputs"] == [{"target": "count", "path": "state.count"}, {"target": "greeting", "path": "input.name"}]
    assert edits.remove_workflow_output(doc, 0)["outputs"] == [{"target": "greeting", "path": "input.name"}]
    with pytest.raises(BadRequest, match="name the output"):
        edits.add_workflow_output(doc, " ", "state.count")
    with pytest.raises(BadRequest):
        edits.add_workflow_output(doc, "x", "nowhere.count")
    with pytest.raises(BadRequest, match="no longer exists"):
        edits.remove_workflow_output(doc, 5)
