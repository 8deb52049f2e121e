"""Demo data: a team, known accounts and four workflows that show what Trellis does.

The workflows are built with ``runtime.WorkflowBuilder`` from the demo tasks in
``demo.workflow_tasks``:

1. ``customer-orders``: a foreach over customers with a nested foreach over
   each customer's orders; ``price`` reads both ``context.foreach.customers.item``
   and ``context.foreach.orders.item`` in one task's bindings. Both loops collect
   their items' results (``results=``), the outer one the inner one's lists.
2. ``process-order``: a child workflow pricing and shipping one order.
3. ``orders-via-subgraph``: the same nested loops, calling (2) as a subgraph and
   passing both items in as declared inputs, collecting each call's output.
4. ``spending-approval``: a branch on the amount; large amounts wait at an
   interrupt for a person's decision.

``load_demo`` is idempotent: what exists is left alone (so edits made in the
editor survive ``make run``), what is missing is created.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from pydantic import BaseModel

from demo.workflow_tasks import Customer, Decision, Order, PricedOrder, Shipment, Totals
from designer.models import Membership, Team, Workflow
from designer.workflows import services as workflow_services
from runtime import Workflow as Document
from runtime import WorkflowBuilder
from runtime.document import ForeachNode, SubgraphNode, TaskNode

TEAM_SLUG = "demo"
TEAM_NAME = "Demo"

#: (username, password, role in the Demo team, is_superuser). Known passwords: development only.
ACCOUNTS: tuple[tuple[str, str, str, bool], ...] = (
    ("demo", "demo", "owner", False),
    ("admin", "admin", "owner", True),
    ("viewer", "viewer", "viewer", False),
)

SAMPLE_CUSTOMERS = [
    {"id": "C-100", "name": "Ada Lovelace", "tier": "gold"},
    {"id": "C-200", "name": "Grace Hopper", "tier": "silver"},
    {"id": "C-300", "name": "Alan Turing", "tier": "standard"},
]


class CustomersInput(BaseModel):
    customers: list[Customer]


class CustomerOrdersState(BaseModel):
    orders: list[Order] = []
    priced: list[PricedOrder] = []
    totals: Totals | None = None


class ProcessOrderInput(BaseModel):
    customer: Customer
    order: Order


class ProcessOrderState(BaseModel):
    priced: PricedOrder | None = None
    shipment: Shipment | None = None


class ProcessedOrder(BaseModel):
    priced: PricedOrder | None = None
    shipment: Shipment | None = None


class ViaSubgraphState(BaseModel):
    orders: list[Order] = []
    results: list[ProcessedOrder] = []


class ApprovalInput(BaseModel):
    amount: float
    requester: str
    purpose: str = ""


class Review(BaseModel):
    approved: bool = False
    comment: str = ""


class ApprovalState(BaseModel):
    review: Review = Review()
    decision: Decision | None = None


def _each_order_of_each_customer(
        id: str, name: str, description: str, state_schema: type[BaseModel],
        step: Callable[[WorkflowBuilder, ForeachNode, ForeachNode], TaskNode | SubgraphNode], *,
        by_customer: str, per_customer: str, flattened: str, aliases: bool) -> tuple[WorkflowBuilder, TaskNode]:
    """A workflow over ``CustomersInput``: customers > fetch the customer's orders > orders >
    ``step(graph, customers, orders)``, each loop collecting its items' results (the inner loop's list per
    customer, then those lists in customer order), flattened once into ``state.<flattened>`` by the returned
    node. The two order workflows differ only in ``step``."""
    graph = WorkflowBuilder(id, name, description=description, input_schema=CustomersInput,
                            state_schema=state_schema)
    customers = graph.foreach("customers", "input.customers", as_="customer" if aliases else None,
                              results=by_customer)
    fetch = graph.use("fetch_orders", id="fetch", input=[{"target": "customer", "path": customers.item}],
                      output=[{"source": ".", "target": "orders"}])
    orders = graph.foreach("orders", "state.orders", as_="order" if aliases else None, results=per_customer)
    body = step(graph, customers, orders)
    flatten = graph.use("collect", id="flatten", input=[{"target": "items", "path": f"state.{by_customer}"},
                                                        {"target": "flatten", "value": True}],
                        output=[{"source": ".", "target": flattened}])
    for source, label, target in ((customers, "loop", fetch), (fetch, "ok", orders), (orders, "loop", body),
                                  (body, "ok", orders), (orders, "done", customers), (customers, "done", flatten)):
        graph.set_route(source, label, target)
    return graph, flatten


def _built(graph: WorkflowBuilder, *outputs: str) -> Document:
    """The document, whose run output is the named state fields (each demo's result is some of its state)."""
    for name in outputs:
        graph.output(name, f"state.{name}")
    return graph.build()


def _both_items(customers: ForeachNode, orders: ForeachNode) -> list[dict[str, Any]]:
    return [{"target": "customer", "path": customers.item}, {"target": "order", "path": orders.item}]


def customer_orders() -> Document:
    # ``price`` reads both loops' items in one task's bindings.
    graph, flatten = _each_order_of_each_customer(
        "customer-orders", "Customer orders",
        "Price every order of every customer: a foreach over customers with a nested foreach over their orders.",
        CustomerOrdersState,
        lambda graph, customers, orders: graph.use("price_order", id="price",
                                                   input=_both_items(customers, orders)),
        by_customer="priced_by_customer", per_customer="customer_priced", flattened="priced", aliases=True)
    totals = graph.use("sum_totals", id="totals", input=[{"target": "priced", "path": "state.priced"}],
                       output=[{"source": ".", "target": "totals"}])
    graph.set_route(flatten, "ok", totals)
    return _built(graph, "priced", "totals")


def process_order() -> Document:
    graph = WorkflowBuilder(
        "process-order", "Process order",
        description="Price and ship one order of one customer. Called as a subgraph.",
        input_schema=ProcessOrderInput, state_schema=ProcessOrderState,
    )
    price = graph.use(
        "price_order", id="price",
        input=[{"target": "customer", "path": "input.customer"}, {"target": "order", "path": "input.order"}],
        output=[{"source": ".", "target": "priced"}],
    )
    ship = graph.use(
        "ship_order", id="ship",
        input=[{"target": "order", "path": "input.order"}, {"target": "carrier", "value": "post"}],
        output=[{"source": ".", "target": "shipment"}],
    )
    graph.set_route(price, "ok", ship)
    return _built(graph, "priced", "shipment")


def orders_via_subgraph() -> Document:
    graph, _ = _each_order_of_each_customer(
        "orders-via-subgraph", "Orders via subgraph",
        "For every order of every customer, run the published 'process-order' workflow; both loop items are "
        "passed in as the child's declared inputs.",
        ViaSubgraphState,
        lambda graph, customers, orders: graph.subgraph("process-order", id="process",
                                                        input=_both_items(customers, orders)),
        by_customer="by_customer", per_customer="customer_results", flattened="results", aliases=False)
    return _built(graph, "results")


def spending_approval() -> Document:
    graph = WorkflowBuilder(
        "spending-approval", "Spending approval",
        description="Small amounts are approved automatically; larger ones wait for a reviewer's decision.",
        input_schema=ApprovalInput, state_schema=ApprovalState,
    )
    size = graph.branch("size", "input.amount", [{"label": "large", "op": "gt", "value": 1000}],
                        default_label="small")
    review = graph.interrupt(
        "review", prompt="Approve this spending request?",
        input=[{"target": "amount", "path": "input.amount"}, {"target": "requester", "path": "input.requester"},
               {"target": "purpose", "path": "input.purpose"}],
        resume_schema={
            "type": "object",
            "properties": {"approved": {"type": "boolean", "title": "Approve?"},
                           "comment": {"type": "string", "title": "Comment", "default": ""}},
            "required": ["approved"],
        },
        output=[{"source": ".", "target": "review"}],
    )
    record = graph.use(
        "record_decision", id="record",
        input=[{"target": "approved", "path": "state.review.approved"},
               {"target": "comment", "path": "state.review.comment"},
               {"target": "decided_by", "value": "reviewer"}],
        output=[{"source": ".", "target": "decision"}],
    )
    auto = graph.use(
        "record_decision", id="auto_approve",
        input=[{"target": "approved", "value": True}, {"target": "comment", "value": "below the review limit"},
               {"target": "decided_by", "value": "system"}],
        output=[{"source": ".", "target": "decision"}],
    )
    graph.set_route(size, "large", review)
    graph.set_route(size, "small", auto)
    graph.set_route(review, "ok", record)
    return _built(graph, "decision")


@dataclass(frozen=True)
class DemoWorkflow:
    build: Callable[[], Document]
    publish: bool = False
    sample_input: dict[str, Any] = field(default_factory=dict)


#: In creation order: children first, so the parent's subgraph reference resolves.
WORKFLOWS: tuple[DemoWorkflow, ...] = (
    DemoWorkflow(customer_orders, sample_input={"customers": SAMPLE_CUSTOMERS}),
    DemoWorkflow(process_order, publish=True,
                 sample_input={"customer": SAMPLE_CUSTOMERS[0],
                               "order": {"id": "C-100-1", "customer_id": "C-100", "item": "widget", "quantity": 2,
                                         "unit_price": 10.0}}),
    DemoWorkflow(orders_via_subgraph, sample_input={"customers": SAMPLE_CUSTOMERS[:2]}),
    DemoWorkflow(spending_approval, sample_input={"amount": 2500, "requester": "demo", "purpose": "laptops"}),
)


def with_sample_input(demo: DemoWorkflow) -> Document:
    """The built document with ``metadata.sample_input``: a ready input for the run form."""
    document = demo.build()
    return document.model_copy(update={"metadata": {**document.metadata, "sample_input": demo.sample_input}})


@dataclass
class DemoReport:
    created_users: list[str] = field(default_factory=list)
    created_workflows: list[str] = field(default_factory=list)
    published: list[str] = field(default_factory=list)


@transaction.atomic
def load_demo() -> DemoReport:
    """Create whatever part of the demo is missing; never changes what exists."""
    report = DemoReport()
    user_model = get_user_model()
    team, _ = Team.objects.get_or_create(slug=TEAM_SLUG, defaults={"name": TEAM_NAME})
    users = {}
    for username, password, role, superuser in ACCOUNTS:
        user = user_model.objects.filter(username=username).first()
        if user is None:
            user = user_model(username=username, email=f"{username}@example.com", is_staff=superuser,
                              is_superuser=superuser)
            user.set_password(password)
            user.save()
            report.created_users.append(username)
        Membership.objects.get_or_create(team=team, user=user, defaults={"role": role})
        users[username] = user
    author = users["demo"]
    if Membership.objects.get(team=team, user=author).role not in ("owner", "editor"):
        Membership.objects.filter(team=team, user=author).update(role="owner")
    for demo in WORKFLOWS:
        document = with_sample_input(demo)
        workflow = Workflow.objects.filter(team=team, slug=document.id).first()
        if workflow is None:
            workflow = workflow_services.import_workflow(actor=author, team=team,
                                                         document=document.model_dump(mode="json"))
            report.created_workflows.append(workflow.slug)
        if demo.publish and not workflow.versions.exists():
            workflow_services.publish_workflow(actor=author, workflow=workflow)
            report.published.append(workflow.slug)
    return report
