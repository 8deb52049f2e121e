"""Small builders for analyzer tests: documents written as plain data, validated by the real model."""

from __future__ import annotations

from typing import Any

from runtime import Workflow


def task(node_id: str, name: str = "noop", *, input: list[dict[str, Any]] | None = None,
         output: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"kind": "task", "id": node_id, "task": name, "input": input or [], "output": output or []}


def foreach(node_id: str, over: str, as_: str | None = None) -> dict[str, Any]:
    node: dict[str, Any] = {"kind": "foreach", "id": node_id, "over": over}
    if as_ is not None:
        node["as"] = as_
    return node


def route(source: str, label: str, target: str) -> dict[str, str]:
    return {"source": source, "label": label, "target": target}


def bind(target: str, path: str) -> dict[str, str]:
    return {"target": target, "path": path}


def chain(*steps: str, label: str = "ok") -> list[dict[str, str]]:
    return [route(a, label, b) for a, b in zip(steps, steps[1:], strict=False)]


def workflow(nodes: list[dict[str, Any]], routes: list[dict[str, str]], **extra: Any) -> Workflow:
    """A validated document; unless given, the input schema is an open object (any field readable)."""
    data: dict[str, Any] = {"id": extra.pop("id", "wf"), "nodes": nodes, "routes": routes,
                            "input_schema": {"type": "object"}}
    data.update(extra)
    return Workflow.model_validate(data)


def subgraph(node_id: str, workflow_id: str, *, input: list[dict[str, Any]] | None = None,
             output: list[dict[str, Any]] | None = None, version: int | None = None) -> dict[str, Any]:
    ref: dict[str, Any] = {"id": workflow_id}
    if version is not None:
        ref["version"] = version
    return {"kind": "subgraph", "id": node_id, "workflow": ref, "input": input or [], "output": output or []}


def out(source: str, target: str, mode: str = "set") -> dict[str, str]:
    return {"source": source, "target": target, "mode": mode}


def shop_registry() -> Any:
    """A real registry with typed tasks used across the analyzer tests."""
    from pydantic import BaseModel

    from runtime.tasks import Route, TaskRegistry

    class Order(BaseModel):
        sku: str
        qty: int
        price: float | None = None

    class Customer(BaseModel):
        name: str
        email: str | None = None
        orders: list[Order]

    class Receipt(BaseModel):
        total: float
        count: int

    registry = TaskRegistry()

    @registry.task
    def load_customers() -> list[Customer]:
        return []

    @registry.task
    def charge(order: Order, customer: str, attempt: int = 1) -> Receipt:
        return Receipt(total=0, count=0)

    @registry.task
    def add(a: float, b: float) -> float:
        return a + b

    @registry.task
    def count(n: int) -> int:
        return n

    @registry.task
    def greet(name: str) -> str:
        return name

    @registry.task(labels=("ok", "again"))
    def check(value: float) -> Route:
        return Route("ok")

    @registry.task
    def noop() -> None:
        return None

    return registry
