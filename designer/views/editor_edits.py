"""Edits the editor's side panels make to a workflow document.

Each edit takes the stored document (plain JSON), returns a changed copy, and
is then saved through ``services.workflows.save_document`` with the revision
the person was looking at, exactly like a canvas edit through the API. The
edits only place values; whether the result makes sense is the analyzer's
answer after the save. Paths are built and printed with the runtime's path
types, never by string concatenation.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from designer.errors import BadRequest
from designer.untrusted import JSONInputError, loads_json
from runtime import GraphSourcePath, LocalPath, PathSyntaxError, parse_local_path, parse_source_path, parse_state_path

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


def _json(text: str, *, what: str) -> Any:
    try:
        return loads_json(text)
    except json.JSONDecodeError as exc:
        raise BadRequest(f"{what} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from exc
    except JSONInputError as exc:
        raise BadRequest(f"{what}: {exc}") from exc


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
    _set_binding(find_node(doc, node_id), input_target(field), None)
    return doc


def unbind_tree(document: Document, node_id: str, field: str) -> Document:
    """Remove a composed field: its own binding and every binding to a key below it (``values.name``
    under ``values``), as the mapping editor's "Remove" on a row of keys means."""
    doc = copy.deepcopy(document)
    node = find_node(doc, node_id)
    prefix = input_target(field).parts
    node["input"] = [b for b in node.get("input", []) if not _under(b.get("target"), prefix)]
    return doc


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


def set_workflow_start(document: Document, start: str) -> Document:
    """The node a run starts at; '' means the first node."""
    doc = copy.deepcopy(document)
    start = start.strip()
    if start:
        find_node(doc, start)
    doc["start"] = start or None
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
    doc = rename_node(document, node_id, new_id)
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
    schema_text = str(form.get("resume_schema", "")).strip()
    schema = _json(schema_text, what="the resume schema") if schema_text else {"type": "object", "properties": {}}
    if not isinstance(schema, dict):
        raise BadRequest("the resume schema is a JSON Schema object, e.g. {\"type\": \"object\"}")
    node["resume_schema"] = schema
    return doc


def update_settings(document: Document, form: Form) -> Document:
    """Workflow-level settings: input and state schemas, outputs and the start node."""
    doc = copy.deepcopy(document)
    for key, what in (("input_schema", "the input schema"), ("state_schema", "the state schema")):
        text = str(form.get(key, "")).strip()
        value = _json(text, what=what) if text else {"type": "object", "properties": {}}
        if not isinstance(value, dict):
            raise BadRequest(f"{what} is a JSON Schema object, e.g. {{\"type\": \"object\", \"properties\": {{}}}}")
        doc[key] = value
    outputs_text = str(form.get("outputs", "")).strip()
    outputs = _json(outputs_text, what="the outputs") if outputs_text else []
    if not isinstance(outputs, list):
        raise BadRequest('the outputs are a JSON list, e.g. [{"target": "total", "path": "state.total"}]')
    doc["outputs"] = outputs
    start = str(form.get("start", "")).strip()
    doc["start"] = start or None
    return doc


#: action name -> edit(document, node_id, form) for the simple node edits.
NODE_EDITS: dict[str, Callable[[Document, str, Any], Document]] = {
    "foreach": update_foreach,
    "subgraph": update_subgraph,
    "output-add": add_output,
    "output-remove": remove_output,
    "branch": update_branch,
    "case-add": add_branch_case,
    "case-remove": remove_branch_case,
    "interrupt": update_interrupt,
}
