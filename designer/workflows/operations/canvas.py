"""What the canvas sends: move, add, remove and restore nodes, connect and disconnect routes."""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from designer.core.errors import BadRequest
from designer.workflows.operations.fields import NODE_ID, Document, find_node
from designer.workflows.operations.registry import Applied, Args, Context, Op, operation


def _slug(text: object) -> str:
    cleaned = re.sub(r"[^a-z0-9_-]+", "_", str(text or "node").lower()).strip("_")
    return cleaned[:80] or "node"


def unique_id(document: Document, hint: object) -> str:
    """A free node id from a hint (a task name, a kind): ``charge``, then ``charge_2``..."""
    base = _slug(hint)
    taken = {node.get("id") for node in document.get("nodes", [])}
    if base not in taken:
        return base
    number = 2
    while f"{base}_{number}" in taken:
        number += 1
    return f"{base}_{number}"


def _position(value: object, *, node: str) -> dict[str, int]:
    if not isinstance(value, Mapping):
        raise BadRequest(f"the position of {node!r} is an object {{\"x\": 0, \"y\": 0}}", node=node)
    point = {}
    for axis in ("x", "y"):
        number = value.get(axis)
        if isinstance(number, bool) or not isinstance(number, int | float) or not math.isfinite(number) \
                or abs(number) > 1e7:
            raise BadRequest(f"the position of {node!r} needs a finite number {axis}", node=node, field=axis)
        point[axis] = round(number)
    return point


def _positions(document: Document) -> dict[str, Any]:
    metadata = document.setdefault("metadata", {})
    if not isinstance(metadata.get("positions"), dict):
        metadata["positions"] = {}
    positions: dict[str, Any] = metadata["positions"]
    return positions


def _ids(document: Document) -> list[str]:
    return [node.get("id") for node in document.get("nodes", [])]


@operation("move_nodes")
def move_nodes(document: Document, args: Args, context: Context) -> Applied:
    """``positions: {id: {x, y}}``; a null position forgets the node's place (the canvas lays it out)."""
    moved = args.get("positions")
    if not isinstance(moved, Mapping) or not moved:
        raise BadRequest("move_nodes needs positions: {node id: {x, y}}", field="positions")
    # Only the places change: the nodes and routes are shared with ``document`` (600 nodes: a deep copy was
    # most of a move's server time, and the save's patch then finds them unchanged by identity).
    metadata = document.get("metadata")
    doc = {**document, "metadata": dict(metadata) if isinstance(metadata, Mapping) else {}}
    if isinstance(doc["metadata"].get("positions"), dict):
        doc["metadata"]["positions"] = dict(doc["metadata"]["positions"])
    known = set(_ids(doc))
    positions = _positions(doc)
    old: dict[str, Any] = {}
    for node_id, point in moved.items():
        if node_id not in known:
            raise BadRequest(f"the workflow has no node {node_id!r}; it may have been deleted meanwhile",
                             node=node_id)
        old[node_id] = copy.deepcopy(positions.get(node_id))
        if point is None:
            positions.pop(node_id, None)
        else:
            positions[node_id] = _position(point, node=node_id)
    return Applied(doc, [{"op": "move_nodes", "positions": old}])


def _node_template(value: object) -> dict[str, Any]:
    if not isinstance(value, Mapping) or not isinstance(value.get("kind"), str):
        raise BadRequest("add_node needs node: a node object with its kind, e.g. {\"kind\": \"task\", ...}",
                         field="node")
    return dict(copy.deepcopy(value))


def _route_index(document: Document, source: str, label: str) -> int | None:
    for index, route in enumerate(document.get("routes", [])):
        if route.get("source") == source and route.get("label") == label:
            return index
    return None


def _set_route(document: Document, source: str, label: str, target: str) -> None:
    routes = document.setdefault("routes", [])
    index = _route_index(document, source, label)
    if index is None:
        routes.append({"source": source, "label": label, "target": target})
    else:
        routes[index] = {"source": source, "label": label, "target": target}


def loop_body(document: Document, owner: str) -> list[str]:
    """The nodes of ``owner``'s body, following routes from its ``loop`` route without passing
    back through it, in the order the routes reach them."""
    index = _route_index(document, owner, "loop")
    if index is None:
        return []
    by_source: dict[str, list[str]] = {}
    for route in document.get("routes", []):
        by_source.setdefault(route.get("source"), []).append(route.get("target"))
    first = document["routes"][index]["target"]
    body, todo = [], [first]
    while todo:
        node_id = todo.pop(0)
        if node_id == owner or node_id in body:
            continue
        body.append(node_id)
        todo.extend(by_source.get(node_id, []))
    return body


def _wire_into_loop(document: Document, new_id: str, owner: str, exits: Sequence[str], at: str) -> None:
    """Put ``new_id`` in ``owner``'s body: at the start (right after ``loop``) or at the end (just
    before the route back), and route its exit labels on, so the item still returns to ``owner``."""
    if not any(node.get("id") == owner and node.get("kind") == "foreach" for node in document.get("nodes", [])):
        raise BadRequest(f"{owner!r} is not a foreach of this workflow", node=owner, field="loop")
    entry_index = _route_index(document, owner, "loop")
    body = loop_body(document, owner)
    if entry_index is None or at == "start":
        follow = owner if entry_index is None else document["routes"][entry_index]["target"]
        _set_route(document, owner, "loop", new_id)
        for label in exits:
            _set_route(document, new_id, label, follow)
        return
    backs = [route for route in document.get("routes", [])
             if route.get("target") == owner and route.get("source") in body]
    if backs:
        # The item's last step now leads to the new node, which leads back.
        backs[-1]["target"] = new_id
    for label in exits:
        _set_route(document, new_id, label, owner)


@operation("add_node")
def add_node(document: Document, args: Args, context: Context) -> Applied:
    """``node`` (a node without id or with a wanted ``id``), ``id_hint``, ``position``; with ``loop``
    (a foreach id) the node joins that loop's body at ``at`` = ``end`` (default) or ``start``."""
    node = _node_template(args.get("node"))
    wanted = args.get("id")
    if isinstance(wanted, str) and NODE_ID.fullmatch(wanted) and wanted not in _ids(document):
        node_id = wanted
    else:
        hint = wanted if isinstance(wanted, str) and wanted else args.get("id_hint")
        node_id = unique_id(document, hint or str(node.get("task", "")).rsplit(".", 1)[-1] or node["kind"])
    node["id"] = node_id
    doc = copy.deepcopy(document)
    doc.setdefault("nodes", []).append(node)
    if args.get("position") is not None:
        _positions(doc)[node_id] = _position(args.get("position"), node=node_id)
    owner = args.get("loop")
    undo: list[Op] = [{"op": "remove_nodes", "ids": [node_id]}]
    if owner:
        at = args.get("at", "end")
        if at not in ("start", "end"):
            raise BadRequest("at is 'start' (after the loop route) or 'end' (before the route back)", field="at")
        exits = [label for label in context.exit_labels(node) if label not in ("error", "loop")]
        _wire_into_loop(doc, node_id, str(owner), exits, at)
        undo.append({"op": "set_fields", "set": {"routes": copy.deepcopy(document.get("routes", []))},
                     "unset": []})
    return Applied(doc, undo, node_id)


@operation("remove_nodes")
def remove_nodes(document: Document, args: Args, context: Context) -> Applied:
    """``ids``: the nodes go with every route from or to them, their places and, if one was, the start."""
    drop = {node_id for node_id in args.getlist("ids") if isinstance(node_id, str)}
    if not drop:
        raise BadRequest("remove_nodes needs ids: the node ids to delete", field="ids")
    for node_id in drop:
        find_node(document, node_id)
    doc = copy.deepcopy(document)
    nodes = [[i, n] for i, n in enumerate(doc.get("nodes", [])) if n.get("id") in drop]
    routes = [[i, r] for i, r in enumerate(doc.get("routes", []))
              if r.get("source") in drop or r.get("target") in drop]
    doc["nodes"] = [n for n in doc.get("nodes", []) if n.get("id") not in drop]
    doc["routes"] = [r for r in doc.get("routes", []) if r.get("source") not in drop and r.get("target") not in drop]
    positions = _positions(doc) if "metadata" in document else {}
    places = {node_id: positions.pop(node_id) for node_id in sorted(drop) if node_id in positions}
    restore: Op = {"op": "restore_nodes", "nodes": nodes, "routes": routes, "positions": places}
    if doc.get("start") in drop:
        restore["start"] = doc["start"]
        doc["start"] = None
    return Applied(doc, [restore])


def _indexed(value: object, what: str) -> list[tuple[int, dict[str, Any]]]:
    if not isinstance(value, list):
        raise BadRequest(f"restore_nodes needs {what}: a list of [index, object]", field=what)
    rows = []
    for row in value:
        if not (isinstance(row, list) and len(row) == 2 and isinstance(row[0], int) and isinstance(row[1], dict)):
            raise BadRequest(f"restore_nodes needs {what}: a list of [index, object]", field=what)
        rows.append((row[0], copy.deepcopy(row[1])))
    return sorted(rows, key=lambda row: row[0])


@operation("restore_nodes")
def restore_nodes(document: Document, args: Args, context: Context) -> Applied:
    """Undo of ``remove_nodes``: puts nodes and routes back where they were."""
    doc = copy.deepcopy(document)
    nodes, routes = _indexed(args.get("nodes"), "nodes"), _indexed(args.get("routes", []), "routes")
    taken = set(_ids(doc))
    for index, node in nodes:
        if node.get("id") in taken:
            raise BadRequest(f"a node {node.get('id')!r} exists again; it cannot be restored", node=node.get("id"))
        doc.setdefault("nodes", []).insert(index, node)
    for index, route in routes:
        doc.setdefault("routes", []).insert(index, route)
    places = args.get("positions") or {}
    if places:
        positions = _positions(doc)
        for node_id, point in places.items():
            positions[node_id] = _position(point, node=node_id)
    if args.get("start"):
        doc["start"] = args.get("start")
    return Applied(doc, [{"op": "remove_nodes", "ids": [node.get("id") for _, node in nodes]}])


def _route_end(document: Document, args: Args, key: str) -> str:
    node_id = args.get(key)
    if not isinstance(node_id, str):
        raise BadRequest(f"a route needs its {key} node id", field=key)
    find_node(document, node_id)
    return node_id


@operation("connect")
def connect(document: Document, args: Args, context: Context) -> Applied:
    """``source``, ``label``, ``target``: a label leads to one node, so an existing route of that
    label is re-targeted in place rather than doubled."""
    source, target = _route_end(document, args, "source"), _route_end(document, args, "target")
    label = args.get("label")
    if not isinstance(label, str) or not label:
        raise BadRequest("a route needs the label it leaves its source by", field="label")
    doc = copy.deepcopy(document)
    index = _route_index(doc, source, label)
    if index is not None:
        old = doc["routes"][index]["target"]
        doc["routes"][index]["target"] = target
        return Applied(doc, [{"op": "connect", "source": source, "label": label, "target": old}])
    at = args.get("index")
    routes = doc.setdefault("routes", [])
    route = {"source": source, "label": label, "target": target}
    if isinstance(at, int) and 0 <= at <= len(routes):
        routes.insert(at, route)
    else:
        routes.append(route)
    return Applied(doc, [{"op": "disconnect", "source": source, "label": label}])


@operation("disconnect")
def disconnect(document: Document, args: Args, context: Context) -> Applied:
    """``source``, ``label``: the route leaving by that label goes (nothing happens if there is none)."""
    source, label = args.get("source"), args.get("label")
    index = _route_index(document, str(source), str(label))
    if index is None:
        return Applied(document, [])
    doc = copy.deepcopy(document)
    route = doc["routes"].pop(index)
    return Applied(doc, [{"op": "connect", "source": source, "label": label, "target": route["target"],
                          "index": index}])


