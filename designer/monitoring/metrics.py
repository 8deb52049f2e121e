"""Prometheus metrics (``prometheus-client``).

The web process serves ``/metrics`` (behind ``TRELLIS_METRICS_TOKEN``) from ``TrellisCollector``, which reads the
database at scrape time: runs by team and status, the task queue's depth and the age of its oldest due task, the
workers seen. Read from the database, these figures are the same whichever web process answers and however many
there are. What only a worker process knows (how long its steps took, its foreach items, the runs it executed)
is in ``WORKER_REGISTRY``, served by each ``run_worker`` on 127.0.0.1:``TRELLIS_WORKER_METRICS_PORT``. The
README's "Operating Trellis" lists every name.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, Min
from django.http import Http404, HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from django_tasks_db.models import DBTaskResult, get_date_max
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from designer.conf import trellis
from designer.models import Run, Team, WorkerHeartbeat
from runtime.state import TraceEvent

#: Heartbeats older than this are not listed per worker on /metrics (a killed worker's row lingers a day).
LISTED_HEARTBEATS = timedelta(hours=1)


def _age(now: datetime, then: datetime | None) -> float:
    return max(0.0, (now - then).total_seconds()) if then is not None else 0.0


class TrellisCollector(Collector):
    """The database's figures, read at every scrape (a handful of grouped queries)."""

    def collect(self) -> Iterable[Metric]:
        now = timezone.now()
        runs = GaugeMetricFamily("trellis_runs", "Runs by team (slug) and status, now.", labels=["team", "status"])
        rows = Run.objects.order_by().values_list("team__slug", "status").annotate(n=Count("id"))
        for slug, status, count in rows:
            runs.add_metric([slug, status], count)
        yield runs

        ready = DBTaskResult.objects.ready()
        yield GaugeMetricFamily("trellis_queue_tasks", "Tasks due in the queue that no worker has taken yet "
                                "(runs, foreach batches, schedule ticks, recovery sweeps).", value=ready.count())
        oldest_now = ready.filter(run_after=get_date_max()).aggregate(at=Min("enqueued_at"))["at"]
        oldest_due = ready.exclude(run_after=get_date_max()).aggregate(at=Min("run_after"))["at"]
        oldest = min((at for at in (oldest_now, oldest_due) if at is not None), default=None)
        yield GaugeMetricFamily("trellis_queue_oldest_age_seconds", "How long the oldest due task has waited for a "
                                "worker (0 with an empty queue).", value=_age(now, oldest))
        queued = Run.objects.filter(status=Run.Status.QUEUED).aggregate(at=Min("created_at"))["at"]
        yield GaugeMetricFamily("trellis_runs_queued_oldest_age_seconds", "Age of the oldest run in status "
                                "queued, since it was created (0 when none).", value=_age(now, queued))

        window = trellis.WORKER_SEEN_SECONDS or 60.0
        beats = list(WorkerHeartbeat.objects.filter(last_seen__gte=now - LISTED_HEARTBEATS)
                     .values_list("worker_id", "host", "last_seen"))
        yield GaugeMetricFamily("trellis_workers_seen", "Workers whose heartbeat is within "
                                "TRELLIS_WORKER_SEEN_SECONDS (60 when that is 0).",
                                value=sum(1 for *_, seen in beats if _age(now, seen) <= window))
        ages = GaugeMetricFamily("trellis_worker_heartbeat_age_seconds", "Seconds since each worker seen in the "
                                 "last hour renewed its heartbeat.", labels=["worker", "host"])
        for worker_id, host, seen in beats:
            ages.add_metric([worker_id, host], _age(now, seen))
        yield ages


WEB_REGISTRY = CollectorRegistry(auto_describe=False)
WEB_REGISTRY.register(TrellisCollector())


def authorized(request: HttpRequest) -> bool:
    """Whether the request carries ``Authorization: Bearer <TRELLIS_METRICS_TOKEN>``; 404 when no token is set."""
    token = trellis.METRICS_TOKEN
    if not token:
        raise Http404("metrics are off: set TRELLIS_METRICS_TOKEN")
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """The web process's metrics in Prometheus' text format, for a scraper holding the token."""
    if not authorized(request):
        response = HttpResponse("metrics.unauthorized: send Authorization: Bearer <TRELLIS_METRICS_TOKEN>\n",
                                status=401, content_type="text/plain; charset=utf-8")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(generate_latest(WEB_REGISTRY), content_type=CONTENT_TYPE_LATEST)


# --- the worker process's own registry -----------------------------------------------------------------------

WORKER_REGISTRY = CollectorRegistry()
ProcessCollector(registry=WORKER_REGISTRY)
STEP_SECONDS = Histogram(
    "trellis_step_duration_seconds", "How long task steps took, by task (the step process's time).",
    ["task"], registry=WORKER_REGISTRY,
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600))
STEP_FAILURES = Counter("trellis_step_failures", "Task steps that failed (after their retries), by task.",
                        ["task"], registry=WORKER_REGISTRY)
FOREACH_ITEMS = Counter("trellis_foreach_items", "Foreach items this worker ended, by outcome (done, failed).",
                        ["outcome"], registry=WORKER_REGISTRY)
EXECUTIONS_STARTED = Counter("trellis_run_executions_started", "Run executions this worker started, by team: "
                             "a run's first, and each continuation after it waited or was interrupted.",
                             ["team"], registry=WORKER_REGISTRY)
EXECUTIONS_FINISHED = Counter("trellis_run_executions_finished", "Run executions this worker ended, by team and "
                              "the status they left the run in (completed, failed, cancelled, waiting, "
                              "interrupted, skipped, lease-lost).", ["team", "status"], registry=WORKER_REGISTRY)

SLOTS_WAITING = Gauge("trellis_worker_slots_waiting", "Slots of this worker waiting for work (idle).",
                      registry=WORKER_REGISTRY)
WAKEUPS = Counter("trellis_worker_wakeups", "Ends of an idle slot's wait, by cause: announced (work was queued: "
                  "NOTIFY on PostgreSQL, the wake file on SQLite) or poll (its poll interval ran out).",
                  ["cause"], registry=WORKER_REGISTRY)


def team_label(team_id: int, *, slug: str | None = None) -> str:
    """The team's label on metrics: its slug (``slug`` when the caller has it, else read), else its id."""
    if slug is None:
        slug = Team.objects.filter(pk=team_id).values_list("slug", flat=True).first()
    return slug or str(team_id)


class StepObserver:
    """The engine's ``on_superstep`` hook in a worker: each superstep's events into ``WORKER_REGISTRY``."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        nodes = document.get("nodes") if isinstance(document, Mapping) else None
        self.tasks: dict[str, str] = {
            str(node.get("id")): str(node.get("task"))
            for node in (nodes if isinstance(nodes, list) else [])
            if isinstance(node, Mapping) and node.get("kind") == "task"
        }

    def task_of(self, node_id: str | None) -> str | None:
        return self.tasks.get(node_id or "")

    def on_superstep(self, run_state: object, events: list[TraceEvent]) -> None:
        self.steps(events)
        # Counted first, then added once: a superstep of a collected foreach completes many items, and looking up
        # a labelled child per item cost more than the item's step.
        done = failed = 0
        for event in events:
            if event.kind == "item_completed":
                done += 1
            elif event.kind == "item_failed":
                failed += 1
        if done:
            FOREACH_ITEMS.labels("done").inc(done)
        if failed:
            FOREACH_ITEMS.labels("failed").inc(failed)

    def batch_items(self, *, done: int, failed: int, events: Iterable[TraceEvent]) -> None:
        """A distributed foreach batch committed ``done`` and ``failed`` items whose steps left ``events``."""
        FOREACH_ITEMS.labels("done").inc(done)
        FOREACH_ITEMS.labels("failed").inc(failed)
        self.steps(events)

    def steps(self, events: Iterable[TraceEvent]) -> None:
        seconds: dict[str, Any] = {}  # task -> its histogram child, looked up once a call
        for event in events:
            kind = event.kind
            if kind == "node_completed" and event.duration is not None:
                task = self.task_of(event.node_id)
                if task is not None:
                    child = seconds.get(task)
                    if child is None:
                        child = seconds[task] = STEP_SECONDS.labels(task)
                    child.observe(event.duration)
            elif kind == "node_failed":
                task = self.task_of(event.node_id)
                if task is not None:
                    STEP_FAILURES.labels(task).inc()
