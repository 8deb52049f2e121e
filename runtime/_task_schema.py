"""JSON Schema helpers for task signatures, and mapping validation errors back onto payloads.

Kept apart from the registry so that the analyzer and designer can reuse them
without pulling in registration machinery.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, TypeAdapter

from runtime._schema_refs import inline_refs


def json_schema_of(annotation: Any, *, mode: typing.Literal["validation", "serialization"] = "validation"
                   ) -> dict[str, Any]:
    """JSON Schema of a Python type (a pydantic model class included), with ``$defs`` inlined
    (``runtime._schema_refs``: consumers such as the designer's forms walk ``properties`` directly; a
    recursive model keeps its reference back, and the definition it needs, so it validates exactly)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        raw = annotation.model_json_schema(mode=mode)
    else:
        raw = TypeAdapter(annotation).json_schema(mode=mode)
    return inline_refs(raw)


def schema_step(node: Any, step: Any) -> Any:
    """The sub-schema for one location step, looking through ``anyOf``/``oneOf`` alternatives."""
    if not isinstance(node, dict):
        return None
    if isinstance(step, int) and "items" in node:
        return node["items"]
    properties = node.get("properties", {})
    if isinstance(step, str) and step in properties:
        return properties[step]
    if isinstance(step, str) and isinstance(node.get("additionalProperties"), dict):
        return node["additionalProperties"]
    for key in ("anyOf", "oneOf", "allOf"):
        for option in node.get(key, ()):
            found = schema_step(option, step)
            if found is not None:
                return found
    return None


def schema_type_text(schema: Any) -> str:
    """A short description of what a JSON Schema accepts, for messages: ``integer``, ``array of string``..."""
    if not isinstance(schema, dict) or not schema:
        return "any value"
    if "enum" in schema:
        return "one of " + ", ".join(repr(v) for v in schema["enum"])
    if "const" in schema:
        return repr(schema["const"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(dict.fromkeys(schema_type_text(option) for option in schema[key]))
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(str(k) for k in kind)
    if kind == "array" and isinstance(schema.get("items"), dict) and schema["items"]:
        return f"array of {schema_type_text(schema['items'])}"
    if kind == "object" and "title" in schema and "properties" in schema:
        return f"{schema['title']} object"
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1] + " object"
    return str(kind) if kind else "a valid value"


_MISSING = object()


def data_loc(loc: tuple[Any, ...], payload: object, kind: str) -> tuple[tuple[Any, ...], bool]:
    """Pydantic's location with union-branch tags (``list[any]``, ``int``…) cut off.

    A step is a real field or index when the data has it; the first step that is neither (and is not
    the last step of a "missing" or "extra" error) is a union tag. Returns the location up to that
    tag and whether one was found.
    """
    data: object = payload
    for position, step in enumerate(loc):
        last = position == len(loc) - 1
        if isinstance(data, Mapping) and step in data:
            data = data[step]
            continue
        if isinstance(step, int) and isinstance(data, list) and 0 <= step < len(data):
            data = data[step]
            continue
        if last and kind in ("missing", "extra_forbidden"):
            return loc, False
        return loc[:position], True
    return loc, False


def value_at(payload: object, loc: tuple[Any, ...]) -> object:
    data = payload
    for step in loc:
        if isinstance(data, Mapping):
            data = data.get(step, _MISSING)
        elif isinstance(data, list) and isinstance(step, int) and 0 <= step < len(data):
            data = data[step]
        else:
            return _MISSING
    return data


def loc_text(loc: tuple[Any, ...] | list[Any]) -> str:
    return ".".join(str(step) for step in loc)


def describe(value: object) -> str:
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{type(value).__name__} {text}"
