from __future__ import annotations

from typing import Any

from django.db.models import Max, Q, QuerySet

from designer.errors import NotFound
from designer.models import Team, Workflow, WorkflowGrant, WorkflowVersion
from designer.untrusted import parse_id


def workflows_for(*, user: Any, team_id: object = None, q: str | None = None) -> QuerySet[Workflow]:
    """The caller's workflows, annotated with ``latest_version`` (None until published).

    ``team_id`` narrows to one team (an unknown or foreign team gives an empty
    list, not an error: it is a filter); ``q`` searches name, slug and description.
    """
    qs = Workflow.objects.for_user(user).select_related("team")
    if team_id not in (None, ""):
        team_pk = parse_id(team_id)
        if team_pk is None:
            return qs.none()
        qs = qs.filter(team_id=team_pk)
    if q:
        q = q.strip()
        qs = qs.filter(Q(name__icontains=q) | Q(slug__icontains=q) | Q(description__icontains=q))
    return qs.annotate(latest_version=Max("versions__number")).order_by("team__name", "name", "pk")


def get_workflow(*, user: Any, workflow_id: object) -> Workflow:
    """One of the caller's workflows (annotated with ``latest_version``); ``NotFound`` otherwise."""
    try:
        return workflows_for(user=user).get(pk=parse_id(workflow_id))
    except Workflow.DoesNotExist:
        raise NotFound("this workflow does not exist or is not shared with you",
                       workflow=workflow_id) from None


def versions_of(workflow: Workflow) -> QuerySet[WorkflowVersion]:
    """Published versions of a workflow already shown to the caller, newest first."""
    return workflow.versions.select_related("published_by").order_by("-number")


def get_version(*, workflow: Workflow, number: object) -> WorkflowVersion:
    try:
        return versions_of(workflow).get(number=parse_id(number))
    except WorkflowVersion.DoesNotExist:
        raise NotFound(f"workflow {workflow.slug!r} has no version {number}",
                       workflow=workflow.pk, version=number) from None


def grants_of(workflow: Workflow) -> QuerySet[WorkflowGrant]:
    """Teams a workflow already shown to the caller is shared with."""
    return workflow.grants.select_related("team", "granted_by").order_by("team__name", "pk")


def shared_with(team: Team) -> QuerySet[WorkflowGrant]:
    """Other teams' workflows shared with a team already shown to the caller."""
    return WorkflowGrant.objects.filter(team=team).select_related("workflow", "workflow__team").order_by(
        "workflow__team__name", "workflow__name")
