"""JSON Schema utilities for the subset pydantic emits, and type compatibility.

Schemas are treated as immutable values and shared freely; nothing here
mutates its input. ``prepare`` removes ``$ref``/``$defs`` and single-entry
``allOf`` once so that everything else can walk plain ``properties`` and
``items``. A schema is read as a union of *atoms* (one JSON type each, with
its constraints); ``{}`` (or a schema without a type) is *any*, which fits
everywhere and accepts everything, without a warning.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, cast

from runtime._paths import is_item_index
from runtime._schema_check import MAX_SCHEMA_SUBSCHEMAS
from runtime._schema_refs import SchemaTooLarge, inline_refs, local_definitions

Schema = dict[str, Any]

ANY: Final[Schema] = {}
NULL: Final[Schema] = {"type": "null"}

#: Compatibility levels, ordered so ``min`` gives the weakest link.
NONE, OPTIONAL, COMPATIBLE, EXACT = 0, 1, 2, 3
LEVEL_NAMES: Final[dict[int, str]] = {EXACT: "exact", COMPATIBLE: "compatible", OPTIONAL: "optional"}

_JSON_TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")
_MAX_DEPTH = 32


# ---------------------------------------------------------------------------
# preparation


class Prepared:
    """``prepare`` once per schema object (task specs are shared by many nodes)."""

    def __init__(self) -> None:
        self._seen: dict[int, tuple[object, Schema]] = {}

    def __call__(self, schema: object) -> Schema:
        found = self._seen.get(id(schema))
        if found is None:
            found = (schema, prepare(schema))
            self._seen[id(schema)] = found
        return found[1]


def prepare(schema: object) -> Schema:
    """A self-contained schema: local ``$ref``s inlined (``runtime._schema_refs``), ``allOf`` of one flattened.

    A recursive definition cannot be inlined forever: the inliner spells it out once and leaves the reference
    back; read here, that reference is the definition once more, after which it becomes *any* (titled with
    the definition name), which is sound for compatibility (any fits) and stops path options from descending
    forever.
    """
    if not isinstance(schema, dict):
        return {} if schema is True or schema is None else {"not": {}}
    if not local_definitions(schema) and not _has_composition(schema):
        return schema
    budget = [MAX_SCHEMA_SUBSCHEMAS]
    try:
        inlined = inline_refs(schema, budget=MAX_SCHEMA_SUBSCHEMAS)
        read = _read(inlined, local_definitions(inlined), frozenset(), budget)
    except SchemaTooLarge:
        # Refused as schema.invalid ("too complex"); as *any* it fits everywhere and reports nothing more.
        return {}
    return read if isinstance(read, dict) else {}


def _has_composition(node: object) -> bool:
    if isinstance(node, dict):
        if "$ref" in node or "allOf" in node:
            return True
        return any(_has_composition(value) for value in node.values())
    if isinstance(node, list):
        return any(_has_composition(value) for value in node)
    return False


def _read(node: object, kept: dict[str, Any], again: frozenset[str], budget: list[int]) -> object:
    """``node`` without references: a kept (recursive) one read once more as its definition, then (and any
    other reference) as *any*; ``allOf`` merged into its object."""
    if isinstance(node, list):
        return [_read(value, kept, again, budget) for value in node]
    if not isinstance(node, dict):
        return node
    budget[0] -= 1
    if budget[0] < 0:
        raise SchemaTooLarge
    ref = node.get("$ref")
    if isinstance(ref, str):
        rest = cast(Schema, _read({k: v for k, v in node.items() if k != "$ref"}, kept, again, budget))
        if ref not in kept or ref in again:
            return {**rest, "title": rest.get("title", ref.rsplit("/", 1)[-1])}
        target = _read(kept[ref], kept, again | {ref}, budget)
        return {**target, **rest} if isinstance(target, dict) else target
    out: Schema = {}
    for key, value in node.items():
        if key in ("$defs", "definitions"):
            continue
        out[key] = _read(value, kept, again, budget)
    all_of = out.get("allOf")
    if isinstance(all_of, list):
        del out["allOf"]
        for part in all_of:
            if isinstance(part, dict):
                out = _merge_all_of(out, part)
    return out


def _merge_all_of(base: Schema, part: Schema) -> Schema:
    merged = {**part, **base}
    if "properties" in base and "properties" in part:
        merged["properties"] = {**part["properties"], **base["properties"]}
    if "required" in base and "required" in part:
        merged["required"] = list(dict.fromkeys([*part["required"], *base["required"]]))
    return merged


# ---------------------------------------------------------------------------
# reading a schema as a union of atoms


_SHAPE_KEYS: Final = ("type", "anyOf", "oneOf", "enum", "const", "properties", "items")


def is_any(schema: Schema) -> bool:
    return not any(key in schema for key in (*_SHAPE_KEYS, "not"))


def opaque(atom: Schema) -> bool:
    """An atom described only by ``not``: it may be any value except some, so nothing is known to fit it."""
    return "not" in atom and "type" not in atom and not is_any(atom)


#: Python type -> JSON Schema type name, tried in order: ``bool`` before ``int``, which it is a subclass of.
_TYPE_NAMES: tuple[tuple[type, str], ...] = (
    (type(None), "null"), (bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (list, "array"),
    (Mapping, "object"),
)


def json_type(value: object) -> str:
    """The JSON Schema type name of one JSON value (``"integer"`` for whole numbers, as a schema says it);
    ``TypeError`` for a Python value that JSON does not have."""
    for python_type, name in _TYPE_NAMES:
        if isinstance(value, python_type):
            return name
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def atoms(schema: Schema) -> list[Schema]:
    """The schema as a flat union: each atom has one ``type`` (or is *any*)."""
    if not isinstance(schema, dict):
        return [ANY]
    union = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(union, list):
        out: list[Schema] = []
        for option in union:
            if isinstance(option, dict):
                out.extend(atoms(option))
        return out
    if "not" in schema and not any(key in schema for key in _SHAPE_KEYS):
        inner = schema["not"]
        if inner is True or (isinstance(inner, dict) and is_any(inner)):
            return []  # "not anything": no value at all
        return [schema]  # described only by what it is not: an opaque atom (see ``opaque``)
    if "const" in schema:
        return [{**schema, "type": json_type(schema["const"])}] if schema["const"] is not None else [NULL]
    if isinstance(schema.get("enum"), list):
        by_type: dict[str, list[Any]] = {}
        for value in schema["enum"]:
            by_type.setdefault(json_type(value), []).append(value)
        if "integer" in by_type and "number" in by_type:
            by_type["number"] += by_type.pop("integer")
        return [NULL if kind == "null" else {**schema, "type": kind, "enum": values}
                for kind, values in by_type.items()]
    kind = schema.get("type")
    if isinstance(kind, list):
        return [NULL if k == "null" else {**schema, "type": k} for k in kind if k in _JSON_TYPES]
    if kind is None:
        if "properties" in schema:
            return [{**schema, "type": "object"}]
        if "items" in schema:
            return [{**schema, "type": "array"}]
        return [ANY]
    return [schema]


def nullable(schema: Schema) -> bool:
    """Whether the value may be ``null`` (an *any* schema does not count: unknown is not optional)."""
    return any(atom.get("type") == "null" for atom in atoms(schema))


def make_nullable(schema: Schema) -> Schema:
    if is_any(schema) or nullable(schema):
        return schema
    return {"anyOf": [schema, NULL]}


def _key(schema: Schema) -> str:
    return json.dumps(schema, sort_keys=True, default=str)


def union(schemas: list[Schema]) -> Schema:
    """One schema accepting any of ``schemas`` (deduplicated; *any* absorbs the rest)."""
    if len(schemas) == 1 and "anyOf" not in schemas[0]:
        return ANY if is_any(schemas[0]) else schemas[0]
    unique: dict[str, Schema] = {}
    for schema in schemas:
        if is_any(schema):
            return ANY
        for option in schema.get("anyOf", [schema]) if set(schema) <= {"anyOf"} else [schema]:
            unique.setdefault(_key(option), option)
    if not unique:
        return ANY
    options = list(unique.values())
    return options[0] if len(options) == 1 else {"anyOf": options}


def array_of(items: Schema) -> Schema:
    return {"type": "array", "items": items}


def schema_of_value(value: object) -> Schema:
    """A schema describing one literal JSON value (for literal input bindings)."""
    kind = json_type(value)
    if kind == "array":
        return {"type": "array", "items": union([schema_of_value(v) for v in value]) if value else ANY}  # type: ignore[attr-defined]
    if kind == "object":
        props = {str(k): schema_of_value(v) for k, v in value.items()}  # type: ignore[attr-defined]
        return {"type": "object", "properties": props, "required": list(props)}
    if kind == "null":
        return NULL
    return {"type": kind, "const": value}


# ---------------------------------------------------------------------------
# descending


def object_atoms(schema: Schema) -> list[Schema]:
    return [atom for atom in atoms(schema) if atom.get("type") == "object" or is_any(atom)]


def _item_schema(atom: Schema, position: int) -> tuple[Schema | None, bool]:
    """Item ``position`` of an array atom: (its schema or None when there is none, whether it may be absent)."""
    prefix = atom.get("prefixItems")
    if isinstance(prefix, list) and position < len(prefix):
        item = prefix[position]
    else:
        item = atom.get("items", True)
    maximum = atom.get("maxItems")
    if item is False or (isinstance(maximum, int) and not isinstance(maximum, bool) and position >= maximum):
        return None, True
    minimum = atom.get("minItems")
    sure = isinstance(minimum, int) and not isinstance(minimum, bool) and position < minimum
    return (item if isinstance(item, dict) else ANY), not sure


def property_schema(schema: Schema, name: str, *, absent_is_null: bool = True,
                    for_target: bool = False, indexes: bool = False) -> Schema | None:
    """The schema of ``schema[name]``, or None when no object form of ``schema`` has that field.

    A field reached through a nullable object, or one that is neither
    required nor defaulted, may be missing at run time: its schema is made
    nullable so that binding it into a required field warns. ``for_target``
    asks what a field *accepts* instead: then absence never adds ``null``.

    An item index (``0``, ``12``) also reads an array's item. ``indexes``
    marks a payload target, where an index builds an array item and is never
    an object key; a state target (``for_target`` alone) only ever has keys.
    """
    found: list[Schema] = []
    maybe_missing = False
    index = is_item_index(name)
    array_item = index and (indexes or not for_target)
    candidates = atoms(schema)
    for atom in candidates:
        kind = atom.get("type")
        if kind == "null":
            maybe_missing = True
            continue
        if is_any(atom):
            found.append(ANY)
            continue
        if opaque(atom):
            found.append(ANY)
            maybe_missing = True
            continue
        if kind == "array" and array_item:
            item, absent = _item_schema(atom, int(name)) if len(name) <= 9 else (None, True)
            if item is not None:
                found.append(item)
            maybe_missing = maybe_missing or absent
            continue
        if kind != "object" or (index and indexes):
            maybe_missing = True
            continue
        props = atom.get("properties")
        extra = atom.get("additionalProperties")
        if isinstance(props, dict) and name in props:
            prop = props[name]
            found.append(prop if isinstance(prop, dict) else ANY)
            if absent_is_null and name not in atom.get("required", ()) and "default" not in prop:
                maybe_missing = True
        elif isinstance(extra, dict):
            found.append(extra)
            maybe_missing = True
        elif extra is True or (props is None and extra is not False):
            found.append(ANY)
        else:
            maybe_missing = True
    if not found:
        return None
    result = union(found)
    return make_nullable(result) if maybe_missing and not for_target else result


def descend(schema: Schema, parts: tuple[str, ...], *, absent_is_null: bool = True,
            for_target: bool = False, indexes: bool = False) -> tuple[Schema | None, int]:
    """Walk ``parts`` into ``schema``; returns (schema, -1) or (None, index of the first unknown part).

    ``absent_is_null`` applies to the first part only (state fields are not
    tracked for presence, their nested fields are); ``for_target`` reads the
    schema as the receiving side (see ``property_schema``).
    """
    current = schema
    for index, part in enumerate(parts):
        found = property_schema(current, part, absent_is_null=absent_is_null or index > 0, for_target=for_target,
                                indexes=indexes)
        if found is None:
            return None, index
        current = found
    return current, -1


def items_schema(schema: Schema) -> Schema | None:
    """The item schema of an array schema (*any* for an untyped array); None when it is never an array."""
    found: list[Schema] = []
    for atom in atoms(schema):
        if is_any(atom) or opaque(atom):
            found.append(ANY)
        elif atom.get("type") == "array":
            items = atom.get("items")
            found.append(items if isinstance(items, dict) else ANY)
    return union(found) if found else None


def is_array(schema: Schema) -> bool:
    return any(atom.get("type") == "array" for atom in atoms(schema))


def is_object(schema: Schema) -> bool:
    return any(atom.get("type") == "object" for atom in atoms(schema))


# ---------------------------------------------------------------------------
# compatibility


class FitCache:
    """Memoizes ``fit`` for schema objects that are shared (the analyzer reuses one object per schema).

    Keys are object ids, so the entries keep both schemas alive to stop an id being reused.
    """

    def __init__(self) -> None:
        self._seen: dict[tuple[int, int], tuple[Schema, Schema, int]] = {}

    def fit(self, source: Schema, target: Schema) -> int:
        key = (id(source), id(target))
        found = self._seen.get(key)
        if found is None:
            found = (source, target, fit(source, target))
            self._seen[key] = found
        return found[2]


def fit(source: Schema, target: Schema, depth: int = 0) -> int:
    """How well a value of ``source`` fits a field of ``target``: EXACT, COMPATIBLE, OPTIONAL or NONE."""
    if depth > _MAX_DEPTH:
        return COMPATIBLE
    target_atoms = atoms(target)
    if any(is_any(atom) for atom in target_atoms):
        return EXACT
    source_atoms = atoms(source)
    if not source_atoms:
        return EXACT  # "never" fits anything vacuously
    if any(is_any(atom) for atom in source_atoms):
        return COMPATIBLE
    target_nullable = any(atom.get("type") == "null" for atom in target_atoms)
    target_opaque = any(opaque(atom) for atom in target_atoms)
    levels: list[int] = []
    for atom in source_atoms:
        if opaque(atom):
            levels.append(OPTIONAL)  # whatever it is, it is not known to fit (nor known not to)
            continue
        if atom.get("type") == "null":
            levels.append(EXACT if target_nullable else OPTIONAL if target_opaque else -1)
            continue
        levels.append(max((_fit_atom(atom, t, depth) for t in target_atoms), default=NONE))
    if all(level <= NONE for level in levels):
        return NONE
    if any(level <= NONE for level in levels):
        return OPTIONAL
    return min(levels)


def _values(atom: Schema) -> list[Any] | None:
    if "const" in atom:
        return [atom["const"]]
    enum = atom.get("enum")
    return enum if isinstance(enum, list) else None


def _fit_atom(source: Schema, target: Schema, depth: int) -> int:
    if opaque(target):
        return OPTIONAL
    s_type, t_type = source.get("type"), target.get("type")
    if t_type == "null":
        return NONE
    level = EXACT
    if s_type != t_type:
        if s_type == "integer" and t_type == "number":
            level = COMPATIBLE
        else:
            return NONE
    target_values = _values(target)
    source_values = _values(source)
    if target_values is not None:
        if source_values is None:
            return OPTIONAL
        inside = [v for v in source_values if v in target_values]
        if len(inside) == len(source_values):
            return level
        return OPTIONAL if inside else NONE
    if source_values is not None:
        level = min(level, COMPATIBLE)
    if t_type == "array":
        s_items, t_items = source.get("items"), target.get("items")
        if not isinstance(t_items, dict):
            return level
        if not isinstance(s_items, dict):
            return min(level, COMPATIBLE)
        inner = fit(s_items, t_items, depth + 1)
        return min(level, inner) if inner > NONE else NONE
    if t_type == "object":
        return min(level, _fit_object(source, target, depth))
    return level


def _fit_object(source: Schema, target: Schema, depth: int) -> int:
    t_props = target.get("properties")
    s_props = source.get("properties")
    t_required = set(target.get("required", ()))
    s_required = set(source.get("required", ()))
    level = EXACT
    if not isinstance(s_props, dict):
        return COMPATIBLE if t_props or t_required else EXACT
    if isinstance(t_props, dict):
        for name, t_prop in t_props.items():
            if name in s_props:
                inner = fit(s_props[name], t_prop if isinstance(t_prop, dict) else ANY, depth + 1)
                if inner <= NONE:
                    return NONE
                if name in t_required and name not in s_required and "default" not in s_props[name]:
                    inner = min(inner, OPTIONAL)
                level = min(level, inner)
            elif name in t_required:
                return NONE
    for name in t_required - set(t_props or {}):
        if name not in s_props:
            return NONE
    if _closed(target):
        for name in s_props:
            if not isinstance(t_props, dict) or name not in t_props:
                if name in s_required:
                    return NONE  # the value has a field the target refuses
                level = min(level, OPTIONAL)
    extra = target.get("additionalProperties")
    if isinstance(extra, dict):
        for name, s_prop in s_props.items():
            if not isinstance(t_props, dict) or name not in t_props:
                inner = fit(s_prop, extra, depth + 1)
                if inner <= NONE:
                    return NONE
                level = min(level, inner)
    return level


def _closed(target: Schema) -> bool:
    """No field beyond ``properties`` is accepted (patternProperties could accept some: not judged)."""
    return target.get("additionalProperties") is False and not target.get("patternProperties")


def why_not(source: Schema, target: Schema, depth: int = 0) -> str:
    """Why a ``source`` value may not (or cannot) fit ``target``, in words; "" when the types say it all.

    Mirrors ``fit`` and names the first field at fault, so a message can say
    "it has no field 'sku'" instead of "an object into an object".
    """
    if depth > _MAX_DEPTH:
        return ""
    target_atoms = atoms(target)
    if any(is_any(atom) for atom in target_atoms):
        return ""
    source_atoms = atoms(source)
    if not source_atoms or any(is_any(atom) for atom in source_atoms):
        return ""
    if any(opaque(atom) for atom in source_atoms):
        return "its schema only says what it is not ('not'), so it is not known to fit"
    opaque_target = ("the field's schema only says what it must not be ('not'), so the value is not known to fit"
                     if any(opaque(atom) for atom in target_atoms) else "")
    nullable_target = any(atom.get("type") == "null" for atom in target_atoms)
    misfits: list[Schema] = []
    for atom in source_atoms:
        if atom.get("type") == "null" or is_any(atom):
            if atom.get("type") == "null" and not nullable_target:
                return opaque_target or "it may be null"
            continue
        scored = [(_fit_atom(atom, t, depth), t) for t in target_atoms]
        level, best = max(scored, key=lambda pair: pair[0], default=(NONE, ANY))
        if level >= COMPATIBLE:
            continue
        if opaque_target:
            return opaque_target
        if best.get("type") == "object" and atom.get("type") == "object":
            reason = _object_why(atom, best, depth)
        elif best.get("type") == "array" and atom.get("type") == "array" and isinstance(best.get("items"), dict):
            items = atom.get("items")
            inner = why_not(items if isinstance(items, dict) else ANY, best["items"], depth + 1)
            reason = f"its items: {inner}" if inner else ""
        elif _values(best) is not None:
            reason = ("it may not be one of the allowed values" if level == OPTIONAL else
                      "none of its values is allowed")
        else:
            reason = ""
        if reason:
            return reason
        if level <= NONE:
            misfits.append(atom)
    if misfits and len(misfits) < len(source_atoms):
        return f"it may be {kind_text(union(misfits))}, which does not fit"
    return ""


def _object_why(source: Schema, target: Schema, depth: int) -> str:
    found = target.get("properties")
    t_props: dict[str, Any] = found if isinstance(found, dict) else {}
    s_props = source.get("properties")
    if not isinstance(s_props, dict):
        return ""
    t_required = set(target.get("required", ()))
    s_required = set(source.get("required", ()))
    for name in [*t_props, *(n for n in target.get("required", ()) if n not in t_props)]:
        if name not in s_props:
            if name in t_required:
                return f"it has no field {name!r}, which is required"
            continue
        t_prop = t_props.get(name)
        t_prop = t_prop if isinstance(t_prop, dict) else ANY
        inner = fit(s_props[name], t_prop, depth + 1)
        if inner <= OPTIONAL:
            detail = why_not(s_props[name], t_prop, depth + 1)
            verb = "does not fit" if inner <= NONE else "may not fit"
            shown = detail or f"{kind_text(s_props[name])} into {kind_text(t_prop)}"
            return f"its field {name!r} {verb}: {shown}"
        if name in t_required and name not in s_required and "default" not in s_props[name]:
            return f"its field {name!r} may be missing, and it is required"
    if _closed(target):
        for name in s_props:
            if name not in t_props:
                return (f"it {'has' if name in s_required else 'may have'} field {name!r}, which is not allowed "
                        f"(additionalProperties is false)")
    return ""


# ---------------------------------------------------------------------------
# display


def type_label(schema: Schema, depth: int = 0) -> str:
    """Short display type: ``string``, ``integer | null``, ``array<object>``, ``any``."""
    labels: list[str] = []
    has_null = False
    for atom in atoms(schema):
        kind = atom.get("type")
        if kind == "null":
            has_null = True
            continue
        if is_any(atom):
            label = "any"
        elif opaque(atom):
            negated = atom["not"] if isinstance(atom["not"], dict) else ANY
            label = f"not<{type_label(negated, depth + 1) if depth < 3 else 'any'}>"
        elif kind == "array":
            items = atom.get("items")
            inner = type_label(items, depth + 1) if isinstance(items, dict) and depth < 3 else "any"
            label = f"array<{inner}>"
        else:
            label = str(kind)
        if label not in labels:
            labels.append(label)
    if has_null:
        labels.append("null")
    return " | ".join(labels) if labels else "never"


_ARTICLES: Final[dict[str, str]] = {
    "null": "null", "any": "any value", "never": "no value at all (its schema allows none)",
}


def kind_text(schema: Schema) -> str:
    """``type_label`` for a sentence: ``an object``, ``a string or null``, ``an array<string>``,
    ``anything but a string`` (a ``not`` schema)."""
    return _label_text(type_label(schema))


def _label_text(text: str) -> str:
    words = []
    for label in _split_union(text):
        fixed = _ARTICLES.get(label)
        if fixed is not None:
            words.append(fixed)
        elif label.startswith("not<") and label.endswith(">"):
            words.append(f"anything but {_label_text(label[4:-1])}")
        else:
            words.append(f"{'an' if label[:1] in 'aeiou' else 'a'} {label}")
    return " or ".join(words)


def _split_union(text: str) -> list[str]:
    """``a | array<b | null>`` -> ``["a", "array<b | null>"]``: split only outside angle brackets."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif depth == 0 and text.startswith(" | ", index):
            parts.append(text[start:index])
            start = index + 3
    parts.append(text[start:])
    return parts
