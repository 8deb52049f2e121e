"""Who is told what when a team's runs end or wait for a person, and every delivery that was made."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models
from django.db.models import Q

from designer.access.models import TeamScoped


class NotificationRule(TeamScoped):
    """A team's default (``workflow`` empty) or one workflow's own rule: which run events, to whom.

    Email goes to the chosen team members' addresses; the webhook gets a signed JSON POST. Its signing secret is
    derived from ``webhook_salt`` and the server's ``SECRET_KEY`` as incoming webhooks' are
    (``designer.triggers.signature``), so the database alone cannot sign.
    """

    team = models.ForeignKey("designer.Team", on_delete=models.CASCADE, related_name="+")
    workflow = models.ForeignKey("designer.Workflow", null=True, blank=True, on_delete=models.CASCADE,
                                 related_name="+")
    on_failure = models.BooleanField(default=True)
    on_interrupt = models.BooleanField(default=True)
    on_completion = models.BooleanField(default=False)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="+")
    webhook_url = models.URLField(max_length=2000, blank=True, default="")
    webhook_salt = models.CharField(max_length=64, blank=True, default="")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=("team",), condition=Q(workflow__isnull=True),
                                    name="notificationrule_one_team_default"),
            models.UniqueConstraint(fields=("team", "workflow"), condition=Q(workflow__isnull=False),
                                    name="notificationrule_one_per_workflow"),
        ]

    def __str__(self) -> str:
        return f"notifications of {self.workflow or 'team default'}"


class Delivery(TeamScoped):
    """One message to one destination: what it was about, how each attempt went."""

    class Channel(models.TextChoices):
        EMAIL = "email"
        WEBHOOK = "webhook"

    class Status(models.TextChoices):
        QUEUED = "queued"
        RETRYING = "retrying"
        SENT = "sent"
        FAILED = "failed"

    team = models.ForeignKey("designer.Team", on_delete=models.CASCADE, related_name="+")
    rule = models.ForeignKey(NotificationRule, null=True, on_delete=models.SET_NULL, related_name="deliveries")
    run = models.ForeignKey("designer.Run", null=True, on_delete=models.CASCADE, related_name="+")
    #: failed, interrupted, completed, or test.
    event = models.CharField(max_length=20)
    channel = models.CharField(max_length=10, choices=Channel.choices)
    destination = models.CharField(max_length=2000)
    #: The member an email goes to (an answer link is made for them); empty for a webhook.
    recipient = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                  related_name="+")
    #: The interrupt an answer link in this message opens (empty: none).
    interrupt_id = models.CharField(max_length=200, blank=True, default="")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    attempts = models.PositiveIntegerField(default=0)
    response_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=("team", "-created_at"), name="delivery_team_recent")]

    def __str__(self) -> str:
        return f"{self.event} by {self.channel} to {self.destination}: {self.status}"


class AnswerLink(TeamScoped):
    """A link in a notification that answers one interrupt of one run, for one person, once, until it expires.

    The link holds ``key`` signed (``django.core.signing``); only its hash is stored, so the table alone cannot
    make a working link. ``used_at`` and ``used_by`` record the answer.
    """

    team_lookup: ClassVar[str] = "run__team"

    run = models.ForeignKey("designer.Run", on_delete=models.CASCADE, related_name="+")
    interrupt_id = models.CharField(max_length=200)
    recipient = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key_hash = models.CharField(max_length=64, unique=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    used_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="+")

    def __str__(self) -> str:
        return f"answer link for run {self.run_id}, interrupt {self.interrupt_id}, to {self.recipient_id}"
