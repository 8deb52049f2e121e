"""Binding targets with item indexes (``tags.0``) build arrays: in the runtime, the document check, the analyzer."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from runtime import Workflow, WorkflowBuilder, analyze
from runtime.paths import input_path, is_item_index
from runtime.tasks import TaskRegistry
from tests.runtime.engine_helpers import engine


def test_item_index_is_a_canonical_decimal() -> None:
    assert [s for s in ("0", "1", "12", "01", "-1", "1.0", "", "x1", "٣", "00") if is_item_index(s)] == ["0", "1", "12"]


def echo_workflow(bindings: list[dict[str, Any]], outputs: tuple[tuple[str, Any], ...] = ()) -> Workflow:
    g = WorkflowBuilder("arrays", input_schema={"type": "object", "properties": {
        "a": {}, "b": {}, "c": {}, "pair": {}}},
        state_schema={"type": "object", "properties": {"got": {}}})
    g.use("echo", id="e", input=bindings, output=[{"source": ".", "target": "got"}])
    for target, path in outputs:
        g.output(target, path)
    return g.build()


def test_item_targets_build_lists_in_index_order_typed_values_kept() -> None:
    workflow = echo_workflow([
        {"target": "value.tags.1", "path": input_path("b")},
        {"target": "value.tags.0", "path": input_path("a")},
        {"target": "value.tags.2", "value": {"k": [1, 2]}},
        {"target": "value.rows.0.name", "path": input_path("a")},
        {"target": "value.rows.0.size", "value": 3},
        {"target": "value.rows.1.name", "path": input_path("c")},
        {"target": "value.key", "value": "plain"},
    ])
    result = engine().run(workflow, {"a": "x", "b": 2, "c": None})
    assert result.state["got"] == {"tags": ["x", 2, {"k": [1, 2]}],
                                   "rows": [{"name": "x", "size": 3}, {"name": None}], "key": "plain"}


def test_a_missing_item_source_keeps_its_position_as_null() -> None:
    workflow = echo_workflow([{"target": "value.0", "path": input_path("a")},
                              {"target": "value.1", "path": input_path("c")},
                              {"target": "value.2", "path": input_path("b")}])
    assert engine().run(workflow, {"a": 1, "b": 3}).state["got"] == [1, None, 3]
    assert engine().run(workflow, {"a": 1}).state["got"] == [1, None, None]
    assert engine().run(workflow, {"a": 1, "c": 2}).state["got"] == [1, 2, None]


def test_an_item_is_written_over_a_whole_list_binding_whatever_their_order() -> None:
    workflow = echo_workflow([{"target": "value.0", "value": "first"}, {"target": "value", "path": input_path("a")}])
    assert engine().run(workflow, {"a": [1, 2, 3]}).state["got"] == ["first", 2, 3]
    # the input list itself is untouched (copy-on-write)
    data = {"a": [1, 2, 3]}
    engine().run(workflow, data)
    assert data == {"a": [1, 2, 3]}


def test_workflow_outputs_build_arrays_the_same_way() -> None:
    workflow = echo_workflow([{"target": "value", "value": 1}],
                             (("pair.0", input_path("a")), ("pair.1", input_path("b")), ("first", input_path("a"))))
    assert engine().run(workflow, {"a": "x", "b": "y"}).output == {"pair": ["x", "y"], "first": "x"}


def test_digit_keys_that_are_not_indexes_stay_object_keys_and_state_paths_never_build_arrays() -> None:
    g = WorkflowBuilder("keys", input_schema={"type": "object", "properties": {"a": {}}},
                        state_schema={"type": "object", "properties": {"got": {}}})
    g.use("echo", id="e", input=[{"target": "value.007", "path": input_path("a")}],
          output=[{"source": "007", "target": "got.0"}])
    assert engine().run(g.build(), {"a": 5}).state["got"] == {"0": 5}


@pytest.mark.parametrize(("targets", "message"), [
    (["x.0", "x.2"], "the items of 'x' are bound at 0, 2: number them 0, 1, 2, ... without gaps"),
    (["x.1"], "the items of 'x' are bound at 1"),
    (["x.0", "x.99999999999999999999"], "the items of 'x' are bound at 0, 99999999999999999999"),
    (["x.0", "x.k"], "'x' is filled both as an array (item 0) and as an object (key 'k')"),
    (["x.0.a", "x.1.0", "x.1.b"], "'x.1' is filled both as an array"),
])
def test_the_document_refuses_gaps_and_mixed_item_and_key_targets(targets: list[str], message: str) -> None:
    doc = {"id": "w", "nodes": [{"id": "n", "kind": "task", "task": "echo",
                                 "input": [{"target": t, "value": 1} for t in targets]}]}
    with pytest.raises(ValidationError) as caught:
        Workflow.model_validate(doc)
    assert f"node 'n': {message}" in str(caught.value)


def test_the_document_refuses_gaps_in_workflow_output_items() -> None:
    with pytest.raises(ValidationError, match=r"workflow outputs: the items of 'pair' are bound at 1"):
        Workflow.model_validate({"id": "w", "outputs": [{"target": "pair.1", "path": "input.a"}]})


class Line(BaseModel):
    sku: str
    qty: int


def typed_registry() -> TaskRegistry:
    reg = TaskRegistry()

    @reg.task
    def invoice(lines: list[Line], tags: list[str], pair: tuple[str, int], meta: dict[str, Any]) -> int:
        return len(lines)

    return reg


def diagnostics(bindings: list[dict[str, Any]]) -> list[tuple[str, str, str | None]]:
    doc = Workflow.model_validate({
        "id": "w", "input_schema": {"type": "object", "required": ["name", "n", "maybe"], "properties": {
            "name": {"type": "string"}, "n": {"type": "integer"}, "maybe": {"type": ["string", "null"]}}},
        "nodes": [{"id": "t", "kind": "task", "task": "invoice", "input": bindings}]})
    return [(d.code, d.severity, d.field) for d in analyze(doc, registry=typed_registry()).diagnostics]


WHOLE: list[dict[str, Any]] = [{"target": "pair", "value": ["a", 1]}, {"target": "meta", "value": {}}]


def test_the_analyzer_types_each_item_by_the_arrays_item_schema() -> None:
    good: list[dict[str, Any]] = [
            {"target": "lines.0.sku", "path": "input.name"}, {"target": "lines.0.qty", "path": "input.n"},
            {"target": "lines.1", "value": {"sku": "b", "qty": 2}},
            {"target": "tags.0", "path": "input.name"}, {"target": "tags.1", "value": "lit"}, *WHOLE]
    assert diagnostics(good) == []
    bad = [{"target": "lines.0.sku", "path": "input.n"}, {"target": "lines.0.qty", "path": "input.n"},
           {"target": "tags.0", "path": "input.n"}, {"target": "tags.1", "path": "input.maybe"}, *WHOLE]
    assert diagnostics(bad) == [
        ("binding.type_mismatch", "error", "input.lines.0.sku"),
        ("binding.type_mismatch", "error", "input.tags.0"),
        ("binding.type_mismatch", "warning", "input.tags.1"),
    ]


def test_the_analyzer_types_tuple_items_by_position_and_refuses_items_of_an_object() -> None:
    found = diagnostics([{"target": "lines", "value": []}, {"target": "tags", "value": []},
                         {"target": "pair.0", "path": "input.name"}, {"target": "pair.1", "path": "input.name"},
                         {"target": "meta.0", "path": "input.name"}])
    assert found == [("binding.type_mismatch", "error", "input.pair.1"),
                     ("binding.type_mismatch", "error", "input.meta.0")]
    doc = Workflow.model_validate({"id": "w", "input_schema": {"type": "object", "properties": {"name": {}}},
                                   "nodes": [{"id": "t", "kind": "task", "task": "invoice", "input": [
                                       *WHOLE[:0], {"target": "meta.0", "path": "input.name"}]}]})
    message = next(d.message for d in analyze(doc, registry=typed_registry()).diagnostics if d.field == "input.meta.0")
    assert "binds item 0 of 'meta'" in message and "not an array" in message


def test_field_schema_of_an_item_is_the_item_schema() -> None:
    doc = Workflow.model_validate({"id": "w", "nodes": [{"id": "t", "kind": "task", "task": "invoice"}]})
    analysis = analyze(doc, registry=typed_registry())
    assert analysis.field_schema("t", "input.tags.0") == {"type": "string"}
    assert analysis.field_schema("t", "input.pair.1") == {"type": "integer"}
    assert analysis.field_schema("t", "input.pair.2") is None  # a two-item tuple
    line = analysis.field_schema("t", "input.lines.3")
    assert line is not None and set(line["properties"]) == {"sku", "qty"}
    assert analysis.field_schema("t", "input.lines.0.qty") == {"type": "integer", "title": "Qty"}


def test_reading_an_item_by_index_is_typed_and_may_be_missing() -> None:
    doc = Workflow.model_validate({
        "id": "w", "input_schema": {"type": "object", "required": ["names"], "properties": {
            "names": {"type": "array", "items": {"type": "string"}}}},
        "nodes": [{"id": "t", "kind": "task", "task": "invoice", "input": [
            {"target": "tags.0", "path": "input.names.0"}, {"target": "lines", "value": []}, *WHOLE]}]})
    found = [(d.code, d.severity, d.field) for d in analyze(doc, registry=typed_registry()).diagnostics]
    # the list may be shorter: a warning, not an unknown path
    assert found == [("binding.type_mismatch", "warning", "input.tags.0")]


def test_a_task_steps_start_event_records_the_input_it_was_called_with_bounded() -> None:
    workflow = echo_workflow([{"target": "value.tags.0", "path": input_path("a")},
                              {"target": "value.text", "path": input_path("b")}])
    result = engine().run(workflow, {"a": "x", "b": "y" * 5000})
    started = [e for e in result.trace if e.kind == "node_started" and e.node_id == "e"]
    assert len(started) == 1
    recorded = started[0].summary["input"]
    assert recorded["value"]["tags"] == ["x"]
    text = recorded["value"]["text"]
    kept = text.split("…")[0]
    assert set(kept) == {"y"} and len(text) < 1000 and text.endswith(f"…(+{5000 - len(kept)})")
    assert result.state["got"]["text"] == "y" * 5000  # only the trace is bounded
