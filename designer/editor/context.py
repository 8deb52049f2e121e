"""What the editor's page and panels are rendered from: the draft loaded with its analysis, the inspector's
context for a node or the workflow, the schema builder, pickers and limits, and the htmx events a response raises.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from django.http import HttpResponse
from django_htmx.http import trigger_client_event

from designer.access.permissions import WorkflowAccess, has_role, require_workflow_access
from designer.conf import trellis
from designer.core.htmx import HtmxHttpRequest
from designer.core.json_text import pretty_json
from designer.editor import panels
from designer.models import Workflow as WorkflowModel
from designer.secrets.selectors import secret_names
from designer.workflows import analysis as doc_analysis
from designer.workflows import catalog
from designer.workflows import operations as doc_ops
from designer.workflows import schema_builder as sb
from designer.workflows import selectors as workflow_selectors
from runtime import Analysis, WorkflowError
from runtime.analysis import schema_type_label as type_label
from runtime.document import RetryPolicy

TEMPLATE = "editor/editor.html"


@dataclass(frozen=True, slots=True)
class Loaded:
    """A workflow as the caller may see it, with the runtime's analysis of its draft."""

    workflow: WorkflowModel
    #: The caller's access as read for this request (``require_access`` checks more of it without a read).
    access: WorkflowAccess
    document: dict[str, Any]
    analysis: Any

    @property
    def role(self) -> str:
        assert self.access.role is not None  # load refused anyone without one
        return self.access.role

    @property
    def in_own_team(self) -> bool:
        """Whether the caller is a member of the workflow's own team (not only of one it is shared with)."""
        return self.access.team_role is not None

    @property
    def can_edit(self) -> bool:
        return has_role(self.role, "editor")

    @property
    def can_run(self) -> bool:
        return has_role(self.role, "runner")


def load(request: HtmxHttpRequest, workflow_id: int, *, workflow: WorkflowModel | None = None,
          analysis: Any = None) -> Loaded:
    if workflow is None:
        workflow = workflow_selectors.get_workflow(user=request.user, workflow_id=workflow_id)
    access = require_workflow_access(request.user, workflow, "viewer")
    if analysis is None:
        analysis = doc_analysis.analysis_for(workflow)  # once per saved revision, shared by every panel
    return Loaded(workflow=workflow, access=access, document=workflow.document, analysis=analysis)


def diagnostics_of(loaded: Loaded) -> list[dict[str, Any]]:
    """The analyzer's diagnostics, each with its one-click fix (operations as JSON) when it has one."""
    items = doc_analysis.diagnostics_json(loaded.analysis)
    for item in items:
        fix = fixes_for(item, loaded.document, loaded.analysis) if loaded.can_edit else []
        item["fix"] = json.dumps(fix) if fix else ""
        item["fix_label"] = _fix_label(fix)
    return items


def diagnostics_panel(loaded: Loaded) -> dict[str, Any]:
    """The diagnostics panel's context (``editor.html#diagnostics``): every diagnostic of the draft, with its fix."""
    return {"workflow": loaded.workflow, "summary": panels.diagnostics_summary(diagnostics_of(loaded))}


def _fix_label(fix: list[dict[str, Any]]) -> str:
    if len(fix) == 1 and fix[0]["op"] == "connect":
        return f"Route {fix[0]['label']} back to {fix[0]['target']}"
    if len(fix) == 1 and fix[0]["op"] == "disconnect":
        return f"End the cycle: unroute {fix[0]['source']} · {fix[0]['label']}"
    return "Fix" if fix else ""


def node_of(document: dict[str, Any], node_id: str) -> dict[str, Any] | None:
    return next((n for n in document.get("nodes", []) if n.get("id") == node_id), None)


def inspector_context(loaded: Loaded, node_id: str | None, focus: str | None = None) -> dict[str, Any]:
    document = loaded.document
    node = node_of(document, node_id) if node_id else None
    context: dict[str, Any] = {
        "workflow": loaded.workflow,
        "can_edit": loaded.can_edit,
        "node": node,
        "focus": focus or "",
        "choices": panels.EDITOR_CHOICES,
        "document": document,
        # What a field can be bound to besides paths and values (the inspector's "Secret…").
        "team_secrets": sorted(secret_names(team_id=loaded.workflow.team_id)),
    }
    if node is None:
        context["settings"] = start_picker(loaded)
        context["builders"] = [
            schema_builder_context(loaded, "input_schema", None, collapse=True),
            schema_builder_context(loaded, "state_schema", None, collapse=True),
        ]
        context["workflow_outputs"] = document.get("outputs", [])
        context["output_paths"] = output_paths = panels.workflow_output_paths(loaded.analysis)
        context["output_paths_lazy"] = sum(len(group["options"]) for group in output_paths) > SELECT_INLINE_OPTIONS
        context["missing_node"] = node_id or ""
        return context
    diagnostics = [d for d in diagnostics_of(loaded) if d["node_id"] == node["id"]]
    analysis = loaded.analysis
    reachable = node["id"] in analysis.reachable
    context.update({
        "diagnostics": diagnostics,
        "node_diagnostics": [d for d in diagnostics if not d.get("field")],
        "reachable": reachable,
        "region": list(analysis.control_region(node["id"])) if reachable else [],
        "is_start": (document.get("start") or (document["nodes"][0]["id"] if document.get("nodes") else None))
        == node["id"],
        "routes": [r for r in document.get("routes", []) if r.get("source") == node["id"]],
        "outputs": node.get("output", []),
        "result_fields": panels.result_fields(node, analysis),
        "state_fields": panels.state_fields(analysis),
        "state_field_types": panels.state_field_types(analysis),
    })
    context["state_fields_lazy"] = len(context["state_field_types"]) + 1 > SELECT_INLINE_OPTIONS
    kind = node["kind"]
    if kind in ("task", "subgraph"):
        schema = panels.input_schema_of(node, analysis)
        adding = focus if focus and focus.startswith("input.") else None
        rows = panels.field_rows(node, schema, diagnostics, analysis=analysis, adding=adding)
        for row in rows:
            if focus and (row.key == focus or doc_ops.same_target(row.key, focus)):
                row.focused = True
                row.picker = picker_for(loaded, node["id"], row.key, current=_bound_path(row.binding))
        context["rows"] = rows
        context["schema_known"] = schema is not None
        context["data_tree"] = panels.data_tree(analysis, node["id"]) if reachable else []
    if kind == "task":
        context["task_description"] = _task_description(node.get("task"))
        context["limits"] = _limits(node, document)
        # step.timeout_capped and the like: shown next to the field they are about, where the value is typed.
        context["limit_diagnostics"] = [d for d in diagnostics if d.get("field") in ("timeout_seconds", "retry")]
    if kind == "subgraph":
        context["children"] = _children(loaded.workflow)
    if kind in ("foreach", "branch"):
        key = "over" if kind == "foreach" else "path"
        context["path_field"] = {
            "key": key,
            "value": node.get(key),
            "diagnostics": [d for d in diagnostics if d.get("field") == key],
            "picker": picker_for(loaded, node["id"], key, current=node.get(key)) if focus == key else None,
        }
    if kind == "branch":
        context["cases"] = [
            {**case, "value_text": "" if case.get("value") is None else json.dumps(case.get("value"))}
            for case in node.get("cases", [])
        ]
    if kind == "interrupt":
        context["resume_builder"] = schema_builder_context(loaded, "resume_schema", node["id"])
        context["labels_text"] = ", ".join(node.get("labels", []))
        adding = focus if focus and focus.startswith("input.") else None
        rows = panels.payload_rows(node, diagnostics, adding=adding)
        for row in rows:
            if adding and doc_ops.same_target(row.key, adding):
                row.focused = True
                row.picker = picker_for(loaded, node["id"], row.key, current=_bound_path(row.binding))
        context["payload_rows"] = rows
    return context


def start_picker(loaded: Loaded) -> dict[str, Any]:
    """The workflow settings' start-node picker: every node, the chosen one, and whether its list is sent only
    when wanted (``SELECT_INLINE_OPTIONS``; views.picker_options answers it then, from this same context)."""
    node_ids = [n["id"] for n in loaded.document.get("nodes", [])]
    start = loaded.document.get("start") or ""
    return {
        "start": start,
        "nodes": node_ids,
        # What the start picker shows before its list is wanted: the option the full list would select.
        "shown": start if start in node_ids else "",
        "lazy": len(node_ids) + 1 > SELECT_INLINE_OPTIONS,
    }


SCHEMA_TITLES = {"input_schema": "Input schema", "state_schema": "State schema", "resume_schema": "Resume schema"}
SCHEMA_HINTS = {
    "input_schema": "What a run is started with.",
    "state_schema": "What nodes write with output bindings and read as state.",
    "resume_schema": "The answer a person gives to resume the run.",
}


#: A builder with more fields than this opens on demand in the workflow settings: each field is a form row of
#: about 2.5 KB, and the settings panel opens with the page and after every canvas save. A state schema of 600 fields
#: made the editor page 1.7 MB, 91 % of it this builder (issue 34).
BUILDER_INLINE_FIELDS: Final = 40
#: A picker with more options than this is sent with the option it shows, and the rest are asked for when someone
#: reaches for it (static/src/editor/lazyOptions.js, on the first press, focus or key; views.picker_options
#: answers): the workflow settings open with the page and again after every canvas save, and at 600 nodes the
#: start picker's and the output-path picker's options were 1,206 of the page's 1,694 elements (issue 34) and, kept
#: in a <template> since, 64 KB of the settings panel's 90 KB; a node's state-field picker was 34 KB of every node's
#: panel.
SELECT_INLINE_OPTIONS: Final = 100
#: The field names a collapsed builder lists before "and N more".
BUILDER_PREVIEW_FIELDS: Final = 8


def _field_count(schema: Mapping[str, Any]) -> int:
    """How many fields the builder draws for ``schema``: properties and array items, at every depth."""
    count = 0
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if not isinstance(node, Mapping):
            continue
        properties = node.get("properties")
        if isinstance(properties, Mapping):
            count += len(properties)
            stack.extend(properties.values())
        if isinstance(node.get("items"), Mapping):
            count += 1
            stack.append(node["items"])
    return count


def _collapsed_builder(key: str, node_id: str | None, schema_now: Mapping[str, Any], count: int) -> dict[str, Any]:
    found = schema_now.get("properties")
    properties: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    preview = [{"name": name, "type": type_label(dict(schema)) if isinstance(schema, Mapping) else "any"}
               for name, schema in list(properties.items())[:BUILDER_PREVIEW_FIELDS]]
    return {
        "key": key, "node": node_id or "", "title": SCHEMA_TITLES[key], "hint": SCHEMA_HINTS[key],
        "dom_id": f"builder-{key}" + (f"-{node_id}" if node_id else ""), "collapsed": True,
        "field_count": count, "preview": preview, "more": max(0, len(properties) - len(preview)),
    }


def schema_builder_context(loaded: Loaded, key: str, node_id: str | None, *, tree: sb.Field | None = None,
                           error: str = "", error_fid: str = "", sample: str = "",
                           collapse: bool = False) -> dict[str, Any]:
    """One schema builder: the tree (the stored schema unless an unsaved one is given), its raw JSON,
    and each default its own field refuses, named next to where it is typed. With ``collapse``, a stored schema
    of more than BUILDER_INLINE_FIELDS fields is only named (its first fields and a button that loads the
    builder)."""
    if node_id:
        node = node_of(loaded.document, node_id) or {}
        stored = node.get("resume_schema") or {"type": "object", "properties": {}}
    else:
        stored = loaded.document.get(key) or {"type": "object", "properties": {}}
    if collapse and tree is None:
        count = _field_count(stored)
        if count > BUILDER_INLINE_FIELDS:
            return _collapsed_builder(key, node_id, stored, count)
    # Unsaved: the builder holds a schema the document does not (the page keeps it through canvas saves).
    dirty = tree is not None and sb.schema_of(tree) != sb.schema_of(sb.fields_of(stored))
    if tree is None:
        tree = sb.fields_of(stored)
    rows = sb.to_form(tree)
    problems: dict[str, str] = {}
    for row in rows:
        node_field = row["field"]
        if node_field.has_default:
            reason = sb.default_error(sb.schema_of(node_field), node_field.default, root=sb.schema_of(tree))
            if reason:
                problems[row["id"]] = reason
    names = sb.name_problems(tree)
    for row in rows:
        row["default_error"] = problems.get(row["id"], "")
        row["error"] = error if error_fid == row["id"] else names.get(row["id"], "")
    return {
        "key": key, "node": node_id or "", "title": SCHEMA_TITLES[key], "hint": SCHEMA_HINTS[key],
        "rows": rows, "json": pretty_json(sb.schema_of(tree)),
        "error": error if not error_fid else "", "types": sb.TYPES, "sample": sample,
        "dom_id": f"builder-{key}" + (f"-{node_id}" if node_id else ""), "has_problems": bool(problems),
        "dirty": dirty,
    }


def _bound_path(binding: dict[str, Any] | None) -> str | None:
    return binding.get("path") if binding else None


def picker_for(loaded: Loaded, node_id: str, field: str, *, current: str | None = None, show_all: bool = False,
                query: str = "") -> dict[str, Any]:
    return panels.picker(loaded.analysis, node_id, field, show_all=show_all, query=query, current=current)


#: The limits form's retry fields: (policy field, id suffix, label, unit, input step).
RETRY_FORM_FIELDS: Final = (
    ("max_attempts", "attempts", "Attempts", "", "1"),
    ("backoff_seconds", "backoff", "First wait", "s", "any"),
    ("backoff_multiplier", "multiplier", "Wait multiplier", "", "any"),
    ("max_backoff_seconds", "max-backoff", "Longest wait", "s", "any"),
)


def _limits(node: dict[str, Any], document: dict[str, Any]) -> dict[str, Any]:
    """The limits form: the node's own values (empty when it sets none), what applies when a field is empty, and
    what the current policy means in words."""
    try:
        task_default = catalog.registry().get(str(node.get("task"))).timeout_seconds
    except WorkflowError:
        task_default = None
    if task_default is not None:
        fallback = f"the task's default, {task_default:g} s"
    elif document.get("step_timeout_seconds"):
        fallback = f"the workflow's default, {float(document['step_timeout_seconds']):g} s"
    else:
        fallback = "no limit of the node's own"
    retry: dict[str, Any] = node["retry"] if isinstance(node.get("retry"), dict) else {}
    values = {"timeout_seconds": node.get("timeout_seconds"), **{key: retry.get(key) for key in (
        "max_attempts", "backoff_seconds", "backoff_multiplier", "max_backoff_seconds")}}
    try:
        policy = RetryPolicy.model_validate(retry)
    except ValueError:
        policy = RetryPolicy()
    waits = [policy.delay_before(attempt) for attempt in range(2, min(policy.max_attempts, 5) + 1)]
    if policy.max_attempts == 1:
        summary = "One attempt: a failure is not retried."
    else:
        shown = ", ".join(f"{wait:g} s" for wait in waits) + (", …" if policy.max_attempts > 5 else "")
        summary = f"Up to {policy.max_attempts} attempts; it waits {shown} before the retries."
    bounds = {key: doc_ops.limit_bounds(model_field) for key, _, model_field in doc_ops.LIMIT_FIELDS}
    defaults = {key: getattr(RetryPolicy(), key) for key in values if key != "timeout_seconds"}
    shown_values = {key: "" if value is None else f"{value:g}" if isinstance(value, float) else value
                    for key, value in values.items()}
    return {
        "values": shown_values,
        "defaults": defaults,
        "bounds": {key: {"min": low, "max": high, "exclusive": excluded}
                   for key, (low, excluded, high) in bounds.items()},
        # The retry policy's fields, as the form shows them (one block in the template, repeated by a loop).
        "retry_fields": [
            {"name": key, "id": f"limit-{slug}", "label": label, "unit": unit, "step": step,
             "min": bounds[key][0], "max": bounds[key][2], "value": shown_values[key], "default": defaults[key]}
            for key, slug, label, unit, step in RETRY_FORM_FIELDS
        ],
        "fallback": fallback, "cap": trellis.STEP_TIMEOUT_SECONDS, "summary": summary,
    }


def _task_description(name: object) -> str:
    try:
        return panels.plain(catalog.registry().get(str(name)).description)
    except WorkflowError:
        return ""


def _children(workflow: WorkflowModel) -> list[dict[str, Any]]:
    """Workflows of the same team a subgraph can run: the published ones, with their version numbers."""
    rows = (
        WorkflowModel.objects.filter(team_id=workflow.team_id, versions__isnull=False)
        .exclude(pk=workflow.pk).distinct().order_by("name")
    )
    return [
        {"slug": child.slug, "name": child.name,
         "versions": list(child.versions.order_by("-number").values_list("number", flat=True))}
        for child in rows
    ]


def with_events(response: HttpResponse, **events: dict[str, Any]) -> HttpResponse:
    """Raise ``trellis:<name>`` (underscores as dashes) in the browser for each event, with its detail."""
    for name, detail in events.items():
        trigger_client_event(response, f"trellis:{name.replace('_', '-')}", detail)
    return response


# --- pages and partials ---------------------------------------------------------------


def fixes_for(diagnostic: Mapping[str, Any], document: Mapping[str, Any], analysis: Analysis) -> list[dict[str, Any]]:
    """One-click fixes: the operations that resolve a diagnostic, when there is an obvious one."""
    return doc_ops.fix_ops(diagnostic, document, regions_of(analysis))


def regions_of(analysis: Analysis) -> dict[str, list[str]]:
    return {node.id: list(analysis.control_region(node.id))
            for node in analysis.workflow.nodes if node.id in analysis.reachable}
