"""The editor's one write path: named edit operations, checked against the revision, saved.

The canvas island and the htmx side panels send the same operations
(``designer.workflows.operations``) to the one endpoint here. The canvas posts JSON
``{"revision", "ops"}`` and gets the saved document, its analysis and the
operations that undo the change (or, asking ``"answer": "patch"``, only what
changed: see ``patch_json``); a panel posts its form (``action`` and the
fields, or ``ops`` as JSON) and gets its refreshed inspector, with the same
answer in the ``HX-Trigger`` header. Both go through the browser's one edit
queue, so a tab sends each edit with the revision its previous edit produced
and never conflicts with itself; a stale revision gets 409 and nothing is
overwritten. Nothing else on the site edits a draft piecewise.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.http import HttpResponse, JsonResponse
from django.template.response import TemplateResponse

from designer import analysis as doc_analysis
from designer.editor import live, panels
from designer.editor.context import TEMPLATE, inspector_context, load, with_events
from designer.errors import BadRequest, DesignerError, EditConflict, RevisionConflict
from designer.models import DraftOperation
from designer.models import Workflow as WorkflowModel
from designer.permissions import require_workflow_role
from designer.untrusted import form_json
from designer.views.htmx import HtmxHttpRequest
from designer.views.pages import error_message, signed_in
from designer.workflows import merge
from designer.workflows import operations as ops
from designer.workflows import services as workflow_services
from designer.workflows.patch import json_patch
from runtime import Analysis, WorkflowError

#: The panels' form actions and the operation each one sends.
FORM_ACTIONS = {
    "bind": "bind_path",
    "literal": "bind_literal",
    "secret": "bind_secret",
    "unbind": "unbind",
    "basics": "set_basics",
    "start": "set_start",
    "settings": "set_settings",
    "foreach": "set_foreach",
    "subgraph": "set_subgraph",
    "output-add": "add_output",
    "output-remove": "remove_output",
    "branch": "set_branch",
    "case-add": "add_case",
    "case-remove": "remove_case",
    "interrupt": "set_interrupt",
    "limits": "set_limits",
    "unbind-tree": "unbind_tree",
    "schema-json": "set_schema",
    "workflow-start": "set_workflow_start",
    "workflow-output-add": "add_workflow_output",
    "workflow-output-remove": "remove_workflow_output",
}
_NOT_ARGS = frozenset({"action", "revision", "csrfmiddlewaretoken", "ops", "client"})


def form_ops(form: Any) -> list[dict[str, Any]]:
    """The operations a panel form sends: ``ops`` as JSON, or an ``action`` with its fields as arguments."""
    if form.get("ops"):
        sent = form_json(form["ops"], field="ops", what="ops")
        if not isinstance(sent, list):
            raise BadRequest("ops is a JSON list of edit operations", field="ops")
        return sent
    action = form.get("action", "")
    name = FORM_ACTIONS.get(action, action if action in ops.OPERATIONS else None)
    if name is None:
        raise BadRequest(f"unknown editor action {action!r}", field="action")
    args: dict[str, Any] = {}
    for key, values in form.lists():
        if key in _NOT_ARGS:
            continue
        args[key] = values if len(values) > 1 or key.startswith("case_") else values[0]
    if name == "bind_literal":
        text = args.pop("value", "")
        if args.pop("checkbox", None) is not None:  # a boolean's checkbox: unchecked sends no value at all
            text = "true" if text == "true" else "false"
        args["text"] = text
    if name == "add_output":  # the state-field picker's "new state field…" choice is typed in new_target
        typed = args.pop("new_target", "")
        if not args.get("target"):
            args["target"] = typed
    if name == "set_schema":  # the schema builder's JSON view: its schema_key names the schema
        args = {"key": args.get("schema_key", ""), "node": args.get("node", ""), "schema": args.get("schema", "")}
    return [{"op": name, **args}]


def operation_context(workflow: WorkflowModel, analysis: Analysis) -> ops.Context:
    """What the operations ask of the analyzer: a node's exit labels, a field's schema."""
    def exit_labels(node: Mapping[str, Any]) -> Sequence[str]:
        # The analyzer's labels of the node alone (a one-node workflow): no copy of its rules here.
        probe = {"id": "probe", "nodes": [{**node, "id": "probe_node"}]}
        try:
            alone = doc_analysis.analyze_document(doc_analysis.parse_document(probe), team=workflow.team_id)
            return alone.labels("probe_node")
        except (DesignerError, WorkflowError):
            return ("ok",)

    def field_schema(node: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
        # ``name`` is a binding target, maybe a key inside a field (values.count): the analyzer types both.
        node_id = node.get("id")
        if node_id in analysis.reachable:
            try:
                found = analysis.field_schema(node_id, f"input.{name}")
            except WorkflowError:
                found = None
            if found is not None:
                return found  # type: ignore[no-any-return]
        return panels.field_schema(node, analysis, name)

    return ops.Context(exit_labels=exit_labels, field_schema=field_schema)


@dataclass(frozen=True, slots=True)
class Committed:
    saved: workflow_services.SavedDocument
    applied: ops.Applied


#: Times an edit is rebased again when yet another save lands between its rebase and its own save. Each retry
#: means someone else's save went in, so the loop ends once the writers ahead of it have saved: this only bounds a
#: pathological stream (five was too few: six people saving one revision at once could see one refused).
_REBASE_ATTEMPTS = 50


def _later(workflow: WorkflowModel, revision: int, client: str) -> list[merge.Later] | None:
    """Other tabs' edits saved after ``revision``, in server order; None when the log does not reach back there."""
    # Up to the revision this rebase is judged on: rows saved since are judged by the retry that meets them.
    rows = list(DraftOperation.objects.filter(workflow_id=workflow.pk, revision__gt=revision,
                                              revision__lte=workflow.revision)
                .select_related("actor").order_by("revision"))
    if len(rows) != workflow.revision - revision:
        return None
    return [merge.Later(row.revision, live.display_name(row.actor), row.ops) for row in rows
            if not (client and row.client == client)]


def _rebase(workflow: WorkflowModel, revision: object, operations: object, client: str) -> object:
    """The revision to save ``operations`` on: ``revision`` itself when current; else the current one, when the
    edits saved since touched nothing these do (``merge``); else ``EditConflict``, keeping the first."""
    if isinstance(revision, bool) or not isinstance(revision, int) or not 0 < revision < workflow.revision:
        return revision  # current, or nonsense that save_document names
    later = _later(workflow, revision, client)
    sent = [op for op in operations if isinstance(op, Mapping)] if isinstance(operations, list) else []
    kept = ([merge.Kept(workflow.revision, "someone", merge.EVERYTHING)] if later is None
            else merge.conflicts(sent, later))
    if kept:
        first = kept[0]
        raise EditConflict(
            f"{first.actor} changed {first.describe()} first (revision {first.revision}); their change is kept "
            "and yours was not applied",
            kept=[k.to_dict() for k in kept], ops=operations, current_revision=workflow.revision,
        )
    return workflow.revision


def commit(*, actor: Any, workflow: WorkflowModel, revision: object, operations: object,
           analysis: Any, client: str = "") -> Committed:
    """Apply ``operations`` to the stored draft and save it, rebased onto the current revision when others saved
    since ``revision`` and nothing they changed is what these operations change."""
    for attempt in range(_REBASE_ATTEMPTS):
        base = _rebase(workflow, revision, operations, client)
        applied = ops.apply_all(workflow.document, operations, operation_context(workflow, analysis))
        try:
            saved = workflow_services.save_document(
                actor=actor, workflow=workflow, revision=base, document=applied.document,
                operations=list(operations) if isinstance(operations, list) else None,
                undo=applied.undo, client=client)
        except RevisionConflict:
            # Saved by someone else between our read and our write: read again, judge again.
            fresh = WorkflowModel.objects.filter(pk=workflow.pk).first()
            if fresh is None or attempt == _REBASE_ATTEMPTS - 1 or not isinstance(base, int) \
                    or not 0 < base < fresh.revision:
                raise
            workflow, analysis = fresh, doc_analysis.analysis_for(fresh)
            continue
        return Committed(saved, applied)
    raise AssertionError("unreachable")


def parse_revision(value: object) -> object:
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return -1
    return value


def _json_body(request: HtmxHttpRequest) -> dict[str, Any]:
    try:
        text = request.body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(f"the request body is not valid JSON: {exc}") from exc
    body = form_json(text, field=None, what="the request body")
    if not isinstance(body, dict):
        raise BadRequest('send {"revision": <the revision you edited>, "ops": [...]}')
    return body


def _saved_json(committed: Committed) -> dict[str, Any]:
    workflow, analysis = committed.saved.workflow, committed.saved.analysis
    return {
        "revision": workflow.revision,
        "document": workflow.document,
        "diagnostics": doc_analysis.diagnostics_json(analysis),
        "analysis": doc_analysis.summary(analysis),
        "undo": committed.applied.undo,
        "select": committed.applied.select,
    }


#: A patch answer carries the whole document instead when its patch would be more than this share of it.
PATCH_SHARE = 0.5
#: ...unless the patch is at most this many bytes of JSON: then it is the answer whatever the document's size.
PATCH_ALWAYS = 1024


def patch_json(committed: Committed, *, before: dict[str, Any], before_analysis: Analysis) -> dict[str, Any]:
    """The save's answer for a client that holds the document at the revision it edited (``"answer": "patch"``).

    ``revision``: the saved revision; ``base_revision``: the one the operations applied to (the client's);
    ``patch``: JSON Patch (RFC 6902; add, remove, replace) from the document at ``base_revision`` to the saved
    one, or ``document`` (the whole saved document) instead when the patch would not be much smaller;
    ``analysis`` and ``diagnostics`` (as in the full answer) only when they differ from ``base_revision``'s
    (a move changes neither); ``undo`` and ``select`` as in the full answer. A client whose document is not at
    ``base_revision`` (a panel saved meanwhile) loads the document instead of applying the patch.
    """
    workflow, analysis = committed.saved.workflow, committed.saved.analysis
    after = workflow.document
    answer: dict[str, Any] = {
        "revision": workflow.revision,
        "base_revision": workflow.revision - 1,
        "undo": committed.applied.undo,
        "select": committed.applied.select,
    }
    changes = json_patch(before, after)
    size = len(json.dumps(changes))
    # A patch of a few hundred bytes (a move) is sent without measuring the whole document against it.
    if size > PATCH_ALWAYS and size > PATCH_SHARE * len(json.dumps(after)):
        answer["document"] = after
    else:
        answer["patch"] = changes
    summary = None if analysis is before_analysis else doc_analysis.summary(analysis)
    if summary is not None and summary != doc_analysis.summary(before_analysis):
        answer["analysis"] = summary
        answer["diagnostics"] = summary["diagnostics"]
    return answer


def _edit_json(request: HtmxHttpRequest, workflow: WorkflowModel, analysis: Any) -> HttpResponse:
    try:
        body = _json_body(request)
        before = workflow.document  # the save refreshes ``workflow``: this stays the base revision's
        committed = commit(actor=request.user, workflow=workflow, revision=body.get("revision"),
                           operations=body.get("ops"), analysis=analysis, client=live.client_id(body.get("client")))
    except EditConflict as exc:
        return JsonResponse(exc.to_dict(), status=409)
    except RevisionConflict as exc:
        return JsonResponse({**exc.to_dict(), "current_revision": exc.details["current_revision"]}, status=409)
    except DesignerError as exc:
        return JsonResponse(exc.to_dict(), status=exc.status)
    except WorkflowError as exc:
        return JsonResponse({"code": exc.code, "message": exc.message}, status=400)
    if body.get("answer") == "patch":
        return JsonResponse(patch_json(committed, before=before, before_analysis=analysis))
    return JsonResponse(_saved_json(committed))


@signed_in("POST")
def edit(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    """Apply a batch of edit operations to the stored draft (canvas: JSON; panels: a form)."""
    loaded = load(request, workflow_id)
    require_workflow_role(request.user, loaded.workflow, "editor")
    if request.content_type == "application/json":
        return _edit_json(request, loaded.workflow, loaded.analysis)
    node_id = request.POST.get("node", "")
    try:
        committed = commit(actor=request.user, workflow=loaded.workflow,
                           revision=parse_revision(request.POST.get("revision", "")),
                           operations=form_ops(request.POST), analysis=loaded.analysis,
                           client=live.client_id(request.POST.get("client")))
    except EditConflict as exc:
        fresh = load(request, workflow_id)
        response = TemplateResponse(request, f"{TEMPLATE}#inspector", inspector_context(fresh, node_id or None))
        return with_events(response, document_changed={"revision": fresh.workflow.revision},
                           notice={"kind": "conflict", "message": exc.message[0].upper() + exc.message[1:] + ".",
                                   "action": {"ops": exc.details["ops"], "label": "Apply mine instead"}})
    except RevisionConflict as exc:
        fresh = load(request, workflow_id)
        response = TemplateResponse(request, f"{TEMPLATE}#inspector",
                                    inspector_context(fresh, node_id or None))
        return with_events(
            response,
            document_changed={"revision": fresh.workflow.revision},
            notice={"kind": "conflict", "message": (
                f"Someone else saved this workflow (now revision {fresh.workflow.revision}); the editor shows "
                f"their version and your change was not applied. {exc.message.split(';')[0].capitalize()}."
            )},
        )
    except (DesignerError, WorkflowError) as exc:
        context = inspector_context(loaded, node_id or None, request.POST.get("field") or None)
        context["error"] = error_message(exc)
        context["error_field"] = getattr(exc, "details", {}).get("field") or ""
        return TemplateResponse(request, f"{TEMPLATE}#inspector", context)
    saved = committed.saved
    show = committed.applied.select if committed.applied.select is not None else (node_id or None)
    if request.POST.get("action") == "settings":
        show = None
    fresh = load(request, workflow_id, workflow=saved.workflow, analysis=saved.analysis)
    response = TemplateResponse(request, f"{TEMPLATE}#inspector", inspector_context(fresh, show))
    return with_events(response, document_changed={
        "revision": saved.workflow.revision, "node": show, "undo": committed.applied.undo,
    })

