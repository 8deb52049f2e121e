"""Schema inference that follows data: node results -> output bindings -> state -> readers.

Flow sensitivity: none, on purpose. A state field is readable at every node
with the schema declared in ``state_schema`` when it is declared (declaration
wins; writes are checked against it), else with the union of everything any
output binding writes to it. That is sound for types (every value the field
can hold is described) but does not prove that a write happened before a
read; presence is the engine's business at run time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from runtime._analysis import _schemas as S
from runtime._analysis._schemas import Schema
from runtime._document import InterruptNode, OutputBinding, SubgraphNode, TaskNode, WorkflowOutput
from runtime._paths import LocalPath


def result_schema(node: object, spec: Any | None, child_output: Schema | None,
                  prepare: Callable[[object], Schema] = S.prepare) -> Schema:
    """The schema of a node's result payload (what its output bindings read)."""
    if isinstance(node, TaskNode):
        return prepare(spec.result_schema) if spec is not None else S.ANY
    if isinstance(node, SubgraphNode):
        return child_output if child_output is not None else S.ANY
    if isinstance(node, InterruptNode):
        return prepare(node.resume_schema)
    return S.ANY


def written_schema(source: Schema, mode: str) -> Schema | None:
    """What a write of ``source`` with ``mode`` leaves in the target; None when the mode cannot apply."""
    if mode == "append":
        return S.array_of(source)
    if mode == "extend":
        return source if S.is_any(source) or S.is_array(source) else None
    if mode == "merge":
        return source if S.is_any(source) or S.is_object(source) else None
    return source


def nest(parts: tuple[str, ...], leaf: Schema) -> Schema:
    """``leaf`` placed at ``parts`` inside nested objects (each level required: the write creates it)."""
    schema = leaf
    for part in reversed(parts):
        schema = {"type": "object", "properties": {part: schema}, "required": [part]}
    return schema


@dataclass(slots=True)
class StateView:
    schema: Schema
    declared: frozenset[str]
    writers: dict[str, list[str]] = field(default_factory=dict)


def _merge_objects(schemas: list[Schema]) -> Schema:
    props: dict[str, list[Schema]] = {}
    required: list[str] = []
    if any(S.is_any(schema) for schema in schemas):
        return {"type": "object"}  # an unknown part makes the whole merge open
    for schema in schemas:
        for atom in S.object_atoms(schema):
            for name, prop in (atom.get("properties") or {}).items():
                props.setdefault(name, []).append(prop)
            required.extend(r for r in atom.get("required", ()) if r not in required)
    return {"type": "object", "properties": {name: _combine(options) for name, options in props.items()},
            "required": [r for r in required if r in props]}


def _combine(options: list[Schema]) -> Schema:
    """Writes to sibling fields of one object describe one object, not alternatives."""
    if len(options) > 1 and all(S.is_object(o) and len(S.atoms(o)) == 1 for o in options):
        return _merge_objects(options)
    return S.union(options)


def _one_list(options: list[Schema]) -> Schema:
    """Appends and extends add to whatever list is there: the array alternatives are one mixed list."""
    items: list[Schema] = []
    others: list[Schema] = []
    for option in options:
        for atom in S.atoms(option):
            if atom.get("type") == "array":
                found = atom.get("items")
                items.append(found if isinstance(found, dict) else S.ANY)
            else:
                others.append(atom)
    return S.union([S.array_of(S.union(items)), *others]) if items else S.union(others)


class StateWrites:
    """Every output-binding write of one workflow, deduplicated as it is added.

    Thousands of nodes typically write the same (shared) schema object to the
    same field, so writes are keyed by field, target and schema identity:
    the view is built from the distinct ones, and no per-write object
    outlives ``add`` (a large document would otherwise feed the cyclic GC
    one container per node).
    """

    def __init__(self, declared: Schema) -> None:
        props = declared.get("properties")
        self.declared: frozenset[str] = frozenset(props) if isinstance(props, dict) else frozenset()
        self.writers: dict[str, dict[str, None]] = {}  # field -> ordered set of node ids
        self._whole: dict[str, dict[int, Schema]] = {}
        self._merged: dict[str, dict[tuple[tuple[str, ...], int], tuple[Schema, Schema]]] = {}
        self._accumulated: set[str] = set()

    def add(self, node_id: str, binding: OutputBinding, schema: Schema) -> None:
        """``schema`` describes the written value (after the mode)."""
        parts = binding.target.parts
        top = parts[0]
        nodes = self.writers.get(top)
        if nodes is None:
            nodes = self.writers[top] = {}
        nodes[node_id] = None
        if top in self.declared:
            return
        if len(parts) > 1 or binding.mode == "merge":
            merged = self._merged.setdefault(top, {})
            key = (parts, id(schema))
            if key not in merged:
                merged[key] = (schema, nest(parts[1:], schema))
            return
        self._whole.setdefault(top, {}).setdefault(id(schema), schema)
        if binding.mode in ("append", "extend"):
            self._accumulated.add(top)

    def view(self, state_schema: Schema) -> StateView:
        """The state schema readers see: declared fields as declared, the others from their writes."""
        declared_props = state_schema.get("properties")
        props: dict[str, Schema] = dict(declared_props) if isinstance(declared_props, dict) else {}
        whole, merged = self._whole, self._merged
        for name in [*whole, *(m for m in merged if m not in whole)]:
            options = list(whole.get(name, {}).values())
            if name in merged:
                options.append(_merge_objects([nested for _, nested in merged[name].values()]))
            props[name] = _one_list(options) if name in self._accumulated else S.union(options)
        schema: Schema = {**state_schema, "type": "object", "properties": props}
        return StateView(schema, self.declared, {name: list(nodes) for name, nodes in self.writers.items()})


def output_schema(outputs: Iterable[tuple[WorkflowOutput, Schema]]) -> Schema:
    """The workflow's output payload: each output's path schema placed at its target."""
    whole: list[Schema] = []
    fields: dict[str, list[tuple[LocalPath, Schema]]] = {}
    for output, schema in outputs:
        if output.target.is_whole:
            whole.append(schema)
        else:
            fields.setdefault(output.target.parts[0], []).append((output.target, schema))
    props: dict[str, Schema] = {}
    for name, entries in fields.items():
        nested = [nest(target.parts[1:], schema) for target, schema in entries]
        props[name] = nested[0] if len(nested) == 1 else _merge_objects(nested)
    if whole and not props:
        return S.union(whole)
    base: Schema = {"type": "object", "properties": props, "required": list(props)}
    return _merge_objects([base, *whole]) if whole else base
