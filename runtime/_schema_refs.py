"""Inlining a JSON Schema's local ``$ref``s: the one place that decides how far references are followed.

The rule: a reference into the schema's own ``$defs`` (or draft-07 ``definitions``) is replaced by the
definition, with the referring object's other keywords laid over it; a reference to a definition that is
already being expanded on the way down (recursion) stays a ``$ref``, and every definition such references
can reach stays in ``$defs``; a reference to nothing stays as written. So the result validates exactly the
values the input validates, and a recursive structure is spelled out once before it refers back to itself.

A reader that needs a finite schema with no references at all (the analyzer's type checks) reads a
reference that is left as *any*.
"""

from __future__ import annotations

from typing import Any

_DEF_KEYS = ("$defs", "definitions")


class SchemaTooLarge(Exception):
    """Inlining would make more than the allowed number of subschemas (a ``$defs`` bomb is exponential)."""


def local_definitions(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema's definitions by the reference that names them (``#/$defs/x``, ``#/definitions/x``)."""
    defs: dict[str, Any] = {}
    for key in _DEF_KEYS:
        found = schema.get(key)
        if isinstance(found, dict):
            defs.update({f"#/{key}/{name}": value for name, value in found.items()})
    return defs


def inline_refs(schema: dict[str, Any], *, budget: int | None = None) -> dict[str, Any]:
    """``schema`` with its local references inlined by the rule above; ``SchemaTooLarge`` past ``budget``
    objects (None: no limit). The input is not changed; a schema without definitions comes back as it is."""
    defs = local_definitions(schema)
    if not defs:
        return schema
    left = [budget]
    kept: set[str] = set()

    def resolve(node: Any, stack: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [resolve(item, stack) for item in node]
        if not isinstance(node, dict):
            return node
        if left[0] is not None:
            left[0] -= 1
            if left[0] < 0:
                raise SchemaTooLarge
        ref = node.get("$ref")
        if isinstance(ref, str) and ref in defs:
            if ref in stack:
                kept.add(ref)
                return dict(node)
            rest = {key: resolve(value, stack) for key, value in node.items() if key != "$ref"}
            target = resolve(defs[ref], (*stack, ref))
            return {**target, **rest} if isinstance(target, dict) else target
        return {key: resolve(value, stack) for key, value in node.items() if key not in _DEF_KEYS}

    result: dict[str, Any] = resolve(schema, ())
    # A recursive definition is kept, and so is every definition it refers to (kept ones are resolved from
    # their own name down, so they refer back to themselves, or to definitions kept with them).
    done: dict[str, Any] = {}
    while kept - done.keys():
        ref = min(kept - done.keys())
        done[ref] = resolve(defs[ref], (ref,))
    for ref, definition in sorted(done.items()):
        section, name = ref[2:].split("/", 1)
        result.setdefault(section, {})[name] = definition
    return result
