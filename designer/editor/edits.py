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
from typing import Any

from django.http import HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.template.response import TemplateResponse

from designer.access.permissions import require_workflow_role
from designer.core.errors import BadRequest, DesignerError, EditConflict, RevisionConflict
from designer.core.htmx import HtmxHttpRequest
from designer.core.pages import error_message, signed_in
from designer.core.untrusted import form_json
from designer.editor import live, panels
from designer.editor.context import TEMPLATE, diagnostics_panel, inspector_context, load, with_events
from designer.models import Workflow as WorkflowModel
from designer.workflows import analysis as doc_analysis
from designer.workflows import edits as workflow_edits
from designer.workflows import operations as ops
from designer.workflows.edits import Edited
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


def commit(*, actor: Any, workflow: WorkflowModel, revision: object, operations: object,
           analysis: Analysis, client: str = "") -> Edited:
    """An editor's edit through the one edit service: rebased onto the current draft when others saved since
    ``revision`` and nothing they changed is what these operations change."""
    return workflow_edits.apply_edits(actor=actor, workflow=workflow, revision=revision, operations=operations,
                                      client=client, rebase=True, analysis=analysis, context=operation_context)


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


def _saved_json(committed: Edited) -> dict[str, Any]:
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


def patch_json(committed: Edited) -> dict[str, Any]:
    """The save's answer for a client that holds the document at the revision it edited (``"answer": "patch"``).

    ``revision``: the saved revision; ``base_revision``: the revision the operations were applied to, which is
    the client's own only when nobody else saved since it (else the edit was rebased onto a newer one);
    ``patch``: JSON Patch (RFC 6902; add, remove, replace) from the document at ``base_revision`` to the saved
    one, or ``document`` (the whole saved document) instead when the patch would not be much smaller;
    ``analysis`` and ``diagnostics`` (as in the full answer) only when they differ from ``base_revision``'s
    (a move changes neither); ``undo`` and ``select`` as in the full answer. A client whose document is not at
    ``base_revision`` (others saved, or a panel did) must not apply the patch: it loads the document instead.
    """
    workflow, analysis = committed.saved.workflow, committed.saved.analysis
    after = workflow.document
    before_analysis = committed.base_analysis
    answer: dict[str, Any] = {
        "revision": workflow.revision,
        # Carried, not worked out as revision - 1 of a re-read row: a patch is only right on its own base.
        "base_revision": committed.base_revision,
        "undo": committed.applied.undo,
        "select": committed.applied.select,
    }
    changes = json_patch(committed.base_document, after)
    size = len(json.dumps(changes))
    # A patch of a few hundred bytes (a move) is sent without measuring the whole document against it.
    if size > PATCH_ALWAYS and size > PATCH_SHARE * len(json.dumps(after)):
        answer["document"] = after
    else:
        answer["patch"] = changes
    summary = None if analysis is before_analysis else doc_analysis.summary(analysis)
    if summary is not None and (before_analysis is None or summary != doc_analysis.summary(before_analysis)):
        answer["analysis"] = summary
        answer["diagnostics"] = summary["diagnostics"]
    return answer


def _edit_json(request: HtmxHttpRequest, workflow: WorkflowModel, analysis: Any) -> HttpResponse:
    try:
        body = _json_body(request)
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
    answer = patch_json(committed) if body.get("answer") == "patch" else _saved_json(committed)
    if "diagnostics" in answer:
        # The diagnostics panel as the page draws it, so the canvas shows it from the answer, not fetched again.
        saved = committed.saved
        fresh = load(request, saved.workflow.pk, workflow=saved.workflow, analysis=saved.analysis)
        answer["diagnostics_panel"] = render_to_string(f"{TEMPLATE}#diagnostics", diagnostics_panel(fresh),
                                                       request=request)
    return JsonResponse(answer)


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
    # The diagnostics panel comes with the answer (out of band), not fetched again after it.
    context = {**inspector_context(fresh, show), **diagnostics_panel(fresh), "diagnostics_oob": True}
    response = TemplateResponse(request, f"{TEMPLATE}#inspector", context)
    return with_events(response, document_changed={
        "revision": saved.workflow.revision, "node": show, "undo": committed.applied.undo,
    })

