"""Who may do what in a team.

Roles are ordered: a viewer reads, an editor also edits, publishes and runs,
an owner also manages members. Not being a member at all looks exactly like
the object not existing (``NotFound``), so nobody learns what other teams hold.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from designer.errors import NotFound, PermissionDenied
from designer.models import Membership, Team
from designer.untrusted import parse_id

Role = Literal["viewer", "editor", "owner"]

ROLE_RANK: Final[dict[str, int]] = {"viewer": 1, "editor": 2, "owner": 3}

#: What each role may do, for messages and the team page.
ACTIONS: Final[dict[str, str]] = {
    "viewer": "read",
    "editor": "edit, publish and run",
    "owner": "manage members",
}

#: The one rule for duplicating a workflow, shown in the API schema and on the pages.
DUPLICATE_RULE: Final[str] = (
    "Duplicating needs the editor role in the workflow's team for a copy in that same team; a copy into another "
    "team needs the owner role in the workflow's team (taking a workflow out of a team is the owners' decision) "
    "and the editor role in the target team."
)


def role_of(user: Any, team: Team | int) -> str | None:
    """The user's role in ``team``, or None when they are not a member."""
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    team_id = team.pk if isinstance(team, Team) else parse_id(team)
    if team_id is None:  # not an id at all (or beyond the column): no team, so no role
        return None
    return (
        Membership.objects.filter(user=user, team_id=team_id).values_list("role", flat=True).first()
    )


def has_role(role: str | None, minimum: Role) -> bool:
    return role is not None and ROLE_RANK[role] >= ROLE_RANK[minimum]


def require_role(user: Any, team: Team | int, minimum: Role, *, what: str = "this") -> str:
    """Return the user's role, or raise: ``NotFound`` for non-members, ``PermissionDenied`` when too low."""
    role = role_of(user, team)
    if role is None:
        raise NotFound(f"{what} does not exist or is not shared with you")
    if not has_role(role, minimum):
        raise PermissionDenied(
            f"your role in this team is {role}; you need to be {minimum} or above to "
            f"{ACTIONS[minimum]}",
            role=role,
            required=minimum,
        )
    return role


def require_duplicate(user: Any, *, source_team_id: int, target_team_id: int) -> None:
    """Enforce ``DUPLICATE_RULE``: the API, the workflow list and the sharing page all call this (through
    ``services.workflows.duplicate_workflow``), so there is one rule everywhere."""
    role = require_role(user, source_team_id, "viewer", what="this workflow")
    if target_team_id == source_team_id:
        if not has_role(role, "editor"):
            raise PermissionDenied(
                f"your role in this team is {role}; duplicating a workflow needs editor or above",
                role=role, required="editor",
            )
        return
    if not has_role(role, "owner"):
        raise PermissionDenied(
            f"your role in this workflow's team is {role}; only its owners may copy it into another team",
            role=role, required="owner",
        )
    require_role(user, target_team_id, "editor", what="the target team")


def may_duplicate(user: Any, *, source_role: str | None, target_role: str | None, same_team: bool) -> bool:
    """``DUPLICATE_RULE`` as a yes/no for showing or hiding a page's controls (from already-known roles)."""
    if same_team:
        return has_role(source_role, "editor")
    return has_role(source_role, "owner") and has_role(target_role, "editor")
