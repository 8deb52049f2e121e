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
