"""OpenTelemetry traces (issue 29): off by default; on, a run started by a web request is one trace: the request's
server span (read here with the SDK's InMemorySpanExporter), a span for each execution of the run in a real
worker (its own process, exporting to a JSON-lines file this test reads back) and a child span per step with the
node, item position, attempt and error code; never the run's input or output. The run page shows the trace id."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from designer.access import teams as team_services
from designer.models import Run, RunEvent
from designer.monitoring import tracing
from designer.runs import services as run_services
from designer.workflows import services as workflow_services
from runtime import WorkflowBuilder
from tests.designer.runs_support import run_batch, start_run, worker_environment

pytestmark = pytest.mark.django_db(transaction=True)

MARKER = "TOPSECRET-7731"
#: Every attribute a span of a run may carry.
RUN_ATTRIBUTES = {"trellis.run.id", "trellis.workflow.id", "trellis.workflow.name", "trellis.team",
                  "trellis.run.status"}
STEP_ATTRIBUTES = {"trellis.node.id", "trellis.node.label", "trellis.task", "trellis.item.index",
                   "trellis.step.attempt", "trellis.step.route", "trellis.error.code"}


def doubling_document(*, batch_size: int | None = None) -> dict[str, Any]:
    """Each of ``input.xs`` times two in a foreach (a string item fails its step); ``input.note`` is unused."""
    g = WorkflowBuilder("doubling", "Doubling", input_schema={"type": "object", "properties": {
        "xs": {"type": "array"}, "note": {"type": "string"}}, "required": ["xs"]})
    each = g.foreach("each", "input.xs", results="doubled", batch_size=batch_size)
    double = g.use("math", id="double", input=[{"target": "op", "value": "mul"}, {"target": "a", "path": each.item},
                                               {"target": "b", "value": 2}])
    g.chain(each, "loop", double, "ok", each)
    g.output("doubled", "state.doubled")
    return g.build().model_dump(mode="json")


@pytest.fixture
def web_spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.install(provider)
    try:
        yield exporter
    finally:
        tracing.install(None)


def spans_in(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_tracing_is_off_by_default(api: Any, make_user: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in tracing.OTLP_ENDPOINT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert tracing.mode() == "off"
    assert tracing.tracer() is None
    owner = make_user("vera")
    team = team_services.create_team(actor=owner, name="Orders")
    workflow = workflow_services.create_workflow(actor=owner, team=team, name="Doubling",
                                                 document=doubling_document())
    started = start_run(api(owner), workflow, {"xs": [1]})
    assert Run.objects.get(pk=started["id"]).traceparent == ""
    assert api(owner).get(reverse("api:run-detail", args=[started["id"]])).json()["trace_id"] is None


def test_an_otlp_endpoint_turns_tracing_on_and_off_wins(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    assert tracing.mode() == "otlp"
    settings.TRELLIS_TRACES = "off"
    assert tracing.mode() == "off"


def test_a_run_is_one_trace_from_the_web_request_through_the_real_worker(
        api: Any, client: Any, make_user: Any, worker_env: dict[str, str], tmp_path: Path,
        web_spans: InMemorySpanExporter) -> None:
    owner = make_user("vera")
    team = team_services.create_team(actor=owner, name="Orders")
    workflow = workflow_services.create_workflow(actor=owner, team=team, name="Doubling",
                                                 document=doubling_document())
    started = start_run(api(owner), workflow, {"xs": [3, "x", 5], "note": MARKER})

    (request_span,) = [span for span in web_spans.get_finished_spans() if span.name.startswith("POST")]
    assert request_span.attributes is not None
    assert request_span.attributes["http.response.status_code"] == 201
    web_context = request_span.get_span_context()
    run = Run.objects.get(pk=started["id"])
    assert run.traceparent.startswith(f"00-{web_context.trace_id:032x}-{web_context.span_id:016x}-")
    assert run.trace_id == f"{web_context.trace_id:032x}"

    spans_file = tmp_path / "spans.jsonl"
    run_batch({**worker_environment(worker_env), "TRELLIS_TRACES": f"file:{spans_file}"})
    run.refresh_from_db()
    assert run.status == "failed"
    spans = spans_in(spans_file)
    assert MARKER not in spans_file.read_text()  # the input is never in a span
    (run_span,) = [span for span in spans if span["name"] == "run"]
    assert run_span["trace_id"] == run.trace_id
    assert run_span["parent_span_id"] == f"{web_context.span_id:016x}"
    assert run_span["status"] == "ERROR"
    assert run_span["attributes"] == {"trellis.run.id": run.pk, "trellis.workflow.id": workflow.pk,
                                      "trellis.workflow.name": "Doubling", "trellis.team": team.slug,
                                      "trellis.run.status": "failed"}
    assert set(run_span["attributes"]) <= RUN_ATTRIBUTES

    steps = [span for span in spans if span["name"].startswith("step ")]
    assert steps and all(span["parent_span_id"] == run_span["span_id"] for span in steps)
    assert all(span["trace_id"] == run.trace_id and set(span["attributes"]) <= STEP_ATTRIBUTES for span in steps)
    assert all(run_span["start"] <= span["start"] <= span["end"] <= run_span["end"] for span in steps)
    doubles = {span["attributes"].get("trellis.item.index"): span for span in steps
               if span["attributes"]["trellis.node.id"] == "double"}
    assert doubles[0]["status"] == "UNSET"
    assert doubles[0]["attributes"]["trellis.task"] == "math"
    assert doubles[0]["attributes"]["trellis.step.attempt"] == 1
    assert "trellis.error.code" not in doubles[0]["attributes"]
    failed_code = RunEvent.objects.get(run=run, kind="node_failed", node_id="double").data["summary"]["code"]
    assert doubles[1]["status"] == "ERROR"
    assert doubles[1]["attributes"]["trellis.error.code"] == failed_code

    assert api(owner).get(reverse("api:run-detail", args=[run.pk])).json()["trace_id"] == run.trace_id
    page = client
    page.force_login(owner)
    response = page.get(reverse("run-detail", args=[run.pk]))
    assert response.status_code == 200
    assert '<code id="run-trace-id"' in response.content.decode()
    assert run.trace_id in response.content.decode()


def test_a_run_started_without_a_request_span_takes_its_first_executions_trace(
        make_user: Any, worker_env: dict[str, str], tmp_path: Path) -> None:
    owner = make_user("vera")
    team = team_services.create_team(actor=owner, name="Orders")
    workflow = workflow_services.create_workflow(actor=owner, team=team, name="Doubling",
                                                 document=doubling_document())
    run = run_services.start_run(actor=owner, workflow=workflow, input={"xs": [1, 2]})
    assert Run.objects.get(pk=run.pk).traceparent == ""  # no span here: tracing is off in this process
    spans_file = tmp_path / "spans.jsonl"
    run_batch({**worker_environment(worker_env), "TRELLIS_TRACES": f"file:{spans_file}"})
    run.refresh_from_db()
    assert run.status == "completed"
    (run_span,) = [span for span in spans_in(spans_file) if span["name"] == "run"]
    assert run_span["parent_span_id"] is None
    assert run.traceparent.startswith(f"00-{run_span['trace_id']}-{run_span['span_id']}-")
    assert run_span["attributes"]["trellis.run.status"] == "completed"
    assert run_span["status"] == "UNSET"


def test_a_distributed_foreachs_batches_and_their_steps_join_the_runs_trace(
        api: Any, make_user: Any, worker_env: dict[str, str], tmp_path: Path,
        web_spans: InMemorySpanExporter) -> None:
    owner = make_user("vera")
    team = team_services.create_team(actor=owner, name="Orders")
    workflow = workflow_services.create_workflow(actor=owner, team=team, name="Doubling",
                                                 document=doubling_document(batch_size=2))
    started = start_run(api(owner), workflow, {"xs": [1, 2, 3], "note": MARKER})
    spans_file = tmp_path / "spans.jsonl"
    run_batch({**worker_environment(worker_env), "TRELLIS_TRACES": f"file:{spans_file}",
               "TRELLIS_FOREACH_DISTRIBUTE_ABOVE": "0"})
    run = Run.objects.get(pk=started["id"])
    assert run.status == "completed"
    assert MARKER not in spans_file.read_text()
    spans = spans_in(spans_file)
    request_span_id = run.traceparent.split("-")[2]
    assert {span["trace_id"] for span in spans} == {run.trace_id}
    runs = [span for span in spans if span["name"] == "run"]
    assert [span["attributes"]["trellis.run.status"] for span in runs] == ["waiting", "completed"]
    batches = [span for span in spans if span["name"] == "foreach batch"]
    assert sorted(span["attributes"]["trellis.batch.number"] for span in batches) == [0, 1]
    assert all(span["parent_span_id"] == request_span_id for span in runs + batches)
    items = {span["attributes"]["trellis.item.index"]: span for span in spans
             if span["name"].startswith("step ") and span["attributes"]["trellis.node.id"] == "double"}
    assert sorted(items) == [0, 1, 2]
    batch_ids = {span["span_id"] for span in batches}
    assert all(span["parent_span_id"] in batch_ids for span in items.values())
