"""Personal access tokens: created by their user (shown once, stored as a SHA-256), revoked by their user."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final

from django.db import transaction
from django.utils import timezone

from designer.access.models import hash_secret
from designer.access.permissions import require_role
from designer.core.errors import BadRequest, ObjectNotFound
from designer.core.text import short_text
from designer.core.untrusted import parse_id
from designer.models import ApiToken

#: Lifetimes offered, in days; every token expires.
LIFETIMES: Final[tuple[int, ...]] = (7, 30, 90, 365)
PREFIX: Final[str] = "trl_"


@dataclass(frozen=True, slots=True)
class NewToken:
    token: ApiToken
    secret: str  # shown once to its user, never stored


def _lifetime(days: object) -> int:
    number = parse_id(days)
    if number not in LIFETIMES:
        raise BadRequest(f"a token lives {', '.join(map(str, LIFETIMES))} days; got {days!r}", field="days")
    return number


@transaction.atomic
def create_token(*, actor: Any, name: object, days: object = 30, team: object = None,
                 read_only: bool = False) -> NewToken:
    """A token for ``actor``; ``team`` (one of the actor's teams) limits it to that team."""
    name = short_text(name, field="name", max_length=100,
                      missing="give the token a name, e.g. the script or CI job that uses it",
                      too_long="a token name has at most 100 characters and no NUL")
    lifetime = _lifetime(days)
    team_id = None
    if team not in (None, ""):
        team_id = parse_id(team)
        if team_id is None:
            raise ObjectNotFound("this team does not exist or you are not a member", team=team)
        require_role(actor, team_id, "viewer", what="this team")
    secret = PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=actor, name=name, token_hash=hash_secret(secret), prefix=secret[:12], team_id=team_id,
        read_only=bool(read_only), expires_at=timezone.now() + timedelta(days=lifetime),
    )
    return NewToken(token=token, secret=secret)


@transaction.atomic
def revoke_token(*, actor: Any, token_id: object) -> ApiToken:
    """Revoke one of the actor's own tokens; it stops working at once."""
    token = ApiToken.objects.select_for_update().filter(user=actor, pk=parse_id(token_id)).first()
    if token is None:
        raise ObjectNotFound("you have no such token", token=token_id)
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token
