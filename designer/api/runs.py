"""Runs API (contract: API.md, "Runs"): start, list, detail, events, frame context, resume, cancel, delete.

Views only parse, call a selector or service, and render. Everything derived
from a RunState (progress per foreach activation, live frames, a frame's
structured context) comes from the runtime via ``designer.runs.inspect``.
A run whose checkpoint is damaged answers 409 ``runstate.corrupt`` with the
reason on every view but cancel and delete, which always work; lists mark it
with ``damage``.
"""

from __future__ import annotations

from typing import Any

from django.core.paginator import EmptyPage, Paginator
from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from designer.api.parsers import LimitedJSONParser
from designer.errors import BadRequest
from designer.models import Run, RunEvent
from designer.runs import inspect
from designer.selectors.runs import events_after, filter_runs, get_run
from designer.selectors.workflows import get_workflow
from designer.services import runs as run_services

PAGE_SIZE = 50
MAX_PAGE_SIZE = 200


# --- rendering ----------------------------------------------------------------


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def run_summary(run: Run, damage: str = "") -> dict[str, Any]:
    """The list shape: everything about a run except its payloads and state; ``damage`` says why its
    checkpoint cannot be read (null when it can)."""
    return {
        "id": run.pk,
        "workflow": run.workflow_id,
        "workflow_name": run.workflow.name,
        "workflow_slug": run.workflow.slug,
        "team": run.team_id,
        "version": run.workflow_version.number if run.workflow_version_id else None,
        "status": run.status,
        "cancel_requested": run.cancel_requested,
        "created_by": run.created_by.get_username() if run.created_by_id else None,
        "created_at": _iso(run.created_at),
        "started_at": _iso(run.started_at),
        "finished_at": _iso(run.finished_at),
        "duration_ms": run.duration_ms,
        "error_code": (run.error or {}).get("code") if isinstance(run.error, dict) else None,
        "damage": damage or None,
    }


def run_detail(run: Run) -> dict[str, Any]:
    """Everything about a run; ``CorruptRunStateError`` when its checkpoint is damaged."""
    checkpoint = inspect.checkpoint_of(run)
    detail = run_summary(run)
    detail.update(
        {
            "input": run.input,
            "output": run.output,
            "error": run.error,
            "state": inspect.root_state(checkpoint),
            "run_state": checkpoint.data if checkpoint is not None else None,
            "interrupts": run.interrupts or [],
            "resume_pending": bool(run.resume_request),
            "subgraph_versions": run.subgraph_versions or {},
            "attempts": run.attempts,
            "last_seq": inspect.last_seq(run),
            "progress": inspect.progress(checkpoint),
            "frames": inspect.frames(checkpoint),
        }
    )
    return detail


def event_json(event: RunEvent) -> dict[str, Any]:
    return {
        "seq": event.seq,
        "kind": event.kind,
        "node_id": event.node_id or None,
        "frame_id": event.frame_id or None,
        "scope_id": event.scope_id or None,
        "lineage_id": event.lineage_id or None,
        "activation_id": event.activation_id or None,
        "index": event.index,
        "data": event.data,
        "at": _iso(event.at),
        "duration_ms": event.duration_ms,
    }


# --- request shapes (types only; the services check the rules) -------------------


class StartRunSerializer(serializers.Serializer):
    input = serializers.JSONField(required=False, default=dict, help_text="the run's input (a JSON object)")
    version = serializers.IntegerField(
        required=False, allow_null=True, default=None, help_text="a published version number; null = current draft"
    )


class ResumeRunSerializer(serializers.Serializer):
    interrupt_id = serializers.CharField()
    value = serializers.JSONField(required=False, default=None)
    label = serializers.CharField(required=False, allow_null=True, default=None)


def _parse(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


# --- views --------------------------------------------------------------------------


class _RunsView(APIView):
    parser_classes = [LimitedJSONParser]


class WorkflowRunsView(_RunsView):
    @extend_schema(request=StartRunSerializer, responses={201: OpenApiTypes.OBJECT}, operation_id="runs_start")
    def post(self, request: Request, workflow_id: int) -> Response:
        workflow = get_workflow(user=request.user, workflow_id=workflow_id)
        data = _parse(StartRunSerializer, request.data)
        run = run_services.start_run(actor=request.user, workflow=workflow, input=data["input"],
                                     version=data["version"])
        return Response(run_detail(run), status=status.HTTP_201_CREATED)


class RunListView(_RunsView):
    @extend_schema(
        parameters=[
            OpenApiParameter(name, str, required=False)
            for name in ("workflow", "team", "status", "version", "created_by", "page", "page_size")
        ],
        responses={200: OpenApiTypes.OBJECT},
        operation_id="runs_list",
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        runs = filter_runs(
            user=request.user,
            workflow=params.get("workflow"),
            team=params.get("team"),
            status=params.get("status"),
            version=params.get("version"),
            created_by=params.get("created_by"),
        )
        try:
            size = min(max(int(params.get("page_size") or PAGE_SIZE), 1), MAX_PAGE_SIZE)
            number = int(params.get("page") or 1)
        except ValueError:
            raise BadRequest("page and page_size are integers", field="page") from None
        paginator = Paginator(runs, size)
        try:
            page = paginator.page(number)
        except EmptyPage:
            raise BadRequest(f"page {number} does not exist; there are {paginator.num_pages}", field="page") from None
        damages = inspect.damages_of(page.object_list)
        return Response(
            {
                "count": paginator.count,
                "page": page.number,
                "pages": paginator.num_pages,
                "page_size": size,
                "next": page.next_page_number() if page.has_next() else None,
                "previous": page.previous_page_number() if page.has_previous() else None,
                "results": [run_summary(run, damages.get(run.pk, "")) for run in page.object_list],
            }
        )


class RunDetailView(_RunsView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT}, operation_id="runs_retrieve")
    def get(self, request: Request, run_id: int) -> Response:
        return Response(run_detail(get_run(user=request.user, run_id=run_id)))

    @extend_schema(request=None, responses={204: None}, operation_id="runs_destroy")
    def delete(self, request: Request, run_id: int) -> Response:
        run_services.delete_run(actor=request.user, run=get_run(user=request.user, run_id=run_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class RunEventsView(_RunsView):
    @extend_schema(
        parameters=[OpenApiParameter("after", int, required=False), OpenApiParameter("limit", int, required=False)],
        responses={200: OpenApiTypes.OBJECT},
        operation_id="runs_events",
    )
    def get(self, request: Request, run_id: int) -> Response:
        run = get_run(user=request.user, run_id=run_id)
        inspect.checkpoint_of(run)  # a damaged run is refused here too, never shown as a plain trace
        events, next_after = events_after(run, after=request.query_params.get("after"),
                                          limit=request.query_params.get("limit"))
        return Response({"events": [event_json(e) for e in events], "next_after": next_after,
                         "status": run.status})


class RunFrameContextView(_RunsView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT}, operation_id="runs_frame_context")
    def get(self, request: Request, run_id: int, frame_id: str) -> Response:
        run = get_run(user=request.user, run_id=run_id)
        return Response(inspect.frame_context(run, frame_id))


class RunResumeView(_RunsView):
    @extend_schema(request=ResumeRunSerializer, responses={200: OpenApiTypes.OBJECT}, operation_id="runs_resume")
    def post(self, request: Request, run_id: int) -> Response:
        run = get_run(user=request.user, run_id=run_id)
        data = _parse(ResumeRunSerializer, request.data)
        run = run_services.resume_run(actor=request.user, run=run, interrupt_id=data["interrupt_id"],
                                      value=data["value"], label=data["label"])
        return Response(run_detail(run), status=status.HTTP_202_ACCEPTED)


class RunCancelView(_RunsView):
    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT}, operation_id="runs_cancel")
    def post(self, request: Request, run_id: int) -> Response:
        run = get_run(user=request.user, run_id=run_id)
        run = run_services.cancel_run(actor=request.user, run=run)
        # 200: cancelled now; 202: flagged, its worker stops at the next superstep.
        done = run.status == Run.Status.CANCELLED
        code = status.HTTP_200_OK if done else status.HTTP_202_ACCEPTED
        damage = inspect.damage_of(run)
        # Cancelling a damaged run works and says so; its detail would only be the 409.
        return Response(run_summary(run, damage) if damage else run_detail(run), status=code)


urlpatterns = [
    path("workflows/<int:workflow_id>/runs/", WorkflowRunsView.as_view(), name="workflow-runs"),
    path("runs/", RunListView.as_view(), name="run-list"),
    path("runs/<int:run_id>/", RunDetailView.as_view(), name="run-detail"),
    path("runs/<int:run_id>/events/", RunEventsView.as_view(), name="run-events"),
    path("runs/<int:run_id>/frames/<str:frame_id>/context/", RunFrameContextView.as_view(),
         name="run-frame-context"),
    path("runs/<int:run_id>/resume/", RunResumeView.as_view(), name="run-resume"),
    path("runs/<int:run_id>/cancel/", RunCancelView.as_view(), name="run-cancel"),
]
