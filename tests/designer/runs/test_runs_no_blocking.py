"""Recovery and claims never wait on a row lock, and leases follow the database's clock (PostgreSQL).

A worker frozen inside its checkpoint transaction (a paused VM, a partition leaving the session "idle in
transaction") holds its run's row lock. A fresh worker must still start, recover what it can and run new
work; the frozen run is recovered once the server has ended the frozen session
(``idle_in_transaction_session_timeout``) and finishes exactly once. SQLite has one write lock for the whole
file and lives on one machine, so these situations are PostgreSQL's alone.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from unittest import mock

import psycopg
import pytest
from django.db import connection
from django.utils import timezone

from designer.models import Run
from designer.runs import lease
from designer.runs.recovery import requeue_stale_runs
from designer.workflows import services as workflow_services
from tests.designer.runs_support import all_events, counting_document, run_batch, run_detail, start_run

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks and several clocks: PostgreSQL only"),
]


def freeze_holding_row_lock(url: str, run_id: int) -> psycopg.Connection[Any]:
    """A session that locked the run's row inside a transaction and then stopped, as a frozen worker does.
    No idle timeout of its own: it stays frozen until the test ends it (a real one is ended by the server after
    TRELLIS_DB_IDLE_IN_TRANSACTION_SECONDS, checked below, which a test cannot wait for on a loaded machine)."""
    frozen = psycopg.connect(url)
    frozen.execute("SET idle_in_transaction_session_timeout = 0")
    frozen.commit()
    frozen.execute(f"SELECT id FROM {Run._meta.db_table} WHERE id = %s FOR UPDATE", [run_id])
    return frozen


def end_session(pid: int) -> None:
    """What the server's idle_in_transaction_session_timeout does to a frozen session."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])


def test_a_worker_frozen_in_a_transaction_blocks_neither_recovery_nor_a_fresh_worker(
    api: Any, cast: Any, env: dict[str, str]
) -> None:
    workflow = workflow_services.create_workflow(actor=cast.owner, team=cast.team, name="Counting",
                                                 document=counting_document(pause=False))
    client = api(cast.editor)
    stuck = start_run(client, workflow, {"x": 3})["id"]
    fresh = start_run(client, workflow, {"x": 3})["id"]
    # The stuck run's worker claimed it, then froze mid-checkpoint and stopped renewing its lease.
    assert lease.claim(stuck, "frozen-worker")
    Run.objects.filter(pk=stuck).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    frozen = freeze_holding_row_lock(env["DATABASE_URL"], stuck)
    try:
        # Start-up recovery passes the locked run by and the worker runs the new run (it used to wait forever).
        run_batch(env, timeout=60)
        assert run_detail(client, fresh)["status"] == "completed"
        held = Run.objects.get(pk=stuck)
        assert (held.status, held.lease_owner) == ("running", "frozen-worker")

        # The server ends the frozen session; its lock goes with it, and the next worker recovers the run.
        end_session(frozen.info.backend_pid)
    finally:
        frozen.close()
    output = run_batch(env, timeout=60)
    assert f"re-enqueued stale run(s): {stuck}" in output.stdout

    stuck_detail, fresh_detail = run_detail(client, stuck), run_detail(client, fresh)
    assert stuck_detail["status"] == "completed"
    assert stuck_detail["output"] == fresh_detail["output"] == {"first": 4, "second": 8}
    kinds = [event["kind"] for event in all_events(client, stuck)]
    assert kinds.count("run_started") == 1 and kinds.count("run_completed") == 1


def test_claims_and_recovery_pass_a_locked_run_by_without_waiting(workflow: Any, env: dict[str, str]) -> None:
    run = Run.objects.create(team=workflow.team, workflow=workflow, document=workflow.document,
                             lease_expires_at=timezone.now() - timedelta(seconds=1))
    frozen = freeze_holding_row_lock(env["DATABASE_URL"], run.pk)
    try:
        assert lease.claim(run.pk, "worker-a") is None
        assert requeue_stale_runs() == []
    finally:
        frozen.rollback()
        frozen.close()
    assert requeue_stale_runs() == [run.pk]
    assert lease.claim(run.pk, "worker-a") is not None


def test_leases_follow_the_database_clock_not_the_app_servers(workflow: Any) -> None:
    run = Run.objects.create(team=workflow.team, workflow=workflow, document=workflow.document)
    assert lease.claim(run.pk, "worker-a") is not None
    # An app server whose clock runs an hour fast sees every lease as expired by its own clock ...
    fast = timezone.now() + timedelta(hours=1)
    with mock.patch("django.utils.timezone.now", return_value=fast):
        # ... but the lease is judged in SQL by the database's clock: still held, nothing to recover.
        assert lease.claim(run.pk, "worker-b") is None
        assert requeue_stale_runs() == []
        lease.renew(run.pk, "worker-a")
    renewed = Run.objects.get(pk=run.pk).lease_expires_at
    assert renewed < timezone.now() + timedelta(minutes=5)  # written from the database's clock, not the fast one


def test_the_apps_connections_end_a_session_left_idle_in_a_transaction() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SHOW idle_in_transaction_session_timeout")
        (value,) = cursor.fetchone()
    assert value not in ("0", "0ms")
