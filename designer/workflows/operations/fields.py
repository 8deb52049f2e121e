"""Field names, paths and node lookups shared by every kind of operation."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from designer.core.errors import BadRequest
from designer.core.untrusted import JSONInputError, loads_json
from runtime.errors import PathSyntaxError
from runtime.paths import LocalPath, parse_local_path, parse_source_path

Document = dict[str, Any]
Form = Mapping[str, Any]

NODE_ID = re.compile(r"[A-Za-z0-9_-]{1,200}")
OUTPUT_MODES = ("set", "append", "extend", "merge")
BRANCH_OPS = ("equals", "not_equals", "in", "exists", "truthy", "gt", "gte", "lt", "lte")


def field_key(name: str) -> str:
    """The analyzer's field name for one input field: ``input.<name>`` with the name quoted if needed."""
    return f"input.{LocalPath((name,))}"


def input_target(field: str) -> LocalPath:
    """``input.<name>`` -> the binding's target path."""
    if not field.startswith("input."):
        raise BadRequest(f"{field!r} is not an input field", field=field)
    try:
        return parse_local_path(field[len("input."):])
    except PathSyntaxError as exc:
        raise BadRequest(exc.message, field=field) from exc


def payload_field(text: str) -> str:
    """The field key of a payload target the author types (``amount``, ``order.id``), checked as a path."""
    text = text.strip()
    if not text:
        raise BadRequest("name the payload field first", field="target")
    try:
        return f"input.{parse_local_path(text)}"
    except PathSyntaxError as exc:
        raise BadRequest(f"{text!r} is not a field name: {exc.message}", field="target") from exc


def same_target(field: str, other: str) -> bool:
    """Whether two ``input.<target>`` field keys name the same target, however each is written."""
    try:
        return input_target(field) == input_target(other)
    except BadRequest:
        return field == other


def find_node(document: Document, node_id: str) -> dict[str, Any]:
    for node in document.get("nodes", []):
        if node.get("id") == node_id:
            return node
    raise BadRequest(f"the workflow has no node {node_id!r}; it may have been deleted meanwhile", node=node_id)


def source_path(text: str) -> str:
    try:
        return str(parse_source_path(text))
    except PathSyntaxError as exc:
        raise BadRequest(exc.message, path=text) from exc


def literal_value(raw: str, schema: Mapping[str, Any] | None) -> Any:
    """A typed form value: text for string fields, JSON for everything else."""
    wanted = (schema or {}).get("type")
    if wanted == "string":
        return raw
    try:
        return loads_json(raw)
    except JSONInputError as exc:
        raise BadRequest(f"{raw[:40]!r}…: {exc}") from exc
    except json.JSONDecodeError:
        if wanted in (None, "") or (isinstance(wanted, list) and "string" in wanted):
            return raw
        raise BadRequest(f"{raw!r} is not a valid {wanted} value (write it as JSON, e.g. 3, true, [1, 2])") from None


def set_binding(node: dict[str, Any], target: LocalPath, binding: dict[str, Any] | None) -> None:
    rest = [b for b in node.get("input", []) if not names_target(b.get("target"), target)]
    if binding is not None:
        rest.append({"target": str(target), **binding})
    node["input"] = rest


def names_target(text: object, target: LocalPath) -> bool:
    if not isinstance(text, str):
        return False
    try:
        return parse_local_path(text) == target
    except PathSyntaxError:
        return False


