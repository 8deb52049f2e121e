"""Reads of the notifications domain, scoped to the caller's teams."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from designer.access.selectors import get_team
from designer.core.errors import ObjectNotFound
from designer.core.untrusted import parse_id
from designer.models import Workflow
from designer.notifications.models import Delivery, NotificationRule

#: Deliveries the page lists, newest first.
LOG_LENGTH = 50


def rules_of(*, user: Any, team_id: int) -> list[NotificationRule]:
    """The team's default rule first, then its workflows' own rules by workflow name."""
    team = get_team(user=user, team_id=team_id)
    rules = list(NotificationRule.objects.filter(team=team).select_related("workflow").prefetch_related("members"))
    return sorted(rules, key=lambda rule: (rule.workflow is not None, rule.workflow.name if rule.workflow else ""))


def get_rule(*, user: Any, team_id: int, rule_id: int) -> NotificationRule:
    team = get_team(user=user, team_id=team_id)
    rule = NotificationRule.objects.select_related("workflow").filter(team=team, pk=parse_id(rule_id)).first()
    if rule is None:
        raise ObjectNotFound("this team has no such notification rule", rule=rule_id)
    return rule


def deliveries_of(*, user: Any, team_id: int) -> QuerySet[Delivery]:
    team = get_team(user=user, team_id=team_id)
    return (Delivery.objects.filter(team=team).select_related("run", "run__workflow", "rule__workflow")
            .order_by("-created_at", "-pk")[:LOG_LENGTH])


def workflows_without_rule(*, user: Any, team_id: int) -> QuerySet[Workflow]:
    team = get_team(user=user, team_id=team_id)
    taken = NotificationRule.objects.filter(team=team, workflow__isnull=False).values("workflow_id")
    return Workflow.objects.filter(team=team).exclude(pk__in=taken).order_by("name")
