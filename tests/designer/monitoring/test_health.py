"""``/healthz`` and ``/readyz`` (issue 29): unauthenticated JSON, 200 or 503 with a stable code per failed check;
the worker check reads the heartbeat a real ``run_worker`` process keeps while it runs and deletes when it stops."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db.migrations.recorder import MigrationRecorder
from django.test import Client
from django.utils import timezone

from designer.models import WorkerHeartbeat
from designer.monitoring import health
from tests.designer.runs_support import start_worker, stop_worker, wait_for, worker_environment

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def forget_migrations_verdict() -> Iterator[None]:
    health._migrated = False
    yield
    health._migrated = False


def ready(client: Client) -> tuple[int, dict[str, Any]]:
    response = client.get("/readyz")
    assert response["Content-Type"] == "application/json"
    return response.status_code, response.json()


def test_healthz_answers_without_a_session_or_the_database(client: Client,
                                                           django_assert_num_queries: Any) -> None:
    with django_assert_num_queries(0):
        response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert "no-cache" in response["Cache-Control"]
    assert client.post("/healthz").status_code == 405


def test_readyz_waits_for_a_real_worker_and_stops_being_ready_when_it_stops(client: Client,
                                                                            worker_env: dict[str, str]) -> None:
    status, body = ready(client)
    assert status == 503
    assert body["status"] == "not ready"
    assert body["checks"]["database"] == {"ok": True}
    assert body["checks"]["migrations"] == {"ok": True}
    assert body["checks"]["worker"]["code"] == "readyz.no_worker"

    worker = start_worker(worker_environment(worker_env))
    try:
        row = wait_for(lambda: WorkerHeartbeat.objects.first(), message="the worker's heartbeat", worker=worker)
        assert row.pid == worker.pid
        status, body = ready(client)
        assert (status, body["status"], body["checks"]["worker"]) == (200, "ready", {"ok": True, "workers": 1})
    finally:
        stop_worker(worker)
    assert not WorkerHeartbeat.objects.exists()  # a worker that stops cleanly removes its row
    assert ready(client)[0] == 503


def test_the_worker_renews_its_heartbeat_while_it_idles(worker_env: dict[str, str]) -> None:
    env = {**worker_environment(worker_env), "TRELLIS_WORKER_SEEN_SECONDS": "0.9"}  # a beat every 0.3 s
    worker = start_worker(env)
    try:
        first = wait_for(lambda: WorkerHeartbeat.objects.first(), message="the first beat", worker=worker)
        wait_for(lambda: WorkerHeartbeat.objects.get(pk=first.pk).last_seen > first.last_seen,
                 message="a renewed beat", worker=worker)
    finally:
        stop_worker(worker)


def test_a_heartbeat_older_than_the_window_is_not_a_worker(client: Client, settings: Any) -> None:
    settings.TRELLIS_WORKER_SEEN_SECONDS = 30
    now = timezone.now()
    WorkerHeartbeat.objects.create(worker_id="gone", host="h", pid=1, started_at=now - timedelta(minutes=5),
                                   last_seen=now - timedelta(seconds=31))
    status, body = ready(client)
    assert (status, body["checks"]["worker"]["code"]) == (503, "readyz.no_worker")
    assert "30 seconds" in body["checks"]["worker"]["message"]
    WorkerHeartbeat.objects.create(worker_id="alive", host="h", pid=2, started_at=now, last_seen=now)
    assert ready(client) == (200, {"status": "ready", "checks": {
        "database": {"ok": True}, "migrations": {"ok": True}, "worker": {"ok": True, "workers": 1}}})


def test_readyz_without_the_worker_check(client: Client, settings: Any) -> None:
    settings.TRELLIS_WORKER_SEEN_SECONDS = 0
    status, body = ready(client)
    assert status == 200
    assert body["checks"]["worker"] == {"ok": True, "skipped": True}


def test_an_unapplied_migration_makes_readyz_fail_and_the_verdict_is_kept_once_true(client: Client,
                                                                                   settings: Any) -> None:
    settings.TRELLIS_WORKER_SEEN_SECONDS = 0
    recorder = MigrationRecorder.Migration.objects
    latest = recorder.filter(app="designer").order_by("-name").values_list("name", flat=True)[0]
    recorder.filter(app="designer", name=latest).delete()
    try:
        status, body = ready(client)
        assert status == 503
        assert body["checks"]["migrations"]["code"] == "readyz.migrations"
        assert "manage.py migrate" in body["checks"]["migrations"]["message"]
    finally:
        recorder.create(app="designer", name=latest)
    assert ready(client)[0] == 200
    assert health._migrated is True
    # Once true it is not worked out again: removing the record now changes nothing for this process.
    recorder.filter(app="designer", name=latest).delete()
    try:
        assert ready(client)[0] == 200
    finally:
        recorder.create(app="designer", name=latest)


def test_probes_are_answered_over_plain_http_where_pages_redirect_to_https(client: Client, settings: Any) -> None:
    settings.SECURE_SSL_REDIRECT = True  # the exemptions are designer/settings.py's own
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code in (200, 503)
    assert client.get("/accounts/login/").status_code == 301
