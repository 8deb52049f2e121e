"""Triggers: what starts runs without a person. A webhook (a secret URL per workflow version) and a
schedule (a cron expression in a time zone), and one ``TriggerFire`` row per delivery or tick.

Kept apart from ``designer.models``, which re-exports these. The secret of a webhook is shown once
and stored as its SHA-256 (``models_access.hash_secret``), like API tokens.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from designer.core.fields import ExactJSONField
from designer.runs.models import Run
from designer.workflows.models import Workflow, WorkflowScoped, WorkflowVersion


class Webhook(WorkflowScoped):
    """``POST /hooks/<secret>/`` with a JSON body starts a run of ``version`` (None: the latest published
    version when the call arrives) with that body as its input.

    In ``signed`` mode the call must also carry a ``Trellis-Signature`` header (``designer.triggers.signature``):
    the signing secret is derived from ``signing_salt`` and the server's key, never stored."""

    class Mode(models.TextChoices):
        URL = "url", "Secret URL"
        SIGNED = "signed", "Signed requests (HMAC-SHA256)"

    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="webhooks")
    version = models.ForeignKey(WorkflowVersion, null=True, blank=True, on_delete=models.CASCADE,
                                related_name="webhooks",
                                help_text="the version it runs; empty: the latest published when called")
    name = models.CharField(max_length=100)
    token_hash = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the URL's secret")
    prefix = models.CharField(max_length=12, help_text="the secret's first characters, to tell hooks apart")
    rate_limit = models.PositiveIntegerField(default=60, help_text="calls accepted per minute; more get 429")
    mode = models.CharField(max_length=8, choices=Mode.choices, default=Mode.URL,
                            help_text="url: the secret URL is enough; signed: calls must also be signed")
    signing_salt = models.CharField(max_length=64, blank=True, default="",
                                    help_text="signed mode: with the server's key, derives the signing secret")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("workflow_id", "-created_at", "-pk")
        constraints = [
            models.CheckConstraint(condition=models.Q(mode="url", signing_salt="")
                                   | (models.Q(mode="signed") & ~models.Q(signing_salt="")),
                                   name="webhook_mode_salt"),
        ]

    def __str__(self) -> str:
        return f"webhook {self.name} of {self.workflow}"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class Schedule(WorkflowScoped):
    """Runs ``version`` (None: the latest published at each tick) on a cron expression in ``timezone``.

    ``next_fire_at`` is the tick the queue holds a ``fire_schedule`` task for; the task that changes it
    (a compare-and-set) is the one that fires that tick, so duplicates and many workers fire it once."""

    class Missed(models.TextChoices):
        SKIP = "skip", "Skip missed ticks"
        LATEST = "latest", "Run once for the missed ticks"
        ALL = "all", "Run every missed tick"

    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="schedules")
    version = models.ForeignKey(WorkflowVersion, null=True, blank=True, on_delete=models.CASCADE,
                                related_name="schedules",
                                help_text="the version it runs; empty: the latest published at each tick")
    name = models.CharField(max_length=100)
    cron = models.CharField(max_length=120, help_text="five fields: minute hour day-of-month month day-of-week")
    timezone = models.CharField(max_length=64, default="UTC", help_text="an IANA zone, e.g. Europe/Berlin")
    input = ExactJSONField(default=dict, blank=True)
    missed = models.CharField(max_length=8, choices=Missed.choices, default=Missed.LATEST)
    enabled = models.BooleanField(default=True)
    next_fire_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("workflow_id", "name", "pk")
        constraints = [
            models.CheckConstraint(condition=models.Q(missed__in=("skip", "latest", "all")),
                                   name="schedule_missed_valid"),
        ]

    def __str__(self) -> str:
        return f"schedule {self.name} of {self.workflow}"


class TriggerFire(WorkflowScoped):
    """One webhook call accepted, or one schedule tick handled (``run`` empty when it was skipped or
    refused). ``(schedule, tick)`` is unique: the database itself refuses a second fire of a tick."""

    class Outcome(models.TextChoices):
        STARTED = "started", "Started a run"
        SKIPPED = "skipped", "Skipped (missed)"
        FAILED = "failed", "Could not start"

    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="trigger_fires")
    webhook = models.ForeignKey(Webhook, null=True, blank=True, on_delete=models.CASCADE, related_name="fires")
    schedule = models.ForeignKey(Schedule, null=True, blank=True, on_delete=models.CASCADE, related_name="fires")
    tick = models.DateTimeField(null=True, blank=True, help_text="the schedule tick this fire is for")
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    outcome = models.CharField(max_length=8, choices=Outcome.choices, default=Outcome.STARTED)
    detail = models.CharField(max_length=500, blank=True, default="")
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("-at", "-pk")
        constraints = [
            models.UniqueConstraint(fields=("schedule", "tick"), name="triggerfire_unique_schedule_tick"),
            models.CheckConstraint(condition=models.Q(webhook__isnull=True) | models.Q(schedule__isnull=True),
                                   name="triggerfire_one_trigger"),
        ]
        indexes = [
            models.Index(fields=("webhook", "at"), name="triggerfire_webhook_at"),
            models.Index(fields=("schedule", "at"), name="triggerfire_schedule_at"),
        ]

    def __str__(self) -> str:
        return f"fire {self.pk} ({self.outcome})"


class WebhookSignatureUse(models.Model):
    """A signed webhook call accepted inside its replay window (``designer.triggers.signature``). The same
    timestamp and body again would be a replay: the unique key refuses it in every worker. A row is needed
    only until ``expires_at``, when the signature's timestamp leaves the window; calls prune older rows."""

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="signature_uses")
    replay_key = models.CharField(max_length=64, help_text='SHA-256 of "<t>." + the body of the accepted call')
    expires_at = models.DateTimeField(help_text="when the signature's timestamp leaves the replay window")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=("webhook", "replay_key"), name="webhooksignatureuse_unique_key"),
        ]
        indexes = [models.Index(fields=("webhook", "expires_at"), name="webhooksignatureuse_expires")]

    def __str__(self) -> str:
        return f"signature {self.replay_key[:12]} of webhook {self.webhook_id}"
