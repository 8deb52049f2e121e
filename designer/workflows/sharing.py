"""A workflow's sharing page: who sees it (its team's members, the teams it is granted to) and, for owners,
granting it to another team or copying it into one of theirs. Writes go through the grant and workflow services
(which check roles), reads through the selectors (which scope to the caller's teams)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse

from designer.access import grants as grant_services
from designer.access import selectors as team_selectors
from designer.access.permissions import (
    DUPLICATE_RULE,
    SEE_SHARING,
    has_role,
    may_duplicate,
    require_own_team_role,
)
from designer.core.errors import ActionForbidden, DesignerError
from designer.core.htmx import HtmxHttpRequest
from designer.core.pages import error_message, signed_in
from designer.models import Workflow, WorkflowGrant
from designer.workflows import selectors as workflow_selectors
from designer.workflows import services as workflow_services


@signed_in("GET", "POST")
def workflow_sharing(request: HtmxHttpRequest, workflow_id: int, *, grant_form: dict[str, str] | None = None,
                     grant_error: str = "") -> HttpResponse:
    """Who sees a workflow (its team's members, the teams it is shared with) and, for owners, sharing it with
    another team or copying it into one of theirs."""
    workflow: Workflow = workflow_selectors.get_workflow(user=request.user, workflow_id=workflow_id)
    # SHARING_RULE: a grant holder is told (403) that only the workflow's own team sees this, as in the API.
    require_own_team_role(request.user, workflow, "viewer", action=SEE_SHARING)
    team = team_selectors.get_team(user=request.user, team_id=workflow.team_id)
    role = getattr(team, "role", None)
    is_owner = has_role(role, "owner")
    others = [t for t in team_selectors.teams_for(user=request.user) if t.pk != team.pk]
    # Offered only where DUPLICATE_RULE allows the copy; the service applies the same rule to whatever is posted.
    targets = [t for t in others if may_duplicate(request.user, source_role=role, target_role=t.role,
                                                  same_team=False)]
    error, form = "", {"team": "", "name": f"{workflow.name} (copy)"}
    if request.method == "POST":
        form = {"team": request.POST.get("team", ""), "name": request.POST.get("name", "")}
        target = next((t for t in others if str(t.pk) == form["team"]), None)
        if target is None:
            error = "Choose one of your teams where you are an editor or owner."
        else:
            try:
                copy = workflow_services.duplicate_workflow(
                    actor=request.user, workflow=workflow, team=target, name=form["name"] or None
                )
            except ActionForbidden:
                raise
            except DesignerError as exc:
                error = error_message(exc)
            else:
                messages.success(request, f"Copied “{workflow.name}” into {target.name} as “{copy.name}”.")
                return redirect("workflow-sharing", workflow_id=copy.pk)
    context = {
        "workflow": workflow,
        "team": team,
        "role": role,
        "is_owner": is_owner,
        "members": team_selectors.members_of(team),
        "targets": targets,
        "duplicate_rule": DUPLICATE_RULE,
        "grants": workflow_selectors.grants_of(workflow),
        "grant_roles": WorkflowGrant.Role.choices,
        "grant_form": grant_form or {"team": "", "role": "viewer"},
        "grant_error": grant_error,
        "form": form,
        "error": error,
    }
    return TemplateResponse(request, "teams/sharing.html", context, status=400 if error or grant_error else 200)


@signed_in("POST")
def workflow_grant(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    workflow = workflow_selectors.get_workflow(user=request.user, workflow_id=workflow_id)
    form = {"team": request.POST.get("team", ""), "role": request.POST.get("role", "")}
    try:
        grant = grant_services.grant_workflow(actor=request.user, workflow=workflow, team=form["team"],
                                              role=form["role"])
    except ActionForbidden:
        raise
    except DesignerError as exc:
        request.method = "GET"  # render the page (not a duplicate attempt) with the error next to the form
        return workflow_sharing(request, workflow_id, grant_form=form, grant_error=error_message(exc))
    messages.success(request, f"Shared “{workflow.name}” with {grant.team.name} as {grant.role}.")
    return redirect("workflow-sharing", workflow_id=workflow.pk)


@signed_in("POST")
def workflow_grant_revoke(request: HtmxHttpRequest, workflow_id: int, grant_id: int) -> HttpResponse:
    workflow = workflow_selectors.get_workflow(user=request.user, workflow_id=workflow_id)
    grant_services.revoke_grant(actor=request.user, workflow=workflow, grant_id=grant_id)
    messages.success(request, f"“{workflow.name}” is no longer shared with that team.")
    return redirect("workflow-sharing", workflow_id=workflow.pk)
