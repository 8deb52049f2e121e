"""Who may come in and how: team invitations, personal API tokens and the login-attempt counters.

Kept apart from ``designer.models`` (the workflow data) so the two change independently;
``designer.models`` re-exports these, so ``from designer.models import Invitation`` works.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any, ClassVar

from django.conf import settings
from django.db import models
from django.utils import timezone

from designer.models import Team, TeamScopedQuerySet


def new_secret() -> str:
    """A random URL-safe secret (256 bits); only its hash is stored."""
    return secrets.token_urlsafe(32)


def hash_secret(secret: str) -> str:
    """SHA-256 of a secret, hex. The secrets are random and long, so a fast hash is enough: there is nothing
    to guess from it, unlike a password."""
    return hashlib.sha256(secret.encode()).hexdigest()


class Invitation(models.Model):
    """An owner's offer of a role in a team. No membership exists until the invitee accepts.

    ``user`` is the account the invitation is addressed to when the owner named an existing one
    (by username or email); for an email that matches no account it stays empty, and whoever
    opens the emailed link may create an account and join. ``invitee`` keeps what the owner typed:
    the owner is never told which of the two cases happened.
    """

    team_lookup: ClassVar[str] = "team"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        ACCEPTED = "accepted", "Accepted"
        DECLINED = "declined", "Declined"
        REVOKED = "revoked", "Revoked"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invitations")
    invitee = models.CharField(max_length=254, help_text="the username or email the owner typed")
    email = models.EmailField(blank=True, default="", help_text="where the link was sent; empty when nowhere")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="invitations",
        help_text="the account it is addressed to; empty: anyone holding the emailed link may accept",
    )
    role = models.CharField(max_length=10, default="viewer")
    token_hash = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the link's token")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    responded_at = models.DateTimeField(null=True, blank=True)

    objects = TeamScopedQuerySet.as_manager()

    class Meta:
        ordering = ("-created_at", "-pk")
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=("pending", "accepted", "declined", "revoked")),
                name="invitation_status_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(role__in=("owner", "editor", "viewer")), name="invitation_role_valid"
            ),
        ]
        indexes = [models.Index(fields=("user", "status"), name="invitation_user_status")]

    def __str__(self) -> str:
        return f"{self.invitee} to {self.team} as {self.role} ({self.status})"

    @property
    def is_open(self) -> bool:
        return self.status == self.Status.PENDING and self.expires_at > timezone.now()


class ApiToken(models.Model):
    """A personal access token: ``Authorization: Bearer <token>`` acts as ``user`` in the API.

    Only the SHA-256 of the token is stored; the token itself is shown once, when created.
    ``team`` limits it to one team (everything else looks absent: 404), ``read_only`` refuses writes.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    token_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=16, help_text="the token's first characters, to recognise it")
    team = models.ForeignKey(
        Team, null=True, blank=True, on_delete=models.CASCADE, related_name="+",
        help_text="only this team's data; empty: all of the user's teams",
    )
    read_only = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created_at", "-pk")

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…) of {self.user}"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and self.expires_at > timezone.now()


class LoginAttemptWindow(models.Model):
    """Sign-in attempts counted for one username or one address, in a window that starts with the first.

    A database row (not the per-process cache) so every web process and thread shares one counter, and
    it is incremented with a single UPDATE so parallel attempts can never read the same count.
    """

    key = models.CharField(max_length=80, unique=True)
    count = models.PositiveIntegerField(default=0)
    window_ends = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"{self.key}: {self.count} until {self.window_ends:%H:%M:%S}"


def token_limits(user: Any) -> tuple[int | None, bool]:
    """``(team id, read-only)`` that the API token the user authenticated with imposes; ``(None, False)`` else."""
    token = getattr(user, "trellis_api_token", None)
    if token is None:
        return None, False
    return token.team_id, bool(token.read_only)
