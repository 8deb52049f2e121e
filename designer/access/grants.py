"""Sharing a workflow with another team (``WorkflowGrant``): granted and revoked by the owning team's owners.

The grant is a link, not a copy: the grantee team sees the one workflow (and its runs) with the granted
role, ``viewer`` < ``runner`` < ``editor`` (see ``designer.access.permissions``), and uses it as a subgraph as
``<team slug>/<workflow slug>`` while it holds runner or editor.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from designer.access.permissions import require_own_team_role
from designer.core.errors import BadRequest, ObjectNotFound
from designer.core.untrusted import parse_id
from designer.models import Team, Workflow, WorkflowGrant

GRANT_ROLES = tuple(WorkflowGrant.Role.values)


def _team_named(ref: object) -> Team:
    text = str(ref or "").strip()
    team_id = parse_id(text)
    team = Team.objects.filter(pk=team_id).first() if team_id is not None else Team.objects.filter(slug=text).first()
    if team is None:
        raise ObjectNotFound(f"no team {text!r}; name it by its slug (shown on its team page) or id", field="team")
    return team


@transaction.atomic
def grant_workflow(*, actor: Any, workflow: Workflow, team: object, role: object) -> WorkflowGrant:
    """Share ``workflow`` with another team (owner of the workflow's team). Granting again changes the role."""
    require_own_team_role(actor, workflow, "owner", action="share it")
    if role not in GRANT_ROLES:
        raise BadRequest(f"role must be one of {', '.join(GRANT_ROLES)}, got {role!r}", field="role")
    target = _team_named(team)
    if target.pk == workflow.team_id:
        raise BadRequest("a workflow is already shared with its own team; choose another team", field="team")
    grant, created = WorkflowGrant.objects.select_for_update().get_or_create(
        workflow=workflow, team=target, defaults={"role": role, "granted_by": actor}
    )
    if not created and grant.role != role:
        grant.role, grant.granted_by = str(role), actor
        grant.save(update_fields=["role", "granted_by"])
    return grant


@transaction.atomic
def revoke_grant(*, actor: Any, workflow: Workflow, grant_id: object) -> None:
    """End a share (owner of the workflow's team); the other team loses access at once."""
    require_own_team_role(actor, workflow, "owner", action="stop sharing it")
    deleted, _ = WorkflowGrant.objects.filter(workflow=workflow, pk=parse_id(grant_id)).delete()
    if not deleted:
        raise ObjectNotFound("this workflow is not shared by that grant", grant=grant_id)
