"""Trigger endpoints: a workflow's webhooks and schedules. Everyone who sees the workflow lists them;
editors and owners create, revoke, pause and delete them (``designer.triggers.services``).

The webhook call itself (``POST /hooks/<secret>/``) is not under /api/: the secret is its credential.
"""

from __future__ import annotations

import sys
from typing import Any

from django.core.validators import RegexValidator
from django.urls import reverse
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from designer.access.permissions import require_workflow_role
from designer.core.api import BaseAPIView, parse
from designer.core.api_schema import (
    CHECKED_BEYOND,
    JSONObjectField,
    RequestSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
)
from designer.core.errors import ObjectNotFound
from designer.core.routes import routes
from designer.core.serializers import HAS_TEXT, ErrorSerializer
from designer.core.untrusted import MAX_ID
from designer.models import Schedule, Webhook
from designer.triggers import cron
from designer.triggers import services as trigger_services
from designer.workflows import selectors as workflow_selectors

ERRORS = {400: ErrorSerializer, 403: ErrorSerializer, 404: ErrorSerializer}
RECENT = 5


def _recent_runs(trigger: Any) -> list[int]:
    return [pk for pk in trigger.fires.exclude(run=None).order_by("-at", "-pk").values_list("run_id", flat=True)
            [:RECENT]]


class WebhookSerializer(serializers.ModelSerializer):
    version = serializers.IntegerField(source="version.number", allow_null=True, default=None, read_only=True,
                                       help_text="the version it runs; null: the latest published when called")
    created_by = serializers.CharField(source="created_by.username", read_only=True, default=None)
    recent_runs = serializers.SerializerMethodField(help_text="ids of the last runs it started, newest first")

    class Meta:
        model = Webhook
        fields: tuple[str, ...] = ("id", "name", "version", "prefix", "mode", "rate_limit", "created_by",
                                   "created_at", "revoked_at", "recent_runs")

    def get_recent_runs(self, webhook: Webhook) -> list[int]:
        return _recent_runs(webhook)


class NewWebhookSerializer(WebhookSerializer):
    url = serializers.CharField(read_only=True, help_text="POST the run's input as JSON here; shown once")
    signing_secret = serializers.CharField(
        read_only=True, allow_null=True,
        help_text="signed mode: the HMAC-SHA256 key for the Trellis-Signature header; shown once. null in url mode")

    class Meta(WebhookSerializer.Meta):
        fields = (*WebhookSerializer.Meta.fields, "url", "signing_secret")


class WebhookCreateSerializer(RequestSerializer):
    name = StrictCharField(max_length=100, min_length=1, validators=[HAS_TEXT])
    version = StrictIntegerField(required=False, allow_null=True, min_value=1, max_value=MAX_ID, default=None)
    rate_limit = StrictIntegerField(required=False, min_value=1, max_value=trigger_services.MAX_RATE_LIMIT,
                                    default=trigger_services.DEFAULT_RATE_LIMIT)
    mode = serializers.ChoiceField(choices=Webhook.Mode.choices, required=False, default="url",
                                   help_text="url: the secret URL is enough; signed: every call carries a "
                                             "Trellis-Signature header made with the signing secret")


class ScheduleSerializer(serializers.ModelSerializer):
    version = serializers.IntegerField(source="version.number", allow_null=True, default=None, read_only=True)
    upcoming = serializers.SerializerMethodField(help_text="the next fire times, in the schedule's time zone")
    recent_runs = serializers.SerializerMethodField(help_text="ids of the last runs it started, newest first")

    class Meta:
        model = Schedule
        fields: tuple[str, ...] = ("id", "name", "cron", "timezone", "version", "input", "missed", "enabled",
                                   "next_fire_at", "upcoming", "recent_runs")

    def get_upcoming(self, schedule: Schedule) -> list[str]:
        if schedule.next_fire_at is None:
            return []
        zone = trigger_services.ZoneInfo(schedule.timezone)
        ticks = [schedule.next_fire_at.astimezone(zone), *trigger_services.ticks_after(schedule,
                                                                                       schedule.next_fire_at, 2)]
        return [tick.isoformat() for tick in ticks]

    def get_recent_runs(self, schedule: Schedule) -> list[int]:
        return _recent_runs(schedule)


class CronValidator(RegexValidator):
    """The grammar as the schema's ``pattern`` (drf-spectacular reads it off a RegexValidator), refused with the
    service's precise message (which field is wrong) rather than a generic one."""

    def __init__(self) -> None:
        super().__init__(cron.CRON_PATTERN)

    def __call__(self, value: Any) -> None:
        if not cron.fits_grammar(str(value)):
            raise serializers.ValidationError(cron.grammar_problem(" ".join(str(value).split())))


@extend_schema_field({"type": "string", CHECKED_BEYOND: "can it ever fire (422 cron.never_fires)"})
class CronField(StrictCharField):
    """A cron expression: the pattern and length come from the validators; the marker says 422 is possible."""


@extend_schema_field({"type": "string", "pattern": trigger_services.TIME_ZONE_PATTERN, "maxLength": 64,
                     "example": "Europe/Berlin", CHECKED_BEYOND: "is in the tz database (422 timezone.unknown)",
                     "description": "an IANA time zone name, e.g. UTC or Europe/Berlin; the cron expression is read "
                                    "in it. A name of this shape that the server's tz database lacks is answered 422 "
                                    "timezone.unknown."})
class TimeZoneField(StrictCharField):
    """A time zone name: its shape is the schema's pattern (400 otherwise); whether the tz database has it is the
    service's check (422). Not an enum: six hundred names would be six hundred cases for every API test."""

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if not trigger_services.time_zone_shaped(value):
            raise serializers.ValidationError(
                f"{value[:80]!r} is not a time zone name; use an IANA name like Europe/Berlin or UTC")
        return value


class ScheduleCreateSerializer(RequestSerializer):
    name = StrictCharField(max_length=100, min_length=1, validators=[HAS_TEXT])
    cron = CronField(max_length=120, min_length=1, validators=[CronValidator()], help_text=(
        f"a cron expression: {cron.CRON_FORMAT}. One that fits this grammar but can never fire (a range that "
        "runs backwards, 30 February) is answered 422 cron.never_fires."))
    timezone = TimeZoneField(required=False, default="UTC")
    input = JSONObjectField(required=False, default=dict)
    version = StrictIntegerField(required=False, allow_null=True, min_value=1, max_value=MAX_ID, default=None)
    missed = serializers.ChoiceField(choices=Schedule.Missed.choices, required=False, default="latest")


class ScheduleUpdateSerializer(RequestSerializer):
    enabled = StrictBooleanField(help_text="false pauses the schedule; true resumes it from the next tick")


class _Base(BaseAPIView):

    def workflow(self, request: Request, workflow_id: int) -> Any:
        workflow = workflow_selectors.get_workflow(user=request.user, workflow_id=workflow_id)
        require_workflow_role(request.user, workflow, "viewer")
        return workflow

    def trigger(self, model: type[Any], request: Request, workflow_id: int, pk: int) -> Any:
        workflow = self.workflow(request, workflow_id)
        found = model.objects.for_user(request.user).filter(workflow=workflow, pk=pk).select_related(
            "workflow", "version").first()
        if found is None:
            raise ObjectNotFound("no such trigger on this workflow", trigger=pk)
        return found


class WebhookListView(_Base):
    @extend_schema(responses={200: WebhookSerializer(many=True), **ERRORS}, operation_id="workflows_webhooks_list")
    def get(self, request: Request, workflow_id: int) -> Response:
        workflow = self.workflow(request, workflow_id)
        hooks = Webhook.objects.filter(workflow=workflow).select_related("version", "created_by")
        return Response(WebhookSerializer(hooks, many=True).data)

    @extend_schema(request=WebhookCreateSerializer, responses={201: NewWebhookSerializer, **ERRORS},
                   description="Create a webhook (editor or owner). The answer's url holds the secret, shown once; "
                               "a signed webhook's signing_secret is shown once too.")
    def post(self, request: Request, workflow_id: int) -> Response:
        workflow = self.workflow(request, workflow_id)
        data = parse(WebhookCreateSerializer, request.data)
        created = trigger_services.create_webhook(actor=request.user, workflow=workflow, **data)
        payload = dict(NewWebhookSerializer(created.webhook).data)
        payload["url"] = request.build_absolute_uri(reverse("webhook-call", args=[created.secret]))
        payload["signing_secret"] = created.signing_secret
        return Response(payload, status=status.HTTP_201_CREATED)


class WebhookRevokeView(_Base):
    @extend_schema(request=None, responses={200: WebhookSerializer, **ERRORS})
    def post(self, request: Request, workflow_id: int, webhook_id: int) -> Response:
        webhook = self.trigger(Webhook, request, workflow_id, webhook_id)
        return Response(WebhookSerializer(trigger_services.revoke_webhook(actor=request.user, webhook=webhook)).data)


class ScheduleListView(_Base):
    @extend_schema(responses={200: ScheduleSerializer(many=True), **ERRORS}, operation_id="workflows_schedules_list")
    def get(self, request: Request, workflow_id: int) -> Response:
        workflow = self.workflow(request, workflow_id)
        return Response(ScheduleSerializer(Schedule.objects.filter(workflow=workflow).select_related("version"),
                                           many=True).data)

    @extend_schema(request=ScheduleCreateSerializer, responses={201: ScheduleSerializer, **ERRORS},
                   description="Create a schedule (editor or owner); its input is checked against the version's "
                               "input schema now.")
    def post(self, request: Request, workflow_id: int) -> Response:
        workflow = self.workflow(request, workflow_id)
        data = parse(ScheduleCreateSerializer, request.data)
        schedule = trigger_services.create_schedule(
            actor=request.user, workflow=workflow, name=data["name"], cron=data["cron"],
            timezone_name=data["timezone"], input=data["input"], version=data["version"], missed=data["missed"])
        return Response(ScheduleSerializer(schedule).data, status=status.HTTP_201_CREATED)


class ScheduleDetailView(_Base):
    @extend_schema(responses={200: ScheduleSerializer, **ERRORS})
    def get(self, request: Request, workflow_id: int, schedule_id: int) -> Response:
        return Response(ScheduleSerializer(self.trigger(Schedule, request, workflow_id, schedule_id)).data)

    @extend_schema(request=ScheduleUpdateSerializer, responses={200: ScheduleSerializer, **ERRORS})
    def patch(self, request: Request, workflow_id: int, schedule_id: int) -> Response:
        schedule = self.trigger(Schedule, request, workflow_id, schedule_id)
        data = parse(ScheduleUpdateSerializer, request.data)
        updated = trigger_services.set_schedule_enabled(actor=request.user, schedule=schedule,
                                                        enabled=data["enabled"])
        return Response(ScheduleSerializer(updated).data)

    @extend_schema(request=None, responses={204: None, **ERRORS})
    def delete(self, request: Request, workflow_id: int, schedule_id: int) -> Response:
        schedule = self.trigger(Schedule, request, workflow_id, schedule_id)
        trigger_services.delete_schedule(actor=request.user, schedule=schedule)
        return Response(status=status.HTTP_204_NO_CONTENT)


urlpatterns = routes("""
    workflows/<int:workflow_id>/webhooks/                          WebhookListView     workflow-webhooks
    workflows/<int:workflow_id>/webhooks/<int:webhook_id>/revoke/  WebhookRevokeView   workflow-webhook-revoke
    workflows/<int:workflow_id>/schedules/                         ScheduleListView    workflow-schedules
    workflows/<int:workflow_id>/schedules/<int:schedule_id>/       ScheduleDetailView  workflow-schedule
""", sys.modules[__name__])
