"""The workflow editor page and its htmx panels.

The panels around the canvas island (static/src/editor) are rendered here from
the stored draft and the runtime's analysis of it, computed once per saved
revision. Every edit, the canvas's and the panels', goes through the one write
endpoint in ``designer.editor.edits``. Panels and canvas talk through DOM events;
responses raise them with the ``HX-Trigger`` header.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django_htmx.http import reswap, retarget

from designer.access.permissions import require_access
from designer.core.errors import BadRequest, DesignerError, RevisionConflict
from designer.core.htmx import HtmxHttpRequest
from designer.core.pages import error_message, signed_in
from designer.core.untrusted import form_json
from designer.editor import edits, panels
from designer.editor.context import (
    SCHEMA_TITLES,
    TEMPLATE,
    Loaded,
    diagnostics_of,
    diagnostics_panel,
    inspector_context,
    load,
    node_of,
    picker_for,
    schema_builder_context,
    start_picker,
    with_events,
)
from designer.workflows import operations as doc_ops
from designer.workflows import schema_builder as sb
from designer.workflows import services as workflow_services
from runtime import WorkflowError


@signed_in("GET")
def editor(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    """The editor page: palette, canvas, inspector, diagnostics (and the run panel)."""
    loaded = load(request, workflow_id)
    diagnostics = diagnostics_of(loaded)
    context = {
        **inspector_context(loaded, None),
        "role": loaded.role,
        "can_run": loaded.can_run,
        # SHARING_RULE: the Sharing page is for the workflow's own team; a team it is shared with sees who holds it.
        "in_own_team": loaded.in_own_team,
        "palette": panels.palette(loaded.workflow),
        "query": "",
        "api_base": reverse("api:task-list").removesuffix("tasks/"),
        # api.js documentUrl: the same address, so the canvas's fetch takes the preloaded answer.
        "document_url": reverse("api:workflow-document", args=[workflow_id]),
        "summary": panels.diagnostics_summary(diagnostics),
    }
    return TemplateResponse(request, TEMPLATE, context)


@signed_in("GET")
def palette(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    loaded = load(request, workflow_id)
    query = request.GET.get("q", "")
    context = {"palette": panels.palette(loaded.workflow, query), "query": query, "can_edit": loaded.can_edit}
    return TemplateResponse(request, f"{TEMPLATE}#palette-list", context)


@signed_in("GET")
def inspector(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    loaded = load(request, workflow_id)
    node_id, focus, error = request.GET.get("node") or None, request.GET.get("field") or None, ""
    if "parent" in request.GET:  # a new key inside an object field (the mapping editor): open its picker
        try:
            focus = panels.child_key(request.GET["parent"], request.GET.get("key", ""))
        except DesignerError as exc:
            error = error_message(exc)
    if "target" in request.GET:  # a new prompt-payload row of an interrupt: open its picker
        try:
            focus = doc_ops.payload_field(request.GET["target"])
        except DesignerError as exc:
            error = error_message(exc)
    context = inspector_context(loaded, node_id, focus)
    if error:
        context["error"] = error
    return TemplateResponse(request, f"{TEMPLATE}#inspector", context)


@signed_in("GET")
def picker(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    loaded = load(request, workflow_id)
    node_id, field = request.GET.get("node", ""), request.GET.get("field", "")
    node = node_of(loaded.document, node_id)
    current = None
    if node is not None:
        if field in ("over", "path"):
            current = node.get(field)
        else:
            current = next((b.get("path") for b in node.get("input", [])
                            if doc_ops.same_target(f"input.{b.get('target')}", field)), None)
    context = {
        "workflow": loaded.workflow,
        "can_edit": loaded.can_edit,
        "picker": picker_for(loaded, node_id, field, current=current, show_all=request.GET.get("all") == "1",
                              query=request.GET.get("q", "")),
    }
    part = "picker-results" if request.GET.get("part") == "results" else "picker"
    return TemplateResponse(request, f"{TEMPLATE}#{part}", context)


#: The long pickers whose options are sent when wanted (context.SELECT_INLINE_OPTIONS), and the template part of
#: each: the workflow settings' start node and output path, a node's output-binding state field.
LONG_PICKERS = {"start": "start-options", "output-path": "output-path-options", "state-field": "state-field-options"}


@signed_in("GET")
def picker_options(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    """The options of a long picker (``?picker=start``, ``output-path`` or ``state-field``), asked for when
    someone reaches for it: rendered by the very part of the template the picker renders inline when it is short,
    from the draft's analysis, so they are the options it would have held. A read, for the workflow's viewers, as
    the inspector itself."""
    loaded = load(request, workflow_id)
    picker_name = request.GET.get("picker", "")
    part = LONG_PICKERS.get(picker_name)
    if part is None:
        raise BadRequest(f"no such picker: {picker_name!r} ({', '.join(LONG_PICKERS)})", field="picker")
    context: dict[str, Any]
    if picker_name == "start":
        context = {"settings": start_picker(loaded)}
    elif picker_name == "output-path":
        context = {"output_paths": panels.workflow_output_paths(loaded.analysis)}
    else:
        context = {"state_field_types": panels.state_field_types(loaded.analysis)}
    return TemplateResponse(request, f"{TEMPLATE}#{part}", context)


@signed_in("GET")
def data_tree(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    """The rows of a node's data panel below a folded path (``?node=<id>&under=<path>``), asked for when someone
    opens it (panels.DATA_TREE_FOLD): rendered by the part of the template the panel renders its rows with, from
    the draft's analysis. A read, for the workflow's viewers, as the inspector itself."""
    loaded = load(request, workflow_id)
    node_id = request.GET.get("node", "")
    node = node_of(loaded.document, node_id)
    if node is None:
        raise BadRequest(f"no node {node_id!r} in this draft", field="node", node=node_id)
    rows = panels.data_subtree(loaded.analysis, node_id, request.GET.get("under", ""))
    context = {"workflow": loaded.workflow, "node": node, "can_edit": loaded.can_edit, "rows": rows,
               "focus_first": True}
    return TemplateResponse(request, f"{TEMPLATE}#data-rows", context)


@signed_in("GET")
def diagnostics(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    loaded = load(request, workflow_id)
    return TemplateResponse(request, f"{TEMPLATE}#diagnostics", diagnostics_panel(loaded))


# --- the schema builders (changes re-render; "Save" is one set_schema edit) ---------------------


BUILDER_TEMPLATE = f"{TEMPLATE}#schema-builder"


@signed_in("GET", "POST")
def schema_builder(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    """One change in a schema builder (add, remove, retype, infer from a sample, read the JSON view, save); a GET
    is the builder of the stored schema (a big one opens on demand: ``context.BUILDER_INLINE_FIELDS``).

    Until "Save", nothing is stored: the form is the tree, re-rendered with each default its field refuses
    named where it is typed. "Save" stores it with the revision the page holds and answers with the whole
    inspector, like every panel edit."""
    loaded = load(request, workflow_id)
    form = request.GET if request.method == "GET" else request.POST
    key, node_id = form.get("schema_key", ""), form.get("node", "") or None
    if key not in SCHEMA_TITLES or (key == "resume_schema") != bool(node_id):
        return HttpResponse(f"unknown schema {key!r}", status=400, content_type="text/plain")
    if request.method == "GET":
        # Opened on demand: the panel keeps it through canvas saves (glue.js inspectorBusy).
        context = {"workflow": loaded.workflow, "can_edit": loaded.can_edit,
                   "builder": {**schema_builder_context(loaded, key, node_id), "opened": True}}
        return TemplateResponse(request, BUILDER_TEMPLATE, context)
    require_access(loaded.access, "editor")
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
                                 revision=edits.parse_revision(request.POST.get("revision", "")),
                                 operations=[{"op": "set_schema", "key": key, "node": node_id, "schema": schema}],
                                 analysis=loaded.analysis)
    except RevisionConflict:
        return render(tree, "Not saved: someone else saved this workflow meanwhile. Reload the editor "
                            "to see their version (copy your schema from the JSON view first).")
    except (DesignerError, WorkflowError) as exc:
        return render(tree, error_message(exc))
    saved = committed.saved
    fresh = load(request, loaded.workflow.pk, workflow=saved.workflow, analysis=saved.analysis)
    # The diagnostics panel comes with the answer (out of band), not fetched again after it.
    context = {**inspector_context(fresh, node_id), **diagnostics_panel(fresh), "diagnostics_oob": True}
    response = TemplateResponse(request, f"{TEMPLATE}#inspector", context)
    response = reswap(retarget(response, "#inspector"), "innerHTML")
    return with_events(response, document_changed={"revision": saved.workflow.revision, "node": node_id,
                                                  "undo": committed.applied.undo})


def _shown_revision(value: str | None) -> int | None:
    # The revision the canvas showed when Publish was pressed (the page's revision field); absent: the draft's.
    try:
        return int(value) if value else None
    except ValueError:
        raise BadRequest("revision is the whole number of the revision shown", field="revision") from None


@signed_in("POST")
def publish(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    """Publish the draft as the next version; the answer is a notice either way."""
    loaded = load(request, workflow_id)
    require_access(loaded.access, "editor")
    try:
        version = workflow_services.publish_workflow(
            actor=request.user, workflow=loaded.workflow, note=request.POST.get("note", ""),
            revision=_shown_revision(request.POST.get("revision")), access=loaded.access)
    except (DesignerError, WorkflowError) as exc:
        count = len(getattr(exc, "diagnostics", ()) or ())
        message = (f"Not published: the draft has {count} error{'s' if count != 1 else ''}; "
                   "fix them in the diagnostics panel first.") if count else f"Not published: {error_message(exc)}"
        return with_events(HttpResponse(status=204), notice={"kind": "error", "message": message})
    # ``version-published``: the run panel reloads on it, so the new version is listed at once.
    shown = _shown_revision(request.POST.get("revision"))
    which = f" (revision {shown}, as shown)" if shown is not None and shown != loaded.workflow.revision else ""
    return with_events(HttpResponse(status=204), notice={
        "kind": "success", "message": f"Published version {version.number} of {loaded.workflow.name}{which}.",
    }, version_published={"number": version.number})
