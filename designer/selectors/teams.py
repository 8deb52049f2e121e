from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from designer.errors import NotFound
from designer.models import Membership, Team
from designer.untrusted import parse_id


def teams_for(*, user: Any) -> QuerySet[Team]:
    """The caller's teams, each annotated with ``role`` (the caller's role in it)."""
    return Team.objects.for_user(user).with_role(user)


def get_team(*, user: Any, team_id: object) -> Team:
    """One of the caller's teams (annotated with ``role``); ``NotFound`` otherwise."""
    try:
        return teams_for(user=user).get(pk=parse_id(team_id))
    except Team.DoesNotExist:
        raise NotFound("this team does not exist or you are not a member", team=team_id) from None


def members_of(team: Team) -> QuerySet[Membership]:
    """Members of a team the caller has already been shown (pass a team from ``get_team``)."""
    return Membership.objects.filter(team=team).select_related("user").order_by("user__username")
