"""What two people's edits touch, and whether an edit still applies after someone else's.

Live co-editing (``designer.editor.live``) sends each edit with the revision its
author last saw. When others saved in between, the edit is *rebased*: applied
to the newer draft, in server order, unless it touches a thing one of those
later edits touched. A thing is a key, a tuple naming a place in the document
from the general to the particular: ``("node", "charge")`` is the whole node,
``("node", "charge", "position")`` its place on the canvas,
``("node", "charge", "field", "input", "amount")`` one input binding. Two keys
collide when one is a prefix of the other, so deleting a node collides with
moving it, while a move and a relabel of the same node, or edits of two
fields, both apply. The empty key ``()`` (a whole-document replace, an
operation this module does not know) collides with everything: unknown means
conflict, never a silent overwrite.

Pure functions: no database, no request.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Key = tuple[str, ...]

#: Panel operations that replace one section of a node: the section each one owns.
_NODE_SECTIONS = {
    "set_foreach": "foreach",
    "set_subgraph": "subgraph",
    "add_output": "output",
    "remove_output": "output",
    "set_branch": "cases",
    "add_case": "cases",
    "remove_case": "cases",
    "set_interrupt": "interrupt",
    "set_limits": "limits",
}
_BINDINGS = frozenset({"bind_path", "bind_literal", "bind_secret", "unbind", "unbind_tree"})
#: Workflow-level fields each settings operation writes.
_WORKFLOW_FIELDS = {
    "set_workflow_start": ("start",),
    "add_workflow_output": ("outputs",),
    "remove_workflow_output": ("outputs",),
    "set_settings": ("input_schema", "state_schema", "outputs", "start"),
}
EVERYTHING: Key = ()


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _field_key(node: str, field: str) -> Key:
    # "input.values.count" and "input.values" share a prefix: a key inside a field collides with the field.
    parts = tuple(part for part in field.replace("[", ".").replace("]", "").split(".") if part)
    if parts and parts[0] != "input" and parts[0] not in ("over", "path"):
        parts = ("input", *parts)
    return ("node", node, "field", *parts)


def touches(op: Mapping[str, Any]) -> set[Key]:
    """The keys one operation writes (see the module's doc)."""
    name = op.get("op")
    node = _text(op.get("node"))
    if name == "move_nodes":
        positions = op.get("positions")
        return {("node", str(i), "position") for i in positions} if isinstance(positions, Mapping) else {EVERYTHING}
    if name == "remove_nodes":
        ids = op.get("ids")
        ids = ids if isinstance(ids, list) else [ids]
        return {("node", str(i)) for i in ids}
    if name == "restore_nodes":
        rows = _list(op.get("nodes"))
        return {("node", _text(row[1].get("id"))) for row in rows
                if isinstance(row, list) and len(row) == 2 and isinstance(row[1], Mapping)} or {EVERYTHING}
    if name == "put_nodes":
        nodes = _list(op.get("nodes"))
        return {("node", _text(n.get("id"))) for n in nodes if isinstance(n, Mapping)} or {EVERYTHING}
    if name == "add_node":
        # The new node's id is chosen free on the draft it lands on; only wiring into a loop touches others.
        loop = _text(op.get("loop"))
        return {("node", loop, "routes", "loop")} if loop else set()
    if name in ("connect", "disconnect"):
        source, label, target = _text(op.get("source")), _text(op.get("label")), _text(op.get("target"))
        keys: set[Key] = {("node", source, "routes", label)}
        if target:
            keys.add(("node", target, "incoming", source, label))
        return keys
    if name == "set_basics":
        new_id = _text(op.get("id")).strip() or node
        if new_id != node:  # a rename rewrites every route and path naming the node
            return {("node", node), ("node", new_id)}
        return {("node", node, "basics")}
    if name in _BINDINGS and node:
        return {_field_key(node, _text(op.get("field")))}
    if name == "set_subgraph" and node:
        return {("node", node, "subgraph"), ("node", node, "field")}  # a new child clears the inputs
    if name in _NODE_SECTIONS and node:
        return {("node", node, _NODE_SECTIONS[name])}
    if name == "set_start":
        return {("workflow", "start")}
    if name == "set_schema":
        return {("node", node, "resume_schema")} if node else {("workflow", _text(op.get("key")))}
    if isinstance(name, str) and name in _WORKFLOW_FIELDS:
        return {("workflow", field) for field in _WORKFLOW_FIELDS[name]}
    if name == "set_fields":
        put = op.get("set")
        fields = {*(put if isinstance(put, Mapping) else {}), *_list(op.get("unset"))}
        if fields & {"nodes", "routes", "metadata"}:
            return {EVERYTHING}
        return {("workflow", str(field)) for field in fields}
    return {EVERYTHING}


def collide(a: Key, b: Key) -> bool:
    shorter = min(len(a), len(b))
    return a[:shorter] == b[:shorter]


@dataclass(frozen=True, slots=True)
class Kept:
    """A later edit that won a key this edit also wanted: its revision, author and what it changed."""

    revision: int
    actor: str
    key: Key

    def describe(self) -> str:
        return describe_key(self.key)

    def to_dict(self) -> dict[str, Any]:
        node = self.key[1] if len(self.key) > 1 and self.key[0] == "node" else None
        return {"revision": self.revision, "by": self.actor, "what": self.describe(), "node": node,
                "field": ".".join(self.key[3:]) if len(self.key) > 3 and self.key[2] == "field" else None}


def describe_key(key: Key) -> str:
    if not key:
        return "the whole workflow"
    if key[0] == "workflow":
        return f"the workflow's {key[1].replace('_', ' ')}" if len(key) > 1 else "the workflow"
    node = key[1] if len(key) > 1 else "?"
    if len(key) == 2:
        return f"node {node}"
    part = key[2]
    if part == "field":
        return f"{'.'.join(key[3:]) or 'the inputs'} of {node}"
    if part == "position":
        return f"the place of {node}"
    if part == "routes":
        return f"the {key[3]} route of {node}" if len(key) > 3 else f"the routes of {node}"
    if part == "incoming":
        return f"the route into {node}"
    if part == "basics":
        return f"the name and description of {node}"
    return f"the {part.replace('_', ' ')} of {node}"


@dataclass(frozen=True, slots=True)
class Later:
    """One edit saved after the revision a rebased edit started from."""

    revision: int
    actor: str
    ops: Sequence[Mapping[str, Any]]


def conflicts(ops: Iterable[Mapping[str, Any]], later: Iterable[Later]) -> list[Kept]:
    """The later edits that touched what ``ops`` touch (empty: ``ops`` rebase cleanly), first one per key."""
    mine = set().union(*(touches(op) for op in ops))
    found: list[Kept] = []
    seen: set[Key] = set()
    for entry in later:
        theirs = set().union(*(touches(op) for op in entry.ops)) if entry.ops else {EVERYTHING}
        for key in sorted(mine):
            if key in seen:
                continue
            hit = next((other for other in sorted(theirs) if collide(key, other)), None)
            if hit is not None:
                seen.add(key)
                found.append(Kept(entry.revision, entry.actor, hit))
    return found
