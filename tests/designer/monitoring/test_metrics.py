"""Prometheus metrics (issue 29): ``/metrics`` on the web process behind TRELLIS_METRICS_TOKEN (404 without one),
its figures read from the database at scrape time (runs by team and status, the queue, workers seen); a real
``run_worker`` serving its own registry on 127.0.0.1 (step durations by task, foreach items, executions)."""

from __future__ import annotations

import urllib.request
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from designer.access import teams as team_services
from designer.models import ForeachBatch, Run, WorkerHeartbeat
from designer.runs import services as run_services
from designer.workflows import services as workflow_services
from runtime import WorkflowBuilder
from tests.designer.runs_support import (
    FINISHED,
    start_worker,
    status_of,
    stop_worker,
    wait_for,
    worker_environment,
)
from tests.server_support import free_port

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "s3cret-scrape-token"


def adding_document(*, batch_size: int | None = None) -> dict[str, Any]:
    """``math`` adds 1 to each of ``input.xs`` in a foreach (distributed in batches of ``batch_size``)."""
    g = WorkflowBuilder("adding", "Adding", input_schema={"type": "object", "properties": {
        "xs": {"type": "array", "items": {"type": "integer"}}}, "required": ["xs"]})
    each = g.foreach("each", "input.xs", results="sums", batch_size=batch_size)
    add = g.use("math", id="add", input=[{"target": "op", "value": "add"}, {"target": "a", "path": each.item},
                                         {"target": "b", "value": 1}])
    g.chain(each, "loop", add, "ok", each)
    g.output("sums", "state.sums")
    return g.build().model_dump(mode="json")


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a Prometheus text page, by name and sorted labels."""
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def scrape(client: Client, token: str | None = TOKEN) -> Any:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    return client.get("/metrics", headers=headers)


def test_metrics_are_off_without_a_token_and_refuse_a_wrong_one(client: Client, settings: Any) -> None:
    settings.TRELLIS_METRICS_TOKEN = ""
    assert scrape(client).status_code == 404
    settings.TRELLIS_METRICS_TOKEN = TOKEN
    for token in (None, "wrong", TOKEN + "x"):
        response = scrape(client, token)
        assert response.status_code == 401
        assert response["WWW-Authenticate"].startswith("Bearer")
        assert b"metrics.unauthorized" in response.content
    assert client.get("/metrics", headers={"Authorization": f"Basic {TOKEN}"}).status_code == 401
    assert scrape(client).status_code == 200


def test_web_metrics_count_runs_by_team_and_status_the_queue_and_workers(client: Client, settings: Any, cast: Any,
                                                                          worker_env: dict[str, str],
                                                                          run_worker: Any) -> None:
    settings.TRELLIS_METRICS_TOKEN = TOKEN
    # The recovery chain's next sweep an hour away: at the default (half the lease, 15 s) it fell due between the
    # last worker's exit and the scrape on a loaded CI machine, and the empty queue counted it.
    worker_env["TRELLIS_RECOVERY_INTERVAL_SECONDS"] = "3600"
    owner, other, team, elsewhere = cast.owner, cast.stranger, cast.team, cast.other_team
    mine, theirs = cast.workflow("Adding", adding_document()), cast.their_workflow("Adding", adding_document())
    for xs in ([1], [2, 3]):
        run_services.start_run(actor=owner, workflow=mine, input={"xs": xs})
    run_services.start_run(actor=other, workflow=theirs, input={"xs": [4]})
    run_worker()
    assert set(Run.objects.values_list("status", flat=True)) == {"completed"}

    waiting = run_services.start_run(actor=other, workflow=theirs, input={"xs": [5]})  # no worker takes it
    an_hour_ago = timezone.now() - timedelta(hours=1)
    Run.objects.filter(pk=waiting.pk).update(created_at=an_hour_ago)
    WorkerHeartbeat.objects.create(worker_id="w1", host="box", pid=7, started_at=an_hour_ago,
                                   last_seen=timezone.now())
    WorkerHeartbeat.objects.create(worker_id="w0", host="box", pid=6, started_at=an_hour_ago,
                                   last_seen=timezone.now() - timedelta(minutes=10))

    response = scrape(client)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    found = samples(response.content.decode())
    assert found[("trellis_runs", (("status", "completed"), ("team", team.slug)))] == 2
    assert found[("trellis_runs", (("status", "completed"), ("team", elsewhere.slug)))] == 1
    assert found[("trellis_runs", (("status", "queued"), ("team", elsewhere.slug)))] == 1
    assert ("trellis_runs", (("status", "queued"), ("team", team.slug))) not in found
    assert found[("trellis_queue_tasks", ())] >= 1  # the queued run's task (a recovery sweep may wait too)
    assert found[("trellis_runs_queued_oldest_age_seconds", ())] >= 3600
    assert found[("trellis_workers_seen", ())] == 1  # w0 is older than TRELLIS_WORKER_SEEN_SECONDS
    assert found[("trellis_worker_heartbeat_age_seconds", (("host", "box"), ("worker", "w0")))] >= 600

    run_worker()
    found = samples(scrape(client).content.decode())
    assert found[("trellis_queue_tasks", ())] == 0
    assert found[("trellis_queue_oldest_age_seconds", ())] == 0
    assert found[("trellis_runs_queued_oldest_age_seconds", ())] == 0
    assert found[("trellis_runs", (("status", "completed"), ("team", elsewhere.slug)))] == 2


def test_a_real_worker_serves_its_own_metrics_on_loopback(make_user: Any, worker_env: dict[str, str]) -> None:
    owner = make_user("vera")
    team = team_services.create_team(actor=owner, name="Orders")
    workflow = workflow_services.create_workflow(actor=owner, team=team, name="Adding", document=adding_document())
    runs = [run_services.start_run(actor=owner, workflow=workflow, input={"xs": xs}) for xs in ([1, 2], [3])]
    port = free_port()
    worker = start_worker({**worker_environment(worker_env), "TRELLIS_WORKER_METRICS_PORT": str(port)})
    try:
        wait_for(lambda: all(status_of(run.pk) in FINISHED for run in runs), message="the runs", worker=worker)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as answer:
            found = samples(answer.read().decode())
    finally:
        stop_worker(worker)
    assert {status_of(run.pk) for run in runs} == {"completed"}
    assert found[("trellis_step_duration_seconds_count", (("task", "math"),))] == 3
    assert found[("trellis_step_duration_seconds_sum", (("task", "math"),))] > 0
    assert found[("trellis_foreach_items_total", (("outcome", "done"),))] == 3
    assert ("trellis_foreach_items_total", (("outcome", "failed"),)) not in found
    assert found[("trellis_run_executions_started_total", (("team", team.slug),))] == 2
    assert found[("trellis_run_executions_finished_total", (("status", "completed"), ("team", team.slug)))] == 2
    assert found[("process_resident_memory_bytes", ())] > 0


def test_a_distributed_foreach_counts_its_batches_items_and_steps_once(make_user: Any,
                                                                       worker_env: dict[str, str]) -> None:
    owner = make_user("vera")
    team = team_services.create_team(actor=owner, name="Orders")
    workflow = workflow_services.create_workflow(actor=owner, team=team, name="Adding",
                                                 document=adding_document(batch_size=2))
    run = run_services.start_run(actor=owner, workflow=workflow, input={"xs": [1, 2, 3, 4, 5]})
    port = free_port()
    worker = start_worker({**worker_environment(worker_env), "TRELLIS_WORKER_METRICS_PORT": str(port),
                           "TRELLIS_FOREACH_DISTRIBUTE_ABOVE": "0"})
    try:
        wait_for(lambda: status_of(run.pk) in FINISHED, message="the run", worker=worker)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as answer:
            found = samples(answer.read().decode())
    finally:
        stop_worker(worker)
    assert status_of(run.pk) == "completed"
    assert ForeachBatch.objects.filter(run_id=run.pk).count() == 3  # the items ran as distributed batches
    assert Run.objects.get(pk=run.pk).items_done == 5
    assert found[("trellis_foreach_items_total", (("outcome", "done"),))] == 5
    assert found[("trellis_step_duration_seconds_count", (("task", "math"),))] == 5
