from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Max, QuerySet

from designer.access.permissions import ROLE_RANK
from designer.core.errors import ObjectNotFound
from designer.core.untrusted import parse_id
from designer.models import Team, Workflow, WorkflowGrant, WorkflowVersion


def workflows_for(*, user: Any) -> QuerySet[Workflow]:
    """The caller's workflows (their teams' own and those shared with one of their teams), annotated with
    ``latest_version`` (None until published). The list filters are ``designer.workflows.filters.WorkflowFilter``."""
    qs = Workflow.objects.for_user(user).select_related("team")
    return qs.annotate(latest_version=Max("versions__number")).order_by("team__name", "name", "pk")


@dataclass(frozen=True, slots=True)
class GrantedTo:
    """One of the caller's teams that a workflow is shared with, and the role it was given."""

    team_id: int
    team_name: str
    role: str


def mark_access(*, user: Any, workflows: Iterable[Workflow]) -> list[Workflow]:
    """Set on each workflow how the caller reaches it: ``shared`` (only through a grant, not as a member of its
    team), ``granted_to`` (the grants of it to the caller's teams, as ``GrantedTo``) and ``grant_role`` (the best of
    them). Two queries, whatever the number of workflows."""
    rows = list(workflows)
    mine = dict(Team.objects.for_user(user).values_list("pk", "name"))
    grants = (WorkflowGrant.objects.filter(workflow_id__in=[w.pk for w in rows], team_id__in=list(mine))
              .order_by("team__name", "pk").values_list("workflow_id", "team_id", "role"))
    by_workflow: dict[int, list[GrantedTo]] = {}
    for workflow_id, team_id, role in grants:
        by_workflow.setdefault(workflow_id, []).append(GrantedTo(team_id, mine[team_id], role))
    for workflow in rows:
        workflow.shared = workflow.team_id not in mine
        workflow.granted_to = by_workflow.get(workflow.pk, [])
        workflow.grant_role = max((g.role for g in workflow.granted_to), key=ROLE_RANK.__getitem__, default=None)
    return rows


def get_workflow(*, user: Any, workflow_id: object) -> Workflow:
    """One of the caller's workflows (annotated with ``latest_version``); ``ObjectNotFound`` otherwise."""
    try:
        return workflows_for(user=user).get(pk=parse_id(workflow_id))
    except Workflow.DoesNotExist:
        raise ObjectNotFound("this workflow does not exist or is not shared with you",
                             workflow=workflow_id) from None


def versions_of(workflow: Workflow) -> QuerySet[WorkflowVersion]:
    """Published versions of a workflow already shown to the caller, newest first."""
    return workflow.versions.select_related("published_by").order_by("-number")


def get_version(*, workflow: Workflow, number: object) -> WorkflowVersion:
    try:
        return versions_of(workflow).get(number=parse_id(number))
    except WorkflowVersion.DoesNotExist:
        raise ObjectNotFound(f"workflow {workflow.slug!r} has no version {number}",
                             workflow=workflow.pk, version=number) from None


def grants_of(workflow: Workflow) -> QuerySet[WorkflowGrant]:
    """Teams a workflow already shown to the caller is shared with."""
    return workflow.grants.select_related("team", "granted_by").order_by("team__name", "pk")


