"""``GET /api/runs/{run_id}/nodes/{node_id}/executions/``: a node's executions in a run, as the run page's node
panel shows them (designer/runs/executions.py), paginated."""

from __future__ import annotations

import sys

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from designer.core.errors import BadRequest
from designer.core.routes import routes
from designer.runs import executions as node_executions
from designer.runs.selectors import get_run

MAX_PAGE_SIZE = 100


class InputRowSerializer(serializers.Serializer):
    target = serializers.CharField(help_text="the task's input field")
    source = serializers.CharField(help_text="the binding's path as written, or 'literal' / 'template'")
    value = serializers.JSONField(allow_null=True, help_text="the value the step ran with")
    recorded = serializers.BooleanField(help_text="false: the engine did not record it; read again from the "
                                                  "run's input or the item's context")


class ItemSerializer(serializers.Serializer):
    loop = serializers.CharField(help_text="the enclosing foreach node's id")
    index = serializers.IntegerField(help_text="the item's position in that loop, from 0")


class ExecutionSerializer(serializers.Serializer):
    frame_id = serializers.CharField()
    where = serializers.CharField(help_text="loop names and item positions, e.g. customers item 2 'Bob'")
    items = ItemSerializer(many=True)
    status = serializers.ChoiceField(choices=["completed", "failed", "running", "waiting", "stopped"],
                                     help_text="stopped: the run ended (failed, cancelled) while this step was under "
                                               "way")
    attempt = serializers.IntegerField(allow_null=True, help_text="the step's try within its run attempt (retries "
                                                                  "by the node's retry policy), from 1")
    run_attempt = serializers.IntegerField(help_text="the run's attempt the step ran in, as the run's own attempt "
                                                     "counts them: 1, then one more per redrive")
    duration_ms = serializers.IntegerField(allow_null=True)
    started_at = serializers.CharField()
    input = InputRowSerializer(many=True)
    output = serializers.JSONField(allow_null=True)
    writes = serializers.ListField(child=serializers.DictField(), help_text="{target, mode, value} per output "
                                                                            "binding")
    route = serializers.CharField(allow_null=True)
    error = serializers.JSONField(allow_null=True)


class ExecutionPageSerializer(serializers.Serializer):
    count = serializers.IntegerField(help_text="executions matching the item choices and filter")
    total = serializers.IntegerField(help_text="every execution of the node in this scope")
    page = serializers.IntegerField()
    pages = serializers.IntegerField()
    next = serializers.IntegerField(allow_null=True)
    previous = serializers.IntegerField(allow_null=True)
    results = ExecutionSerializer(many=True)


def _page_size(raw: str | None) -> int:
    if raw in (None, ""):
        return node_executions.PAGE_SIZE
    if not str(raw).isdigit() or int(str(raw)) < 1:
        raise BadRequest(f"page_size is a whole number from 1 to {MAX_PAGE_SIZE}, got {str(raw)[:40]!r}",
                         field="page_size")
    return min(int(str(raw)), MAX_PAGE_SIZE)


class RunNodeExecutionsView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("scope", str, required=False,
                             description="a subgraph call's root frame id (GET /runs/{id}/graph/ lists them); "
                                         "absent: the run's own workflow"),
            OpenApiParameter("only", str, enum=["failed", "slow"], required=False,
                             description="failed: only failed executions; slow: slowest first"),
            OpenApiParameter("page", {"type": "integer", "minimum": 1}, required=False),
            OpenApiParameter("page_size", {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE},
                             required=False),
        ],
        responses={200: ExecutionPageSerializer}, operation_id="runs_node_executions",
        description="Every execution of one node in a run (one per item of each enclosing loop and per attempt), "
                    "with its resolved input (target, source as written, value), output, writes, route, error, "
                    "attempt and duration. Narrow to one item with item.<loop>=<index> per enclosing foreach.")
    def get(self, request: Request, run_id: int, node_id: str) -> Response:
        run = get_run(user=request.user, run_id=run_id)
        found = node_executions.read(run, node_id, request.query_params,
                                     page_size=_page_size(request.query_params.get("page_size")))
        page = found.page
        return Response({
            "count": page.paginator.count, "total": found.total, "page": page.number,
            "pages": page.paginator.num_pages,
            "next": page.next_page_number() if page.has_next() else None,
            "previous": page.previous_page_number() if page.has_previous() else None,
            "results": [execution.to_dict() for execution in page.object_list],
        })


urlpatterns = routes("""
    runs/<int:run_id>/nodes/<str:node_id>/executions/  RunNodeExecutionsView  run-node-executions
""", sys.modules[__name__])
