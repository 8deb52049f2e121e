"""The workflow list (the home page): search, create, duplicate, import and export.

Reads go through selectors (team-scoped), writes through services (role
checks); a refused write is shown as a message on the list, never a traceback.
The search box re-renders only the ``results`` partial through htmx.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from designer.access import selectors as team_selectors
from designer.access.permissions import has_role
from designer.core.errors import DesignerError
from designer.core.filters import apply_filters
from designer.core.pages import error_message, signed_in
from designer.core.untrusted import json_error_message, loads_json, parse_id
from designer.workflows import selectors as workflow_selectors
from designer.workflows import services as workflow_services
from designer.workflows.filters import WorkflowFilter
from runtime import WorkflowError


def _list_context(request: HttpRequest) -> dict[str, Any]:
    """The caller's teams, each with its own workflows, then the workflows other teams share with theirs; all
    narrowed by ``WorkflowFilter`` (the API's filters too), dropping values that cannot mean anything."""
    filtered = apply_filters(WorkflowFilter, request.GET, workflow_selectors.workflows_for(user=request.user),
                             request=request, strict=False)
    q, team_filter, shared = (filtered.values.get(name, "") for name in ("q", "team", "shared"))
    narrowed = bool(q or shared or team_filter)
    teams = list(team_selectors.teams_for(user=request.user))
    roles = {team.pk: team.role for team in teams}
    workflows = workflow_selectors.mark_access(user=request.user, workflows=filtered.queryset)
    for workflow in workflows:
        workflow.can_edit = has_role(roles.get(workflow.team_id), "editor")
    groups = [
        {"team": team, "can_edit": has_role(team.role, "editor"),
         "workflows": [w for w in workflows if w.team_id == team.pk]}
        for team in teams
        if (not team_filter or str(team.pk) == team_filter) and filtered.values.get("shared") != "true"
    ]
    # A team with nothing matching a filter is noise; without one an empty team shows its empty state.
    if narrowed:
        groups = [g for g in groups if g["workflows"]]
    return {
        "q": q,
        "team_filter": team_filter,
        "shared_filter": shared,
        "filter_notice": filtered.notice,
        "teams": teams,
        "editable_teams": [t for t in teams if has_role(t.role, "editor")],
        "groups": groups,
        "shared_workflows": [w for w in workflows if w.shared],
        "match_count": len(workflows),
    }


@login_required
@require_GET
def workflow_list(request: HttpRequest) -> HttpResponse:
    context = _list_context(request)
    htmx = getattr(request, "htmx", None)
    # Only the search box asks for the fragment; history restores and boosts get the page.
    if htmx and htmx.target == "workflow-results" and not htmx.history_restore_request:
        return render(request, "workflows/list.html#results", context)
    return render(request, "workflows/list.html", context)


def _back_to_list(request: HttpRequest) -> HttpResponseRedirect:
    return redirect(reverse("home"))


def _refused(request: HttpRequest, exc: DesignerError | WorkflowError, what: str) -> HttpResponseRedirect:
    messages.error(request, f"{what}: {error_message(exc)}")
    return _back_to_list(request)


@signed_in("POST")
def workflow_create(request: HttpRequest) -> HttpResponse:
    typed = {key: request.POST.get(key, "") for key in ("team", "name", "description")}
    try:
        workflow = workflow_services.create_workflow(
            actor=request.user, team=_team_id(typed["team"]), name=typed["name"], description=typed["description"],
        )
    except (DesignerError, WorkflowError) as exc:
        # Shown again with what was typed (not redirected), so fixing the mistake loses nothing.
        messages.error(request, f"Could not create the workflow: {error_message(exc)}")
        return render(request, "workflows/list.html", {**_list_context(request), "create": typed}, status=400)
    messages.success(request, f"Created {workflow.name}.")
    return redirect(reverse("editor", args=[workflow.pk]))


@signed_in("POST")
def workflow_duplicate(request: HttpRequest, workflow_id: int) -> HttpResponse:
    workflow = workflow_selectors.get_workflow(user=request.user, workflow_id=workflow_id)
    # No team means the workflow's own; a team that names nothing must be refused, not replaced by that.
    target = request.POST.get("team", "").strip()
    try:
        copy = workflow_services.duplicate_workflow(
            actor=request.user, workflow=workflow, team=_team_id(target) if target else None,
            name=request.POST.get("name") or None,
        )
    except (DesignerError, WorkflowError) as exc:
        return _refused(request, exc, f"Could not duplicate {workflow.name}")
    messages.success(request, f"Created {copy.name} from {workflow.name}.")
    return _back_to_list(request)


@signed_in("POST")
def workflow_import(request: HttpRequest) -> HttpResponse:
    upload = request.FILES.get("file")
    limit = int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 0)
    if upload is None:
        messages.error(request, "Could not import: choose a JSON file exported from Trellis.")
        return _back_to_list(request)
    if limit and upload.size is not None and upload.size > limit:
        messages.error(request, f"Could not import: the file is larger than {limit} bytes.")
        return _back_to_list(request)
    try:
        document = loads_json(upload.read().decode("utf-8"))
    except UnicodeDecodeError:
        messages.error(request, f"Could not import {upload.name}: not JSON (the file is not UTF-8 text).")
        return _back_to_list(request)
    except ValueError as exc:
        messages.error(request, f"Could not import {upload.name}: not usable JSON ({json_error_message(exc)}).")
        return _back_to_list(request)
    try:
        workflow = workflow_services.import_workflow(
            actor=request.user, team=_team_id(request.POST.get("team")), document=document,
            name=request.POST.get("name") or None,
        )
    except (DesignerError, WorkflowError) as exc:
        return _refused(request, exc, f"Could not import {upload.name}")
    messages.success(request, f"Imported {workflow.name}.")
    # Straight into the editor: the next thing a person does with an imported workflow is look at it.
    return redirect("editor", workflow_id=workflow.pk)


def _team_id(value: object) -> int:
    return parse_id(value) or 0  # 0 is no team: the service answers ObjectNotFound


def home(request: HttpRequest) -> HttpResponse:
    """The landing page after login: the workflow list of the caller's teams."""
    return workflow_list(request)
