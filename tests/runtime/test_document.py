"""The workflow document: shapes, JSON round trips and structural errors."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from runtime import Workflow, document
from runtime.document import ForeachNode, InputBinding, OutputBinding, TaskNode
from runtime.paths import GraphSourcePath, LocalPath, StatePath, context_path, input_path, is_item_index, state_path


def validation_message(doc: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as caught:
        Workflow.model_validate(doc)
    return str(caught.value)


def task(node_id: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "task", "id": node_id, "task": "noop", **extra}


# --- shapes --------------------------------------------------------------------------------------


def test_nodes_are_a_union_discriminated_on_kind() -> None:
    doc = Workflow.model_validate({
        "id": "w",
        "nodes": [
            task("t"),
            {"kind": "foreach", "id": "f", "over": "state.items"},
            {"kind": "subgraph", "id": "s", "workflow": {"id": "child"}},
            {"kind": "branch", "id": "b", "path": "input.x", "cases": [{"label": "big", "op": "gt", "value": 3}]},
            {"kind": "interrupt", "id": "i", "prompt": "ok?"},
        ],
    })
    assert [type(n) for n in doc.nodes] == [TaskNode, ForeachNode, document.SubgraphNode, document.BranchNode,
                                            document.InterruptNode]
    assert doc.node("f").over == state_path("items")  # type: ignore[union-attr]


def test_unknown_node_kind_is_refused_with_the_allowed_kinds() -> None:
    message = validation_message({"id": "w", "nodes": [{"kind": "python", "id": "x"}]})
    assert "'python'" in message
    assert "'task', 'foreach', 'subgraph', 'branch', 'interrupt'" in message


def test_schema_version_defaults_to_1_and_other_versions_are_refused() -> None:
    assert Workflow(id="w").schema_version == 1
    assert Workflow(id="w").model_dump(mode="json")["schema_version"] == 1
    message = validation_message({"id": "w", "schema_version": 2})
    assert "schema_version" in message and "Input should be 1" in message


@pytest.mark.parametrize("flag", [True, False])
def test_a_boolean_schema_version_is_refused_though_python_compares_true_equal_to_1(flag: bool) -> None:
    # Literal[1] alone accepts True (True == 1 in Python); JSON and the published schema say a boolean is not 1.
    message = validation_message({"id": "w", "schema_version": flag})
    assert "schema_version" in message
    assert f"got the boolean {str(flag).lower()}; write 1" in message
    with pytest.raises(ValidationError, match="got the boolean true"):
        Workflow.model_validate_json('{"id": "w", "schema_version": true}')
    assert Workflow.model_validate({"id": "w", "schema_version": 1}).schema_version == 1


def test_paths_serialize_as_toml_strings_and_parse_back_structurally() -> None:
    node = TaskNode(
        id="t", task="noop",
        input=[InputBinding(target=LocalPath(("order",)), path=context_path("foreach", "orders.v2", "item"))],
        output=[OutputBinding(source=LocalPath(()), target=StatePath(("totals", "eu west")), mode="append")],
    )
    dumped = node.model_dump(mode="json")
    assert dumped["input"] == [{"target": "order", "path": 'context.foreach."orders.v2".item'}]
    assert dumped["output"] == [{"source": ".", "target": 'totals."eu west"', "mode": "append"}]
    again = TaskNode.model_validate(dumped)
    assert again.input[0].path == GraphSourcePath("context", ("foreach", "orders.v2", "item"))
    assert again.output[0].target == StatePath(("totals", "eu west"))
    assert again == node


def test_paths_accept_strings_or_values_and_refuse_other_types() -> None:
    by_text = InputBinding(target="a.b", path="input.x")  # type: ignore[arg-type]
    by_value = InputBinding(target=LocalPath(("a", "b")), path=input_path("x"))
    assert by_text == by_value
    with pytest.raises(ValidationError, match="expected a GraphSourcePath or its string form, got list"):
        InputBinding(target="a", path=["input", "x"])  # type: ignore[arg-type]


def test_input_binding_null_value_is_a_legitimate_literal() -> None:
    binding = InputBinding.model_validate({"target": "note", "value": None})
    assert binding.is_literal and binding.value is None
    dumped = binding.model_dump(mode="json")
    assert dumped == {"target": "note", "value": None}
    assert InputBinding.model_validate(json.loads(json.dumps(dumped))) == binding


def test_input_binding_by_path_does_not_serialize_a_value() -> None:
    binding = InputBinding(target="x", path=input_path("a"))  # type: ignore[arg-type]
    assert not binding.is_literal
    assert binding.model_dump(mode="json") == {"target": "x", "path": "input.a"}


def test_binding_with_both_or_neither_source_is_refused() -> None:
    with pytest.raises(ValidationError, match="binding for 'x' has both a path and a value; give exactly one"):
        InputBinding.model_validate({"target": "x", "path": "input.a", "value": 1})
    with pytest.raises(ValidationError, match="binding for 'x' has neither a path nor a value"):
        InputBinding.model_validate({"target": "x"})


def test_binding_errors_inside_a_workflow_name_the_node() -> None:
    message = validation_message({"id": "w", "nodes": [
        task("charge", input=[{"target": "order", "path": "input.order", "value": {"id": 1}}]),
    ]})
    assert "node 'charge': binding for 'order' has both a path and a value; give exactly one" in message
    assert "nodes.0.task.input.0" in message


def test_errors_inside_a_node_keep_location_and_type() -> None:
    with pytest.raises(ValidationError) as caught:
        Workflow.model_validate({"id": "w", "nodes": [
            {"kind": "foreach", "id": "orders", "over": "output.orders", "max_concurrency": 0},
        ]})
    errors = {tuple(e["loc"]): e for e in caught.value.errors()}
    over = errors[("nodes", 0, "foreach", "over")]
    assert over["msg"].startswith("node 'orders': invalid path 'output.orders' at position 0: unknown root 'output'")
    limit = errors[("nodes", 0, "foreach", "max_concurrency")]
    assert limit["type"] == "greater_than_equal"
    assert limit["msg"] == "node 'orders': Input should be greater than or equal to 1"


def test_output_binding_modes() -> None:
    for mode in ("set", "append", "extend", "merge"):
        assert OutputBinding(target="x", mode=mode).mode == mode  # type: ignore[arg-type]
    assert OutputBinding(target="x").mode == "set"  # type: ignore[arg-type]
    assert OutputBinding(target="x").source == LocalPath(())  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="'set', 'append', 'extend' or 'merge'"):
        OutputBinding(target="x", mode="replace")  # type: ignore[arg-type]


def test_output_binding_target_must_be_a_state_path() -> None:
    with pytest.raises(ValidationError, match="at position 0"):
        OutputBinding.model_validate({"target": ""})


def test_literal_values_must_be_json() -> None:
    with pytest.raises(ValidationError, match="the value is nan, which JSON cannot represent"):
        InputBinding(target="x", value=float("nan"))  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=r"the value\[0\] is a tuple, which is not JSON"):
        document.BranchCase(label="a", value=[(1, 2)])
    with pytest.raises(ValidationError, match="non-string key 1"):
        Workflow.model_validate({"id": "w", "metadata": {"pos": {1: 2}}})


def test_workflow_outputs_project_paths_into_local_fields() -> None:
    doc = Workflow(id="w", outputs=[document.WorkflowOutput(target="total", path="state.sum")])  # type: ignore[arg-type]
    assert doc.model_dump(mode="json")["outputs"] == [{"target": "total", "path": "state.sum"}]
    message = validation_message({"id": "w", "outputs": [
        {"target": "total", "path": "state.a"}, {"target": "total", "path": "state.b"},
    ]})
    assert "workflow output field 'total' is projected more than once" in message


def test_input_and_state_schemas_are_json_schema_objects() -> None:
    doc = Workflow(id="w")
    assert doc.input_schema == {"type": "object", "properties": {}}
    assert doc.state_schema == {"type": "object", "properties": {}}
    schema = {"type": "object", "properties": {"n": {"type": "integer", "default": 0}}, "required": []}
    assert Workflow(id="w", state_schema=schema).model_dump(mode="json")["state_schema"] == schema


def test_foreach_alias_serializes_as_as() -> None:
    node = ForeachNode(id="orders", over="state.orders", as_="order")  # type: ignore[arg-type]
    dumped = node.model_dump(mode="json")
    assert dumped["as"] == "order" and "as_" not in dumped
    assert ForeachNode.model_validate(dumped).as_ == "order"


def test_retry_policy_backoff_is_capped() -> None:
    policy = document.RetryPolicy(max_attempts=5, backoff_seconds=1, backoff_multiplier=3, max_backoff_seconds=5)
    assert [policy.delay_before(n) for n in (1, 2, 3, 4)] == [0.0, 1.0, 3.0, 5.0]


def test_workflow_helpers() -> None:
    doc = Workflow.model_validate({
        "id": "w", "nodes": [task("a"), task("b")],
        "routes": [{"source": "a", "label": "ok", "target": "b"}],
    })
    assert doc.start_node == "a"
    assert doc.model_copy(update={"start": "b"}).start_node == "b"
    assert doc.routes_from("a") == {"ok": "b"}
    assert list(doc.node_map()) == ["a", "b"]
    with pytest.raises(KeyError):
        doc.node("zz")
    assert Workflow(id="empty").start_node is None


def test_json_schema_of_the_document_is_generated_with_paths_as_strings() -> None:
    schema = Workflow.model_json_schema()
    binding = schema["$defs"]["InputBinding"]["properties"]
    assert binding["path"]["anyOf"][0]["type"] == "string"
    assert binding["target"]["type"] == "string"
    json.dumps(schema)


# --- structural errors ---------------------------------------------------------------------------


def test_duplicate_node_ids_are_refused_naming_the_node() -> None:
    message = validation_message({"id": "w", "nodes": [task("a"), task("b"), task("a")]})
    assert "node id 'a' is used by more than one node; node ids must be unique" in message


@pytest.mark.parametrize("node_id, bad", [("a\x00b", "\x00"), ("tab\there", "\t"), ("\x7f", "\x7f")])
def test_control_characters_in_node_ids_are_refused_naming_the_id(node_id: str, bad: str) -> None:
    message = validation_message({"id": "w", "nodes": [task(node_id)]})
    assert f"a node id may not contain control characters; found {bad!r} in {node_id!r}" in message


def test_route_to_a_missing_node_is_refused_naming_both_ends() -> None:
    message = validation_message({
        "id": "w", "nodes": [task("a")], "routes": [{"source": "a", "label": "ok", "target": "ghost"}],
    })
    assert "route 'a' --ok--> 'ghost': target node 'ghost' does not exist" in message
    message = validation_message({
        "id": "w", "nodes": [task("a")], "routes": [{"source": "nobody", "label": "ok", "target": "a"}],
    })
    assert "source node 'nobody' does not exist" in message


def test_two_routes_for_one_label_are_refused() -> None:
    message = validation_message({
        "id": "w", "nodes": [task("a"), task("b"), task("c")],
        "routes": [{"source": "a", "label": "ok", "target": "b"}, {"source": "a", "label": "ok", "target": "c"}],
    })
    assert "node 'a' has more than one route for label 'ok'" in message


def test_missing_start_node_is_refused() -> None:
    assert "start node 'x' does not exist" in validation_message({"id": "w", "start": "x", "nodes": [task("a")]})


def test_binding_one_input_field_twice_is_refused() -> None:
    message = validation_message({"id": "w", "nodes": [
        task("a", input=[{"target": "x", "value": 1}, {"target": "x", "value": 2}]),
    ]})
    assert "node 'a' binds input field 'x' more than once" in message


def test_duplicate_branch_case_and_interrupt_labels_are_refused() -> None:
    message = validation_message({"id": "w", "nodes": [
        {"kind": "branch", "id": "b", "path": "input.x", "cases": [{"label": "hi"}, {"label": "hi"}]},
        {"kind": "interrupt", "id": "i", "labels": ["yes", "yes"]},
    ]})
    assert "branch 'b' has more than one case labelled 'hi'" in message
    assert "interrupt 'i' declares label 'yes' more than once" in message


def test_every_structural_problem_is_reported_at_once() -> None:
    message = validation_message({
        "id": "w", "nodes": [task("a"), task("a")],
        "routes": [{"source": "a", "label": "ok", "target": "ghost"}],
    })
    assert "used by more than one node" in message and "'ghost' does not exist" in message


def test_unknown_fields_are_refused() -> None:
    assert "Extra inputs are not permitted" in validation_message({"id": "w", "colour": "red"})


# --- round trip (Hypothesis) ---------------------------------------------------------------------

texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
parts = st.lists(texts, max_size=3).map(tuple)
source_paths = st.builds(GraphSourcePath, st.sampled_from(["input", "state", "context"]), parts)
local_paths = st.builds(LocalPath, parts)
# Payload targets name keys here: item indexes must run 0, 1, ... (tests/runtime/test_array_targets.py)
target_paths = st.builds(LocalPath, st.lists(texts.filter(lambda s: not is_item_index(s)), max_size=3).map(tuple))
state_paths = st.builds(StatePath, st.lists(texts, min_size=1, max_size=3).map(tuple))


@st.composite
def bindings(draw: st.DrawFn) -> list[InputBinding]:
    targets = draw(st.lists(target_paths, max_size=3, unique_by=str))
    out = []
    for target in targets:
        if draw(st.booleans()):
            out.append(InputBinding(target=target, path=draw(source_paths)))
        else:
            out.append(InputBinding(target=target, value=draw(json_values)))
    return out


outputs = st.lists(
    st.builds(OutputBinding, source=local_paths, target=state_paths,
              mode=st.sampled_from(["set", "append", "extend", "merge"])),
    max_size=2,
)
labels = st.text(min_size=1, max_size=6)


@st.composite
def nodes(draw: st.DrawFn, node_id: str) -> Any:
    kind = draw(st.sampled_from(["task", "foreach", "subgraph", "branch", "interrupt"]))
    name = draw(st.none() | texts)
    if kind == "task":
        retry = draw(st.none() | st.builds(document.RetryPolicy, max_attempts=st.integers(1, 5)))
        return TaskNode(id=node_id, name=name, task=draw(st.text(min_size=1, max_size=8)),
                        input=draw(bindings()), output=draw(outputs), retry=retry)
    if kind == "foreach":
        return ForeachNode(id=node_id, over=draw(source_paths), as_=draw(st.none() | st.text(min_size=1)),
                           max_concurrency=draw(st.integers(1, 8)))
    if kind == "subgraph":
        ref = document.WorkflowRef(id=draw(st.text(min_size=1, max_size=6)),
                                   version=draw(st.none() | st.integers(0, 9)))
        return document.SubgraphNode(id=node_id, workflow=ref, input=draw(bindings()), output=draw(outputs))
    if kind == "branch":
        case_labels = draw(st.lists(labels, max_size=3, unique=True))
        cases = [document.BranchCase(label=label, op=draw(st.sampled_from(["equals", "in", "gt", "truthy"])),
                            value=draw(json_values)) for label in case_labels]
        return document.BranchNode(id=node_id, path=draw(source_paths), cases=cases)
    return document.InterruptNode(id=node_id, prompt=draw(texts), input=draw(bindings()), output=draw(outputs),
                         labels=draw(st.lists(labels, min_size=1, max_size=3, unique=True)),
                         resume_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}})


@st.composite
def workflows(draw: st.DrawFn) -> Workflow:
    node_ids = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=8)
    ids = draw(st.lists(node_ids, max_size=5, unique=True))
    node_list = [draw(nodes(node_id)) for node_id in ids]
    routes: dict[tuple[str, str], str] = {}
    if ids:
        for _ in range(draw(st.integers(0, 6))):
            routes[(draw(st.sampled_from(ids)), draw(labels))] = draw(st.sampled_from(ids))
    output_targets = draw(st.lists(target_paths, max_size=3, unique_by=str))
    return Workflow(
        id=draw(st.text(min_size=1, max_size=10)),
        name=draw(texts),
        input_schema={"type": "object", "properties": {"a": {"type": "integer"}}},
        start=draw(st.none() | st.sampled_from(ids)) if ids else None,
        nodes=node_list,
        routes=[document.WorkflowRoute(source=s, label=label, target=t) for (s, label), t in routes.items()],
        outputs=[document.WorkflowOutput(target=target, path=draw(source_paths)) for target in output_targets],
        metadata=draw(st.dictionaries(texts, json_values, max_size=3)),
    )


@settings(max_examples=150, deadline=None)
@given(workflows())
def test_documents_survive_a_json_round_trip_unchanged(doc: Workflow) -> None:
    dumped = doc.model_dump(mode="json")
    text = json.dumps(dumped)
    again = Workflow.model_validate(json.loads(text))
    assert again == doc
    assert again.model_dump(mode="json") == dumped
    assert Workflow.model_validate_json(doc.model_dump_json()) == doc


def _mutable_parts(value: Any, where: str) -> list[str]:
    """Where a document holds a container that can change in place: its structure (models, tuples) and the
    JSON values in it (schemas, metadata, literals), whose objects and arrays must refuse every change."""
    if isinstance(value, BaseModel):
        return [found for name in type(value).model_fields
                for found in _mutable_parts(getattr(value, name), f"{where}.{name}")]
    if isinstance(value, tuple):
        return [found for index, item in enumerate(value) for found in _mutable_parts(item, f"{where}[{index}]")]
    if isinstance(value, dict | list):
        try:  # a change that changes nothing, so a plain container found here is left as it was
            value.update({}) if isinstance(value, dict) else value.extend([])
        except TypeError:
            pass
        else:
            return [where]
        items = value.items() if isinstance(value, dict) else enumerate(value)
        return [found for key, item in items for found in _mutable_parts(item, f"{where}[{key!r}]")]
    return [where] if isinstance(value, set | bytearray) else []


@settings(max_examples=100, deadline=None)
@given(workflows())
def test_nothing_in_a_document_can_change_in_place_however_it_was_made(doc: Workflow) -> None:
    # Engine.compile caches a plan per document object, so nothing in it may change in place (a node appended,
    # a binding removed, a key added to a schema, a literal's item replaced): built from models, validated from
    # JSON data or JSON text, copied with an update, deep-copied or unpickled.
    data = doc.model_dump(mode="json")
    for made in (doc, Workflow.model_validate(data), Workflow.model_validate_json(json.dumps(data)),
                 doc.model_copy(update={"nodes": list(doc.nodes), "routes": list(doc.routes),
                                        "metadata": data["metadata"], "input_schema": data["input_schema"]}),
                 copy.deepcopy(doc), pickle.loads(pickle.dumps(doc))):
        assert _mutable_parts(made, "workflow") == []
        assert made == doc and made.model_dump(mode="json") == data


def test_foreach_distribution_settings_round_trip_and_are_left_out_when_unset() -> None:
    plain = ForeachNode(id="f", over="input.xs")
    assert set(plain.model_dump(mode="json")) == {"kind", "id", "name", "description", "over", "as",
                                                  "max_concurrency"}
    node = ForeachNode(id="f", over="input.xs", batch_size=100, max_batches_in_flight=3,
                       tolerated_failure_count=2, tolerated_failure_percentage=12.5)
    assert ForeachNode.model_validate(node.model_dump(mode="json")) == node
    for field, bad in (("batch_size", 0), ("max_batches_in_flight", 0), ("tolerated_failure_count", -1),
                       ("tolerated_failure_percentage", 101)):
        with pytest.raises(ValidationError, match=f"node 'f'.*|{field}"):
            ForeachNode.model_validate({"id": "f", "over": "input.xs", field: bad})


def test_failure_tolerance_is_exceeded_when_either_limit_is() -> None:
    assert ForeachNode(id="f", over="input.xs").too_many_failures(1, 100)
    assert not ForeachNode(id="f", over="input.xs").too_many_failures(0, 100)
    by_count = ForeachNode(id="f", over="input.xs", tolerated_failure_count=2)
    assert not by_count.too_many_failures(2, 3) and by_count.too_many_failures(3, 100)
    by_share = ForeachNode(id="f", over="input.xs", tolerated_failure_percentage=10)
    assert not by_share.too_many_failures(10, 100) and by_share.too_many_failures(11, 100)
    both = ForeachNode(id="f", over="input.xs", tolerated_failure_count=50, tolerated_failure_percentage=10)
    assert both.too_many_failures(11, 100)  # within the count, beyond the share
