"""WorkflowBuilder: the authoring surface, including the seed's "Path and authoring" requirements."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ValidationError

from runtime import Workflow, WorkflowBuilder
from runtime.document import (
    BranchCase,
    ForeachNode,
    InputBinding,
    OutputBinding,
    RetryPolicy,
    SubgraphNode,
    TaskNode,
    WorkflowRef,
)
from runtime.errors import PathSyntaxError, WorkflowBuildError
from runtime.paths import GraphSourcePath, input_path, parse_source_path, state_path
from runtime.tasks import TaskRegistry

registry = TaskRegistry()


class Order(BaseModel):
    id: str
    amount: float


class Orders(BaseModel):
    orders: list[Order] = []
    charged: list[Order] = []


@registry.task
def charge_order(order: Order) -> Order:
    return order


@registry.task(name="notify", labels=("sent", "skipped"))
def send_notice(text: str) -> str:
    return text


def orders_graph() -> tuple[WorkflowBuilder, ForeachNode, TaskNode]:
    graph = WorkflowBuilder(id="charge-all", name="Charge all", state_schema=Orders)
    orders = graph.foreach(id="orders", over=state_path("orders"), as_="order")
    charge = graph.use(
        charge_order,
        input=[{"target": "order", "path": orders.item}],
        output=[{"source": ".", "target": "charged", "mode": "append"}],
    )
    graph.set_route(orders, "loop", charge)
    graph.set_route(charge, "ok", orders)
    return graph, orders, charge


# --- the seed's "Path and authoring" tests -------------------------------------------------------


def test_foreach_item_and_index_produce_structural_literal_segments() -> None:
    graph = WorkflowBuilder(id="w")
    orders = graph.foreach(id="orders", over=state_path("orders"), as_="order")
    assert orders.item == GraphSourcePath("context", ("foreach", "orders", "item"))
    assert orders.index == GraphSourcePath("context", ("foreach", "orders", "index"))
    assert str(orders.item) == "context.foreach.orders.item"
    assert str(orders.index) == "context.foreach.orders.index"


def test_foreach_id_with_dot_serializes_as_quoted_single_segment() -> None:
    graph = WorkflowBuilder(id="w")
    orders = graph.foreach(id="orders.v2", over="state.orders")
    assert orders.item.parts == ("foreach", "orders.v2", "item")
    assert str(orders.item) == 'context.foreach."orders.v2".item'
    assert parse_source_path(str(orders.item)) == orders.item
    step = graph.use("noop", input=[{"target": "order", "path": orders.item}])
    graph.set_route(orders, "loop", step)
    graph.set_route(step, "ok", orders)
    dumped = graph.build().model_dump(mode="json")
    assert dumped["nodes"][1]["input"] == [{"target": "order", "path": 'context.foreach."orders.v2".item'}]
    again = Workflow.model_validate(json.loads(json.dumps(dumped)))
    assert again.node("noop").input[0].path == GraphSourcePath(  # type: ignore[union-attr]
        "context", ("foreach", "orders.v2", "item")
    )


def test_computed_properties_are_not_persisted_fields() -> None:
    graph, orders, _ = orders_graph()
    assert "item" not in ForeachNode.model_fields and "index" not in ForeachNode.model_fields
    dumped = orders.model_dump(mode="json")
    assert set(dumped) == {"id", "name", "description", "kind", "over", "as", "max_concurrency"}
    assert "item" not in ForeachNode.model_json_schema()["properties"]
    stored = graph.build().model_dump(mode="json")["nodes"][0]
    assert "item" not in stored and "index" not in stored
    with pytest.raises(Exception, match="Extra inputs are not permitted"):
        ForeachNode.model_validate({**dumped, "item": "context.foreach.orders.item"})


def test_foreach_refs_work_in_node_and_subgraph_input_bindings() -> None:
    graph = WorkflowBuilder(id="w")
    orders = graph.foreach(id="orders", over=state_path("orders"))
    charge = graph.use(charge_order, input=[{"target": "order", "path": orders.item}])
    child = graph.subgraph(
        workflow="audit",
        input=[{"target": "order", "path": orders.item}, InputBinding(target="position", path=orders.index)],
    )
    graph.set_route(orders, "loop", charge)
    graph.set_route(charge, "ok", child)
    graph.set_route(child, "ok", orders)
    doc = graph.build()
    dumped = doc.model_dump(mode="json")
    assert dumped["nodes"][1]["input"] == [{"target": "order", "path": "context.foreach.orders.item"}]
    assert dumped["nodes"][2]["input"] == [
        {"target": "order", "path": "context.foreach.orders.item"},
        {"target": "position", "path": "context.foreach.orders.index"},
    ]
    assert Workflow.model_validate(json.loads(json.dumps(dumped))) == doc


def test_graph_source_path_rejects_output_root() -> None:
    with pytest.raises(PathSyntaxError, match="a graph path starts with one of input, state, context"):
        GraphSourcePath("output", ("charge",))  # type: ignore[arg-type]
    graph = WorkflowBuilder(id="w")
    with pytest.raises(WorkflowBuildError) as caught:
        graph.use("noop", input=[{"target": "x", "path": "output.charge.total"}])
    assert "node 'noop': invalid path 'output.charge.total' at position 0: unknown root 'output'" in str(caught.value)
    with pytest.raises(WorkflowBuildError, match="unknown root 'output'"):
        graph.output("total", "output.total")


# --- the builder ---------------------------------------------------------------------------------


def test_seed_example_builds_the_expected_document() -> None:
    graph, _, _ = orders_graph()
    doc = graph.build()
    assert doc.model_dump(mode="json") == {
        "schema_version": 1,
        "id": "charge-all",
        "name": "Charge all",
        "description": "",
        "input_schema": {"type": "object", "properties": {}},
        "state_schema": doc.state_schema,
        "start": "orders",
        "nodes": [
            {"id": "orders", "name": None, "description": "", "kind": "foreach", "over": "state.orders",
             "as": "order", "max_concurrency": 1},
            {"id": "charge_order", "name": None, "description": "", "kind": "task", "task": "charge_order",
             "input": [{"target": "order", "path": "context.foreach.orders.item"}],
             "output": [{"source": ".", "target": "charged", "mode": "append"}], "retry": None},
        ],
        "routes": [
            {"source": "orders", "label": "loop", "target": "charge_order"},
            {"source": "charge_order", "label": "ok", "target": "orders"},
        ],
        "outputs": [],
        "metadata": {},
    }


def test_pydantic_schemas_become_json_schema_with_inlined_definitions() -> None:
    graph = WorkflowBuilder(id="w", input_schema=Order, state_schema=Orders)
    doc = graph.build()
    assert doc.input_schema["properties"]["amount"] == {"title": "Amount", "type": "number"}
    item = doc.state_schema["properties"]["orders"]["items"]
    assert item["properties"]["id"]["type"] == "string"
    assert "$defs" not in doc.state_schema
    assert doc.state_schema["properties"]["orders"]["default"] == []
    raw = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert WorkflowBuilder(id="w", input_schema=raw).build().input_schema == raw
    with pytest.raises(WorkflowBuildError, match="input_schema must be a JSON Schema dict or a pydantic model"):
        WorkflowBuilder(id="w", input_schema=int)  # type: ignore[arg-type]


def test_use_accepts_a_decorated_function_a_spec_or_a_name() -> None:
    graph = WorkflowBuilder(id="w")
    assert graph.use(charge_order).task == "charge_order"
    assert graph.use(send_notice).task == "notify"
    assert graph.use(registry.get("notify")).task == "notify"
    assert graph.use("anything").task == "anything"
    assert [n.id for n in graph.nodes] == ["charge_order", "notify", "notify_2", "anything"]


def test_use_refuses_an_unregistered_function() -> None:
    def plain(x: int) -> int:
        return x

    with pytest.raises(WorkflowBuildError, match="plain is not a registered task: decorate it with @task"):
        WorkflowBuilder(id="w").use(plain)


def test_default_ids_are_made_unique() -> None:
    graph = WorkflowBuilder(id="w")
    ids = [graph.use("step").id for _ in range(3)] + [graph.subgraph("child").id, graph.subgraph("child").id]
    assert ids == ["step", "step_2", "step_3", "child", "child_2"]


def test_explicit_duplicate_ids_are_refused() -> None:
    graph = WorkflowBuilder(id="w")
    graph.use("a", id="x")
    with pytest.raises(WorkflowBuildError, match="node id 'x' is already used in workflow 'w'"):
        graph.foreach(id="x", over="state.items")


def test_use_options_reach_the_node() -> None:
    graph = WorkflowBuilder(id="w")
    node = graph.use(
        "noop", id="n", name="No-op", description="does nothing",
        input=[InputBinding(target="v", value=None), {"target": "w", "path": input_path("w")}],
        output=[OutputBinding(target="result")],  # type: ignore[arg-type]
        retry={"max_attempts": 3},
    )
    assert node.title == "No-op" and node.description == "does nothing"
    assert node.input[0].is_literal and node.input[0].value is None
    assert node.input[1].path == input_path("w")
    assert node.retry == RetryPolicy(max_attempts=3)
    assert str(node.output[0].source) == "."


def test_binding_errors_name_the_node() -> None:
    graph = WorkflowBuilder(id="w")
    with pytest.raises(WorkflowBuildError) as caught:
        graph.use("noop", id="n", input=[{"target": "x", "path": "input.a", "value": 1}])
    assert "node 'n': binding for 'x' has both a path and a value; give exactly one (at input.0)" in str(caught.value)
    assert caught.value.code == "workflow.build"
    with pytest.raises(WorkflowBuildError, match="must be a list of bindings, got a single dict"):
        graph.use("noop", input={"target": "x", "value": 1})  # type: ignore[arg-type]


def test_set_route_accepts_nodes_or_ids_and_refuses_a_second_target_for_a_label() -> None:
    graph = WorkflowBuilder(id="w")
    a, b = graph.use("a"), graph.use("b")
    graph.set_route(a, "ok", "b")
    graph.set_route("b", "ok", a)
    with pytest.raises(WorkflowBuildError, match="node 'a' already routes label 'ok' to 'b'"):
        graph.set_route(a, "ok", b)
    assert graph.build().routes_from("a") == {"ok": "b"}


def test_chain_routes_a_path_and_checks_its_arguments() -> None:
    graph = WorkflowBuilder(id="w")
    each = graph.foreach("each", "input.xs")
    a, b = graph.use("a"), graph.use("b")
    routes = graph.chain(each, "loop", a, "ok", "b", "ok", each)
    assert [(r.source, r.label, r.target) for r in routes] == [("each", "loop", "a"), ("a", "ok", "b"),
                                                               ("b", "ok", "each")]
    assert graph.build().routes_from("a") == {"ok": "b"}
    with pytest.raises(WorkflowBuildError, match="chain from 'each' ends on label 'ok' with no node after it"):
        graph.chain(each, "done", b, "ok")
    with pytest.raises(WorkflowBuildError, match="chain from 'b' needs a label and a node") as caught:
        graph.chain(b)
    assert caught.value.to_dict()["code"] == "workflow.build" and caught.value.details["node_id"] == "b"
    with pytest.raises(WorkflowBuildError, match="chain: a label must be a string, got a TaskNode"):
        graph.chain(b, a, "ok")
    with pytest.raises(WorkflowBuildError, match="node 'a' already routes label 'ok' to 'b'"):
        graph.chain(b, "error", a, "ok", each)


def test_set_route_refuses_a_node_of_another_builder() -> None:
    other = WorkflowBuilder(id="other").use("stray")
    graph = WorkflowBuilder(id="w")
    graph.use("a")
    with pytest.raises(WorkflowBuildError, match="node 'stray' was not added to workflow 'w'"):
        graph.set_route("a", "ok", other)


def test_route_to_an_unknown_id_fails_at_build_naming_it() -> None:
    graph = WorkflowBuilder(id="w")
    graph.use("a")
    graph.set_route("a", "ok", "ghost")
    with pytest.raises(WorkflowBuildError, match="route 'a' --ok--> 'ghost': target node 'ghost' does not exist"):
        graph.build()


def test_start_defaults_to_the_first_node_and_can_be_set() -> None:
    graph = WorkflowBuilder(id="w")
    first, second = graph.use("a"), graph.use("b")
    assert graph.build().start == first.id
    graph.set_start(second)
    assert graph.build().start == "b"
    assert WorkflowBuilder(id="empty").build().start is None


def test_subgraph_references() -> None:
    child = WorkflowBuilder(id="child").build()
    graph = WorkflowBuilder(id="w")
    by_doc = graph.subgraph(child, version=3)
    by_ref = graph.subgraph(WorkflowRef(id="child", version=2), id="pinned")
    by_id = graph.subgraph("child", id="latest")
    assert isinstance(by_doc, SubgraphNode)
    assert by_doc.workflow == WorkflowRef(id="child", version=3)
    assert by_ref.workflow == WorkflowRef(id="child", version=2)
    assert by_id.workflow == WorkflowRef(id="child", version=None)
    with pytest.raises(WorkflowBuildError, match="pins version 2 but version=5"):
        graph.subgraph(WorkflowRef(id="child", version=2), version=5)


def test_branch_and_interrupt() -> None:
    class Approval(BaseModel):
        approved: bool

    graph = WorkflowBuilder(id="w")
    branch = graph.branch(
        id="size", path=input_path("amount"),
        cases=[{"label": "big", "op": "gt", "value": 100}, BranchCase(label="zero", value=0)],
        default_label="normal",
    )
    ask = graph.interrupt(id="ask", prompt="Approve?", resume_schema=Approval, labels=["yes", "no"],
                          input=[{"target": "amount", "path": "input.amount"}],
                          output=[{"target": "approval"}])
    graph.set_route(branch, "big", ask)
    doc = graph.build()
    assert [c.label for c in doc.node("size").cases] == ["big", "zero"]  # type: ignore[union-attr]
    assert doc.node("size").default_label == "normal"  # type: ignore[union-attr]
    stored = doc.node("ask")
    assert stored.resume_schema["properties"]["approved"]["type"] == "boolean"  # type: ignore[union-attr]
    assert stored.labels == ("yes", "no")  # type: ignore[union-attr]
    with pytest.raises(WorkflowBuildError, match="labels must be a list of strings"):
        graph.interrupt(id="bad", labels="yes")


def test_workflow_outputs() -> None:
    graph = WorkflowBuilder(id="w")
    graph.output("total", state_path("sum"))
    graph.output("first.id", "state.orders")
    dumped = graph.build().model_dump(mode="json")["outputs"]
    assert dumped == [{"target": "total", "path": "state.sum"}, {"target": "first.id", "path": "state.orders"}]


def test_build_returns_an_independent_copy() -> None:
    graph, orders, _ = orders_graph()
    first = graph.build()
    with pytest.raises(ValidationError, match="frozen"):  # documents (and a builder's node handles) are frozen
        orders.max_concurrency = 4
    graph.use("extra")
    assert first.node("orders").max_concurrency == 1  # type: ignore[union-attr]
    assert len(first.nodes) == 2
    assert len(graph.build().nodes) == 3


def test_builder_output_round_trips_through_json() -> None:
    graph, _, _ = orders_graph()
    graph.output("charged", "state.charged")
    doc = graph.build()
    assert Workflow.model_validate(json.loads(json.dumps(doc.model_dump(mode="json")))) == doc
