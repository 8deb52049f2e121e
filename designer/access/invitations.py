"""Team invitations: an owner invites, the invitee accepts or declines; no membership before acceptance.

What the owner learns never depends on whether an account exists: naming a username or an email
always answers with a pending invitation showing what the owner typed. Behind it, an existing account
(matched by username, or by an email that belongs to exactly one account) sees the invitation in the
app and gets the link by email when it has an address; an email that matches no account gets a link
with which a new person creates an account and joins; anything else reaches nobody and simply stays
pending until it expires or is revoked.
"""

from __future__ import annotations

import email.policy
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.mail import EmailMessage
from django.core.validators import validate_email
from django.db import transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from designer.access.models import hash_secret, new_secret
from designer.access.permissions import require_role
from designer.access.teams import check_role_value
from designer.conf import trellis
from designer.core.errors import BadRequest, InvitationClosed, InvitationsLimited, ObjectNotFound
from designer.core.text import short_text
from designer.core.untrusted import parse_id
from designer.models import Invitation, Membership, Team


@dataclass(frozen=True, slots=True)
class SentInvitation:
    """A new invitation and its link token (shown nowhere but in the email; only its hash is stored)."""

    invitation: Invitation
    token: str


def invitation_days() -> int:
    return trellis.INVITATION_DAYS


def _clean_invitee(text: object) -> str:
    return short_text(text, field="user", max_length=254, missing="name the person to invite by username or email",
                      too_long="a username or email has at most 254 characters and no NUL")


def _is_email(text: str) -> bool:
    try:
        validate_email(text)
    except ValidationError:
        return False
    return True


def _account_for(ref: str) -> Any:
    """The one account ``ref`` names (exact username, else an email of exactly one account), or None."""
    users = get_user_model().objects.filter(is_active=True)
    by_name = users.filter(username=ref).first()
    if by_name is not None:
        return by_name
    matches = list(users.filter(email__iexact=ref)[:2]) if _is_email(ref) else []
    return matches[0] if len(matches) == 1 else None


class _OneLineLinks(EmailMessage):
    """An email whose lines may be up to RFC 5322's 998 characters: with the default 78 a line holding a long link
    is quoted-printable, whose soft line breaks cut the link in two wherever the raw message is read (the
    development console above all), so copying it gives a URL that does not work."""

    def message(self, *, policy: email.policy.Policy = email.policy.default) -> Any:
        return super().message(policy=policy.clone(max_line_length=998))


def _send(invitation: Invitation, token: str, *, site_url: str) -> None:
    link = site_url.rstrip("/") + reverse("invitation-link", args=[token])
    inviter = invitation.invited_by.get_username() if invitation.invited_by else "A team owner"
    body = (
        f"{inviter} invited you to join the team {invitation.team.name} on Trellis as {invitation.role}.\n\n"
        f"Accept or decline here: {link}\n\n"
        f"The link works until {invitation.expires_at:%Y-%m-%d %H:%M} UTC. If you do not know {inviter}, "
        "ignore this email: nothing happens unless you accept.\n"
    )
    _OneLineLinks(f"Invitation to {invitation.team.name} on Trellis", body, None, [invitation.email]).send()


INVITER_WINDOW = timedelta(hours=1)
ADDRESS_WINDOW = timedelta(days=1)


def _refuse_past(sent: Any, most: int, window: timedelta, now: Any, unit: tuple[int, str],
                 said: Callable[[int], str]) -> None:
    """Refuse another invitation when ``most`` of ``sent`` are younger than ``window``; ``said(n)`` tells how many
    there were, and the wait is told in whole ``unit``s (seconds, name) and given exactly as ``retry_after``."""
    times = sent.filter(created_at__gt=now - window).order_by("created_at").values_list("created_at", flat=True)
    if len(times) < most:
        return
    wait = max(1, int((times[0] + window - now).total_seconds()) + 1)
    seconds, name = unit
    raise InvitationsLimited(
        f"{said(len(times))}, the most allowed; try again in "
        f"{max(1, wait // seconds)} {name}{'s' if wait >= 2 * seconds else ''}", retry_after=wait, field="user")


def _check_limits(actor: Any, ref: str, account: Any, email: str, now: Any) -> None:
    """Refuse an invitation past the sender's hourly or the recipient's daily limit (one owner sent 30 emails to one
    address in 1.8 s). The sender's row is locked first, so one sender's parallel invitations count one by one."""
    get_user_model().objects.select_for_update().filter(pk=actor.pk).first()
    _refuse_past(Invitation.objects.filter(invited_by=actor), trellis.INVITATIONS_PER_INVITER, INVITER_WINDOW, now,
                 (60, "minute"),
                 lambda n: f"you have sent {n} invitation{'s' if n != 1 else ''} in the last hour")
    to_them = Q(invitee__iexact=ref) | (Q(email__iexact=email) if email else Q()) | (
        Q(user=account) if account is not None else Q())
    _refuse_past(Invitation.objects.filter(to_them), trellis.INVITATIONS_PER_ADDRESS, ADDRESS_WINDOW, now,
                 (3600, "hour"),
                 lambda n: f"{ref} has been invited {n} time{'s' if n != 1 else ''} in the last day")


@transaction.atomic
def invite(*, actor: Any, team: Team, user: object, role: object, site_url: str) -> SentInvitation:
    """Invite the person named by username or email (owner only). Re-inviting replaces a pending invitation.
    ``InvitationsLimited`` (429) past TRELLIS_INVITATIONS_PER_INVITER an hour or TRELLIS_INVITATIONS_PER_ADDRESS a
    day for one recipient."""
    require_role(actor, team, "owner", what="this team")
    checked_role = check_role_value(role)
    ref = _clean_invitee(user)
    account = _account_for(ref)
    if account is not None and Membership.objects.filter(team=team, user=account).exists():
        # Owners see their members and their emails, so this tells them nothing new.
        raise BadRequest(f"{ref} is already a member of {team.name}; change their role instead", field="user")
    now = timezone.now()
    email = (account.email or "") if account is not None else (ref if _is_email(ref) else "")
    _check_limits(actor, ref, account, email, now)
    same_target = Q(user=account) if account is not None else Q(user__isnull=True, invitee__iexact=ref)
    Invitation.objects.filter(same_target, team=team, status=Invitation.Status.PENDING).update(
        status=Invitation.Status.REVOKED, responded_at=now
    )
    token = new_secret()
    invitation = Invitation.objects.create(
        team=team, invitee=ref, email=email, user=account, role=checked_role, token_hash=hash_secret(token),
        invited_by=actor, expires_at=now + timedelta(days=invitation_days()),
    )
    if email:
        _send(invitation, token, site_url=site_url)
    return SentInvitation(invitation=invitation, token=token)


def _locked(invitation: Invitation) -> Invitation:
    return Invitation.objects.select_for_update().select_related("team").get(pk=invitation.pk)


def _check_answerable(invitation: Invitation, actor: Any) -> None:
    if invitation.user_id is not None and invitation.user_id != getattr(actor, "pk", None):
        raise ObjectNotFound("this invitation does not exist or is not for you", invitation=invitation.pk)
    if invitation.status != Invitation.Status.PENDING:
        raise InvitationClosed(f"this invitation was already {invitation.status}", status=invitation.status)
    if invitation.expires_at <= timezone.now():
        raise InvitationClosed("this invitation has expired; ask the team owner for a new one", status="expired")


@transaction.atomic
def accept_invitation(*, actor: Any, invitation: Invitation) -> Membership:
    """Join the team with the invited role. An invitation sent to an email is bound to whoever accepts it
    (holding the emailed link is the proof). Someone already in the team keeps their membership as it is."""
    locked = _locked(invitation)
    _check_answerable(locked, actor)
    membership, _ = Membership.objects.get_or_create(team=locked.team, user=actor, defaults={"role": locked.role})
    locked.status, locked.user, locked.responded_at = Invitation.Status.ACCEPTED, actor, timezone.now()
    locked.save(update_fields=["status", "user", "responded_at"])
    return membership


@transaction.atomic
def decline_invitation(*, actor: Any, invitation: Invitation) -> Invitation:
    locked = _locked(invitation)
    _check_answerable(locked, actor)
    locked.status, locked.responded_at = Invitation.Status.DECLINED, timezone.now()
    locked.save(update_fields=["status", "responded_at"])
    return locked


@transaction.atomic
def sign_up_and_accept(*, invitation: Invitation, username: str, password: str) -> Membership:
    """A new person joins through an emailed link: create their account (with the invitation's email), then
    accept. Only for invitations addressed to no account; the caller validated username and password."""
    locked = _locked(invitation)
    if locked.user_id is not None:
        raise BadRequest("this invitation is for an existing account: log in to answer it")
    _check_answerable(locked, None)
    account = get_user_model().objects.create_user(username=username, email=locked.email, password=password)
    return accept_invitation(actor=account, invitation=locked)


@transaction.atomic
def revoke_invitation(*, actor: Any, team: Team, invitation_id: object) -> Invitation:
    """Withdraw a pending invitation (owner only); its link stops working at once."""
    require_role(actor, team, "owner", what="this team")
    try:
        locked = Invitation.objects.select_for_update().get(team=team, pk=parse_id(invitation_id))
    except Invitation.DoesNotExist:
        raise ObjectNotFound("this team has no such invitation", invitation=invitation_id) from None
    if locked.status != Invitation.Status.PENDING:
        raise InvitationClosed(f"this invitation was already {locked.status}", status=locked.status)
    locked.status, locked.responded_at = Invitation.Status.REVOKED, timezone.now()
    locked.save(update_fields=["status", "responded_at"])
    return locked
