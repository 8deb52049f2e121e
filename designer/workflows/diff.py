"""What changed between two workflow documents: nodes, routes, bindings, schemas and settings.

``diff(a, b)`` lists the changes that turn document ``a`` into ``b``; ``apply_changes(a, changes)``
replays them. Both are pure functions on the documents' plain JSON (the same form
``designer.workflows.operations`` edits), so the version comparison page, its list and its
canvas colouring come from one answer that is tested without a database.

What counts as a difference is what changes a run. Canvas positions (``metadata``) and
the order of nodes, routes and bindings are not differences; an implicit start (the first
node) is compared as the node it names, so reordering nodes that moves the start is one.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

Document = Mapping[str, Any]
ChangeKind = Literal["added", "removed", "changed"]

#: Top-level fields compared as a whole, and how the list names them.
SCHEMAS = ("input_schema", "state_schema")
SETTINGS = ("name", "description", "start", "step_timeout_seconds", "run_timeout_seconds", "run_step_seconds")
#: A node's bindings, each diffed per binding rather than as part of the node.
BINDINGS = ("input", "output")
#: Top-level fields that are not part of the comparison at all.
IGNORED = frozenset({"metadata", "id", "schema_version"})


@dataclass(frozen=True, slots=True)
class Detail:
    """One line of a change as a person reads it: ``field`` (``""`` for the thing itself) went from
    ``before`` to ``after``, both already written out (``None``: absent on that side)."""

    field: str
    before: str | None
    after: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "before": self.before, "after": self.after}


@dataclass(frozen=True, slots=True)
class Change:
    """One difference. ``what``: ``node``, ``route``, ``input`` / ``output`` (a node's binding),
    ``schema``, ``output_field`` (a workflow output) or ``setting``. ``node``: the node it belongs
    to (for a route: its source), so the canvas can colour it. ``key`` names the thing within its
    kind (a node id, ``source --label``, a binding's target, a field name)."""

    what: str
    change: ChangeKind
    key: str
    node: str | None
    before: Any = None
    after: Any = None

    def to_dict(self, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The change as the comparison page shows it; ``labels`` (node id -> label, ``labels_of``) names
        nodes the way the canvas does, ids stay in ``key`` and ``node``."""
        return {"what": self.what, "change": self.change, "key": self.key, "node": self.node,
                "before": self.before, "after": self.after, "summary": self.describe(labels),
                "details": [d.to_dict() for d in self.details(labels)]}

    @property
    def summary(self) -> str:
        return self.describe()

    def describe(self, labels: Mapping[str, str] | None = None) -> str:
        """One line naming what changed, by node labels when ``labels`` has them."""
        def name(node_id: Any) -> str:
            return _label(labels, node_id)

        where = f" of {name(self.node)}" if self.node is not None and self.what in BINDINGS else ""
        label = {"input": "input binding", "output": "output binding", "output_field": "workflow output"}.get(
            self.what, self.what)
        if self.what == "route":
            source, _, route_label = self.key.partition(" --")
            return f"route {name(source)} --{route_label} {self.change}"
        if self.what == "node":
            return f"node {name(self.key)} {self.change}"
        return f"{label} {self.key}{where} {self.change}"

    def details(self, labels: Mapping[str, str] | None = None) -> tuple[Detail, ...]:
        """The before and after values, field by field: a node's own fields, a binding's source, a
        route's target (by label), a schema's or setting's parts."""
        if self.what == "route":
            return (Detail("target", _maybe(self.before, lambda v: _label(labels, v)),
                           _maybe(self.after, lambda v: _label(labels, v))),)
        if self.what in BINDINGS or self.what == "output_field":
            return (Detail("source" if self.what != "output" else "from",
                           _maybe(self.before, _binding_text), _maybe(self.after, _binding_text)),)
        if self.what == "node":
            return tuple(_node_rows(self.before, self.after))
        if self.what == "setting" and self.key == "start":
            return (Detail("", _maybe(self.before, lambda v: _label(labels, v)),
                           _maybe(self.after, lambda v: _label(labels, v))),)
        return tuple(_rows("", self.before, self.after, present=(self.change != "added",
                                                                  self.change != "removed")))


def labels_of(*documents: Document) -> dict[str, str]:
    """Node id -> the label the canvas shows (its ``name``, else its id); later documents win."""
    labels: dict[str, str] = {}
    for document in documents:
        for node in document.get("nodes") or []:
            if isinstance(node, Mapping) and isinstance(node.get("id"), str):
                labels[node["id"]] = str(node.get("name") or node["id"])
    return labels


def _label(labels: Mapping[str, str] | None, node_id: Any) -> str:
    return (labels or {}).get(str(node_id), str(node_id)) if node_id is not None else "—"


def _maybe(value: Any, show: Any) -> str | None:
    return None if value is None else str(show(value))


def value_text(value: Any) -> str:
    """A value as a person reads it: text as written, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)


def _binding_text(binding: Any) -> str:
    """Where a binding takes its value from: the path as written, a literal as JSON (so the text
    "true" and the boolean true differ), a template as its text; other settings after it."""
    if not isinstance(binding, Mapping):
        return value_text(binding)
    if "path" in binding:
        main = str(binding["path"])
    elif "value" in binding:
        main = json.dumps(binding["value"], ensure_ascii=False, default=str)
    elif "template" in binding:
        main = f"template {json.dumps(binding['template'], ensure_ascii=False)}"
    elif "source" in binding:
        main = str(binding["source"])
    else:
        main = ""
    rest = {k: v for k, v in binding.items() if k not in ("target", "path", "value", "template", "source")}
    extra = ", ".join(f"{k}: {value_text(v)}" for k, v in sorted(rest.items()))
    return f"{main} ({extra})" if main and extra else main or extra


def _node_rows(before: Any, after: Any) -> list[Detail]:
    old, new = _mapping(before), _mapping(after)
    rows: list[Detail] = []
    for key in sorted((old.keys() | new.keys()) - {"id"}):
        if key in BINDINGS:
            # An added or removed node's bindings, one line per target.
            for side_old, side_new, target in _binding_pairs(old.get(key), new.get(key)):
                rows.append(Detail(f"{key} {target}", _maybe(side_old, _binding_text),
                                   _maybe(side_new, _binding_text)))
            continue
        if key not in old and _empty(new[key]) or key not in new and _empty(old[key]):
            continue  # an unset field (a null retry, an empty description) on an added or removed node
        rows.extend(_rows(key, old.get(key), new.get(key), present=(key in old, key in new)))
    return rows


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


def _binding_pairs(old: Any, new: Any) -> list[tuple[Any, Any, str]]:
    a, b = _keyed(old, _binding_key), _keyed(new, _binding_key)
    return [(a.get(k), b.get(k), k) for k in sorted(a.keys() | b.keys())
            if _canonical(a.get(k)) != _canonical(b.get(k))]


#: How deep a changed mapping (a schema, a node's settings) is followed before it is shown whole.
_DEPTH = 4


def _rows(field: str, before: Any, after: Any, *, present: tuple[bool, bool], depth: int = 0) -> list[Detail]:
    """``before`` -> ``after`` as lines; two mappings are followed key by key (``properties.note``) so a
    one-field change to a schema is one short line rather than two whole schemas."""
    if _canonical(before) == _canonical(after) and present[0] == present[1]:
        return []
    if isinstance(before, Mapping) and isinstance(after, Mapping) and all(present) and depth < _DEPTH:
        rows: list[Detail] = []
        for key in sorted(before.keys() | after.keys()):
            rows.extend(_rows(f"{field}.{key}" if field else str(key), before.get(key), after.get(key),
                              present=(key in before, key in after), depth=depth + 1))
        return rows
    return [Detail(field, value_text(before) if present[0] else None, value_text(after) if present[1] else None)]


# --- keyed collections ---------------------------------------------------------------


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _keyed(items: object, key_of: Any) -> dict[str, Any]:
    """A list as {key: item}; a key met again gets ``#2``, ``#3``... so nothing is lost."""
    keyed: dict[str, Any] = {}
    for item in items if isinstance(items, list) else []:
        base = key_of(item)
        key, n = base, 1
        while key in keyed:
            n += 1
            key = f"{base}#{n}"
        keyed[key] = item
    return keyed


def _binding_key(item: Any) -> str:
    if isinstance(item, Mapping) and isinstance(item.get("target"), str):
        return str(item["target"])
    return _canonical(item)


def _route_key(item: Any) -> str:
    if isinstance(item, Mapping):
        return f"{item.get('source')} --{item.get('label')}"
    return _canonical(item)


def _node_key(item: Any) -> str:
    if isinstance(item, Mapping) and isinstance(item.get("id"), str):
        return str(item["id"])
    return _canonical(item)


def _compare(what: str, old: Mapping[str, Any], new: Mapping[str, Any], node: Any = None) -> list[Change]:
    changes: list[Change] = []
    for key in sorted(old.keys() | new.keys()):
        owner = node(key) if callable(node) else node
        if key not in new:
            changes.append(Change(what, "removed", key, owner, before=copy.deepcopy(old[key])))
        elif key not in old:
            changes.append(Change(what, "added", key, owner, after=copy.deepcopy(new[key])))
        elif _canonical(old[key]) != _canonical(new[key]):
            changes.append(Change(what, "changed", key, owner, copy.deepcopy(old[key]), copy.deepcopy(new[key])))
    return changes


def _without_bindings(node: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in node.items() if k not in BINDINGS}


def effective_start(document: Document) -> Any:
    """The node a run starts at: the explicit start, else the first node."""
    start = document.get("start")
    if start is not None:
        return start
    nodes = document.get("nodes") or []
    first = nodes[0] if nodes else None
    return first.get("id") if isinstance(first, Mapping) else None


# --- diff and apply -------------------------------------------------------------------


def diff(a: Document, b: Document) -> list[Change]:
    """The changes that turn ``a`` into ``b``, nodes first, then routes, bindings, schemas, settings."""
    nodes_a, nodes_b = _keyed(a.get("nodes"), _node_key), _keyed(b.get("nodes"), _node_key)
    changes: list[Change] = []
    for change in _compare("node", nodes_a, nodes_b, node=lambda key: key):
        if change.change == "changed":
            before, after = _without_bindings(change.before), _without_bindings(change.after)
            if _canonical(before) != _canonical(after):
                changes.append(Change("node", "changed", change.key, change.key, before, after))
        else:
            changes.append(change)
    routes_a, routes_b = _keyed(a.get("routes"), _route_key), _keyed(b.get("routes"), _route_key)
    for change in _compare("route", routes_a, routes_b):
        route = change.after if change.change == "added" else change.before
        source = route.get("source") if isinstance(route, Mapping) else None
        if change.change == "changed":
            changes.append(Change("route", "changed", change.key, source, route_target(change.before),
                                  route_target(change.after)))
        else:
            value = route_target(route)
            changes.append(Change("route", change.change, change.key, source,
                                  value if change.change == "removed" else None,
                                  value if change.change == "added" else None))
    for node_id in sorted(nodes_a.keys() & nodes_b.keys()):
        for what in BINDINGS:
            old = _keyed(_mapping(nodes_a[node_id]).get(what), _binding_key)
            new = _keyed(_mapping(nodes_b[node_id]).get(what), _binding_key)
            changes.extend(_compare(what, old, new, node=node_id))
    for name in SCHEMAS:
        changes.extend(_compare("schema", _present(a, name), _present(b, name)))
    changes.extend(_compare("output_field", _keyed(a.get("outputs"), _binding_key),
                            _keyed(b.get("outputs"), _binding_key)))
    settings_a = {**_present(a, *SETTINGS), "start": effective_start(a)}
    settings_b = {**_present(b, *SETTINGS), "start": effective_start(b)}
    changes.extend(_compare("setting", settings_a, settings_b))
    others = sorted((a.keys() | b.keys()) - IGNORED - {"nodes", "routes", "outputs", *SCHEMAS, *SETTINGS})
    changes.extend(_compare("setting", _present(a, *others), _present(b, *others)))
    return changes


def route_target(route: Any) -> Any:
    return route.get("target") if isinstance(route, Mapping) else route


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _present(document: Document, *names: str) -> dict[str, Any]:
    return {name: document[name] for name in names if name in document}


def _apply_keyed(items: object, key_of: Any, changes: Iterable[Change], value: Any) -> list[Any]:
    keyed = _keyed(items, key_of)
    for change in changes:
        if change.change == "removed":
            keyed.pop(change.key, None)
        else:
            keyed[change.key] = value(change)
    return list(keyed.values())


def apply_changes(a: Document, changes: Iterable[Change]) -> dict[str, Any]:
    """``a`` with ``changes`` made (as ``diff`` lists them); ``a`` is left as it was."""
    doc = copy.deepcopy(dict(a))
    changes = list(changes)
    by_what: dict[str, list[Change]] = {}
    for change in changes:
        by_what.setdefault(change.what, []).append(change)

    nodes = _keyed(doc.get("nodes"), _node_key)
    for change in by_what.get("node", []):
        if change.change == "removed":
            nodes.pop(change.key, None)
        elif change.change == "added":
            nodes[change.key] = copy.deepcopy(change.after)
        else:
            kept = {k: v for k, v in _mapping(nodes[change.key]).items() if k in BINDINGS}
            nodes[change.key] = {**copy.deepcopy(change.after), **kept}
    for what in BINDINGS:
        per_node: dict[str, list[Change]] = {}
        for change in by_what.get(what, []):
            per_node.setdefault(str(change.node), []).append(change)
        for node_id, node_changes in per_node.items():
            node = dict(nodes[node_id])
            node[what] = _apply_keyed(node.get(what), _binding_key, node_changes,
                                      lambda c: copy.deepcopy(c.after))
            nodes[node_id] = node
    if "nodes" in doc or nodes:
        doc["nodes"] = list(nodes.values())

    def route_of(change: Change) -> dict[str, Any]:
        source, _, label = change.key.partition(" --")
        return {"source": source, "label": label, "target": change.after}

    if "route" in by_what:
        doc["routes"] = _apply_keyed(doc.get("routes"), _route_key, by_what["route"], route_of)
    if "output_field" in by_what:
        doc["outputs"] = _apply_keyed(doc.get("outputs"), _binding_key, by_what["output_field"],
                                      lambda c: copy.deepcopy(c.after))
    for change in [*by_what.get("schema", []), *by_what.get("setting", [])]:
        if change.change == "removed":
            doc.pop(change.key, None)
        else:
            doc[change.key] = copy.deepcopy(change.after)
    return doc


def normalized(document: Document) -> dict[str, Any]:
    """The parts of a document ``diff`` compares, in one canonical order: equal as JSON exactly when
    ``diff`` finds nothing."""

    def sort(items: dict[str, Any]) -> list[Any]:
        return [items[key] for key in sorted(items)]

    nodes = _keyed(document.get("nodes"), _node_key)
    return {
        **{k: v for k, v in document.items() if k not in IGNORED and k not in ("nodes", "routes", "outputs")},
        "start": effective_start(document),
        "nodes": [
            {**_mapping(node), **{what: sort(_keyed(_mapping(node).get(what), _binding_key))
                                  for what in BINDINGS}}
            if isinstance(node, Mapping) else node
            for node in sort(nodes)
        ],
        "routes": sort(_keyed(document.get("routes"), _route_key)),
        "outputs": sort(_keyed(document.get("outputs"), _binding_key)),
    }


def node_marks(changes: Iterable[Change]) -> dict[str, str]:
    """Each node's colour on the comparison canvas: ``added``, ``removed`` or ``changed`` (its own
    fields, a binding or a route leaving it changed). Nodes not listed are the same."""
    marks: dict[str, str] = {}
    for change in changes:
        if change.node is None:
            continue
        if change.what == "node" and change.change in ("added", "removed"):
            marks[change.node] = change.change
        else:
            marks.setdefault(change.node, "changed")
    return marks
