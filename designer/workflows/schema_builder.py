"""The schema builder behind the editor's input, state and resume schema panels.

A JSON Schema is shown as a tree of fields (name, type, required, default,
description, enum, nested properties, array items) that a person edits
without writing JSON. Everything here is a pure function over plain data:

- ``infer_schema(sample)`` proposes a schema that accepts ``sample``;
- ``fields_of(schema)`` / ``schema_of(fields)`` convert both ways, and
  ``schema_of(fields_of(s)) == s`` for every schema: keywords the builder does
  not edit (``title``, ``minLength``, ``anyOf``...) ride along in ``extra``;
- ``to_form`` / ``from_form`` carry the tree through an HTML form (flat,
  one prefix per field), so the htmx panel can re-render it after each change;
- ``default_problems(schema)`` lists defaults that break their own field's
  schema, checked by the runtime's own validator.

Whether a schema is usable at all stays the analyzer's answer (schema.invalid).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from designer.core.untrusted import JSONInputError, loads_json
from runtime import WorkflowError
from runtime.analysis import json_type
from runtime.errors import InputValidationError
from runtime.inspect import check_run_input

#: Types the builder offers; ``any`` writes no ``type`` keyword at all.
TYPES = ("string", "integer", "number", "boolean", "object", "array", "any")
_SCALAR = ("string", "integer", "number", "boolean")
#: Keywords the builder edits itself; every other keyword of a field is kept in ``extra``.
_EDITED = frozenset({"type", "description", "default", "enum", "properties", "required", "items"})


class _NoDefault:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()


@dataclass(frozen=True, slots=True)
class Field:
    """One schema node as the builder shows it. ``children`` are an object's properties; ``items`` is an
    array's item schema (itself a nameless Field)."""

    name: str = ""
    type: str = "string"
    nullable: bool = False
    required: bool = False
    description: str = ""
    default: Any = NO_DEFAULT
    enum: tuple[Any, ...] | None = None
    children: tuple[Field, ...] = ()
    items: Field | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: A ``type`` the builder cannot show ("null", ["string", "integer"]): written back exactly.
    raw_type: Any = None
    #: Whether ``properties`` / ``required`` were written even when empty (so they round-trip).
    props_written: bool = False
    required_written: bool = False

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT

    @property
    def custom(self) -> bool:
        """Edited in the raw JSON view only: keywords the builder cannot show (anyOf, $ref, ...)."""
        return any(key in self.extra for key in ("anyOf", "oneOf", "allOf", "$ref", "not", "if", "const"))


# --- inference ---------------------------------------------------------------------


def infer_schema(sample: Any) -> dict[str, Any]:
    """A JSON Schema that accepts ``sample``: objects require the keys they have, lists merge their
    items (keys missing from some items become optional), an integer next to a fraction is a number,
    a null next to a value makes it nullable, and otherwise different kinds become ``anyOf``."""
    return _merge([sample])


def _merge(values: list[Any]) -> dict[str, Any]:
    by_kind: dict[str, list[Any]] = {}
    for value in values:
        by_kind.setdefault(json_type(value), []).append(value)
    if "integer" in by_kind and "number" in by_kind:
        by_kind["number"] += by_kind.pop("integer")
    nullable = by_kind.pop("null", None) is not None
    schemas = [_merge_kind(kind, members) for kind, members in by_kind.items()]
    if not schemas:
        return {}  # only nulls (or nothing): accept anything, the person picks the type
    if len(schemas) == 1:
        schema = schemas[0]
        if nullable:
            schema["type"] = [schema["type"], "null"]
        return schema
    if nullable:
        schemas.append({"type": "null"})
    return {"anyOf": schemas}


def _merge_kind(kind: str, values: list[Any]) -> dict[str, Any]:
    if kind == "array":
        return {"type": "array", "items": _merge([item for value in values for item in value])}
    if kind == "object":
        keys = list(dict.fromkeys(key for value in values for key in value))
        properties = {key: _merge([value[key] for value in values if key in value]) for key in keys}
        required = [key for key in keys if all(key in value for value in values)]
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        return schema
    return {"type": kind}


# --- schema <-> fields ---------------------------------------------------------------


def fields_of(schema: Mapping[str, Any]) -> Field:
    """The builder's tree for ``schema`` (the root is a nameless Field, normally of type object)."""
    return _field("", schema if isinstance(schema, Mapping) else {}, required=False)


def _orderly(required: Any, props: Mapping[str, Any]) -> bool:
    """Whether ``required`` is exactly what the builder would write back for ``props``."""
    if not isinstance(required, list) or not all(isinstance(name, str) for name in required):
        return False
    return [key for key in props if key in required] == required and len(set(required)) == len(required)


def _field(name: str, schema: Mapping[str, Any], *, required: bool) -> Field:
    extra = {key: value for key, value in schema.items() if key not in _EDITED}
    raw = schema.get("type")
    type_, nullable, raw_type = "any", False, None
    if isinstance(raw, str) and raw in TYPES and raw != "any":
        type_ = raw
    elif (isinstance(raw, list) and len(raw) == 2 and raw[1] == "null" and isinstance(raw[0], str)
          and raw[0] in TYPES and raw[0] != "any"):
        type_, nullable = raw[0], True
    elif "type" in schema:
        raw_type = raw  # "null", ["string", "integer"], ...: kept exactly as written
    props, wanted = schema.get("properties"), schema.get("required", [])
    children: tuple[Field, ...] = ()
    props_written = required_written = False
    if type_ not in ("object", "any"):  # properties on a string: nothing the builder shows, kept as written
        extra.update({key: schema[key] for key in ("properties", "required") if key in schema})
    elif "properties" in schema or "required" in schema:
        if (isinstance(props, Mapping) and all(isinstance(v, Mapping) for v in props.values())
                and _orderly(wanted, props) and (wanted or "properties" in schema)):
            children = tuple(_field(str(key), value, required=key in wanted) for key, value in props.items())
            props_written, required_written = "properties" in schema, "required" in schema
        else:  # required names unknown keys, repeats, or a property is not a schema: kept exactly as written
            extra.update({key: schema[key] for key in ("properties", "required") if key in schema})
    items: Field | None = None
    if "items" in schema and type_ not in ("array", "any"):
        extra["items"] = schema["items"]
    elif isinstance(schema.get("items"), Mapping):
        items = _field("", schema["items"], required=False)
    elif "items" in schema:
        extra["items"] = schema["items"]
    enum = schema.get("enum")
    if "enum" in schema and not (isinstance(enum, list) and enum):
        extra["enum"], enum = enum, None
    description = schema.get("description", "")
    if "description" in schema and not (isinstance(description, str) and description):
        extra["description"], description = description, ""
    return Field(
        name=name, type=type_, nullable=nullable, required=required, description=description,
        default=schema["default"] if "default" in schema else NO_DEFAULT,
        enum=tuple(enum) if isinstance(enum, list) else None,
        children=children, items=items, extra=extra, raw_type=raw_type,
        props_written=props_written, required_written=required_written,
    )


def schema_of(node: Field) -> dict[str, Any]:
    """The JSON Schema a builder tree stands for (the inverse of ``fields_of``)."""
    schema: dict[str, Any] = {}
    if node.raw_type is not None:
        schema["type"] = node.raw_type
    elif node.type != "any":
        schema["type"] = [node.type, "null"] if node.nullable else node.type
    if node.description:
        schema["description"] = node.description
    if node.enum is not None:
        schema["enum"] = list(node.enum)
    if node.has_default:
        schema["default"] = node.default
    if node.children or node.props_written:
        schema["properties"] = {child.name: schema_of(child) for child in node.children}
        required = [child.name for child in node.children if child.required]
        if required or node.required_written:
            schema["required"] = required
    if node.items is not None:
        schema["items"] = schema_of(node.items)
    schema.update(node.extra)
    return schema


# --- defaults ------------------------------------------------------------------------------


def default_error(schema: Mapping[str, Any], value: Any, *, root: Mapping[str, Any] | None = None) -> str:
    """Why ``value`` cannot be the default of a field with ``schema`` ('' when it can), in the
    runtime's own words (its validator, with its limits on patterns). ``root`` is the whole schema,
    whose ``$defs`` a ``$ref`` in the field may point into."""
    field_schema = {key: item for key, item in schema.items() if key != "default"}
    # A run input is an object: check the value as the one property of a wrapper that carries the root's
    # definitions, so '#/$defs/...' references still resolve.
    wrapper: dict[str, Any] = {"type": "object", "properties": {"value": field_schema}, "required": ["value"]}
    for key in ("$defs", "definitions"):
        if root is not None and key in root:
            wrapper[key] = root[key]
    try:
        check_run_input({"id": "default", "input_schema": wrapper}, {"value": value})
    except InputValidationError as exc:
        errors = exc.details.get("errors") or []
        reasons = "; ".join(str(error.get("message")) for error in errors if isinstance(error, Mapping))
        return reasons or exc.message
    except (WorkflowError, ValueError) as exc:  # the schema itself is unusable: the analyzer reports that
        return f"cannot be checked: {exc}"
    return ""


def default_problems(schema: Any, where: str = "", *, root: Mapping[str, Any] | None = None) -> list[tuple[str, str]]:
    """``(field path, reason)`` for every default below ``schema`` that its own field schema refuses."""
    problems: list[tuple[str, str]] = []
    if not isinstance(schema, Mapping):
        return problems
    root = schema if root is None else root
    if "default" in schema:
        reason = default_error(schema, schema["default"], root=root)
        if reason:
            problems.append((where or "(the schema)", reason))
    props = schema.get("properties")
    if isinstance(props, Mapping):
        for key, sub in props.items():
            problems += default_problems(sub, f"{where}.{key}" if where else str(key), root=root)
    items = schema.get("items")
    if isinstance(items, Mapping):
        problems += default_problems(items, f"{where}[]" if where else "[]", root=root)
    return problems


# --- tree edits ------------------------------------------------------------------------------


def walk(root: Field, prefix: str = "f") -> Iterator[tuple[str, int, Field, str]]:
    """``(id, depth, field, role)`` in display order; ids are positional (``f``, ``f.0``, ``f.0.i``)."""
    yield from _walk(root, prefix, 0, "root")


def _walk(node: Field, fid: str, depth: int, role: str) -> Iterator[tuple[str, int, Field, str]]:
    yield fid, depth, node, role
    for index, child in enumerate(node.children):
        yield from _walk(child, f"{fid}.{index}", depth + 1, "property")
    if node.items is not None:
        yield from _walk(node.items, f"{fid}.i", depth + 1, "items")


def _locate(fid: str) -> list[str]:
    parts = fid.split(".")
    if not parts or parts[0] != "f":
        raise KeyError(fid)
    return parts[1:]


def update(root: Field, fid: str, change: Any) -> Field:
    """``root`` with the field at ``fid`` replaced by ``change(field)`` (None removes it)."""
    return _update(root, _locate(fid), change) or root


def _update(node: Field, steps: list[str], change: Any) -> Field | None:
    if not steps:
        return change(node)  # type: ignore[no-any-return]
    head, rest = steps[0], steps[1:]
    if head == "i":
        if node.items is None:
            raise KeyError(head)
        return replace(node, items=_update(node.items, rest, change) or Field(type="any"))
    index = int(head)
    if not 0 <= index < len(node.children):
        raise KeyError(head)
    changed = _update(node.children[index], rest, change)
    children = list(node.children)
    if changed is None:
        del children[index]
    else:
        children[index] = changed
    return replace(node, children=tuple(children))


def fresh_name(taken: Iterator[str] | list[str]) -> str:
    names = set(taken)
    return next(f"field_{n}" for n in itertools.count(1) if f"field_{n}" not in names)


def add_child(node: Field) -> Field:
    """An object's new, optional text property; on an array, the new property goes to its object items."""
    if node.type == "array":
        items = node.items if node.items is not None and node.items.type in ("object", "any") else Field()
        return replace(node, items=add_child(replace(items, type="object", raw_type=None)))
    child = Field(name=fresh_name([c.name for c in node.children]), type="string")
    return replace(node, type="object" if node.type == "any" else node.type, props_written=True,
                   children=(*node.children, child))


def retype(node: Field, type_: str) -> Field:
    """A field given another type keeps what still makes sense (an object its properties, an array its items)."""
    if type_ not in TYPES:
        raise ValueError(f"unknown type {type_!r}; choose one of {', '.join(TYPES)}")
    if type_ == node.type and node.raw_type is None:
        return node
    return replace(
        node, type=type_, raw_type=None,
        children=node.children if type_ == "object" else (), props_written=type_ == "object",
        items=(node.items or Field(type="string")) if type_ == "array" else None,
        default=NO_DEFAULT if type_ != node.type else node.default,
        enum=node.enum if type_ in _SCALAR and type_ == node.type else None,
    )


# --- HTML form ---------------------------------------------------------------------------------


class FormError(ValueError):
    """A value typed into the builder that cannot be read; ``fid`` names the field, ``what`` the input."""

    def __init__(self, message: str, *, fid: str, what: str) -> None:
        super().__init__(message)
        self.fid, self.what = fid, what


def value_text(node: Field) -> str:
    """The default as the form shows it: text fields as typed, everything else as JSON."""
    if not node.has_default:
        return ""
    if node.type == "string" and isinstance(node.default, str):
        return node.default
    return json.dumps(node.default, ensure_ascii=False)


def enum_text(node: Field) -> str:
    if node.enum is None:
        return ""
    if node.type == "string" and all(isinstance(v, str) and v and v == v.strip() and "," not in v
                                     for v in node.enum) and not node.enum[0].startswith("["):
        return ", ".join(node.enum)
    return json.dumps(list(node.enum), ensure_ascii=False)


def _read_json(text: str, *, fid: str, what: str) -> Any:
    try:
        return loads_json(text)
    except (json.JSONDecodeError, JSONInputError) as exc:
        raise FormError(f"{text[:40]!r} is not a JSON value ({exc})", fid=fid, what=what) from None


def parse_default(text: str, type_: str, *, fid: str) -> Any:
    """Text typed as a default: '' is none; text fields take it as typed; others read JSON
    (a bare word in an ``any`` field is text)."""
    if text == "":
        return NO_DEFAULT
    if type_ == "string":
        return text
    try:
        return _read_json(text, fid=fid, what="default")
    except FormError:
        # Kept as typed, so the default check says what is wrong with it (next to where it was typed)
        # instead of the whole unsaved tree being thrown away.
        return text


def parse_enum(text: str, type_: str, *, fid: str) -> tuple[Any, ...] | None:
    """Allowed values: a JSON list, or comma-separated (text as typed, numbers and booleans as JSON)."""
    text = text.strip()
    if not text:
        return None
    if text.startswith("["):
        value = _read_json(text, fid=fid, what="enum")
        if not isinstance(value, list) or not value:
            raise FormError("allowed values are a non-empty JSON list or comma-separated values", fid=fid, what="enum")
        return tuple(value)
    members = [part.strip() for part in text.split(",") if part.strip()]
    if type_ == "string":
        return tuple(members)
    return tuple(_lenient_json(member, fid=fid) for member in members)


def _lenient_json(text: str, *, fid: str) -> Any:
    try:
        return _read_json(text, fid=fid, what="enum")
    except FormError:
        return text


def name_problems(root: Field) -> dict[str, str]:
    """Field id -> what is wrong with its name (empty, or taken by a sibling); such a tree cannot be saved."""
    problems: dict[str, str] = {}
    for fid, _, node, _ in walk(root):
        names = [child.name for child in node.children]
        for index, name in enumerate(names):
            if not name:
                problems[f"{fid}.{index}"] = "every field needs a name"
            elif names.count(name) > 1:
                problems[f"{fid}.{index}"] = f"two fields are named {name!r}"
    return problems


def to_form(root: Field) -> list[dict[str, Any]]:
    """Rows for the template: one per field with its id, depth and what its inputs show."""
    rows = []
    labels: dict[str, str] = {}
    for fid, depth, node, role in walk(root):
        parent = fid.rsplit(".", 1)[0]
        labels[fid] = node.name if role == "property" else f"items of {labels.get(parent, '')}".strip() \
            if role == "items" else ""
        items_hold_fields = node.items is not None and node.items.type in ("object", "any") \
            and node.items.raw_type is None and not node.items.custom
        rows.append({
            "label": labels[fid],
            "id": fid, "depth": depth, "role": role, "field": node,
            "default_text": value_text(node), "enum_text": enum_text(node),
            "extra_json": json.dumps(dict(node.extra), ensure_ascii=False, default=list) if node.extra else "",
            "raw_type_json": "" if node.raw_type is None else json.dumps(node.raw_type),
            "flags": ("p" if node.props_written else "") + ("r" if node.required_written else ""),
            # An array whose items already hold fields gets them added on its items row instead.
            "can_add": not node.custom and node.raw_type is None and (
                node.type in ("object", "any") or (node.type == "array" and not items_hold_fields)),
        })
    return rows


def from_form(form: Mapping[str, Any], prefix: str = "f") -> Field:
    """The tree a submitted builder form describes; inputs are ``<id>:<what>`` (ids from ``walk``)."""
    return _from_form(form, prefix, role="root")


def _get(form: Mapping[str, Any], key: str) -> str:
    value = form.get(key, "")
    return str(value) if value is not None else ""


def _from_form(form: Mapping[str, Any], fid: str, *, role: str) -> Field:
    type_ = _get(form, f"{fid}:type") or "any"
    if type_ not in TYPES:
        raise FormError(f"unknown type {type_!r}", fid=fid, what="type")
    extra_text = _get(form, f"{fid}:extra")
    extra = _read_json(extra_text, fid=fid, what="extra") if extra_text else {}
    if not isinstance(extra, dict):
        raise FormError("kept keywords must be a JSON object", fid=fid, what="extra")
    raw_text = _get(form, f"{fid}:raw_type")
    raw_type = _read_json(raw_text, fid=fid, what="type") if raw_text else None
    flags = _get(form, f"{fid}:flags")
    count = int(_get(form, f"{fid}:count") or 0)
    children = tuple(_from_form(form, f"{fid}.{index}", role="property") for index in range(count))
    items = _from_form(form, f"{fid}.i", role="items") if f"{fid}.i:type" in form else None
    if type_ != (_get(form, f"{fid}:was") or type_):  # the type was just changed: keep what it can hold
        if type_ not in ("object", "any"):
            children = ()
        if type_ not in ("array", "any"):
            items = None
        elif type_ == "array" and items is None:
            items = Field(type="string")
    return Field(
        name=_get(form, f"{fid}:name") if role == "property" else "",
        type=type_, nullable=bool(form.get(f"{fid}:nullable")), required=bool(form.get(f"{fid}:required")),
        description=_get(form, f"{fid}:description"),
        default=parse_default(_get(form, f"{fid}:default"), type_, fid=fid),
        enum=parse_enum(_get(form, f"{fid}:enum"), type_, fid=fid),
        children=children, items=items, extra=extra, raw_type=raw_type,
        props_written="p" in flags or bool(children) or (type_ == "object" and type_ != _get(form, f"{fid}:was")),
        required_written="r" in flags,
    )


def form_data(root: Field) -> dict[str, str]:
    """What a browser submits for ``root``'s builder form (the template writes the same inputs)."""
    data: dict[str, str] = {}
    for row in to_form(root):
        fid, node = row["id"], row["field"]
        data[f"{fid}:type"] = data[f"{fid}:was"] = node.type
        data[f"{fid}:count"] = str(len(node.children))
        if row["role"] == "property":
            data[f"{fid}:name"] = node.name
        if node.required:
            data[f"{fid}:required"] = "1"
        if node.nullable:
            data[f"{fid}:nullable"] = "1"
        for key, value in (("description", node.description), ("default", row["default_text"]),
                           ("enum", row["enum_text"]), ("extra", row["extra_json"]),
                           ("raw_type", row["raw_type_json"]), ("flags", row["flags"])):
            if value:
                data[f"{fid}:{key}"] = value
    return data
