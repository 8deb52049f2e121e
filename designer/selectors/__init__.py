"""Reads. Every selector takes the caller and starts from ``Model.objects.for_user(user)``,
so team scoping lives in the models' one queryset method and nowhere else."""

from __future__ import annotations

from designer.selectors.runs import events_since, get_live_run, get_run, run_people, runs_for
from designer.selectors.teams import (
    get_invitation_for,
    get_team,
    invitation_by_token,
    invitations_for,
    members_of,
    pending_invitations_of,
    teams_for,
    tokens_of,
)
from designer.workflows.selectors import (
    get_version,
    get_workflow,
    grants_of,
    mark_access,
    shared_with,
    versions_of,
    workflows_for,
)

__all__ = [
    "events_since",
    "get_invitation_for",
    "get_live_run",
    "get_run",
    "get_team",
    "get_version",
    "get_workflow",
    "grants_of",
    "invitation_by_token",
    "invitations_for",
    "mark_access",
    "members_of",
    "pending_invitations_of",
    "run_people",
    "runs_for",
    "shared_with",
    "teams_for",
    "tokens_of",
    "versions_of",
    "workflows_for",
]
