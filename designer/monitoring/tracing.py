"""OpenTelemetry traces (the official SDK), off unless configured (``TRELLIS_TRACES``, or the standard
``OTEL_EXPORTER_OTLP_ENDPOINT``).

A web request gets a server span (``TracingMiddleware``; a ``traceparent`` header it brings is its parent). A run
enqueued inside one stores that span's W3C ``traceparent`` on ``Run.traceparent`` (``designer.runs.queue``); each
execution of the run in a worker is a span whose parent it is (``run_span``), so the run's whole life is one
trace starting at the request that started it; a run started without one (a schedule) gets its traceparent from
its first execution. Each step is a child span of the execution, built from the engine's trace events
(``RunTrace.on_superstep``): node id and label, task, foreach item position, attempt, the error code of a failed
step. Attributes never hold inputs, outputs, error messages or secrets.

The provider is built on first use, not at start-up: ``run_worker`` forks its step processes while it has no
other thread, and the OTLP exporter's batch processor starts one. ``file:<path>`` (JSON lines) and ``console``
export synchronously, without a thread: for tests and for looking at one machine.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from django.http import HttpRequest, HttpResponse
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from designer.conf import trellis
from designer.models import Run
from runtime.state import TraceEvent

PROPAGATOR = TraceContextTextMapPropagator()
OTLP_ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")

_lock = threading.Lock()
_built: tuple[str, TracerProvider | None] | None = None
_installed: TracerProvider | None = None


def mode() -> str:
    """``off``, ``otlp``, ``console`` or ``file:<path>``: the setting, else otlp when an OTLP endpoint is set."""
    value = trellis.TRACES
    if value:
        return value
    return "otlp" if any(os.environ.get(name) for name in OTLP_ENDPOINT_VARIABLES) else "off"


class JsonLinesExporter(SpanExporter):
    """Appends each span to a file as one JSON object a line (``TRELLIS_TRACES=file:<path>``)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        text = "".join(json.dumps(span_record(span), sort_keys=True) + "\n" for span in spans)
        with self._lock, open(self.path, "a", encoding="utf-8") as file:
            file.write(text)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def span_record(span: ReadableSpan) -> dict[str, Any]:
    context = span.get_span_context()
    assert context is not None
    return {
        "name": span.name,
        "kind": span.kind.name,
        "trace_id": format(context.trace_id, "032x"),
        "span_id": format(context.span_id, "016x"),
        "parent_span_id": format(span.parent.span_id, "016x") if span.parent is not None else None,
        "start": span.start_time,
        "end": span.end_time,
        "status": span.status.status_code.name,
        "attributes": dict(span.attributes or {}),
    }


def _build(chosen: str) -> TracerProvider | None:
    if chosen == "off":
        return None
    attributes = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": "trellis"}
    provider = TracerProvider(resource=Resource.create(attributes))
    if chosen == "otlp":
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    elif chosen == "console":
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    else:
        provider.add_span_processor(SimpleSpanProcessor(JsonLinesExporter(chosen.removeprefix("file:"))))
    return provider


def install(provider: TracerProvider | None) -> None:
    """Use ``provider`` whatever the settings say (tests: one with an ``InMemorySpanExporter``); None undoes it."""
    global _installed
    _installed = provider


def tracer() -> Tracer | None:
    """The tracer, or None when tracing is off (the one check every caller makes)."""
    global _built
    provider = _installed
    if provider is None:
        chosen = mode()
        built = _built
        if built is None or built[0] != chosen:
            with _lock:
                if _built is None or _built[0] != chosen:
                    _built = (chosen, _build(chosen))
                built = _built
        provider = built[1]
    return None if provider is None else provider.get_tracer("trellis")


def current_traceparent() -> str:
    """The W3C traceparent of the current span, or ``""`` outside one (or with tracing off)."""
    carrier: dict[str, str] = {}
    PROPAGATOR.inject(carrier)
    return carrier.get("traceparent", "")


def traceparent_of(span: Span) -> str:
    carrier: dict[str, str] = {}
    PROPAGATOR.inject(carrier, context=trace.set_span_in_context(span))
    return carrier.get("traceparent", "")


class TracingMiddleware:
    """A server span around each request while tracing is on; one attribute read per request while it is off."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        chosen = tracer()
        if chosen is None:
            return self.get_response(request)
        parent = PROPAGATOR.extract({key.lower(): value for key, value in request.headers.items()})
        with chosen.start_as_current_span(f"{request.method}", context=parent, kind=SpanKind.SERVER,
                                          attributes={"http.request.method": request.method or "",
                                                      "url.path": request.path}) as span:
            response = self.get_response(request)
            match = getattr(request, "resolver_match", None)
            if match is not None and match.route:
                span.update_name(f"{request.method} /{match.route}")
                span.set_attribute("http.route", "/" + match.route)
            span.set_attribute("http.response.status_code", response.status_code)
            if response.status_code >= 500:
                span.set_status(Status(StatusCode.ERROR))
            return response


def _nodes(document: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    nodes = document.get("nodes") if isinstance(document, Mapping) else None
    return {str(node.get("id")): node for node in (nodes if isinstance(nodes, list) else [])
            if isinstance(node, Mapping)}


def _ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)


class RunTrace:
    """One execution's span and the engine hook that adds a child span per step that ended."""

    def __init__(self, tracer: Tracer, span: Span, document: Mapping[str, Any]) -> None:
        self.tracer = tracer
        self.span = span
        self.nodes = _nodes(document)
        self._started: dict[tuple[str | None, str | None], float] = {}

    def on_superstep(self, run_state: object, events: list[TraceEvent]) -> None:
        for event in events:
            if event.kind == "node_started":
                self._started[(event.frame_id, event.node_id)] = event.time
            elif event.kind in ("node_completed", "node_failed"):
                self._step(event)

    def _step(self, event: TraceEvent) -> None:
        started = self._started.pop((event.frame_id, event.node_id), None)
        if started is None:
            started = event.time - (event.duration or 0.0)
        node = self.nodes.get(event.node_id or "", {})
        label = str(node.get("name") or event.node_id or "")
        attributes: dict[str, Any] = {"trellis.node.id": event.node_id or "", "trellis.node.label": label}
        if node.get("kind") == "task":
            attributes["trellis.task"] = str(node.get("task"))
        if event.index is not None:
            attributes["trellis.item.index"] = event.index
        if event.attempt is not None:
            attributes["trellis.step.attempt"] = event.attempt
        if event.label is not None:
            attributes["trellis.step.route"] = event.label
        failed = event.kind == "node_failed"
        code = event.summary.get("code") if failed and isinstance(event.summary, Mapping) else None
        if isinstance(code, str):
            attributes["trellis.error.code"] = code
        span = self.tracer.start_span(f"step {label}", context=trace.set_span_in_context(self.span),
                                      start_time=_ns(started), attributes=attributes)
        if failed:
            span.set_status(Status(StatusCode.ERROR, code if isinstance(code, str) else None))
        span.end(end_time=_ns(max(event.time, started)))


@contextmanager
def run_span(run: Run, *, team: str) -> Iterator[RunTrace | None]:
    """A span around one execution of ``run``, the child of its ``traceparent``; None with tracing off.

    A run without a traceparent takes this span's, so its later executions join the same trace."""
    chosen = tracer()
    if chosen is None:
        yield None
        return
    parent = PROPAGATOR.extract({"traceparent": run.traceparent}) if run.traceparent else None
    attributes = {"trellis.run.id": run.pk, "trellis.workflow.id": run.workflow_id,
                  "trellis.workflow.name": run.workflow.name, "trellis.team": team}
    with chosen.start_as_current_span("run", context=parent, kind=SpanKind.CONSUMER, attributes=attributes,
                                      record_exception=False, set_status_on_exception=True) as span:
        if not run.traceparent:
            Run.objects.filter(pk=run.pk, traceparent="").update(traceparent=traceparent_of(span))
        yield RunTrace(chosen, span, run.document)


def finish(run_trace: RunTrace | None, status: str) -> None:
    """Record the status the execution left the run in on its span."""
    if run_trace is None:
        return
    run_trace.span.set_attribute("trellis.run.status", status)
    if status in ("failed", "lease-lost"):
        run_trace.span.set_status(Status(StatusCode.ERROR, status))


@contextmanager
def batch_span(run: Run, *, node_id: str, number: int) -> Iterator[RunTrace | None]:
    """A span around one execution of a distributed foreach batch of ``run``, in the run's trace (a child of its
    traceparent, beside the run's own executions); its items' steps are its children. None with tracing off."""
    chosen = tracer()
    if chosen is None:
        yield None
        return
    parent = PROPAGATOR.extract({"traceparent": run.traceparent}) if run.traceparent else None
    attributes = {"trellis.run.id": run.pk, "trellis.workflow.id": run.workflow_id, "trellis.node.id": node_id,
                  "trellis.batch.number": number}
    with chosen.start_as_current_span("foreach batch", context=parent, kind=SpanKind.CONSUMER,
                                      attributes=attributes, record_exception=False,
                                      set_status_on_exception=True) as span:
        yield RunTrace(chosen, span, run.document)
