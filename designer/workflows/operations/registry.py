"""Named operations: their registry, arguments, context, and applying one or a batch with its undo."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from designer.core.errors import BadRequest
from designer.workflows.operations.fields import Document

Op = dict[str, Any]

#: How many operations one request may carry (a layout of every node is one ``move_nodes``).
MAX_OPS = 200


class Args(Mapping[str, Any]):
    """An operation's arguments, read like a form: ``get`` for one value, ``getlist`` for repeated ones."""

    def __init__(self, op: Mapping[str, Any]) -> None:
        self._op = op

    def __getitem__(self, key: str) -> Any:
        return self._op[key]

    def __iter__(self) -> Any:
        return iter(self._op)

    def __len__(self) -> int:
        return len(self._op)

    def get(self, key: str, default: Any = None) -> Any:
        value = self._op.get(key, default)
        if isinstance(value, list) and key not in _LIST_ARGS:
            return value[0] if value else default
        return value

    def getlist(self, key: str) -> list[Any]:
        value = self._op.get(key)
        if value is None:
            return []
        return list(value) if isinstance(value, list) else [value]

    def node(self) -> str:
        node_id = self._op.get("node")
        if not isinstance(node_id, str) or not node_id:
            raise BadRequest(f"operation {self._op.get('op')!r} needs the id of the node it changes", field="node")
        return node_id


#: Arguments that are lists in their own right, not a form's repeated field.
_LIST_ARGS = frozenset({"ids", "nodes", "routes", "unset", "case_label", "case_op", "case_value"})


@dataclass(frozen=True, slots=True)
class Context:
    """What an operation may ask of the analyzer, passed in so the operations stay pure.

    ``exit_labels(node)``: the labels a node ends its work with (its routes in a
    loop body lead back to the loop). ``field_schema(node, name)``: the schema an
    input field wants, so a typed literal is parsed as that type.
    """

    exit_labels: Callable[[Mapping[str, Any]], Sequence[str]] = lambda node: ("ok",)
    field_schema: Callable[[Mapping[str, Any], str], Mapping[str, Any] | None] = lambda node, name: None


@dataclass(frozen=True, slots=True)
class Applied:
    """A changed document, the operations that turn it back, and the node to show afterwards."""

    document: Document
    undo: list[Op] = field(default_factory=list)
    select: str | None = None


Operation = Callable[[Document, Args, Context], Applied]
OPERATIONS: dict[str, Operation] = {}


def operation(name: str) -> Callable[[Operation], Operation]:
    def register(fn: Operation) -> Operation:
        OPERATIONS[name] = fn
        return fn

    return register


def apply(document: Document, op: Mapping[str, Any], context: Context | None = None) -> Applied:
    """One operation on ``document`` (left unchanged); raises ``BadRequest`` naming what is wrong."""
    if not isinstance(op, Mapping):
        raise BadRequest("an edit operation is a JSON object like {\"op\": \"move_nodes\", ...}")
    name = op.get("op")
    fn = OPERATIONS.get(name) if isinstance(name, str) else None
    if fn is None:
        known = ", ".join(sorted(OPERATIONS))
        raise BadRequest(f"unknown edit operation {name!r}; the editor knows {known}", field="op")
    return fn(document, Args(op), context or Context())


def apply_all(document: Document, ops: object, context: Context | None = None) -> Applied:
    """A batch, in order, as one change: its undo reverts the whole batch (last operation first)."""
    if not isinstance(ops, list) or not ops:
        raise BadRequest("send a non-empty list of edit operations", field="ops")
    if len(ops) > MAX_OPS:
        raise BadRequest(f"at most {MAX_OPS} edit operations per request, got {len(ops)}", field="ops")
    undo: list[Op] = []
    select = None
    for op in ops:
        applied = apply(document, op, context)
        document = applied.document
        undo = applied.undo + undo
        select = applied.select or select
    return Applied(document, undo, select)


def restoring(before: Document, after: Document) -> list[Op]:
    """The operations that turn ``after`` back into ``before``: the nodes that changed (by id,
    when no node was added, removed or renamed) and the other top-level fields that changed."""
    ops: list[Op] = []
    skip = set()
    old_nodes, new_nodes = before.get("nodes", []), after.get("nodes", [])
    if [n.get("id") for n in old_nodes] == [n.get("id") for n in new_nodes]:
        changed = [copy.deepcopy(old) for old, new in zip(old_nodes, new_nodes, strict=True) if old != new]
        if changed:
            ops.append({"op": "put_nodes", "nodes": changed})
        skip.add("nodes")
    put = {key: copy.deepcopy(before[key]) for key in before if key not in skip and before[key] != after.get(key)}
    unset = sorted(key for key in after if key not in before and key not in skip)
    if put or unset:
        ops.append({"op": "set_fields", "set": put, "unset": unset})
    return ops


def diffed(before: Document, after: Document, select: str | None = None) -> Applied:
    return Applied(after, restoring(before, after), select)


def names(ops: Iterable[Mapping[str, Any]]) -> list[str]:
    return [str(op.get("op")) for op in ops]
