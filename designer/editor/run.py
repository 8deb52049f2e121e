"""A run of the workflow drawn on the editor's graph: the runs to choose from, each node's status
and each loop's progress (JSON for the canvas), and one node's view of one item (an htmx drawer).

Runs are read through the selectors, so only runs of the caller's teams are ever shown, and only
runs of the workflow the editor is open on.
"""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpResponse, JsonResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.timesince import timesince

from designer.access.permissions import require_workflow_role
from designer.core.errors import ObjectNotFound
from designer.core.htmx import HtmxHttpRequest
from designer.core.json_text import pretty_json
from designer.core.pages import signed_in
from designer.models import Run
from designer.models import Workflow as WorkflowModel
from designer.runs import overlay as run_overlay
from designer.runs import selectors as run_selectors
from designer.runs.checkpoints import damage_of, with_damage
from designer.runs.selectors import runs_for
from designer.workflows import selectors as workflow_selectors

#: How many recent runs the editor offers.
RECENT_RUNS = 25


def _workflow(request: HtmxHttpRequest, workflow_id: int) -> WorkflowModel:
    workflow = workflow_selectors.get_workflow(user=request.user, workflow_id=workflow_id)
    require_workflow_role(request.user, workflow, "viewer")
    return workflow


def _chosen_run(request: HtmxHttpRequest, workflow_id: int) -> tuple[WorkflowModel, Run, str]:
    """The workflow, the run of it that ``?run=`` names, and what is damaged in that run ("" if nothing)."""
    workflow = _workflow(request, workflow_id)
    run_id = request.GET.get("run")
    run = run_selectors.get_run(user=request.user, run_id=run_id)
    if run.workflow_id != workflow.pk:
        raise ObjectNotFound("this run belongs to another workflow", run=run_id)
    return workflow, run, damage_of(run)


def _label(run: Run) -> str:
    when = f"{timesince(run.created_at).split(',')[0]} ago" if run.created_at else ""
    version = f"v{run.workflow_version.number}" if run.workflow_version_id and run.workflow_version else "draft"
    return f"#{run.pk} · {run.status} · {version} · {when}".rstrip(" ·")


@signed_in("GET")
def runs(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    """The workflow's recent runs, newest first, for the canvas's run chooser."""
    workflow = _workflow(request, workflow_id)
    recent = list(runs_for(user=request.user).filter(workflow=workflow).order_by("-created_at", "-pk")[:RECENT_RUNS])
    return JsonResponse({"runs": [{"id": run.pk, "status": run.status,
                                   "label": _label(run) + (" · damaged" if damage is not None else ""),
                                   "damage": damage, "url": reverse("run-detail", args=[run.pk])}
                                  for run, damage in with_damage(recent)]})


@signed_in("GET")
def overlay(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    """Each node's status and counts and each loop's progress in one run (JSON)."""
    workflow, run, damage = _chosen_run(request, workflow_id)
    if damage:
        # Shown by the canvas as an error notice; a damaged run is never drawn as a partial one.
        return JsonResponse({"code": "runstate.corrupt", "message": f"run #{run.pk} is damaged: {damage}",
                             "run": {"id": run.pk, "status": run.status}}, status=409)
    events = list(run.events.order_by("seq"))
    return JsonResponse({**run_overlay.overlay(run, events), "label": _label(run),
                         "url": reverse("run-detail", args=[run.pk])})


@signed_in("GET")
def node(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    """One node in one run: for the chosen item (default: the latest), its context, bound values and result."""
    workflow, run, damage = _chosen_run(request, workflow_id)
    if damage:
        return HttpResponse(format_html('<p class="error" data-code="runstate.corrupt">Run #{} is damaged: {}</p>',
                                        run.pk, damage), status=409)
    node_id = request.GET.get("node", "")
    found = run_overlay.node_as_ran(run, node_id)
    if found is None:
        raise ObjectNotFound(f"node {node_id!r} was not part of run #{run.pk}", node=node_id)
    events = list(run.events.filter(node_id=node_id).order_by("seq"))
    detail = run_overlay.node_detail(run, events, found, request.GET.get("frame") or None)
    context: dict[str, Any] = {
        "workflow": workflow, "run": run, "node": found, "detail": detail,
        "pretty": {key: pretty_json(detail[key])
                   for key in ("context", "output", "error", "input") if detail[key] is not None},
        "bindings": [{**row, "text": json.dumps(row["value"], ensure_ascii=False, default=str)}
                     for row in detail["bindings"]],
    }
    return TemplateResponse(request, "editor/_run_node.html", context)
