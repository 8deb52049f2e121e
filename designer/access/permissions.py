"""Who may do what in a team.

Roles are ordered: a viewer reads, an editor also edits, publishes and runs,
an owner also manages members. Not being a member at all looks exactly like
the object not existing (``ObjectNotFound``), so nobody learns what other teams hold.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final, Literal

from django.db import connection
from django.db.models import CharField, Model, QuerySet
from django.db.models.expressions import RawSQL

from designer.access.models import token_limits
from designer.core.errors import ActionForbidden, ObjectNotFound
from designer.core.prepared import prepared_cursor
from designer.core.untrusted import parse_id
from designer.models import Membership, Team, Workflow, WorkflowGrant

Role = Literal["viewer", "runner", "editor", "owner"]

#: Team roles are viewer, editor, owner. ``runner`` exists only in workflow grants (``WorkflowGrant``): between
#: viewer and editor, it reads and starts runs. One ladder for both, so a workflow's role is the higher of the
#: caller's role in its team and the best grant of it to one of the caller's teams.
ROLE_RANK: Final[dict[str, int]] = {"viewer": 1, "runner": 2, "editor": 3, "owner": 4}

#: What each role may do, for messages and the team page.
ACTIONS: Final[dict[str, str]] = {
    "viewer": "read",
    "runner": "start runs",
    "editor": "edit, publish and run",
    "owner": "manage members",
}

#: The one rule for duplicating a workflow, shown in the API schema and on the pages.
DUPLICATE_RULE: Final[str] = (
    "Duplicating needs the editor role in the workflow's team for a copy in that same team; a copy into another "
    "team needs the owner role in the workflow's team (taking a workflow out of a team is the owners' decision) "
    "and the editor role in the target team. A workflow shared with your team by another team cannot be duplicated."
)


def role_of(user: Any, team: Team | int) -> str | None:
    """The user's role in ``team``, or None when they are not a member."""
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    team_id = team.pk if isinstance(team, Team) else parse_id(team)
    if team_id is None:  # not an id at all (or beyond the column): no team, so no role
        return None
    token_team, read_only = token_limits(user)
    if token_team is not None and token_team != team_id:
        return None  # an API token limited to another team: this one looks absent
    role = Membership.objects.filter(user=user, team_id=team_id).values_list("role", flat=True).first()
    if role is not None and read_only:
        return "viewer"  # a read-only token reads, whatever the user's role
    return role


def has_role(role: str | None, minimum: Role) -> bool:
    return role is not None and ROLE_RANK[role] >= ROLE_RANK[minimum]


def _enforce(role: str | None, minimum: Role, *, what: str, where: str) -> str:
    """``role`` if it is ``minimum`` or above; ``ObjectNotFound`` for no role at all, ``ActionForbidden`` when too
    low (``where`` says whose role it is, in the message)."""
    if role is None:
        raise ObjectNotFound(f"{what} does not exist or is not shared with you")
    if not has_role(role, minimum):
        raise ActionForbidden(
            f"your role {where} is {role}; you need to be {minimum} or above to {ACTIONS[minimum]}",
            role=role,
            required=minimum,
        )
    return role


def require_role(user: Any, team: Team | int, minimum: Role, *, what: str = "this") -> str:
    """Return the user's role, or raise: ``ObjectNotFound`` for non-members, ``ActionForbidden`` when too low."""
    return _enforce(role_of(user, team), minimum, what=what, where="in this team")


def require_duplicate(user: Any, *, source_team_id: int, target_team_id: int) -> None:
    """Enforce ``DUPLICATE_RULE``: the API, the workflow list and the sharing page all call this (through
    ``services.workflows.duplicate_workflow``), so there is one rule everywhere. (A workflow shared with the
    caller's team through a grant is not in a team of theirs: ``duplicate_workflow`` refuses it first.)"""
    role = require_role(user, source_team_id, "viewer", what="this workflow")
    if target_team_id == source_team_id:
        if not has_role(role, "editor"):
            raise ActionForbidden(
                f"your role in this team is {role}; duplicating a workflow needs editor or above",
                role=role, required="editor",
            )
        return
    if not has_role(role, "owner"):
        raise ActionForbidden(
            f"your role in this workflow's team is {role}; only its owners may copy it into another team",
            role=role, required="owner",
        )
    require_role(user, target_team_id, "editor", what="the target team")


def may_duplicate(user: Any, *, source_role: str | None, target_role: str | None, same_team: bool) -> bool:
    """``DUPLICATE_RULE`` as a yes/no for showing or hiding a page's controls (from already-known roles)."""
    if same_team:
        return has_role(source_role, "editor")
    return has_role(source_role, "owner") and has_role(target_role, "editor")


def _best(roles: Iterable[str | None]) -> str | None:
    return max((role for role in roles if role), key=ROLE_RANK.__getitem__, default=None)


def _token_id(user: Any) -> int | None:
    token = getattr(user, "trellis_api_token", None)
    return None if token is None else token.pk


@dataclass(frozen=True, slots=True)
class WorkflowAccess:
    """What one read of the caller's memberships and grants showed of one workflow: ``team_role``, the caller's
    role in the workflow's own team, and ``grant_role``, the best grant of it to one of their teams (each narrowed
    by the API token they came with). A view that has read it passes it on, so a service it calls in the same
    request need not read it again (``proves``); the next request reads it afresh, so a member removed from a team
    or a revoked grant loses the access at once."""

    user_id: int
    token_id: int | None
    team_id: int
    workflow_id: int
    team_role: str | None
    grant_role: str | None

    @property
    def role(self) -> str | None:
        """The caller's role on the workflow: the higher of the two."""
        return _best((self.team_role, self.grant_role))

    def proves(self, user: Any, workflow: Workflow, minimum: Role) -> bool:
        """Whether this read shows that ``user`` (with the same token) has ``minimum`` or above on ``workflow``."""
        return (self.is_for(user) and self.workflow_id == workflow.pk and self.team_id == workflow.team_id
                and has_role(self.role, minimum))

    def is_for(self, user: Any) -> bool:
        """Whether this was read for ``user`` as they come now (the same account and API token)."""
        return self.user_id == getattr(user, "pk", None) and self.token_id == _token_id(user)


#: The access rule in SQL, written once: the caller's role in a team (``{team}``), and their best grant of a
#: workflow (``{workflow}``) to one of their teams; ``{token}`` narrows both to the one team an API token is
#: limited to. ``workflow_access`` asks them of one workflow, ``with_caller_access`` of each row of a query.
#: The ORM took 0.9 ms of CPU to build the two queries this replaced, a quarter of ``start_run``'s (issue 33).
_TEAM_ROLE = "SELECT m.role FROM {membership} m WHERE m.team_id = {team} AND m.user_id = %s{token}"
_GRANT_ROLE = (
    "SELECT g.role FROM {grant} g INNER JOIN {membership} m ON m.team_id = g.team_id "
    "WHERE g.workflow_id = {workflow} AND m.user_id = %s{token} "
    "ORDER BY CASE g.role {ranks} ELSE 0 END DESC LIMIT 1"
)


def _role_subselects(user: Any, *, team: str, workflow: str) -> tuple[str, str, list[Any]]:
    """``_TEAM_ROLE`` and ``_GRANT_ROLE`` for ``user`` with the team and workflow expressions given, and the
    parameters each of them takes after its expression's own (the same list for both)."""
    quote = connection.ops.quote_name
    token_team = token_limits(user)[0]
    names = {"membership": quote(Membership._meta.db_table), "grant": quote(WorkflowGrant._meta.db_table),
             "team": team, "workflow": workflow, "token": "" if token_team is None else " AND m.team_id = %s",
             "ranks": " ".join(f"WHEN '{role}' THEN {rank}" for role, rank in ROLE_RANK.items())}
    return (_TEAM_ROLE.format(**names), _GRANT_ROLE.format(**names),
            [user.pk] if token_team is None else [user.pk, token_team])


def _signed_in(user: Any) -> bool:
    return user is not None and getattr(user, "is_authenticated", False)


def workflow_access(user: Any, workflow: Workflow) -> WorkflowAccess | None:
    """The caller's access to one workflow (one query), or None for someone not signed in."""
    if not _signed_in(user):
        return None
    team_sql, grant_sql, params = _role_subselects(user, team="%s", workflow="%s")
    with prepared_cursor(connection) as cursor:
        cursor.execute(f"SELECT ({team_sql}), ({grant_sql})", [workflow.team_id, *params, workflow.pk, *params])
        team_role, grant_role = cursor.fetchone()
    return _access(user, workflow.team_id, workflow.pk, team_role, grant_role)


def _access(user: Any, team_id: int, workflow_id: int, team_role: str | None,
            grant_role: str | None) -> WorkflowAccess:
    if token_limits(user)[1]:  # a read-only token reads, whatever the user's role
        team_role = "viewer" if team_role else None
        grant_role = "viewer" if grant_role else None
    return WorkflowAccess(user.pk, _token_id(user), team_id, workflow_id, team_role, grant_role)


def with_caller_access[M: Model](queryset: QuerySet[M], user: Any) -> QuerySet[M]:
    """``queryset`` (of a model with ``team`` and ``workflow``) annotated with the caller's role in each row's team
    and their best grant of its workflow, for ``row_access``: ``get_run`` reads a run and the caller's access to it
    in one statement. Nothing for someone not signed in."""
    if not _signed_in(user):
        return queryset.none()
    quote = connection.ops.quote_name
    table = quote(queryset.model._meta.db_table)
    team_sql, grant_sql, params = _role_subselects(user, team=f"{table}.{quote('team_id')}",
                                                   workflow=f"{table}.{quote('workflow_id')}")
    return queryset.annotate(caller_team_role=RawSQL(team_sql, params, output_field=CharField()),
                             caller_grant_role=RawSQL(grant_sql, params, output_field=CharField()))


def row_access(user: Any, row: Any) -> WorkflowAccess | None:
    """The caller's access to a row read through ``with_caller_access`` (no query); None when they have none."""
    team_role, grant_role = getattr(row, "caller_team_role", None), getattr(row, "caller_grant_role", None)
    if team_role is None and grant_role is None:
        return None
    return _access(user, row.team_id, row.workflow_id, team_role, grant_role)


def workflow_role(user: Any, workflow: Workflow) -> str | None:
    """The caller's role on one workflow: their role in its team, or a grant to one of their teams, the higher."""
    access = workflow_access(user, workflow)
    return access.role if access is not None else None


def require_workflow_access(user: Any, workflow: Workflow, minimum: Role, *,
                            what: str = "this workflow") -> WorkflowAccess:
    """``require_workflow_role``, answering the access it read (to pass on to a service, see ``proves``)."""
    access = workflow_access(user, workflow)
    _enforce(access.role if access is not None else None, minimum, what=what, where="on this workflow")
    assert access is not None  # _enforce raised otherwise
    return access


def require_access(access: WorkflowAccess, minimum: Role, *, what: str = "this workflow") -> str:
    """``require_workflow_role`` on an access this request has read already (no query)."""
    return _enforce(access.role, minimum, what=what, where="on this workflow")


def require_workflow_role(user: Any, workflow: Workflow, minimum: Role, *, what: str = "this workflow") -> str:
    """Like ``require_role`` for one workflow (team membership or a grant): ``ObjectNotFound`` without any access,
    ``ActionForbidden`` when too low."""
    role = require_workflow_access(user, workflow, minimum, what=what).role
    assert role is not None  # require_workflow_access raised otherwise
    return role


#: What ``SHARING_RULE`` guards, in the words of its 403.
SEE_SHARING: Final[str] = "see whom it is shared with"

#: The one rule for a workflow's sharing (its members and grants): the page ``/workflows/{id}/sharing/`` and the
#: API's ``/api/workflows/{id}/grants/`` both call ``require_own_team_role``.
SHARING_RULE: Final[str] = (
    "Whom a workflow is shared with is shown to members of its own team (owners also share and stop sharing it). "
    "A team the workflow is shared with gets 403 permission.denied there (it knows the workflow exists, so it is "
    "told why); anyone else gets 404, as for any workflow that is not theirs."
)


def require_own_team_role(user: Any, workflow: Workflow, minimum: Role, *, action: str) -> str:
    """For what only the workflow's own team may do (delete it, copy it out, manage its grants): a caller who
    sees it through a grant is told so (403), anyone else finds nothing (404)."""
    return require_own_team_access(workflow_access(user, workflow), minimum, action=action)


def require_own_team_access(access: WorkflowAccess | None, minimum: Role, *, action: str) -> str:
    """``require_own_team_role`` on an access this request has read already (no query)."""
    if access is not None and access.team_role is None and access.grant_role is not None:
        raise ActionForbidden(
            f"this workflow is shared with your team; only members of its own team may {action}",
            required=minimum,
        )
    return _enforce(access.team_role if access is not None else None, minimum, what="this workflow",
                    where="in this team")
