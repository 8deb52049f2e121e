"""The workflow's own page: its versions (with their notes), comparing two of them, restoring one into
the draft, and the triggers that start its runs without a person (webhooks and schedules).

Viewers see all of it; editors and owners also restore and manage triggers. Every write goes
through a service (``designer.workflows.versions``, ``designer.triggers.services``); this module only parses, calls
and renders.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt

from designer.access.permissions import has_role, require_workflow_role, role_of
from designer.core.errors import DesignerError, ObjectNotFound, RateLimited, RevisionConflict
from designer.core.htmx import HtmxHttpRequest
from designer.core.pages import error_message, signed_in
from designer.core.uploads import TOO_MUCH, too_large
from designer.models import Schedule, TriggerFire, Webhook
from designer.models import Workflow as WorkflowModel
from designer.triggers import services as trigger_services
from designer.triggers import signature
from designer.workflows import edits as workflow_edits
from designer.workflows import selectors as workflow_selectors
from designer.workflows import versions as version_services
from designer.workflows.diff import diff, labels_of, node_marks, route_target
from runtime import WorkflowError

#: Fires listed per trigger, newest first.
RECENT_FIRES = 5
UPCOMING_TICKS = 3
DRAFT = "draft"


def _workflow(request: HtmxHttpRequest, workflow_id: int) -> tuple[WorkflowModel, str]:
    workflow = workflow_selectors.get_workflow(user=request.user, workflow_id=workflow_id)
    role = require_workflow_role(request.user, workflow, "viewer")
    return workflow, role


def _undo_key(workflow: WorkflowModel) -> str:
    return f"trellis-restore-undo-{workflow.pk}"


def _recent(fires: Any) -> list[TriggerFire]:
    return list(fires.select_related("run").order_by("-at", "-pk")[:RECENT_FIRES])


def _context(request: HtmxHttpRequest, workflow: WorkflowModel, role: str, **extra: Any) -> dict[str, Any]:
    versions = list(workflow_selectors.versions_of(workflow))
    webhooks = list(Webhook.objects.filter(workflow=workflow).select_related("version", "created_by"))
    schedules = list(Schedule.objects.filter(workflow=workflow).select_related("version"))
    for schedule in schedules:
        schedule.upcoming = []
        if schedule.next_fire_at:
            zone = trigger_services.ZoneInfo(schedule.timezone)
            schedule.upcoming = [schedule.next_fire_at.astimezone(zone),
                                 *trigger_services.ticks_after(schedule, schedule.next_fire_at, UPCOMING_TICKS - 1)]
        schedule.recent = _recent(schedule.fires)
    for webhook in webhooks:
        webhook.recent = _recent(webhook.fires)
    undo = request.session.get(_undo_key(workflow))
    return {
        "workflow": workflow, "role": role, "can_edit": has_role(role, "editor"), "versions": versions,
        # SHARING_RULE: the Sharing page is for the workflow's own team.
        "in_own_team": role_of(request.user, workflow.team_id) is not None,
        "webhooks": webhooks, "schedules": schedules, "missed_choices": Schedule.Missed.choices,
        "time_zones": trigger_services.timezones() if has_role(role, "editor") else [],
        "webhook_modes": Webhook.Mode.choices, "signature_header": signature.HEADER,
        "replay_minutes": signature.REPLAY_WINDOW // 60,
        "undo": undo if isinstance(undo, dict) and undo.get("revision") == workflow.revision else None,
        "compare_a": versions[0].number if versions else None,
        **extra,
    }


@signed_in("GET")
def workflow_page(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    workflow, role = _workflow(request, workflow_id)
    return TemplateResponse(request, "triggers/workflow_page.html", _context(request, workflow, role))


# --- versions ---------------------------------------------------------------------------------


def _side(workflow: WorkflowModel, value: str) -> tuple[str, dict[str, Any]]:
    if value in ("", DRAFT):
        return f"draft (revision {workflow.revision})", workflow.document
    version = workflow_selectors.get_version(workflow=workflow, number=value)
    return f"v{version.number}", version.document


def _graph(a: dict[str, Any], b: dict[str, Any], changes: list[Any]) -> dict[str, Any]:
    """The union of both documents' nodes and routes, each marked added / removed / changed / same."""
    marks = node_marks(changes)
    positions = {**((a.get("metadata") or {}).get("positions") or {}),
                 **((b.get("metadata") or {}).get("positions") or {})}
    nodes: dict[str, dict[str, Any]] = {}
    for doc in (b, a):
        for node in doc.get("nodes") or []:
            if isinstance(node, dict) and node.get("id") not in nodes:
                nodes[node["id"]] = {
                    "id": node["id"], "kind": node.get("kind"), "title": node.get("name") or node["id"],
                    "subtitle": node.get("task") or node.get("over") or node.get("path") or "",
                    "mark": marks.get(node["id"], "same"), "position": positions.get(node["id"]),
                }
    route_marks = {c.key: c.change for c in changes if c.what == "route"}
    edges: dict[str, dict[str, Any]] = {}
    for doc in (b, a):
        for route in doc.get("routes") or []:
            if not isinstance(route, dict):
                continue
            key = f"{route.get('source')} --{route.get('label')}"
            if key in edges:
                continue
            mark = route_marks.get(key, "same")
            edges[key] = {"id": key, "source": route.get("source"), "label": route.get("label"),
                          "target": route_target(route), "mark": mark}
            if mark == "changed" and doc is b:
                old = next((r for r in a.get("routes") or [] if isinstance(r, dict)
                            and f"{r.get('source')} --{r.get('label')}" == key), None)
                if old is not None:
                    edges[key + " (before)"] = {"id": key + " (before)", "source": old.get("source"),
                                                 "label": old.get("label"), "target": old.get("target"),
                                                 "mark": "removed"}
    wanted = set(nodes)
    return {"nodes": list(nodes.values()),
            "edges": [e for e in edges.values() if e["source"] in wanted and e["target"] in wanted]}


def _comparison(workflow: WorkflowModel, a: tuple[str, dict[str, Any]],
                b: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """What the comparison page shows of ``a`` -> ``b`` (each a label and a document): the changes with
    their before and after values (nodes named by label) and the canvas's graph."""
    (a_label, a_doc), (b_label, b_doc) = a, b
    changes = diff(a_doc, b_doc)
    labels = labels_of(a_doc, b_doc)
    return {
        "workflow": workflow, "a_label": a_label, "b_label": b_label,
        "changes": [c.to_dict(labels) for c in changes], "graph": _graph(a_doc, b_doc, changes),
        "counts": {kind: sum(1 for c in changes if c.change == kind) for kind in ("added", "removed", "changed")},
    }


@signed_in("GET")
def version_compare(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    """Two versions (or the draft and a version) side by side: the changes as a list and on a canvas."""
    workflow, role = _workflow(request, workflow_id)
    versions = list(workflow_selectors.versions_of(workflow))
    default_a = str(versions[1].number if len(versions) > 1 else versions[0].number) if versions else DRAFT
    a_key = request.GET.get("a") or default_a
    b_key = request.GET.get("b") or (DRAFT if a_key != DRAFT else default_a)
    return TemplateResponse(request, "workflows/compare.html", {
        **_comparison(workflow, _side(workflow, a_key), _side(workflow, b_key)),
        "role": role, "versions": versions, "a": a_key, "b": b_key,
    })


def _revision(value: object) -> object:
    try:
        return int(str(value))
    except ValueError:
        return -1


@signed_in("GET", "POST")
def version_restore(request: HtmxHttpRequest, workflow_id: int, number: int) -> HttpResponse:
    """GET: the restore's preview, what the draft would become (the comparison of the draft with the
    version) and a button to do it. POST: make the version the draft, against the revision the preview
    showed; the workflow's page then offers to undo it."""
    workflow, role = _workflow(request, workflow_id)
    require_workflow_role(request.user, workflow, "editor")
    if request.method == "GET":
        version = workflow_selectors.get_version(workflow=workflow, number=number)
        return TemplateResponse(request, "workflows/compare.html", {
            **_comparison(workflow, _side(workflow, DRAFT), (f"v{version.number}", version.document)),
            "role": role, "restore": version,
        })
    try:
        edited = version_services.restore_version(actor=request.user, workflow=workflow, number=number,
                                                  revision=_revision(request.POST.get("revision")))
    except RevisionConflict as exc:
        messages.error(request, f"Not restored: {exc.message}.")
        return redirect("workflow-page", workflow.pk)
    except (DesignerError, WorkflowError) as exc:
        messages.error(request, f"Not restored: {error_message(exc)}")
        return redirect("workflow-page", workflow.pk)
    request.session[_undo_key(workflow)] = {"ops": edited.undo, "revision": edited.saved.workflow.revision,
                                            "number": number}
    messages.success(request, f"Version {number} is now the draft (revision {edited.saved.workflow.revision}).")
    return redirect("workflow-page", workflow.pk)


@signed_in("POST")
def version_restore_undo(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    """Undo the last restore, if the draft is still what the restore made of it."""
    workflow, _ = _workflow(request, workflow_id)
    require_workflow_role(request.user, workflow, "editor")
    undo = request.session.pop(_undo_key(workflow), None)
    if not isinstance(undo, dict):
        messages.error(request, "There is no restore to undo.")
        return redirect("workflow-page", workflow.pk)
    try:
        edited = workflow_edits.apply_edits(actor=request.user, workflow=workflow, revision=undo["revision"],
                                            operations=undo["ops"])
    except (DesignerError, WorkflowError) as exc:
        messages.error(request, f"Not undone: {error_message(exc)}")
        return redirect("workflow-page", workflow.pk)
    messages.success(request, f"Restore undone: the draft is as before (revision {edited.saved.workflow.revision}).")
    return redirect("workflow-page", workflow.pk)


# --- triggers ---------------------------------------------------------------------------------


#: The trigger forms' labels, so a listed problem names the field as the form shows it.
_FIELD_LABELS = {"name": "Name", "cron": "Cron", "timezone": "Time zone", "version": "Version",
                 "missed": "Missed ticks", "input": "Input", "mode": "Authentication", "rate_limit": "Calls per minute"}


def _form_error(request: HtmxHttpRequest, workflow: WorkflowModel, role: str, form: str,
                exc: Exception) -> HttpResponse:
    """The page again (400) with ``form``'s error under it and what was typed kept in that form only (the
    webhook and schedule forms share field names, so each reads its own ``<form>_form`` values)."""
    # Several fields' problems at once (``ProblemsFound``) are listed one per line, each by its field's label.
    problems = [(_FIELD_LABELS.get(e["field"], e["field"] or "Form"), e["message"])
                for e in getattr(exc, "details", {}).get("errors") or [] if isinstance(e, dict) and "message" in e]
    response = TemplateResponse(request, "triggers/workflow_page.html", _context(
        request, workflow, role, **{f"{form}_error": error_message(exc), f"{form}_problems": problems,
                                    f"{form}_form": request.POST}))
    response.status_code = 400
    return response


@signed_in("POST")
def webhook_create(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    workflow, role = _workflow(request, workflow_id)
    try:
        created = trigger_services.create_webhook(
            actor=request.user, workflow=workflow, name=request.POST.get("name"),
            version=request.POST.get("version"), rate_limit=request.POST.get("rate_limit"),
            mode=request.POST.get("mode"))
    except (DesignerError, WorkflowError) as exc:
        if getattr(exc, "status", 400) in (403, 404):
            raise
        return _form_error(request, workflow, role, "webhook", exc)
    # The secrets are shown on this answer only: the URL's is stored hashed, the signing one derived.
    return TemplateResponse(request, "triggers/workflow_page.html", _context(
        request, workflow, role, new_webhook=created.webhook, new_webhook_signing_secret=created.signing_secret,
        new_webhook_url=request.build_absolute_uri(reverse("webhook-call", args=[created.secret]))))


def _trigger(model: type[Any], request: HtmxHttpRequest, workflow: WorkflowModel, pk: int) -> Any:
    found = model.objects.for_user(request.user).filter(workflow=workflow, pk=pk).first()
    if found is None:
        raise ObjectNotFound("no such trigger on this workflow")
    return found


@signed_in("POST")
def webhook_revoke(request: HtmxHttpRequest, workflow_id: int, webhook_id: int) -> HttpResponse:
    workflow, _ = _workflow(request, workflow_id)
    webhook = _trigger(Webhook, request, workflow, webhook_id)
    trigger_services.revoke_webhook(actor=request.user, webhook=webhook)
    messages.success(request, f"Webhook {webhook.name!r} revoked; its URL no longer starts runs.")
    return redirect("workflow-page", workflow.pk)


@signed_in("POST")
def schedule_create(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    workflow, role = _workflow(request, workflow_id)
    try:
        schedule = trigger_services.create_schedule(
            actor=request.user, workflow=workflow, name=request.POST.get("name"), cron=request.POST.get("cron"),
            timezone_name=request.POST.get("timezone") or "UTC", input_text=request.POST.get("input", ""),
            version=request.POST.get("version"), missed=request.POST.get("missed"))
    except (DesignerError, WorkflowError) as exc:
        if getattr(exc, "status", 400) in (403, 404):
            raise
        return _form_error(request, workflow, role, "schedule", exc)
    local = schedule.next_fire_at.astimezone(trigger_services.ZoneInfo(schedule.timezone))
    messages.success(request, f"Schedule {schedule.name!r} created; it next fires at {local:%Y-%m-%d %H:%M %Z}.")
    return redirect("workflow-page", workflow.pk)


@signed_in("POST")
def schedule_update(request: HtmxHttpRequest, workflow_id: int, schedule_id: int) -> HttpResponse:
    """``action``: ``pause``, ``resume`` or ``delete``."""
    workflow, _ = _workflow(request, workflow_id)
    schedule = _trigger(Schedule, request, workflow, schedule_id)
    action = request.POST.get("action")
    if action == "delete":
        trigger_services.delete_schedule(actor=request.user, schedule=schedule)
        messages.success(request, f"Schedule {schedule.name!r} deleted.")
    elif action in ("pause", "resume"):
        trigger_services.set_schedule_enabled(actor=request.user, schedule=schedule, enabled=action == "resume")
        messages.success(request, f"Schedule {schedule.name!r} {'resumed' if action == 'resume' else 'paused'}.")
    else:
        messages.error(request, f"unknown schedule action {action!r}")
    return redirect("workflow-page", workflow.pk)


# --- the webhook endpoint ---------------------------------------------------------------------


@csrf_exempt  # called by other systems; the secret in the URL is the credential
def webhook_call(request: HtmxHttpRequest, secret: str) -> HttpResponse:
    """``POST /hooks/<secret>/`` with the run's input as a JSON object: 202 ``{run_id, status, url}``; a signed
    webhook's call also carries a ``Trellis-Signature`` header (401 without a good one). Every answer is JSON,
    a refused method or an oversized body included: the caller is a program."""
    if request.method != "POST":
        response = JsonResponse({"code": "method.not_allowed",
                                 "message": f"a webhook is called with POST, not {request.method}"}, status=405)
        response["Allow"] = "POST"
        return response
    try:
        body = request.body
    except TOO_MUCH as exc:
        return too_large(request, exc)
    try:
        run = trigger_services.call_webhook(secret=secret, body=body,
                                            signature_header=request.headers.get(signature.HEADER))
    except RateLimited as exc:
        response = JsonResponse(exc.to_dict(), status=exc.status)
        response["Retry-After"] = str(exc.details.get("retry_after", 60))
        return response
    except DesignerError as exc:
        return JsonResponse(exc.to_dict(), status=exc.status)
    except WorkflowError as exc:
        return JsonResponse(exc.to_dict(), status=400)
    return JsonResponse({"run_id": run.pk, "runtime_id": run.runtime_id, "status": run.status,
                         "url": request.build_absolute_uri(reverse("run-detail", args=[run.pk]))}, status=202)
