"""Reads of teams, members, invitations, tokens and grants, always scoped to the caller's teams."""

from __future__ import annotations

from typing import Any

from django.db.models import Max, QuerySet
from django.utils import timezone

from designer.access.models import hash_secret, token_limits
from designer.core.errors import ObjectNotFound
from designer.core.untrusted import parse_id
from designer.models import ApiToken, Invitation, Membership, Team, Workflow, WorkflowGrant


def teams_for(*, user: Any) -> QuerySet[Team]:
    """The caller's teams, each annotated with ``role`` (the caller's role in it)."""
    return Team.objects.for_user(user).with_role(user)


def get_team(*, user: Any, team_id: object) -> Team:
    """One of the caller's teams (annotated with ``role``); ``ObjectNotFound`` otherwise."""
    try:
        return teams_for(user=user).get(pk=parse_id(team_id))
    except Team.DoesNotExist:
        raise ObjectNotFound("this team does not exist or you are not a member", team=team_id) from None


def members_of(team: Team) -> QuerySet[Membership]:
    """Members of a team the caller has already been shown (pass a team from ``get_team``)."""
    return Membership.objects.filter(team=team).select_related("user").order_by("user__username")


def _token_scoped(invitations: QuerySet[Invitation], user: Any) -> QuerySet[Invitation]:
    # An API token limited to one team answers only that team's invitations.
    token_team = token_limits(user)[0]
    return invitations if token_team is None else invitations.filter(team_id=token_team)


def pending_invitations_of(team: Team) -> QuerySet[Invitation]:
    """Open invitations of a team the caller has been shown (owners list and revoke them)."""
    return (
        Invitation.objects.filter(team=team, status=Invitation.Status.PENDING, expires_at__gt=timezone.now())
        .select_related("invited_by")
        .order_by("-created_at", "-pk")
    )


def invitations_for(*, user: Any) -> QuerySet[Invitation]:
    """Open invitations addressed to the caller's account: the one query that is scoped by invitee, not team."""
    if user is None or not getattr(user, "is_authenticated", False):
        return Invitation.objects.none()
    return (
        _token_scoped(Invitation.objects.filter(user=user), user)
        .filter(status=Invitation.Status.PENDING, expires_at__gt=timezone.now())
        .select_related("team", "invited_by")
        .order_by("-created_at", "-pk")
    )


def get_invitation_for(*, user: Any, invitation_id: object) -> Invitation:
    """One invitation addressed to the caller (open or not, so answering twice says why); ``ObjectNotFound`` else."""
    if user is None or not getattr(user, "is_authenticated", False):
        raise ObjectNotFound("this invitation does not exist or is not for you", invitation=invitation_id)
    try:
        return _token_scoped(Invitation.objects.select_related("team", "invited_by"), user).get(
            user=user, pk=parse_id(invitation_id))
    except Invitation.DoesNotExist:
        raise ObjectNotFound("this invitation does not exist or is not for you", invitation=invitation_id) from None


def invitation_by_token(token: str) -> Invitation:
    """The invitation an emailed link names (its token is the credential); ``ObjectNotFound`` for an unknown token."""
    try:
        return Invitation.objects.select_related("team", "invited_by").get(token_hash=hash_secret(token or ""))
    except Invitation.DoesNotExist:
        raise ObjectNotFound("this invitation link is not valid") from None


def tokens_of(*, user: Any) -> QuerySet[ApiToken]:
    """The caller's own API tokens, newest first (their hashes are never shown)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return ApiToken.objects.none()
    return ApiToken.objects.filter(user=user).select_related("team").order_by("-created_at", "-pk")


def shared_with(team: Team) -> QuerySet[WorkflowGrant]:
    """Other teams' workflows shared with a team already shown to the caller."""
    return WorkflowGrant.objects.filter(team=team).select_related("workflow", "workflow__team").order_by(
        "workflow__team__name", "workflow__name")


def team_workflows(*, user: Any, team: Team) -> QuerySet[Workflow]:
    """The team's own workflows, as the caller sees them, with ``latest_version`` (the team's page). Read here
    rather than through ``designer.workflows.selectors``: access comes before workflows in the domain order."""
    qs = Workflow.objects.for_user(user).filter(team=team)
    return qs.annotate(latest_version=Max("versions__number")).order_by("name", "pk")
