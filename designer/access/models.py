"""Who may come in and how: teams and their members, workflow grants, team invitations, personal API tokens
and the login-attempt counters.

Teams, their members and the workflows shared with them are here too: every other domain's rows hang off a
team, so this module imports no other domain. ``designer.models`` re-exports these, so
``from designer.models import Team`` works.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any, ClassVar

from django.conf import settings
from django.db import models
from django.db.models import OuterRef, Subquery
from django.utils import timezone


class TeamScopedQuerySet(models.QuerySet):
    """Scopes rows to the teams a user belongs to.

    ``team_lookup`` on the model names the path from the row to its ``Team``
    ("" for ``Team`` itself). Filtering through a team-id subquery instead of a
    join keeps rows unique without ``distinct()``.
    """

    def for_user(self, user: Any) -> TeamScopedQuerySet:
        if user is None or not getattr(user, "is_authenticated", False):
            return self.none()
        team_ids = Membership.objects.filter(user=user)
        # An API token limited to one team (designer.access.api_auth) sees nothing of the user's other teams.
        token = getattr(user, "trellis_api_token", None)
        if token is not None and token.team_id is not None:
            team_ids = team_ids.filter(team_id=token.team_id)
        team_ids = team_ids.values("team_id")
        lookup = self.model.team_lookup
        field = f"{lookup}__in" if lookup == "pk" else f"{lookup}_id__in"
        visible = models.Q(**{field: team_ids})
        # Rows that hang off a workflow are also visible through a grant of that workflow to one of the teams.
        workflow_lookup = getattr(self.model, "workflow_lookup", None)
        if workflow_lookup is not None:
            granted = WorkflowGrant.objects.filter(team_id__in=team_ids).values("workflow_id")
            wf_field = f"{workflow_lookup}__in" if workflow_lookup == "pk" else f"{workflow_lookup}_id__in"
            visible |= models.Q(**{wf_field: granted})
        return self.filter(visible)


class TeamScoped(models.Model):
    """A row that belongs to one team: ``objects.for_user(user)`` is how pages and the API read it.

    ``team_lookup`` is the path from the row to its ``Team`` (its ``team`` field unless it says otherwise);
    ``workflow_lookup``, where the row hangs off a workflow, the path to that workflow, through which teams it is
    granted to see the row too.
    """

    team_lookup: ClassVar[str] = "team"
    workflow_lookup: ClassVar[str | None] = None

    objects = TeamScopedQuerySet.as_manager()

    class Meta:
        abstract = True


class TeamQuerySet(TeamScopedQuerySet):
    def with_role(self, user: Any) -> TeamQuerySet:
        """Annotate ``role``: the caller's role in each team."""
        role = Membership.objects.filter(team=OuterRef("pk"), user=user).values("role")[:1]
        return self.annotate(role=Subquery(role))


def _server_default_or(meaning: str) -> Any:
    """A team's own value of a server setting (admin): ``meaning`` says what it is; empty, the setting holds."""
    return models.PositiveIntegerField(null=True, blank=True, help_text=f"{meaning}; empty: the server's default")


class Team(models.Model):
    team_lookup: ClassVar[str] = "pk"

    name = models.CharField(max_length=120)
    slug = models.SlugField(max_length=140, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Retention (designer/runs/retention.py): empty follows the server's TRELLIS_RETENTION_DAYS / _RUNS.
    retention_days = _server_default_or("delete finished runs older than this many days (0: keep however old)")
    retention_runs = _server_default_or("keep at most this many finished runs, the newest (0: no count limit)")
    # Fair queues (designer/runs/fairness.py): empty limits follow TRELLIS_TEAM_MAX_RUNNING / _WORKFLOW_MAX_RUNNING.
    queue_weight = models.PositiveSmallIntegerField(
        default=1, help_text="this team's share of the workers against other teams with work queued (2: twice "
                             "as many tasks picked as a team of weight 1)")
    max_running = _server_default_or("tasks this team may have running at once across all workers (0: no limit)")
    workflow_max_running = _server_default_or("tasks one workflow of this team may have running at once (0: no limit)")

    objects = TeamQuerySet.as_manager()

    class Meta:
        ordering = ("name", "pk")

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        EDITOR = "editor", "Editor"
        VIEWER = "viewer", "Viewer"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("team_id", "user_id")
        constraints = [
            models.UniqueConstraint(fields=("user", "team"), name="membership_unique_user_team"),
            models.CheckConstraint(
                condition=models.Q(role__in=("owner", "editor", "viewer")), name="membership_role_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"


class WorkflowGrant(models.Model):
    """An owner's grant of one workflow to another team: ``viewer`` reads it and sees its runs, ``runner`` also
    starts runs (and may use it as a subgraph), ``editor`` also edits and publishes it. The workflow and its
    runs stay with the owning team; revoking the grant ends the access at once."""

    class Role(models.TextChoices):
        VIEWER = "viewer", "Viewer"
        RUNNER = "runner", "Runner"
        EDITOR = "editor", "Editor"

    workflow = models.ForeignKey("designer.Workflow", on_delete=models.CASCADE, related_name="grants")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="workflow_grants",
                             help_text="the team the workflow is shared with")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.VIEWER)
    granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("workflow_id", "team_id")
        constraints = [
            models.UniqueConstraint(fields=("workflow", "team"), name="workflowgrant_unique_workflow_team"),
            models.CheckConstraint(condition=models.Q(role__in=("viewer", "runner", "editor")),
                                   name="workflowgrant_role_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.workflow} shared with {self.team} ({self.role})"



def new_secret() -> str:
    """A random URL-safe secret (256 bits); only its hash is stored."""
    return secrets.token_urlsafe(32)


def hash_secret(secret: str) -> str:
    """SHA-256 of a secret, hex. The secrets are random and long, so a fast hash is enough: there is nothing
    to guess from it, unlike a password."""
    return hashlib.sha256(secret.encode()).hexdigest()


class Invitation(TeamScoped):
    """An owner's offer of a role in a team. No membership exists until the invitee accepts.

    ``user`` is the account the invitation is addressed to when the owner named an existing one
    (by username or email); for an email that matches no account it stays empty, and whoever
    opens the emailed link may create an account and join. ``invitee`` keeps what the owner typed:
    the owner is never told which of the two cases happened.
    """

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
