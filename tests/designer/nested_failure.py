"""A nested run that fails, shaped like the demo's *Orders via subgraph* (customers -> fetch -> orders -> a
subgraph call per order): the child workflow divides by the customer's ``credit``, so a customer with credit 0
fails in the child, which fails its order, its customer and the run while its siblings (concurrency 4) were
under way. Built from the demo's tasks and the builtins only, so a real worker runs it as it is."""

from __future__ import annotations

from typing import Any

from designer.models import Run
from designer.runs import services as run_services
from designer.runs.executor import execute
from designer.workflows import services as workflow_services
from runtime import WorkflowBuilder

#: Bob's credit of 0 fails his first order in the child workflow.
CUSTOMERS = [
    {"id": "C-1", "name": "Ada", "tier": "gold", "credit": 2},
    {"id": "C-2", "name": "Bob", "tier": "standard", "credit": 0},
    {"id": "C-3", "name": "Cy", "tier": "silver", "credit": 1},
]


def check_order() -> dict[str, Any]:
    g = WorkflowBuilder("check-order", "Check order", input_schema={"type": "object", "properties": {
        "customer": {"type": "object"}, "order": {"type": "object"}}})
    ratio = g.use("math", id="ratio", input=[{"target": "op", "value": "div"}, {"target": "a", "value": 1},
                                             {"target": "b", "path": "input.customer.credit"}])
    price = g.use("price_order", id="price", input=[{"target": "customer", "path": "input.customer"},
                                                    {"target": "order", "path": "input.order"}],
                  output=[{"source": ".", "target": "priced"}])
    g.set_route(ratio, "ok", price)
    g.output("priced", "state.priced")
    return g.build().model_dump(mode="json")


def checked_orders(*, concurrency: int = 4) -> dict[str, Any]:
    g = WorkflowBuilder("checked-orders", "Checked orders", input_schema={"type": "object", "properties": {
        "customers": {"type": "array", "items": {"type": "object"}}}},
        state_schema={"type": "object", "properties": {"orders": {"type": "array"}}})
    customers = g.foreach("customers", "input.customers", max_concurrency=concurrency)
    fetch = g.use("fetch_orders", id="fetch", input=[{"target": "customer", "path": customers.item}],
                  output=[{"source": ".", "target": "orders"}])
    orders = g.foreach("orders", "state.orders")
    process = g.subgraph("check-order", id="process", input=[{"target": "customer", "path": customers.item},
                                                              {"target": "order", "path": orders.item}])
    for source, label, target in ((customers, "loop", fetch), (fetch, "ok", orders), (orders, "loop", process),
                                  (process, "ok", orders), (orders, "done", customers)):
        g.set_route(source, label, target)
    return g.build().model_dump(mode="json")


def make_workflows(actor: Any, team: Any) -> Any:
    """The published child and the parent that calls it; returns the parent workflow."""
    child = workflow_services.create_workflow(actor=actor, team=team, name="Check order", document=check_order())
    workflow_services.publish_workflow(actor=actor, workflow=child)
    return workflow_services.create_workflow(actor=actor, team=team, name="Checked orders",
                                             document=checked_orders())


def start_failed_run(cast: Any) -> Any:
    """A run of ``make_workflows``, executed in this process until it failed (a nested foreach's item failed)."""
    run = run_services.start_run(actor=cast.editor, workflow=make_workflows(cast.owner, cast.team),
                                 input={"customers": CUSTOMERS})
    assert execute(run.pk) == "failed"
    return Run.objects.get(pk=run.pk)
