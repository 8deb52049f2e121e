"""Every change the editor makes to a workflow document, as named operations.

An operation is plain JSON, ``{"op": "<name>", ...arguments}``. ``apply`` runs
one on the stored document (plain JSON too) and returns the changed copy with
the operations that undo it, so undo and redo are just more operations sent the
same way. Nothing here saves or analyses: the editor's one write endpoint
(``designer.views.editor_edits``) applies a batch, saves it with the revision
the person was looking at and lets the analyzer judge the result. The canvas
and the side panels both send these operations; neither edits documents
itself.

The functions are pure (no database, no request), so every operation and its
undo is tested without a browser. Paths are built and printed with the
runtime's path types, never by string concatenation.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from designer.errors import BadRequest
from designer.untrusted import JSONInputError, form_json, loads_json
from runtime import (
    GraphSourcePath,
    LocalPath,
    PathSyntaxError,
    RetryPolicy,
    TaskNode,
    is_item_index,
    parse_local_path,
    parse_source_path,
    parse_state_path,
)

Document = dict[str, Any]
Form = Mapping[str, Any]

#: Node ids become path segments (``context.foreach.<id>``); keep them bare TOML keys.
NODE_ID = re.compile(r"[A-Za-z0-9_-]{1,200}")
OUTPUT_MODES = ("set", "append", "extend", "merge")
BRANCH_OPS = ("equals", "not_equals", "in", "exists", "truthy", "gt", "gte", "lt", "lte")


def field_key(name: str) -> str:
    """The analyzer's field name for one input field: ``input.<name>`` with the name quoted if needed."""
    return f"input.{LocalPath((name,))}"


def input_target(field: str) -> LocalPath:
    """``input.<name>`` -> the binding's target path."""
    if not field.startswith("input."):
        raise BadRequest(f"{field!r} is not an input field", field=field)
    try:
        return parse_local_path(field[len("input."):])
    except PathSyntaxError as exc:
        raise BadRequest(exc.message, field=field) from exc


def payload_field(text: str) -> str:
    """The field key of a payload target the author types (``amount``, ``order.id``), checked as a path."""
    text = text.strip()
    if not text:
        raise BadRequest("name the payload field first", field="target")
    try:
        return f"input.{parse_local_path(text)}"
    except PathSyntaxError as exc:
        raise BadRequest(f"{text!r} is not a field name: {exc.message}", field="target") from exc


def same_target(field: str, other: str) -> bool:
    """Whether two ``input.<target>`` field keys name the same target, however each is written."""
    try:
        return input_target(field) == input_target(other)
    except BadRequest:
        return field == other


def find_node(document: Document, node_id: str) -> dict[str, Any]:
    for node in document.get("nodes", []):
        if node.get("id") == node_id:
            return node
    raise BadRequest(f"the workflow has no node {node_id!r}; it may have been deleted meanwhile", node=node_id)


def _source_path(text: str) -> str:
    try:
        return str(parse_source_path(text))
    except PathSyntaxError as exc:
        raise BadRequest(exc.message, path=text) from exc


def literal_value(raw: str, schema: Mapping[str, Any] | None) -> Any:
    """A typed form value: text for string fields, JSON for everything else."""
    wanted = (schema or {}).get("type")
    if wanted == "string":
        return raw
    try:
        return loads_json(raw)
    except JSONInputError as exc:
        raise BadRequest(f"{raw[:40]!r}…: {exc}") from exc
    except json.JSONDecodeError:
        if wanted in (None, "") or (isinstance(wanted, list) and "string" in wanted):
            return raw
        raise BadRequest(f"{raw!r} is not a valid {wanted} value (write it as JSON, e.g. 3, true, [1, 2])") from None


def _set_binding(node: dict[str, Any], target: LocalPath, binding: dict[str, Any] | None) -> None:
    rest = [b for b in node.get("input", []) if not _same_target(b.get("target"), target)]
    if binding is not None:
        rest.append({"target": str(target), **binding})
    node["input"] = rest


def _same_target(text: object, target: LocalPath) -> bool:
    if not isinstance(text, str):
        return False
    try:
        return parse_local_path(text) == target
    except PathSyntaxError:
        return False


# --- edits -----------------------------------------------------------------------


def bind_path(document: Document, node_id: str, field: str, path: str) -> Document:
    """Point a node's field at a graph path: an input binding, a foreach's ``over`` or a branch's ``path``."""
    doc = copy.deepcopy(document)
    node = find_node(doc, node_id)
    path = _source_path(path)
    if field in ("over", "path"):
        node[field] = path
    else:
        _set_binding(node, input_target(field), {"path": path})
    return doc


def bind_literal(document: Document, node_id: str, field: str, value: Any) -> Document:
    doc = copy.deepcopy(document)
    _set_binding(find_node(doc, node_id), input_target(field), {"value": value})
    return doc


def unbind(document: Document, node_id: str, field: str) -> Document:
    doc = copy.deepcopy(document)
    node = find_node(doc, node_id)
    target = input_target(field)
    _set_binding(node, target, None)
    _close_gap(node, target.parts)
    return doc


def unbind_tree(document: Document, node_id: str, field: str) -> Document:
    """Remove a composed field: its own binding and every binding to a key below it (``values.name``
    under ``values``), as the mapping editor's "Remove" on a row of keys means. Removing an array
    item moves the items after it up one, so the items stay numbered 0, 1, ... as a document must."""
    doc = copy.deepcopy(document)
    node = find_node(doc, node_id)
    prefix = input_target(field).parts
    node["input"] = [b for b in node.get("input", []) if not _under(b.get("target"), prefix)]
    _close_gap(node, prefix)
    return doc


def _item(segment: str) -> bool:
    # a saved document numbers items 0..n-1, so a longer number is never an item of it
    return is_item_index(segment) and len(segment) <= 9


def _close_gap(node: dict[str, Any], removed: tuple[str, ...]) -> None:
    """After item ``removed`` (``tags.1``) lost its last binding, renumber the items after it down by one."""
    if not removed or not _item(removed[-1]) or any(_under(b.get("target"), removed)
                                                               for b in node.get("input", [])):
        return
    parent, gone = removed[:-1], int(removed[-1])
    depth = len(parent)
    for binding in node.get("input", []):
        try:
            parts = parse_local_path(str(binding.get("target"))).parts
        except PathSyntaxError:
            continue
        if len(parts) > depth and parts[:depth] == parent and _item(parts[depth]) and int(parts[depth]) > gone:
            binding["target"] = str(LocalPath((*parent, str(int(parts[depth]) - 1), *parts[depth + 1:])))


def _under(text: object, prefix: tuple[str, ...]) -> bool:
    if not isinstance(text, str):
        return False
    try:
        parts = parse_local_path(text).parts
    except PathSyntaxError:
        return False
    return parts[:len(prefix)] == prefix


SCHEMA_KEYS = {"input_schema": "the input schema", "state_schema": "the state schema",
               "resume_schema": "the resume schema"}


def set_schema(document: Document, node_id: str | None, key: str, schema: Any) -> Document:
    """Replace one schema: the workflow's input or state schema, or an interrupt's resume schema.
    A default that its own field refuses is refused here, naming the field, so nothing is saved."""
    from designer.schema_builder import default_problems

    what = SCHEMA_KEYS.get(key)
    if what is None or (key == "resume_schema") != bool(node_id):
        raise BadRequest(f"unknown schema {key!r}", field=key)
    if not isinstance(schema, dict):
        raise BadRequest(f'{what} is a JSON Schema object, e.g. {{"type": "object", "properties": {{}}}}', field=key)
    problems = default_problems(schema)
    if problems:
        where, reason = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise BadRequest(f"the default of {where!r} in {what} breaks its own field: {reason}{more}",
                         field=key, path=where)
    doc = copy.deepcopy(document)
    if node_id:
        node = find_node(doc, node_id)
        if node.get("kind") != "interrupt":
            raise BadRequest(f"node {node_id!r} is not an interrupt; only interrupts have a resume schema",
                             node=node_id)
        node["resume_schema"] = schema
    else:
        doc[key] = schema
    return doc


def add_workflow_output(document: Document, target: str, path: str) -> Document:
    """One more field of the workflow's output, read from a graph path when the run completes."""
    target = target.strip()
    if not target:
        raise BadRequest("name the output field first", field="target")
    try:
        parsed = parse_local_path(target)
    except PathSyntaxError as exc:
        raise BadRequest(f"{target!r} is not a field name: {exc.message}", field="target") from exc
    doc = copy.deepcopy(document)
    outputs = [o for o in doc.get("outputs", []) if not _same_target(o.get("target"), parsed)]
    outputs.append({"target": str(parsed), "path": _source_path(path)})
    doc["outputs"] = outputs
    return doc


def remove_workflow_output(document: Document, index: int) -> Document:
    doc = copy.deepcopy(document)
    outputs = doc.get("outputs", [])
    if not 0 <= index < len(outputs):
        raise BadRequest("that output no longer exists; the panel has been refreshed")
    del outputs[index]
    doc["outputs"] = outputs
    return doc


def _renamed_path(text: object, old: str, new: str) -> object:
    if not isinstance(text, str):
        return text
    try:
        path = parse_source_path(text)
    except PathSyntaxError:
        return text
    if path.root == "context" and path.parts[:2] == ("foreach", old):
        return str(GraphSourcePath("context", ("foreach", new, *path.parts[2:])))
    return text


def rename_node(document: Document, old: str, new: str) -> Document:
    """Change a node id everywhere the document names it: routes, start, positions and
    ``context.foreach.<id>`` paths that address it (a foreach's item keeps flowing)."""
    if new == old:
        return document
    if not NODE_ID.fullmatch(new):
        raise BadRequest("a node id uses letters, digits, '_' and '-' only (it appears in paths)", field="id")
    doc = copy.deepcopy(document)
    if any(node.get("id") == new for node in doc.get("nodes", [])):
        raise BadRequest(f"another node already has the id {new!r}", field="id")
    find_node(doc, old)["id"] = new
    for route in doc.get("routes", []):
        for end in ("source", "target"):
            if route.get(end) == old:
                route[end] = new
    if doc.get("start") == old:
        doc["start"] = new
    positions = doc.get("metadata", {}).get("positions")
    if isinstance(positions, dict) and old in positions:
        positions[new] = positions.pop(old)
    for node in doc.get("nodes", []):
        for binding in node.get("input", []):
            if "path" in binding:
                binding["path"] = _renamed_path(binding["path"], old, new)
        for key in ("over", "path"):
            if key in node:
                node[key] = _renamed_path(node[key], old, new)
    for output in doc.get("outputs", []):
        output["path"] = _renamed_path(output.get("path"), old, new)
    return doc


def update_basics(document: Document, node_id: str, form: Form) -> tuple[Document, str]:
    """Id, name and description; returns the document and the (possibly new) node id."""
    new_id = str(form.get("id", node_id)).strip() or node_id
    # rename_node hands the same document back when the id stays: edit a copy.
    doc = rename_node(copy.deepcopy(document), node_id, new_id)
    node = find_node(doc, new_id)
    name = str(form.get("name", "")).strip()
    node["name"] = name or None
    node["description"] = str(form.get("description", "")).strip()
    return doc, new_id


def set_start(document: Document, node_id: str) -> Document:
    doc = copy.deepcopy(document)
    find_node(doc, node_id)
    doc["start"] = node_id
    return doc


def update_foreach(document: Document, node_id: str, form: Form) -> Document:
    doc = copy.deepcopy(document)
    node = find_node(doc, node_id)
    alias = str(form.get("as", "")).strip()
    if alias:
        node["as"] = alias
    else:
        node.pop("as", None)
        node.pop("as_", None)
    try:
        node["max_concurrency"] = int(form.get("max_concurrency") or 1)
    except ValueError:
        raise BadRequest("concurrency is a whole number (1 runs items one at a time)",
                         field="max_concurrency") from None
    if "results" in form:  # forms that do not send it leave it as it is
        results = str(form.get("results", "")).strip().removeprefix("state.")
        if results:
            try:
                node["results"] = str(parse_state_path(results))
            except PathSyntaxError as error:
                raise BadRequest(f"collect results into a state field, e.g. totals: {error}",
                                 field="results") from None
        else:
            node.pop("results", None)
    return doc


def update_subgraph(document: Document, node_id: str, form: Form) -> Document:
    doc = copy.deepcopy(document)
    node = find_node(doc, node_id)
    slug = str(form.get("workflow", "")).strip()
    if not slug:
        raise BadRequest("choose the workflow this subgraph runs", field="workflow")
    version_text = str(form.get("version", "")).strip()
    try:
        version = int(version_text) if version_text else None
    except ValueError:
        raise BadRequest("the version is a number, or empty for the latest", field="version") from None
    if node.get("workflow", {}).get("id") != slug:
        node["input"] = []  # the old child's fields (and versions) mean nothing to the new one
        version = None
    node["workflow"] = {"id": slug, "version": version}
    return doc


def add_output(document: Document, node_id: str, form: Form) -> Document:
    doc = copy.deepcopy(document)
    node = find_node(doc, node_id)
    source_text = str(form.get("source", ".")).strip() or "."
    target_text = str(form.get("target", "")).strip()
    mode = str(form.get("mode", "set"))
    if mode not in OUTPUT_MODES:
        raise BadRequest(f"mode must be one of {', '.join(OUTPUT_MODES)}", field="mode")
    if not target_text:
        raise BadRequest("name the state field the result is written to", field="target")
    try:
        source = parse_local_path(source_text)
        target = parse_state_path(target_text)
    except PathSyntaxError as exc:
        raise BadRequest(exc.message) from exc
    node.setdefault("output", []).append({"source": str(source), "target": str(target), "mode": mode})
    return doc


def remove_output(document: Document, node_id: str, form: Form) -> Document:
    doc = copy.deepcopy(document)
    node = find_node(doc, node_id)
    index = _index(form, "index", len(node.get("output", [])))
    del node["output"][index]
    return doc


def _index(form: Form, key: str, size: int) -> int:
    try:
        index = int(form.get(key, ""))
    except ValueError:
        raise BadRequest("unknown row") from None
    if not 0 <= index < size:
        raise BadRequest("that row no longer exists; the panel has been refreshed")
    return index


def update_branch(document: Document, node_id: str, form: Any) -> Document:
    doc = copy.deepcopy(document)
    node = find_node(doc, node_id)
    labels, ops, values = form.getlist("case_label"), form.getlist("case_op"), form.getlist("case_value")
    cases = []
    for label, op, raw in zip(labels, ops, values, strict=False):
        label = label.strip()
        if not label:
            continue
        if op not in BRANCH_OPS:
            raise BadRequest(f"unknown comparison {op!r}")
        case: dict[str, Any] = {"label": label, "op": op}
        if op not in ("exists", "truthy"):
            case["value"] = literal_value(raw, None) if raw.strip() else None
        cases.append(case)
    node["cases"] = cases
    node["default_label"] = str(form.get("default_label", "default")).strip() or "default"
    return doc


def add_branch_case(document: Document, node_id: str, form: Form) -> Document:
    doc = copy.deepcopy(document)
    node = find_node(doc, node_id)
    taken = {case.get("label") for case in node.get("cases", [])}
    number = len(taken) + 1
    while f"case_{number}" in taken:
        number += 1
    node.setdefault("cases", []).append({"label": f"case_{number}", "op": "equals", "value": None})
    return doc


def remove_branch_case(document: Document, node_id: str, form: Form) -> Document:
    doc = copy.deepcopy(document)
    node = find_node(doc, node_id)
    del node["cases"][_index(form, "index", len(node.get("cases", [])))]
    return doc


def update_interrupt(document: Document, node_id: str, form: Form) -> Document:
    doc = copy.deepcopy(document)
    node = find_node(doc, node_id)
    node["prompt"] = str(form.get("prompt", ""))
    labels = [label.strip() for label in str(form.get("labels", "")).split(",") if label.strip()]
    node["labels"] = labels or ["ok"]
    if "resume_schema" not in form:  # the question form without the schema: the schema builder edits that
        return doc
    schema = form_json(str(form.get("resume_schema", "")), field="resume_schema", what="the resume schema",
                       empty={"type": "object", "properties": {}})
    if not isinstance(schema, dict):
        raise BadRequest("the resume schema is a JSON Schema object, e.g. {\"type\": \"object\"}")
    node["resume_schema"] = schema
    return doc


#: The limits form's fields: (document key, label, the runtime model field whose bounds apply).
LIMIT_FIELDS: tuple[tuple[str, str, Any], ...] = (
    ("timeout_seconds", "the timeout", TaskNode.model_fields["timeout_seconds"]),
    ("max_attempts", "attempts", RetryPolicy.model_fields["max_attempts"]),
    ("backoff_seconds", "the first backoff", RetryPolicy.model_fields["backoff_seconds"]),
    ("backoff_multiplier", "the backoff multiplier", RetryPolicy.model_fields["backoff_multiplier"]),
    ("max_backoff_seconds", "the longest backoff", RetryPolicy.model_fields["max_backoff_seconds"]),
)


def limit_bounds(model_field: Any) -> tuple[float | None, bool, float | None]:
    """(lowest, lowest excluded, highest) from a runtime model field's constraints: the one source of the bounds."""
    low: float | None = None
    high: float | None = None
    excluded = False
    for rule in model_field.metadata:
        if getattr(rule, "gt", None) is not None:
            low, excluded = rule.gt, True
        if getattr(rule, "ge", None) is not None:
            low = rule.ge
        if getattr(rule, "le", None) is not None:
            high = rule.le
    return low, excluded, high


def _limit(node_id: str, key: str, label: str, model_field: Any, raw: object) -> int | float | None:
    """A limits-form value: None when left empty, else a number within the runtime model's bounds."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    whole = model_field.annotation is int
    low, excluded, high = limit_bounds(model_field)
    unit = "a whole number" if whole else "a number of seconds" if key.endswith("seconds") else "a number"
    span = (f"above {low:g}" if excluded else f"at least {low:g}") + f" and at most {high:g}"
    wrong = BadRequest(f"node {node_id!r}: {label} is {unit} {span}, got {str(raw)[:40]!r}", node=node_id, field=key)
    if isinstance(raw, bool):
        raise wrong
    try:
        value = (int(raw) if isinstance(raw, int) else int(str(raw).strip())) if whole else float(str(raw))
    except (TypeError, ValueError):
        raise wrong from None
    if not math.isfinite(value) or (low is not None and (value <= low if excluded else value < low)) \
            or (high is not None and value > high):
        raise wrong
    return value


def update_limits(document: Document, node_id: str, form: Form) -> Document:
    """A task node's ``timeout_seconds`` and ``retry`` policy. An empty field means the default: no timeout of the
    node's own (the task's or the workflow's applies), one attempt, and RetryPolicy's backoff defaults; a policy of
    one attempt and nothing else set is no policy, so the node's ``retry`` goes."""
    doc = copy.deepcopy(document)
    node = find_node(doc, node_id)
    if node.get("kind") != "task":
        raise BadRequest(f"node {node_id!r} is a {node.get('kind')}: only a task node has a timeout and retries",
                         node=node_id)
    values = {key: _limit(node_id, key, label, model_field, form.get(key))
              for key, label, model_field in LIMIT_FIELDS}
    timeout = values.pop("timeout_seconds")
    if timeout is None:
        node.pop("timeout_seconds", None)
    else:
        node["timeout_seconds"] = timeout
    policy = {key: value for key, value in values.items() if value is not None}
    if policy.get("max_attempts", 1) == 1 and set(policy) <= {"max_attempts"}:
        node.pop("retry", None)
    else:
        node["retry"] = policy
    return doc


def update_settings(document: Document, form: Form) -> Document:
    """Workflow-level settings: input and state schemas, outputs and the start node."""
    doc = copy.deepcopy(document)
    for key, what in (("input_schema", "the input schema"), ("state_schema", "the state schema")):
        value = form_json(str(form.get(key, "")), field=key, what=what, empty={"type": "object", "properties": {}})
        if not isinstance(value, dict):
            raise BadRequest(f"{what} is a JSON Schema object, e.g. {{\"type\": \"object\", \"properties\": {{}}}}")
        doc[key] = value
    outputs = form_json(str(form.get("outputs", "")), field="outputs", what="the outputs", empty=[])
    if not isinstance(outputs, list):
        raise BadRequest('the outputs are a JSON list, e.g. [{"target": "total", "path": "state.total"}]')
    doc["outputs"] = outputs
    start = str(form.get("start", "")).strip()
    doc["start"] = start or None
    return doc


# --- operations ---------------------------------------------------------------------

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


def _diffed(before: Document, after: Document, select: str | None = None) -> Applied:
    return Applied(after, restoring(before, after), select)


# --- canvas operations ---------------------------------------------------------------


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
    doc = copy.deepcopy(document)
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


# --- generic operations (what undo of a panel edit sends) ------------------------------


@operation("put_nodes")
def put_nodes(document: Document, args: Args, context: Context) -> Applied:
    """``nodes``: whole node objects replacing the nodes of the same ids."""
    replacements = args.getlist("nodes")
    doc = copy.deepcopy(document)
    by_id = {n.get("id"): i for i, n in enumerate(doc.get("nodes", []))}
    for node in replacements:
        if not isinstance(node, dict) or node.get("id") not in by_id:
            raise BadRequest("put_nodes replaces existing nodes; one of them no longer exists", field="nodes")
        doc["nodes"][by_id[node["id"]]] = copy.deepcopy(node)
    return _diffed(document, doc)


#: Top-level fields ``set_fields`` may change (the document's own keys).
DOCUMENT_FIELDS = frozenset({"name", "description", "input_schema", "state_schema", "start", "nodes", "routes",
                             "outputs", "metadata"})


@operation("set_fields")
def set_fields(document: Document, args: Args, context: Context) -> Applied:
    """``set``: {field: value} and ``unset``: [field] for the document's top-level fields."""
    put = args.get("set") or {}
    unset = args.getlist("unset")
    if not isinstance(put, Mapping):
        raise BadRequest("set_fields needs set: {field: value}", field="set")
    unknown = sorted({*put, *unset} - DOCUMENT_FIELDS)
    if unknown:
        raise BadRequest(f"set_fields cannot change {', '.join(unknown)}; it changes "
                         f"{', '.join(sorted(DOCUMENT_FIELDS))}", field="set")
    doc = copy.deepcopy(document)
    for key, value in put.items():
        doc[key] = copy.deepcopy(value)
    for key in unset:
        doc.pop(key, None)
    return _diffed(document, doc)


@operation("replace_document")
def replace_document(document: Document, args: Args, context: Context) -> Applied:
    """``document``: a whole document (a published version's, say) replacing the draft's content; the id
    stays the workflow's. Undone by replacing it with the draft as it was."""
    new = args.get("document")
    if not isinstance(new, Mapping) or not isinstance(new.get("nodes", []), list):
        raise BadRequest("replace_document needs document: a whole workflow document object", field="document")
    doc = {key: copy.deepcopy(value) for key, value in new.items()}
    if "id" in document:
        doc["id"] = document["id"]
    return Applied(doc, [{"op": "replace_document", "document": copy.deepcopy(document)}])


# --- panel operations -----------------------------------------------------------------


def _panel(name: str, edit: Callable[[Document, str, Args], Document]) -> None:
    def run(document: Document, args: Args, context: Context) -> Applied:
        node_id = args.node()
        return _diffed(document, edit(document, node_id, args), node_id)

    run.__name__ = name
    run.__doc__ = edit.__doc__
    OPERATIONS[name] = run


_panel("set_foreach", update_foreach)
_panel("set_subgraph", update_subgraph)
_panel("add_output", add_output)
_panel("remove_output", remove_output)
_panel("set_branch", update_branch)
_panel("add_case", add_branch_case)
_panel("remove_case", remove_branch_case)
_panel("set_interrupt", update_interrupt)
_panel("set_limits", update_limits)


@operation("bind_path")
def _bind_path(document: Document, args: Args, context: Context) -> Applied:
    """``node``, ``field`` (``input.<target>``, ``over`` or ``path``), ``path``."""
    node_id = args.node()
    return _diffed(document, bind_path(document, node_id, str(args.get("field", "")), str(args.get("path", ""))),
                   node_id)


@operation("bind_literal")
def _bind_literal(document: Document, args: Args, context: Context) -> Applied:
    """``node``, ``field`` and ``value`` (JSON), or ``text`` read as the type the field wants."""
    node_id = args.node()
    field_name = str(args.get("field", ""))
    target = input_target(field_name)
    if "text" in args:
        # The whole target (values.count, not just values): a key inside a field has its own type.
        name = str(target) if target.parts else ""
        schema = context.field_schema(find_node(document, node_id), name) if name else None
        value = literal_value(str(args.get("text", "")), schema)
    else:
        value = args.get("value")
    return _diffed(document, bind_literal(document, node_id, field_name, value), node_id)


@operation("unbind")
def _unbind(document: Document, args: Args, context: Context) -> Applied:
    node_id = args.node()
    return _diffed(document, unbind(document, node_id, str(args.get("field", ""))), node_id)


@operation("unbind_tree")
def _unbind_tree(document: Document, args: Args, context: Context) -> Applied:
    """``node``, ``field``: the field's binding and every binding below it (a mapping row's keys)."""
    node_id = args.node()
    return _diffed(document, unbind_tree(document, node_id, str(args.get("field", ""))), node_id)


@operation("set_schema")
def _set_schema(document: Document, args: Args, context: Context) -> Applied:
    """``key`` (input_schema, state_schema; resume_schema with ``node``) and ``schema`` (an object,
    or JSON text)."""
    node_id = args.get("node") or None
    schema = args.get("schema")
    if isinstance(schema, str):
        schema = form_json(schema, field="schema", what=SCHEMA_KEYS.get(str(args.get("key")), "the schema"))
    return _diffed(document, set_schema(document, node_id, str(args.get("key", "")), schema), node_id)


@operation("add_workflow_output")
def _add_workflow_output(document: Document, args: Args, context: Context) -> Applied:
    """``target`` (the output field) and ``path`` (where its value is read)."""
    return _diffed(document, add_workflow_output(document, str(args.get("target", "")), str(args.get("path", ""))))


@operation("remove_workflow_output")
def _remove_workflow_output(document: Document, args: Args, context: Context) -> Applied:
    try:
        index = int(args.get("index", ""))
    except (TypeError, ValueError):
        raise BadRequest("unknown output row", field="index") from None
    return _diffed(document, remove_workflow_output(document, index))


@operation("set_basics")
def _set_basics(document: Document, args: Args, context: Context) -> Applied:
    """``node``, ``id`` (a rename follows every route and path naming it), ``name``, ``description``."""
    doc, new_id = update_basics(document, args.node(), args)
    return _diffed(document, doc, new_id)


@operation("set_start")
def _set_start(document: Document, args: Args, context: Context) -> Applied:
    node_id = args.node()
    return _diffed(document, set_start(document, node_id), node_id)


@operation("set_workflow_start")
def _set_workflow_start(document: Document, args: Args, context: Context) -> Applied:
    """``start``: the node a run starts at; empty means the first node."""
    doc = copy.deepcopy(document)
    start = str(args.get("start", "") or "").strip()
    if start:
        find_node(doc, start)
    doc["start"] = start or None
    return _diffed(document, doc)


@operation("set_settings")
def _set_settings(document: Document, args: Args, context: Context) -> Applied:
    """Workflow settings as text: ``input_schema``, ``state_schema``, ``outputs`` (JSON) and ``start``."""
    return _diffed(document, update_settings(document, args))


def names(ops: Iterable[Mapping[str, Any]]) -> list[str]:
    return [str(op.get("op")) for op in ops]


# --- one-click fixes ------------------------------------------------------------------


def fix_ops(diagnostic: Mapping[str, Any], document: Mapping[str, Any],
            regions: Mapping[str, Sequence[str]]) -> list[Op]:
    """The operations that resolve ``diagnostic`` when the fix is clear, else ``[]``.

    ``regions`` maps each reachable node to its foreach owners, outermost first
    (the analyzer's control regions). A body node whose label has no route gets
    the route back to its innermost loop; that includes an inner loop's
    ``done``, which is offered back to its outer loop.
    """
    code, node_id, where = diagnostic.get("code"), diagnostic.get("node_id"), diagnostic.get("field") or ""
    if not isinstance(node_id, str) or not any(n.get("id") == node_id for n in document.get("nodes", [])):
        return []
    if code == "region.no_return" and where.startswith("routes."):
        label = where[len("routes."):]
        owners = regions.get(node_id) or ()
        if label != "loop" and owners:
            return [{"op": "connect", "source": node_id, "label": label, "target": owners[-1]}]
    if code == "route.no_exit":
        # A cycle nothing leaves: leave the route that closes it (back to its first node) unrouted,
        # so the run ends there. An unrouted "error" ends nothing (failures are optional labels), so
        # a normal route is chosen; the last in the document is the one most recently drawn.
        members = (diagnostic.get("data") or {}).get("nodes") or [node_id]
        closing = [r for r in document.get("routes", [])
                   if r.get("target") == members[0] and r.get("source") in members]
        normal = [r for r in closing if r.get("label") != "error"]
        if normal:
            route = normal[-1]
            return [{"op": "disconnect", "source": route["source"], "label": route["label"]}]
    return []
