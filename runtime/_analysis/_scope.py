"""What a graph path reads at a node: schemas of ``input``, ``state`` and ``context`` per control region.

``Scope`` answers for one workflow: the input schema, the state view (see
``_infer``) and, per owner stack, the context schema. Context schemas are
built once per distinct stack and cached, so every node of one region shares
one schema object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from runtime._analysis import _schemas as S
from runtime._analysis._schemas import Schema
from runtime._context import FOREACH_CONTEXT_FIELDS, RESERVED_CONTEXT_FIELDS
from runtime._diagnostics import Severity
from runtime._document import ForeachNode
from runtime._paths import GraphSourcePath, format_key

Stack = tuple[str, ...]

IDENTITY_FIELDS = ("node_id", "activation_id", "frame_id", "scope_id", "lineage_id")
IDENTITY_DESCRIPTIONS = {
    "node_id": "Static id of the foreach node",
    "activation_id": "Id of this run of the foreach (one per entry into it)",
    "frame_id": "Id of the item's frame",
    "scope_id": "Id of the runtime scope (the workflow invocation)",
    "lineage_id": "Id of the item's line of work, stable across checkpoints",
}
INDEX_SCHEMA: Schema = {"type": "integer", "minimum": 0}
_ID_SCHEMA: Schema = {"type": "string"}


@dataclass(frozen=True, slots=True)
class Problem:
    code: str
    message: str
    hint: str
    severity: Severity = "error"


@dataclass(frozen=True, slots=True)
class Resolved:
    schema: Schema | None
    problem: Problem | None = None


def _names(schema: Schema) -> list[str]:
    names: list[str] = []
    for atom in S.object_atoms(schema):
        props = atom.get("properties")
        if isinstance(props, dict):
            names.extend(name for name in props if name not in names)
    return names


def _listing(names: list[str]) -> str:
    if not names:
        return "it declares no fields"
    shown = ", ".join(names[:12])
    return f"known fields: {shown}{', …' if len(names) > 12 else ''}"


@dataclass(eq=False)
class Scope:
    workflow_id: str
    foreach_nodes: Mapping[str, ForeachNode]
    other_nodes: frozenset[str]
    stacks: Mapping[str, Stack]
    input_schema: Schema
    state_schema: Schema
    caller_foreach: frozenset[str] = frozenset()
    caller_aliases: frozenset[str] = frozenset()
    alias_owner: dict[str, str] = field(init=False)
    _items: dict[str, Schema] = field(default_factory=dict, init=False)
    _in_progress: set[str] = field(default_factory=set, init=False)
    _contexts: dict[Stack, Schema] = field(default_factory=dict, init=False)
    _resolved: dict[tuple[GraphSourcePath, Stack], Resolved] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.alias_owner = {n.as_: n.id for n in self.foreach_nodes.values() if n.as_ is not None}

    # -- foreach items --------------------------------------------------------

    def over_schema(self, foreach_id: str) -> Resolved:
        node = self.foreach_nodes[foreach_id]
        return self.resolve(node.over, self.stacks.get(foreach_id, ()))

    def item_schema(self, foreach_id: str) -> Schema:
        """The ``items`` schema of the foreach's ``over`` collection (*any* when unknown)."""
        cached = self._items.get(foreach_id)
        if cached is not None:
            return cached
        if foreach_id in self._in_progress:
            return S.ANY  # over reads its own item: reported elsewhere as inactive
        self._in_progress.add(foreach_id)
        try:
            over = self.over_schema(foreach_id).schema
            items = S.items_schema(over) if over is not None else None
            item = S.ANY if items is None else items
        finally:
            self._in_progress.discard(foreach_id)
        self._items[foreach_id] = item
        return item

    def active_aliases(self, stack: Stack) -> dict[str, str]:
        """alias -> foreach id, for aliases that are unique and not reserved in this stack."""
        counts: dict[str, list[str]] = {}
        for foreach_id in stack:
            alias = self.foreach_nodes[foreach_id].as_
            if alias is not None:
                counts.setdefault(alias, []).append(foreach_id)
        return {alias: ids[0] for alias, ids in counts.items()
                if len(ids) == 1 and alias not in RESERVED_CONTEXT_FIELDS}

    # -- context --------------------------------------------------------------

    def entry_schema(self, foreach_id: str) -> Schema:
        props: dict[str, Schema] = {
            "node_id": {"type": "string", "const": foreach_id},
            **{name: _ID_SCHEMA for name in IDENTITY_FIELDS[1:]},
            "index": INDEX_SCHEMA,
            "item": self.item_schema(foreach_id),
        }
        return {"type": "object", "properties": {name: props[name] for name in FOREACH_CONTEXT_FIELDS},
                "required": list(FOREACH_CONTEXT_FIELDS), "additionalProperties": False}

    def context_schema(self, stack: Stack) -> Schema:
        cached = self._contexts.get(stack)
        if cached is not None:
            return cached
        entries = {foreach_id: self.entry_schema(foreach_id) for foreach_id in stack}
        props: dict[str, Schema] = {
            "foreach": {"type": "object", "properties": entries, "required": list(stack),
                        "additionalProperties": False},
        }
        if stack:
            props["loop_item"] = entries[stack[-1]]["properties"]["item"]
            props["loop_index"] = INDEX_SCHEMA
            for alias, foreach_id in self.active_aliases(stack).items():
                props[alias] = entries[foreach_id]["properties"]["item"]
        schema: Schema = {"type": "object", "properties": props, "required": list(props),
                          "additionalProperties": False}
        self._contexts[stack] = schema
        return schema

    # -- resolving paths ------------------------------------------------------

    def resolve(self, path: GraphSourcePath, stack: Stack) -> Resolved:
        key = (path, stack)
        found = self._resolved.get(key)
        if found is None:
            found = self._resolve(path, stack)
            self._resolved[key] = found
        return found

    def _resolve(self, path: GraphSourcePath, stack: Stack) -> Resolved:
        if path.root == "input":
            return self._descend(path, self.input_schema, path.parts, 0, absent_is_null=True,
                                 where="the workflow's input_schema",
                                 hint="declare the field in the workflow's input_schema, or pick a declared one")
        if path.root == "state":
            return self._descend(path, self.state_schema, path.parts, 0, absent_is_null=False,
                                 where="the state (state_schema or any output binding)",
                                 hint="declare the field in state_schema or write it with an output binding")
        return self._context(path, stack)

    def _descend(self, path: GraphSourcePath, schema: Schema, parts: tuple[str, ...], offset: int, *,
                 absent_is_null: bool, where: str, hint: str, code: str = "path.unknown_field") -> Resolved:
        found, bad = S.descend(schema, parts, absent_is_null=absent_is_null)
        if found is not None:
            return Resolved(found)
        parent, _ = S.descend(schema, parts[:bad], absent_is_null=absent_is_null)
        assert parent is not None
        missing = format_key((path.root, *path.parts[: offset + bad + 1]))
        holder = format_key((path.root, *path.parts[: offset + bad]))
        if S.is_array(parent) and not S.is_object(parent):
            return Resolved(None, Problem(
                code, f"{missing!r} reads into {holder!r}, which is an array; paths do not index arrays",
                "iterate the array with a foreach and read the item through context.foreach.<id>.item, "
                "or bind the whole array"))
        if not S.object_atoms(parent):
            return Resolved(None, Problem(
                code, f"{missing!r} reads a field of {holder!r}, which is {S.kind_text(parent)}, not an object",
                f"bind {holder!r} itself"))
        return Resolved(None, Problem(
            code, f"{missing!r} is not declared in {where if bad + offset == 0 else repr(holder)}; "
                  f"{_listing(_names(parent))}", hint))

    def _context(self, path: GraphSourcePath, stack: Stack) -> Resolved:
        parts = path.parts
        if not parts:
            return Resolved(self.context_schema(stack))
        head = parts[0]
        if head == "foreach":
            if len(parts) == 1:
                return Resolved(self.context_schema(stack)["properties"]["foreach"])
            return self._foreach_entry(path, stack)
        if head in ("loop_item", "loop_index"):
            if not stack:
                return Resolved(None, Problem(
                    "path.unknown_context_field",
                    f"{str(path)!r} reads context.{head}, but this node is not inside any foreach body",
                    "read it inside a foreach body, or bind the value you need from input or state"))
            if head == "loop_index":
                return self._leaf(path, INDEX_SCHEMA, parts[1:])
            return self._descend(path, self.item_schema(stack[-1]), parts[1:], 1, absent_is_null=True,
                                 where="the loop item", hint="pick a field of the item")
        owner = self.alias_owner.get(head)
        active = self.active_aliases(stack)
        if head in active:
            return self._descend(path, self.item_schema(active[head]), parts[1:], 1, absent_is_null=True,
                                 where="the loop item", hint="pick a field of the item")
        if owner is not None and owner in stack:
            return Resolved(None, Problem(
                "alias.collision", f"{str(path)!r} reads alias {head!r}, which more than one active foreach uses",
                f"read context.foreach.{owner}.item explicitly"))
        if owner is not None:
            return Resolved(None, Problem(
                "path.inactive_foreach",
                f"{str(path)!r} reads alias {head!r} of foreach {owner!r}, which is not active here "
                f"({self._active_text(stack)})", "read it inside that foreach's body, or store it in state"))
        if head in self.caller_aliases:
            return Resolved(None, Problem(
                "path.cross_scope",
                f"{str(path)!r} reads alias {head!r} of a calling workflow's foreach; a subgraph does not see its "
                f"caller's context", "pass it through the subgraph's input bindings and read it from input"))
        return Resolved(None, Problem(
            "path.unknown_context_field",
            f"{str(path)!r} reads context.{head}, which does not exist here; context has foreach, loop_item, "
            f"loop_index and the aliases of active foreach nodes",
            "use context.foreach.<id>.item (or an active alias)"))

    def _active_text(self, stack: Stack) -> str:
        return "active foreach: " + ", ".join(stack) if stack else "no foreach is active here"

    def _foreach_entry(self, path: GraphSourcePath, stack: Stack) -> Resolved:
        parts = path.parts
        foreach_id = parts[1]
        if foreach_id not in self.foreach_nodes:
            if foreach_id in self.caller_foreach:
                return Resolved(None, Problem(
                    "path.cross_scope",
                    f"{str(path)!r} addresses foreach {foreach_id!r} of a calling workflow; a subgraph runs in "
                    f"its own scope and does not see its caller's context",
                    "pass it through the subgraph's input bindings and read it from input"))
            what = "a node that is not a foreach" if foreach_id in self.other_nodes else "no such node"
            return Resolved(None, Problem(
                "path.unknown_foreach",
                f"{str(path)!r} names foreach {foreach_id!r}, but workflow {self.workflow_id!r} has {what}",
                "use the id of a foreach node of this workflow" + (
                    f" ({', '.join(sorted(self.foreach_nodes))})" if self.foreach_nodes else "")))
        if foreach_id not in stack:
            return Resolved(None, Problem(
                "path.inactive_foreach",
                f"{str(path)!r} reads foreach {foreach_id!r}, which is not active at this node "
                f"({self._active_text(stack)})",
                f"read it only inside the body of {foreach_id!r}, or have the body store what you need in state"))
        entry = self.context_schema(stack)["properties"]["foreach"]["properties"][foreach_id]
        if len(parts) == 2:
            return Resolved(entry)
        field = parts[2]
        if field not in FOREACH_CONTEXT_FIELDS:
            return Resolved(None, Problem(
                "path.unknown_context_field",
                f"{str(path)!r} asks for {field!r}, which a foreach context entry does not have",
                f"use one of: {', '.join(FOREACH_CONTEXT_FIELDS)}"))
        if field == "item":
            return self._descend(path, entry["properties"]["item"], parts[3:], 3, absent_is_null=True,
                                 where="the loop item", hint="pick a field of the item")
        return self._leaf(path, entry["properties"][field], parts[3:])

    def _leaf(self, path: GraphSourcePath, schema: Schema, rest: tuple[str, ...]) -> Resolved:
        if not rest:
            return Resolved(schema)
        return Resolved(None, Problem(
            "path.unknown_context_field", f"{str(path)!r} reads into {S.kind_text(schema)}, which has no fields",
            f"stop the path at {format_key((path.root, *path.parts[: len(path.parts) - len(rest)]))!r}"))
