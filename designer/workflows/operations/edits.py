"""The side panels' edits: pure functions from a document and a form to the changed document."""

from __future__ import annotations

import copy
import math
from typing import Any

from designer.core.errors import BadRequest
from designer.core.untrusted import form_json
from designer.workflows.operations.fields import (
    BRANCH_OPS,
    NODE_ID,
    OUTPUT_MODES,
    Document,
    Form,
    find_node,
    input_target,
    literal_value,
    names_target,
    set_binding,
    source_path,
)
from designer.workflows.schema_builder import default_problems
from runtime.document import RetryPolicy, TaskNode
from runtime.errors import PathSyntaxError
from runtime.paths import (
    GraphSourcePath,
    LocalPath,
    is_item_index,
    parse_local_path,
    parse_source_path,
    parse_state_path,
)
from runtime.secrets import SECRET_NAME


def bind_path(document: Document, node_id: str, field: str, path: str) -> Document:
    """Point a node's field at a graph path: an input binding, a foreach's ``over`` or a branch's ``path``."""
    doc = copy.deepcopy(document)
    node = find_node(doc, node_id)
    path = source_path(path)
    if field in ("over", "path"):
        node[field] = path
    else:
        set_binding(node, input_target(field), {"path": path})
    return doc


def bind_literal(document: Document, node_id: str, field: str, value: Any) -> Document:
    doc = copy.deepcopy(document)
    set_binding(find_node(doc, node_id), input_target(field), {"value": value})
    return doc


def bind_secret(document: Document, node_id: str, field: str, name: str, template: str = "") -> Document:
    """Fill a node's field with one of its team's secrets, optionally inside a template ("Bearer {secret}")."""
    if not SECRET_NAME.fullmatch(name or ""):
        raise BadRequest("choose one of the team's secrets (a name of letters, digits and _)", field="secret")
    template = template.strip()
    if template and template.count("{secret}") != 1:
        raise BadRequest("a template holds {secret} once, where the value goes, e.g. Bearer {secret}",
                         field="template")
    doc = copy.deepcopy(document)
    set_binding(find_node(doc, node_id), input_target(field),
                {"secret": name, **({"template": template} if template else {})})
    return doc


def unbind(document: Document, node_id: str, field: str) -> Document:
    doc = copy.deepcopy(document)
    node = find_node(doc, node_id)
    target = input_target(field)
    set_binding(node, target, None)
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
    outputs = [o for o in doc.get("outputs", []) if not names_target(o.get("target"), parsed)]
    outputs.append({"target": str(parsed), "path": source_path(path)})
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


