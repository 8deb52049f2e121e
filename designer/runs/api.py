"""Runs API (contract: the OpenAPI schema): start, list, detail, events, frame context, resume, cancel, delete.

Views only parse, call a selector or service, and render. Everything derived
from a RunState (progress per foreach activation, live frames, a frame's
structured context) comes from the runtime via ``designer.runs.checkpoints``.
A run whose checkpoint is damaged answers 409 ``runstate.corrupt`` with the
reason on every view but cancel and delete, which always work; lists mark it
with ``damage``.
"""

from __future__ import annotations

import sys
from typing import Any

from django.db import transaction
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import exceptions as drf_exceptions
from rest_framework import serializers, status
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response

from designer.core.api import BaseAPIView, parse
from designer.core.api_schema import JSONObjectField, RequestSerializer, StrictCharField
from designer.core.errors import BadRequest, ObjectNotFound
from designer.core.filters import apply_filters, openapi_parameters
from designer.core.routes import routes
from designer.core.serializers import HAS_TEXT
from designer.core.untrusted import MAX_ID
from designer.models import Run, RunInput
from designer.runs import checkpoints
from designer.runs import services as run_services
from designer.runs.checkpointer import last_stored_seq
from designer.runs.filters import RunFilter
from designer.runs.selectors import events_after, get_run, lock_run, runs_for
from designer.workflows.selectors import get_workflow
from runtime.errors import CorruptRunStateError

PAGE_SIZE = 50
MAX_PAGE_SIZE = 200


# --- response shapes: each answer is its serializer's rendering of the run --------------------------


class IsoDateTimeField(serializers.DateTimeField):
    """A moment as the database gave it (ISO 8601 with its offset, ``+00:00``): not DRF's rewrite to ``Z`` in
    the server's time zone, so the API's timestamps read the same as before the serializers built them."""

    def to_representation(self, value: Any) -> str | None:
        return value.isoformat() if value is not None else None


@extend_schema_field({"type": "string", "format": "date-time", "nullable": True})
class WakeAtField(IsoDateTimeField):
    def get_attribute(self, instance: Run) -> Any:
        return instance.wake_at if instance.status == Run.Status.WAITING else None


@extend_schema_field({"type": "string", "nullable": True})
class ErrorCodeField(serializers.CharField):
    def get_attribute(self, instance: Run) -> Any:
        return instance.error.get("code") if isinstance(instance.error, dict) else None


# The docstrings of response serializers are the schema's descriptions: written for the API's users.
class RunSummarySerializer(serializers.Serializer):
    """A run as lists show it: everything about it except its payloads and state."""

    id = serializers.IntegerField(source="pk")
    workflow = serializers.IntegerField(source="workflow_id")
    workflow_name = serializers.CharField(source="workflow.name")
    workflow_slug = serializers.CharField(source="workflow.slug")
    team = serializers.IntegerField(source="team_id")
    version = serializers.IntegerField(source="workflow_version.number", allow_null=True,
                                       help_text="null: the run used the draft")
    status = serializers.ChoiceField(choices=Run.Status.choices)
    cancel_requested = serializers.BooleanField()
    created_by = serializers.CharField(source="created_by.get_username", allow_null=True)
    created_at = IsoDateTimeField()
    started_at = IsoDateTimeField(allow_null=True)
    finished_at = IsoDateTimeField(allow_null=True)
    wake_at = WakeAtField(
        source="*", allow_null=True, help_text="a waiting run's next attempt (a retry's backoff or a wait step ends "
                                               "then); null unless the status is waiting")
    duration_ms = serializers.IntegerField(allow_null=True)
    error_code = ErrorCodeField(source="*", allow_null=True)
    damage = serializers.SerializerMethodField(help_text="why the run's checkpoint cannot be read; null if it can")

    @extend_schema_field({"type": "string", "nullable": True})
    def get_damage(self, run: Run) -> str | None:
        return self.context.get("damage") or None


def _stored_input(run: Run) -> dict[str, Any] | None:
    """The run's input, or None when its stored input is missing or not an object (never shown as ``{}``)."""
    value = run.input
    if not isinstance(value, dict):
        return None
    if not value and not RunInput.objects.filter(run_id=run.pk).exists():
        return None
    return value


def _stored_interrupts(run: Run) -> list[dict[str, Any]] | None:
    value = run.interrupts if run.interrupts is not None else []
    return value if isinstance(value, list) and all(isinstance(item, dict) for item in value) else None


def _stored_pins(run: Run) -> dict[str, int] | None:
    value = run.subgraph_versions if run.subgraph_versions is not None else {}
    fits = isinstance(value, dict) and all(
        isinstance(key, str) and isinstance(number, int) and not isinstance(number, bool)
        for key, number in value.items())
    return value if fits else None


# Rendered by run_detail, which reads the checkpoint once (a damaged one is CorruptRunStateError, a 409). A stored
# field that no longer has its type (a run row edited by hand, a bad migration) is null, never reshaped.
class RunDetailSerializer(RunSummarySerializer):
    """Everything about a run: its input, output or error, state, open questions, progress and live frames."""

    input = serializers.SerializerMethodField(help_text="the run's input; null when the stored input is missing "
                                                        "or not an object")
    output = serializers.JSONField(allow_null=True, help_text="the workflow's outputs once completed")
    error = serializers.JSONField(allow_null=True, help_text="{code, message, ...} when failed")
    state = serializers.SerializerMethodField(help_text="the root scope's state in the latest checkpoint")
    run_state = serializers.SerializerMethodField(help_text="the latest checkpoint (RunState JSON)")
    interrupts = serializers.SerializerMethodField(help_text="the open questions; null when the stored list is "
                                                             "damaged")
    resume_pending = serializers.SerializerMethodField()
    parent = serializers.IntegerField(source="parent_id", allow_null=True,
                                      help_text="the run this one was forked or re-run from")
    forked_from_step = serializers.IntegerField(allow_null=True, help_text="the parent's superstep a fork started "
                                                                           "from")
    redrive_pending = serializers.SerializerMethodField()
    fork_pending = serializers.SerializerMethodField()
    subgraph_versions = serializers.SerializerMethodField(help_text="{child workflow ref: pinned version}; null "
                                                                    "when the stored value is not such a map")
    attempt = serializers.SerializerMethodField(help_text="the run's attempt: 1, then one more per redrive (the "
                                                          "run page's and the admin's 'Attempt')")
    attempts = serializers.IntegerField(help_text="workers that took the run (a run whose worker died is taken "
                                                  "again); not the redrive attempt")
    last_seq = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()
    frames = serializers.SerializerMethodField()
    trace_id = serializers.SerializerMethodField(help_text="the run's OpenTelemetry trace id (32 hex digits) when "
                                                           "tracing is on; null otherwise")

    def _checkpoint(self) -> Any:
        return self.context["checkpoint"]

    @extend_schema_field({"type": "object", "additionalProperties": {}, "nullable": True})
    def get_input(self, run: Run) -> dict[str, Any] | None:
        return _stored_input(run)

    @extend_schema_field({"nullable": True})
    def get_state(self, run: Run) -> Any:
        return checkpoints.root_state(self._checkpoint())

    @extend_schema_field({"nullable": True})
    def get_run_state(self, run: Run) -> Any:
        checkpoint = self._checkpoint()
        return checkpoint.data if checkpoint is not None else None

    @extend_schema_field({"type": "array", "items": {"type": "object", "additionalProperties": {}},
                          "nullable": True})
    def get_interrupts(self, run: Run) -> list[dict[str, Any]] | None:
        return _stored_interrupts(run)

    @extend_schema_field({"type": "boolean"})
    def get_resume_pending(self, run: Run) -> bool:
        return bool(run.resume_request)

    @extend_schema_field({"type": "boolean"})
    def get_redrive_pending(self, run: Run) -> bool:
        return bool(run.redrive_requested)

    @extend_schema_field({"type": "boolean"})
    def get_fork_pending(self, run: Run) -> bool:
        return bool(run.fork_request)

    @extend_schema_field({"type": "object", "additionalProperties": {"type": "integer"}, "nullable": True})
    def get_subgraph_versions(self, run: Run) -> dict[str, int] | None:
        return _stored_pins(run)

    @extend_schema_field({"type": "integer"})
    def get_attempt(self, run: Run) -> int:
        checkpoint = self._checkpoint()
        return checkpoint.state.attempt if checkpoint is not None else 1

    @extend_schema_field({"type": "integer", "nullable": True})
    def get_last_seq(self, run: Run) -> int | None:
        return last_stored_seq(run.pk)

    @extend_schema_field({"type": "array", "items": {"type": "object", "additionalProperties": {}}})
    def get_progress(self, run: Run) -> list[dict[str, Any]]:
        return checkpoints.progress(self._checkpoint())

    @extend_schema_field({"type": "array", "items": {"type": "object", "additionalProperties": {}}})
    def get_frames(self, run: Run) -> list[dict[str, Any]]:
        return checkpoints.frames(self._checkpoint())

    @extend_schema_field({"type": "string", "nullable": True})
    def get_trace_id(self, run: Run) -> str | None:
        return run.trace_id or None
def run_summary(run: Run, damage: str = "") -> dict[str, Any]:
    return RunSummarySerializer(run, context={"damage": damage}).data


def run_detail(run: Run) -> dict[str, Any]:
    """The run's detail; ``CorruptRunStateError`` when its checkpoint is damaged (read once, here)."""
    return RunDetailSerializer(run, context={"checkpoint": checkpoints.checkpoint_of(run)}).data


class RunPageSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    page = serializers.IntegerField()
    pages = serializers.IntegerField()
    page_size = serializers.IntegerField()
    next = serializers.IntegerField(allow_null=True, help_text="the next page number")
    previous = serializers.IntegerField(allow_null=True, help_text="the previous page number")
    results = RunSummarySerializer(many=True)


class BlankAsNullField(serializers.CharField):
    """An id column stored as ``""`` when the event has none, answered as null."""

    def to_representation(self, value: Any) -> str | None:
        return str(value) or None


class EventSerializer(serializers.Serializer):
    seq = serializers.IntegerField()
    kind = serializers.CharField()
    node_id = BlankAsNullField(allow_null=True)
    frame_id = BlankAsNullField(allow_null=True)
    scope_id = BlankAsNullField(allow_null=True)
    lineage_id = BlankAsNullField(allow_null=True)
    activation_id = BlankAsNullField(allow_null=True)
    index = serializers.IntegerField(allow_null=True)
    data = serializers.JSONField()
    at = IsoDateTimeField()
    duration_ms = serializers.IntegerField(allow_null=True)


class EventPageSerializer(serializers.Serializer):
    events = EventSerializer(many=True)
    next_after = serializers.IntegerField(help_text="pass as `after` to get what came next")
    status = serializers.ChoiceField(choices=Run.Status.choices)


class FrameContextSerializer(serializers.Serializer):
    run_id = serializers.CharField()
    frame_id = serializers.CharField()
    node_id = serializers.CharField(allow_null=True)
    scope_id = serializers.CharField(allow_null=True)
    lineage_id = serializers.CharField(allow_null=True)
    workflow_id = serializers.CharField(allow_null=True)
    context = serializers.JSONField(help_text="the structured `context` root a path in this frame reads")


# --- request shapes (types only; the services check the rules) -------------------


_RUN_VERSION_HELP = ("which version runs: a published version number, or \"draft\" for the current draft (asked for "
                     "by name only); omitted or null: the latest published version, as webhooks and schedules run "
                     "(409 workflow.not_published when nothing is published yet)")


@extend_schema_field({"oneOf": [{"type": "integer", "minimum": 1, "maximum": MAX_ID},
                                {"type": "string", "enum": [run_services.DRAFT]}],
                      "nullable": True, "description": _RUN_VERSION_HELP})
class RunVersionField(serializers.Field):
    """A published version number, ``"draft"``, or null (the latest published version)."""

    def to_internal_value(self, data: Any) -> int | str:
        if data == run_services.DRAFT:
            return run_services.DRAFT
        if isinstance(data, bool) or not isinstance(data, int) or not 1 <= data <= MAX_ID:
            raise serializers.ValidationError(
                f"must be a published version number (1 to {MAX_ID}), \"draft\" for the current draft, or null "
                f"for the latest published version")
        return data

    def to_representation(self, value: Any) -> Any:
        return value


class StartRunSerializer(RequestSerializer):
    input = JSONObjectField(required=False, default=dict, help_text="the run's input (a JSON object)")
    version = RunVersionField(required=False, allow_null=True, default=None, help_text=_RUN_VERSION_HELP)


class ResumeRunSerializer(RequestSerializer):
    interrupt_id = StrictCharField(min_length=1, validators=[HAS_TEXT])
    value = serializers.JSONField(required=False, allow_null=True, default=None)
    label = StrictCharField(required=False, allow_null=True, default=None, min_length=1)


class RunPagination(PageNumberPagination):
    """DRF's page-number pagination, answering with page numbers (not URLs); a page past the end is a 404, as in
    DRF, with the number of pages in the message."""

    page_size = PAGE_SIZE
    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE

    def paginate_queryset(self, queryset: Any, request: Request, view: Any = None) -> list[Any] | None:
        try:
            return super().paginate_queryset(queryset, request, view)
        except drf_exceptions.NotFound:
            raise ObjectNotFound("no such page of runs; `pages` in any page says how many there are",
                                 field="page") from None

    def get_page_size(self, request: Request) -> int:
        raw = request.query_params.get(self.page_size_query_param or "page_size")
        if raw in (None, ""):
            return self.page_size
        if not str(raw).isdigit() or int(str(raw)) < 1:
            raise BadRequest(f"page_size must be a whole number from 1 (at most {MAX_PAGE_SIZE} are given), "
                             f"got {raw!r}", field="page_size")
        return min(int(str(raw)), MAX_PAGE_SIZE)

    def get_paginated_response(self, data: Any) -> Response:
        page = self.page
        assert page is not None
        return Response({
            "count": page.paginator.count,
            "page": page.number,
            "pages": page.paginator.num_pages,
            "page_size": page.paginator.per_page,
            "next": page.next_page_number() if page.has_next() else None,
            "previous": page.previous_page_number() if page.has_previous() else None,
            "results": data,
        })


# --- views --------------------------------------------------------------------------


class WorkflowRunsView(BaseAPIView):
    @extend_schema(request=StartRunSerializer, operation_id="runs_start",
                   responses={201: RunDetailSerializer,
                              409: OpenApiResponse(description=(
                                  "No version was named and the workflow has no published version yet "
                                  "(workflow.not_published): publish it, or ask for the draft with "
                                  "`\"version\": \"draft\"`."))},
                   description="Start a run (runner or above: an editor of the workflow's team, or a team it is "
                               "shared with as runner or editor). Without `version` (or with null) the latest "
                               "published version runs, as webhooks and schedules run it; the current draft runs "
                               "only when asked for by name, `\"version\": \"draft\"`; a number runs that "
                               "published version.")
    def post(self, request: Request, workflow_id: int) -> Response:
        workflow = get_workflow(user=request.user, workflow_id=workflow_id)
        data = parse(StartRunSerializer, request.data)
        version = run_services.LATEST if data["version"] is None else data["version"]
        run = run_services.start_run(actor=request.user, workflow=workflow, input=data["input"], version=version)
        return Response(run_detail(run), status=status.HTTP_201_CREATED)


class RunListView(BaseAPIView):
    @extend_schema(
        parameters=[
            *openapi_parameters(RunFilter),
            OpenApiParameter("page", {"type": "integer", "minimum": 1, "maximum": 1000000},
                             description="page number, from 1 (404 past the last page)"),
            OpenApiParameter("page_size", {"type": "integer", "minimum": 1},
                             description=f"runs per page (default {PAGE_SIZE}); more than {MAX_PAGE_SIZE} gives "
                                         f"{MAX_PAGE_SIZE}"),
        ],
        responses={200: RunPageSerializer},
        operation_id="runs_list",
    )
    def get(self, request: Request) -> Response:
        runs = apply_filters(RunFilter, request.query_params, runs_for(user=request.user), request=request,
                             strict=True).queryset
        paginator = RunPagination()
        page = paginator.paginate_queryset(runs, request, view=self) or []
        return paginator.get_paginated_response([run_summary(run, damage or "")
                                                  for run, damage in checkpoints.with_damage(page)])


class RunDetailView(BaseAPIView):
    @extend_schema(responses={200: RunDetailSerializer}, operation_id="runs_retrieve")
    def get(self, request: Request, run_id: int) -> Response:
        return Response(run_detail(get_run(user=request.user, run_id=run_id)))

    @extend_schema(request=None, responses={204: None}, operation_id="runs_destroy")
    def delete(self, request: Request, run_id: int) -> Response:
        run_services.delete_run(actor=request.user, run=get_run(user=request.user, run_id=run_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class RunEventsView(BaseAPIView):
    @extend_schema(
        parameters=[OpenApiParameter("after", {"type": "integer", "minimum": -1, "maximum": MAX_ID}, required=False,
                                     description="the last seq already seen (-1 or absent: from the start)"),
                    OpenApiParameter("limit", {"type": "integer", "minimum": 1, "maximum": 1000}, required=False)],
        responses={200: EventPageSerializer},
        operation_id="runs_events",
    )
    def get(self, request: Request, run_id: int) -> Response:
        run = get_run(user=request.user, run_id=run_id)
        checkpoints.checkpoint_of(run)  # a damaged run is refused here too, never shown as a plain trace
        events, next_after = events_after(run, after=request.query_params.get("after"),
                                          limit=request.query_params.get("limit"))
        page = {"events": events, "next_after": next_after, "status": run.status}
        return Response(EventPageSerializer(page).data)


class RunFrameContextView(BaseAPIView):
    @extend_schema(responses={200: FrameContextSerializer}, operation_id="runs_frame_context")
    def get(self, request: Request, run_id: int, frame_id: str) -> Response:
        run = get_run(user=request.user, run_id=run_id)
        return Response(checkpoints.frame_context(run, frame_id))


class RunResumeView(BaseAPIView):
    @extend_schema(request=ResumeRunSerializer, responses={202: RunDetailSerializer}, operation_id="runs_resume")
    def post(self, request: Request, run_id: int) -> Response:
        with transaction.atomic():
            # The run is read once, locked (not yet another team's run's 400 for a bad body: 404 first).
            run = lock_run(user=request.user, run_id=run_id)
            data = parse(ResumeRunSerializer, request.data)
            run = run_services.resume_locked(actor=request.user, run=run, interrupt_id=data["interrupt_id"],
                                             value=data["value"], label=data["label"])
        return Response(run_detail(run), status=status.HTTP_202_ACCEPTED)


class RunCancelView(BaseAPIView):
    @extend_schema(request=None, responses={200: RunSummarySerializer, 202: RunSummarySerializer},
                   operation_id="runs_cancel",
                   description="200: cancelled now; 202: flagged, its worker stops at the next superstep. The body "
                               "is the run's detail (as GET /api/runs/{run_id}/) when its checkpoint reads, its "
                               "summary with `damage` when the checkpoint is damaged.")
    def post(self, request: Request, run_id: int) -> Response:
        run = run_services.cancel_run(actor=request.user, run=run_id)
        # 200: cancelled now; 202: flagged, its worker stops at the next superstep.
        done = run.status == Run.Status.CANCELLED
        code = status.HTTP_200_OK if done else status.HTTP_202_ACCEPTED
        try:
            return Response(run_detail(run), status=code)
        except CorruptRunStateError as exc:
            # Cancelling a damaged run works and says so; its detail would only be the 409.
            return Response(run_summary(run, exc.message), status=code)


urlpatterns = routes("""
    workflows/<int:workflow_id>/runs/                 WorkflowRunsView     workflow-runs
    runs/                                             RunListView          run-list
    runs/<int:run_id>/                                RunDetailView        run-detail
    runs/<int:run_id>/events/                         RunEventsView        run-events
    runs/<int:run_id>/frames/<str:frame_id>/context/  RunFrameContextView  run-frame-context
    runs/<int:run_id>/resume/                         RunResumeView        run-resume
    runs/<int:run_id>/cancel/                         RunCancelView        run-cancel
""", sys.modules[__name__])
