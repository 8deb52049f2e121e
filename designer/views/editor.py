"""The workflow editor page and its htmx panels.

The panels around the canvas island (static/src/editor) are rendered here from
the stored draft and the runtime's analysis of it, computed once per saved
revision. Every edit, the canvas's and the panels', goes through the one write
endpoint in ``editor_edits``. Panels and canvas talk through DOM events;
responses raise them with the ``HX-Trigger`` header.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from django.http import HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django_htmx.http import reswap, retarget, trigger_client_event

from designer import analysis as doc_analysis
from designer import selectors
from designer.errors import BadRequest, DesignerError, RevisionConflict
from designer.json_text import pretty_json
from designer.models import Workflow as WorkflowModel
from designer.permissions import has_role, require_workflow_role, role_of
from designer.untrusted import form_json
from designer.views import editor_edits as edits
from designer.views import editor_panels as panels
from designer.views.htmx import HtmxHttpRequest
from designer.views.pages import error_message, signed_in
from designer.workflows import operations as doc_ops
from designer.workflows import schema_builder as sb
from designer.workflows import services as workflow_services
from runtime import RetryPolicy, WorkflowError

TEMPLATE = "editor/editor.html"


@dataclass(frozen=True, slots=True)
class Loaded:
    """A workflow as the caller may see it, with the runtime's analysis of its draft."""

    workflow: WorkflowModel
    role: str
    document: dict[str, Any]
    analysis: Any

    @property
    def can_edit(self) -> bool:
        return has_role(self.role, "editor")


def _load(request: HtmxHttpRequest, workflow_id: int, *, workflow: WorkflowModel | None = None,
          analysis: Any = None) -> Loaded:
    if workflow is None:
        workflow = selectors.get_workflow(user=request.user, workflow_id=workflow_id)
    role = require_workflow_role(request.user, workflow, "viewer")
    if analysis is None:
        analysis = doc_analysis.analysis_for(workflow)  # once per saved revision, shared by every panel
    return Loaded(workflow=workflow, role=role, document=workflow.document, analysis=analysis)


def _diagnostics(loaded: Loaded) -> list[dict[str, Any]]:
    """The analyzer's diagnostics, each with its one-click fix (operations as JSON) when it has one."""
    items = doc_analysis.diagnostics_json(loaded.analysis)
    for item in items:
        fix = edits.fix_ops(item, loaded.document, loaded.analysis) if loaded.can_edit else []
        item["fix"] = json.dumps(fix) if fix else ""
        item["fix_label"] = _fix_label(fix)
    return items


def _fix_label(fix: list[dict[str, Any]]) -> str:
    if len(fix) == 1 and fix[0]["op"] == "connect":
        return f"Route {fix[0]['label']} back to {fix[0]['target']}"
    if len(fix) == 1 and fix[0]["op"] == "disconnect":
        return f"End the cycle: unroute {fix[0]['source']} · {fix[0]['label']}"
    return "Fix" if fix else ""


def _node(document: dict[str, Any], node_id: str) -> dict[str, Any] | None:
    return next((n for n in document.get("nodes", []) if n.get("id") == node_id), None)


def _inspector_context(loaded: Loaded, node_id: str | None, focus: str | None = None) -> dict[str, Any]:
    document = loaded.document
    node = _node(document, node_id) if node_id else None
    context: dict[str, Any] = {
        "workflow": loaded.workflow,
        "can_edit": loaded.can_edit,
        "node": node,
        "focus": focus or "",
        "choices": panels.EDITOR_CHOICES,
        "document": document,
    }
    if node is None:
        context["settings"] = {
            "start": document.get("start") or "",
            "nodes": [n["id"] for n in document.get("nodes", [])],
        }
        context["builders"] = [
            schema_builder_context(loaded, "input_schema", None),
            schema_builder_context(loaded, "state_schema", None),
        ]
        context["workflow_outputs"] = document.get("outputs", [])
        context["output_paths"] = panels.workflow_output_paths(loaded.analysis)
        context["missing_node"] = node_id or ""
        return context
    diagnostics = [d for d in _diagnostics(loaded) if d["node_id"] == node["id"]]
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
    kind = node["kind"]
    if kind in ("task", "subgraph"):
        schema = panels.input_schema_of(node, analysis)
        adding = focus if focus and focus.startswith("input.") else None
        rows = panels.field_rows(node, schema, diagnostics, analysis=analysis, adding=adding)
        for row in rows:
            if focus and (row.key == focus or edits.same_target(row.key, focus)):
                row.focused = True
                row.picker = _picker_for(loaded, node["id"], row.key, current=_bound_path(row.binding))
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
            "picker": _picker_for(loaded, node["id"], key, current=node.get(key)) if focus == key else None,
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
            if adding and edits.same_target(row.key, adding):
                row.focused = True
                row.picker = _picker_for(loaded, node["id"], row.key, current=_bound_path(row.binding))
        context["payload_rows"] = rows
    return context


SCHEMA_TITLES = {"input_schema": "Input schema", "state_schema": "State schema", "resume_schema": "Resume schema"}
SCHEMA_HINTS = {
    "input_schema": "What a run is started with.",
    "state_schema": "What nodes write with output bindings and read as state.",
    "resume_schema": "The answer a person gives to resume the run.",
}


def schema_builder_context(loaded: Loaded, key: str, node_id: str | None, *, tree: sb.Field | None = None,
                           error: str = "", error_fid: str = "", sample: str = "") -> dict[str, Any]:
    """One schema builder: the tree (the stored schema unless an unsaved one is given), its raw JSON,
    and each default its own field refuses, named next to where it is typed."""
    if node_id:
        node = _node(loaded.document, node_id) or {}
        stored = node.get("resume_schema") or {"type": "object", "properties": {}}
    else:
        stored = loaded.document.get(key) or {"type": "object", "properties": {}}
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


def _picker_for(loaded: Loaded, node_id: str, field: str, *, current: str | None = None, show_all: bool = False,
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
    from designer import catalog
    from designer.conf import trellis

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
    from designer import catalog

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


def _triggers(response: HttpResponse, **events: dict[str, Any]) -> HttpResponse:
    """Raise ``trellis:<name>`` (underscores as dashes) in the browser for each event, with its detail."""
    for name, detail in events.items():
        trigger_client_event(response, f"trellis:{name.replace('_', '-')}", detail)
    return response


# --- pages and partials ---------------------------------------------------------------


@signed_in("GET")
def editor(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    """The editor page: palette, canvas, inspector, diagnostics (and the run panel)."""
    loaded = _load(request, workflow_id)
    diagnostics = _diagnostics(loaded)
    context = {
        **_inspector_context(loaded, None),
        "role": loaded.role,
        # SHARING_RULE: the Sharing page is for the workflow's own team; a team it is shared with sees who holds it.
        "in_own_team": role_of(request.user, loaded.workflow.team_id) is not None,
        "palette": panels.palette(loaded.workflow),
        "query": "",
        "api_base": reverse("api:task-list").removesuffix("tasks/"),
        "summary": panels.diagnostics_summary(diagnostics),
    }
    return TemplateResponse(request, TEMPLATE, context)


@signed_in("GET")
def palette(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    loaded = _load(request, workflow_id)
    query = request.GET.get("q", "")
    context = {"palette": panels.palette(loaded.workflow, query), "query": query, "can_edit": loaded.can_edit}
    return TemplateResponse(request, f"{TEMPLATE}#palette-list", context)


@signed_in("GET")
def inspector(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    loaded = _load(request, workflow_id)
    node_id, focus, error = request.GET.get("node") or None, request.GET.get("field") or None, ""
    if "parent" in request.GET:  # a new key inside an object field (the mapping editor): open its picker
        try:
            focus = panels.child_key(request.GET["parent"], request.GET.get("key", ""))
        except DesignerError as exc:
            error = error_message(exc)
    if "target" in request.GET:  # a new prompt-payload row of an interrupt: open its picker
        try:
            focus = edits.payload_field(request.GET["target"])
        except DesignerError as exc:
            error = error_message(exc)
    context = _inspector_context(loaded, node_id, focus)
    if error:
        context["error"] = error
    return TemplateResponse(request, f"{TEMPLATE}#inspector", context)


@signed_in("GET")
def picker(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    loaded = _load(request, workflow_id)
    node_id, field = request.GET.get("node", ""), request.GET.get("field", "")
    node = _node(loaded.document, node_id)
    current = None
    if node is not None:
        if field in ("over", "path"):
            current = node.get(field)
        else:
            current = next((b.get("path") for b in node.get("input", [])
                            if edits.same_target(f"input.{b.get('target')}", field)), None)
    context = {
        "workflow": loaded.workflow,
        "can_edit": loaded.can_edit,
        "picker": _picker_for(loaded, node_id, field, current=current, show_all=request.GET.get("all") == "1",
                              query=request.GET.get("q", "")),
    }
    part = "picker-results" if request.GET.get("part") == "results" else "picker"
    return TemplateResponse(request, f"{TEMPLATE}#{part}", context)


@signed_in("GET")
def diagnostics(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    loaded = _load(request, workflow_id)
    context = {"workflow": loaded.workflow, "summary": panels.diagnostics_summary(_diagnostics(loaded))}
    return TemplateResponse(request, f"{TEMPLATE}#diagnostics", context)


# --- the schema builders (changes re-render; "Save" is one set_schema edit) ---------------------


BUILDER_TEMPLATE = f"{TEMPLATE}#schema-builder"


@signed_in("POST")
def schema_builder(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    """One change in a schema builder (add, remove, retype, infer from a sample, read the JSON view, save).

    Until "Save", nothing is stored: the form is the tree, re-rendered with each default its field refuses
    named where it is typed. "Save" stores it with the revision the page holds and answers with the whole
    inspector, like every panel edit."""
    loaded = _load(request, workflow_id)
    require_workflow_role(request.user, loaded.workflow, "editor")
    key, node_id = request.POST.get("schema_key", ""), request.POST.get("node", "") or None
    if key not in SCHEMA_TITLES or (key == "resume_schema") != bool(node_id):
        return HttpResponse(f"unknown schema {key!r}", status=400, content_type="text/plain")
    op, at, sample = request.POST.get("op", "refresh"), request.POST.get("at", "f"), request.POST.get("sample", "")

    def render(tree: sb.Field | None, error: str = "", fid: str = "") -> HttpResponse:
        context = {"workflow": loaded.workflow, "can_edit": loaded.can_edit,
                   "builder": schema_builder_context(loaded, key, node_id, tree=tree, error=error, error_fid=fid,
                                                     sample=sample)}
        return TemplateResponse(request, BUILDER_TEMPLATE, context)

    try:
        if op == "from-json":
            schema = form_json(request.POST.get("schema", ""), field="schema", what="the JSON")
            if not isinstance(schema, dict):
                raise BadRequest('a schema is a JSON object, e.g. {"type": "object", "properties": {}}')
            return render(sb.fields_of(schema))
        if op == "infer":
            if not sample.strip():
                raise BadRequest("paste a sample JSON value first, e.g. {\"customers\": [{\"name\": \"Ada\"}]}")
            return render(sb.fields_of(sb.infer_schema(form_json(sample, field="sample", what="the sample"))))
        tree = sb.from_form(request.POST)
        if op == "add":
            tree = sb.update(tree, at, sb.add_child)
        elif op == "remove":
            tree = sb.update(tree, at, lambda field: None)
        elif op == "save":
            return _save_schema(request, loaded, key, node_id, tree, render)
    except sb.FormError as exc:
        return render(None if op in ("from-json", "infer") else _tree_or_none(request.POST), str(exc), exc.fid)
    except KeyError:
        return render(None, "that field no longer exists; the builder has been refreshed")
    except DesignerError as exc:
        return render(_tree_or_none(request.POST) if op not in ("from-json",) else None, error_message(exc))
    return render(tree)


def _tree_or_none(form: Any) -> sb.Field | None:
    try:
        return sb.from_form(form)
    except (sb.FormError, ValueError):
        return None


def _save_schema(request: HtmxHttpRequest, loaded: Loaded, key: str, node_id: str | None, tree: sb.Field,
                 render: Any) -> HttpResponse:
    if sb.name_problems(tree):
        return render(tree, "Not saved: every field needs a name of its own (see below).")
    schema = sb.schema_of(tree)
    problems = sb.default_problems(schema)
    if problems:  # shown next to each default by the re-render; nothing is saved
        return render(tree, f"Not saved: {len(problems)} default{'s' if len(problems) != 1 else ''} "
                            "break their own field (see below).")
    try:
        committed = edits.commit(actor=request.user, workflow=loaded.workflow,
                                 revision=edits._revision(request.POST.get("revision", "")),
                                 operations=[{"op": "set_schema", "key": key, "node": node_id, "schema": schema}],
                                 analysis=loaded.analysis)
    except RevisionConflict:
        return render(tree, "Not saved: someone else saved this workflow meanwhile. Reload the editor "
                            "to see their version (copy your schema from the JSON view first).")
    except (DesignerError, WorkflowError) as exc:
        return render(tree, error_message(exc))
    saved = committed.saved
    fresh = _load(request, loaded.workflow.pk, workflow=saved.workflow, analysis=saved.analysis)
    response = TemplateResponse(request, f"{TEMPLATE}#inspector", _inspector_context(fresh, node_id))
    response = reswap(retarget(response, "#inspector"), "innerHTML")
    return _triggers(response, document_changed={"revision": saved.workflow.revision, "node": node_id,
                                                  "undo": committed.applied.undo})


@signed_in("POST")
def publish(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    """Publish the draft as the next version; the answer is a notice either way."""
    loaded = _load(request, workflow_id)
    require_workflow_role(request.user, loaded.workflow, "editor")
    try:
        version = workflow_services.publish_workflow(actor=request.user, workflow=loaded.workflow,
                                                     note=request.POST.get("note", ""))
    except (DesignerError, WorkflowError) as exc:
        count = len(getattr(exc, "diagnostics", ()) or ())
        message = (f"Not published: the draft has {count} error{'s' if count != 1 else ''}; "
                   "fix them in the diagnostics panel first.") if count else f"Not published: {error_message(exc)}"
        return _triggers(HttpResponse(status=204), notice={"kind": "error", "message": message})
    # ``version-published``: the run panel reloads on it, so the new version is listed at once.
    return _triggers(HttpResponse(status=204), notice={
        "kind": "success", "message": f"Published version {version.number} of {loaded.workflow.name}.",
    }, version_published={"number": version.number})
