"""Reads: a team's secrets as their members see them (names, who changed them, when last used; never values)."""

from __future__ import annotations

from typing import Any

from django.db.models import Max, OuterRef, QuerySet, Subquery

from designer.core.errors import ObjectNotFound
from designer.models import Team
from designer.secrets.models import Secret, SecretUse


def secrets_of(*, user: Any, team_id: int) -> QuerySet[Secret]:
    """The team's secrets (a member of any role), each with ``last_used_at``; ``ciphertext`` is not loaded."""
    if not Team.objects.for_user(user).filter(pk=team_id).exists():
        return Secret.objects.none()
    last_use = SecretUse.objects.filter(run__team_id=team_id, name=OuterRef("name")).values("name").annotate(
        last=Max("at")).values("last")
    return (Secret.objects.filter(team_id=team_id).defer("ciphertext")
            .select_related("updated_by").annotate(last_used_at=Subquery(last_use)))


def get_secret(*, user: Any, team_id: int, name: str) -> Secret:
    secret = secrets_of(user=user, team_id=team_id).filter(name=name).first()
    if secret is None:
        raise ObjectNotFound(f"the team has no secret named {str(name)[:70]!r}")
    return secret


def secret_names(*, team_id: int) -> frozenset[str]:
    """What the analyzer checks a workflow's secret bindings against (the workflow's own team's names)."""
    return frozenset(Secret.objects.filter(team_id=team_id).values_list("name", flat=True))
