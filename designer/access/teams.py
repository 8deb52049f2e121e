from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.utils.text import slugify

from designer.access.models import token_limits
from designer.access.permissions import require_role
from designer.core.errors import ActionForbidden, BadRequest, ObjectNotFound, TeamRuleViolation
from designer.core.untrusted import parse_id
from designer.models import Membership, Team

# People join a team only by accepting an invitation (designer.access.invitations): nobody can be added.

ROLES = tuple(Membership.Role.values)


def check_role_value(role: object) -> str:
    if role not in ROLES:
        raise BadRequest(f"role must be one of {', '.join(ROLES)}, got {role!r}", field="role")
    return str(role)


def unique_team_slug(name: str) -> str:
    base = slugify(name)[:120] or "team"
    slug, n = base, 1
    while Team.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


@transaction.atomic
def create_team(*, actor: Any, name: str, slug: str | None = None) -> Team:
    """A new team with ``actor`` as its owner."""
    if token_limits(actor)[0] is not None:
        raise ActionForbidden("an API token limited to one team cannot create teams; use one without a team limit")
    name = (name or "").strip()
    if not name:
        raise BadRequest("a team needs a name", field="name")
    if "\x00" in name:  # PostgreSQL text columns cannot hold NUL; the page passes the raw form value
        raise BadRequest("a team name may not contain NUL characters (\\x00)", field="name")
    # SQLite does not enforce max_length; the page form reaches here without a serializer in between.
    longest = Team._meta.get_field("name").max_length or 0
    if len(name) > longest:
        raise BadRequest(f"a team name has at most {longest} characters, this one has {len(name)}", field="name")
    # Two concurrent creates may pick the same free slug; the unique constraint decides, we pick again.
    for attempt in range(5):
        try:
            with transaction.atomic():
                team = Team.objects.create(name=name, slug=slug or unique_team_slug(name))
            break
        except IntegrityError:
            if slug is not None:
                raise BadRequest(f"a team with slug {slug!r} already exists", field="slug") from None
            if attempt == 4:
                raise
    Membership.objects.create(team=team, user=actor, role=Membership.Role.OWNER)
    return team


def _membership(team: Team, user_id: object) -> Membership:
    try:
        return Membership.objects.select_for_update().select_related("user").get(
            team=team, user_id=parse_id(user_id)
        )
    except Membership.DoesNotExist:
        raise ObjectNotFound("this user is not a member of the team", user_id=user_id) from None


def _other_owners(membership: Membership) -> int:
    return (
        Membership.objects.filter(team_id=membership.team_id, role=Membership.Role.OWNER)
        .exclude(pk=membership.pk)
        .count()
    )


@transaction.atomic
def change_member_role(*, actor: Any, team: Team, user_id: object, role: str) -> Membership:
    """Change a member's role (owner only); the last owner cannot be demoted."""
    require_role(actor, team, "owner", what="this team")
    role = check_role_value(role)
    membership = _membership(team, user_id)
    if membership.role == Membership.Role.OWNER and role != Membership.Role.OWNER:
        if _other_owners(membership) == 0:
            raise TeamRuleViolation(
                "a team needs at least one owner; make someone else owner first", rule="last_owner"
            )
    membership.role = role
    membership.save(update_fields=["role"])
    return membership


@transaction.atomic
def remove_member(*, actor: Any, team: Team, user_id: object) -> None:
    """Remove a member (owner only), or leave the team yourself; the last owner cannot go."""
    is_self = str(getattr(actor, "pk", "")) == str(user_id)
    require_role(actor, team, "viewer" if is_self else "owner", what="this team")
    membership = _membership(team, user_id)
    if membership.role == Membership.Role.OWNER and _other_owners(membership) == 0:
        raise TeamRuleViolation(
            "a team needs at least one owner; make someone else owner first", rule="last_owner"
        )
    membership.delete()
