"""The demo's tasks, used by the demo workflows (``manage.py load_demo``); the ``demo`` app ships them.

They are deterministic fakes of an order system: the same customer always
has the same orders, so demo runs and tests are reproducible without a
network. Any installed app can ship a module like this one; the catalogue
(``designer.workflows.catalog``) discovers it at start-up.
"""

from __future__ import annotations

import hashlib
from typing import Literal

from pydantic import BaseModel, Field

from runtime.tasks import Route, TaskRegistry

registry = TaskRegistry()

Tier = Literal["standard", "silver", "gold"]

DISCOUNTS: dict[str, float] = {"standard": 0.0, "silver": 0.05, "gold": 0.1}


class Customer(BaseModel):
    id: str = Field(description="customer number")
    name: str
    tier: Tier = "standard"


class Order(BaseModel):
    id: str
    customer_id: str
    item: str
    quantity: int = Field(ge=1)
    unit_price: float = Field(ge=0)


class PricedOrder(BaseModel):
    order_id: str
    customer_id: str
    customer_name: str
    subtotal: float
    discount: float
    total: float


class Shipment(BaseModel):
    order_id: str
    carrier: str
    tracking: str


class Totals(BaseModel):
    orders: int
    total: float


class Decision(BaseModel):
    approved: bool
    comment: str = ""
    decided_by: str = ""


_ITEMS = ("widget", "gadget", "gizmo", "sprocket", "doohickey")


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")


@registry.task
def fetch_orders(customer: Customer) -> list[Order]:
    """Fetch a customer's open orders (deterministic demo data: 1 to 3 orders per customer)."""
    seed = _digest(customer.id)
    return [
        Order(
            id=f"{customer.id}-{n + 1}",
            customer_id=customer.id,
            item=_ITEMS[(seed + n) % len(_ITEMS)],
            quantity=1 + (seed >> (n + 1)) % 5,
            unit_price=round(5 + ((seed >> (2 * n + 3)) % 4000) / 100, 2),
        )
        for n in range(1 + seed % 3)
    ]


@registry.task
def price_order(customer: Customer, order: Order) -> PricedOrder:
    """Price one order for one customer, applying the customer's tier discount."""
    subtotal = round(order.quantity * order.unit_price, 2)
    discount = round(subtotal * DISCOUNTS[customer.tier], 2)
    return PricedOrder(order_id=order.id, customer_id=customer.id, customer_name=customer.name,
                       subtotal=subtotal, discount=discount, total=round(subtotal - discount, 2))


@registry.task
def ship_order(order: Order, carrier: str = "post") -> Shipment:
    """Book a shipment for an order (a fake tracking number)."""
    return Shipment(order_id=order.id, carrier=carrier, tracking=f"{carrier.upper()}-{_digest(order.id):08d}")


@registry.task
def sum_totals(priced: list[PricedOrder]) -> Totals:
    """Add up priced orders."""
    return Totals(orders=len(priced), total=round(sum(p.total for p in priced), 2))


@registry.task(labels=("auto", "review"))
def assess_request(amount: float, limit: float = 1000.0) -> Route:
    """Route a spending request: ``auto`` up to ``limit``, ``review`` above it."""
    return Route("auto" if amount <= limit else "review", {"amount": amount, "limit": limit})


@registry.task(labels=("approved", "rejected"))
def record_decision(approved: bool, comment: str = "", decided_by: str = "") -> Route | Decision:
    """Record an approval decision and route by it."""
    decision = Decision(approved=approved, comment=comment, decided_by=decided_by)
    return Route("approved" if approved else "rejected", decision)
