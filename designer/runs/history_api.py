"""Runs API, history part: redrive, re-run, kept checkpoints, fork.

Reading a run's kept checkpoints needs the viewer role (like the run
itself); redrive, re-run and fork need runner, as starting a run does.
"""

from __future__ import annotations

import sys
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from designer.core.api import BaseAPIView, parse
from designer.core.api_schema import JSONObjectField, RequestSerializer, StrictCharField, StrictIntegerField
from designer.core.routes import routes
from designer.core.untrusted import MAX_ID
from designer.runs import history as run_history
from designer.runs.api import run_detail
from designer.runs.history_selectors import checkpoint_detail, checkpoints_of
from designer.runs.selectors import get_run


class RerunSerializer(RequestSerializer):
    input = JSONObjectField(required=False, allow_null=True, default=None,
                            help_text="the new run's input; absent or null: the same input")
    version = serializers.ChoiceField(choices=run_history.RERUN_VERSIONS, required=False, default="same",
                                      help_text="`same`: the run's document and pinned versions; `current`: the "
                                                "latest published version (the draft as it is now, for a draft run)")


class AnswerSerializer(RequestSerializer):
    interrupt_id = StrictCharField(min_length=1)
    value = serializers.JSONField(required=False, allow_null=True, default=None)
    label = StrictCharField(required=False, allow_null=True, default=None, min_length=1)


class ForkSerializer(RequestSerializer):
    step = StrictIntegerField(min_value=0, max_value=MAX_ID, help_text="the superstep whose checkpoint to fork")
    state = JSONObjectField(required=False, allow_null=True, default=None,
                            help_text="the root state to go on with (the whole object); absent: unchanged")
    answer = AnswerSerializer(required=False, allow_null=True, default=None,
                              help_text="an answer to an interrupt open at that checkpoint")


class CheckpointSerializer(serializers.Serializer):
    step = serializers.IntegerField()
    status = serializers.CharField()
    attempt = serializers.IntegerField()
    trace_seq = serializers.IntegerField(
        help_text="the engine's own trace counter at this checkpoint (`run_state.trace_seq`), kept for the runtime's "
                  "checkpoint history; not an event `seq`: a distributed foreach numbers its items' events in the "
                  "stored trace too, so stored numbers run ahead of it. Page events with the run's `last_seq` and "
                  "`events?after=`")


class CheckpointListSerializer(serializers.Serializer):
    checkpoints = CheckpointSerializer(many=True)


class CheckpointDetailSerializer(CheckpointSerializer):
    forkable = serializers.BooleanField()
    state = serializers.JSONField()
    interrupts = serializers.JSONField()
    frames = serializers.JSONField(help_text="each live frame with its structured `context` at that superstep")


#: The answer of redrive, re-run and fork: the run's detail, as GET /api/runs/{id}/ gives it (the schema names its
#: component, which designer.runs.api declares).
RUN_DETAIL_SCHEMA: dict[str, Any] = {"$ref": "#/components/schemas/RunDetail"}


class _RunsView(BaseAPIView):
    """A view of one run (``run_id`` in the URL), which it finds, scoped to the caller's teams, as ``self.run``."""

    run: Any

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        self.run = get_run(user=request.user, run_id=kwargs["run_id"])


def _started(new: Any, code: int) -> Response:
    """A run that redrive, re-run or fork started, as its detail (GET /api/runs/{id}/)."""
    return Response(run_detail(new), status=code)


class RunRedriveView(BaseAPIView):
    # Not a _RunsView: the redrive reads the run itself, once, locked.
    @extend_schema(request=None, responses={202: RUN_DETAIL_SCHEMA}, operation_id="runs_redrive",
                   description="Run a failed run again from its last checkpoint: only the failed steps and items "
                               "run again, against the same pinned versions; a new attempt of the same run.")
    def post(self, request: Request, run_id: int) -> Response:
        return _started(run_history.redrive_run(actor=request.user, run=run_id), status.HTTP_202_ACCEPTED)


class RunRerunView(_RunsView):
    @extend_schema(request=RerunSerializer, responses={201: RUN_DETAIL_SCHEMA}, operation_id="runs_rerun",
                   description="Start a new run with the same (or an edited) input and the same or current version.")
    def post(self, request: Request, run_id: int) -> Response:
        data = parse(RerunSerializer, request.data)
        new = run_history.rerun(actor=request.user, run=self.run, input=data["input"], version=data["version"])
        return _started(new, status.HTTP_201_CREATED)


class RunCheckpointsView(_RunsView):
    @extend_schema(responses={200: CheckpointListSerializer}, operation_id="runs_checkpoints")
    def get(self, request: Request, run_id: int) -> Response:
        return Response({"checkpoints": checkpoints_of(self.run)})


class RunCheckpointView(_RunsView):
    @extend_schema(responses={200: CheckpointDetailSerializer}, operation_id="runs_checkpoint")
    def get(self, request: Request, run_id: int, step: int) -> Response:
        return Response(checkpoint_detail(run_history.kept_checkpoint(self.run, step)))


class RunForkView(_RunsView):
    @extend_schema(request=ForkSerializer, responses={201: RUN_DETAIL_SCHEMA}, operation_id="runs_fork",
                   description="Start a new run from a kept checkpoint of this one, with the state and/or an "
                               "interrupt's answer edited (checked against their schemas).")
    def post(self, request: Request, run_id: int) -> Response:
        data = parse(ForkSerializer, request.data)
        answer = dict(data["answer"]) if data["answer"] is not None else None
        new = run_history.fork_run(actor=request.user, run=self.run, step=data["step"], state=data["state"],
                                   answer=answer)
        return _started(new, status.HTTP_201_CREATED)


urlpatterns = routes("""
    runs/<int:run_id>/redrive/                 RunRedriveView      run-redrive
    runs/<int:run_id>/rerun/                   RunRerunView        run-rerun
    runs/<int:run_id>/checkpoints/             RunCheckpointsView  run-checkpoints
    runs/<int:run_id>/checkpoints/<int:step>/  RunCheckpointView   run-checkpoint
    runs/<int:run_id>/fork/                    RunForkView         run-fork
""", sys.modules[__name__])
