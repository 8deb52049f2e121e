"""``designer.core.prepared``: the statements every run makes are prepared once per PostgreSQL connection (issue 33:
planning was most of the server's time in a one-step run), Django's query log still reads them with their values,
and ``TRELLIS_DB_PREPARED_STATEMENTS=off`` prepares nothing."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from bench._workloads import one_math_step_document
from designer.core.prepared import prepared_cursor, preparing
from designer.runs import executor, fairness
from designer.runs import services as run_services
from designer.runs.dispatch import task_named

ROOT = Path(__file__).resolve().parents[2]
postgresql_only = pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL prepares statements")


def _prepared(wrapper: Any = connection) -> list[str]:
    with wrapper.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements ORDER BY statement")
        return [statement for (statement,) in cursor.fetchall()]


def _start_and_run(cast: Any) -> str:
    """One run of one step, created through the service and claimed and run as a ``run_worker`` slot does it."""
    workflow = cast.workflow("One", one_math_step_document())
    run = run_services.start_run(actor=cast.editor, workflow=workflow)
    while True:
        claimed = fairness.claim_next(fairness.ReadyTasks(), worker_id="test", worker_teams=Counter(),
                                      free_slots=1, slots=1, prepare=executor.claim_ahead)
        assert claimed is not None
        if claimed.team_id is not None:
            break
    with executor.ahead(claimed.prepared):
        task_named("execute_run").call(*claimed.task.args_kwargs["args"])
    run.refresh_from_db()
    return str(run.status)


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_the_statements_of_a_run_are_prepared_once_and_serve_the_next_run(cast: Any) -> None:
    assert preparing(connection)
    assert _start_and_run(cast) == "completed"
    first = _prepared()
    starts = [statement[:32] for statement in first]
    for hot in ('SELECT (SELECT m.role FROM "desi',  # start_run's access check
                "WITH g AS (SELECT q.team_id, q.w",  # the claim's queue read
                'WITH task AS (UPDATE "django_tas',  # the task taken and the shares moved
                'UPDATE "designer_run" SET lease_',  # the lease taken; and the lease released
                'WITH run AS (UPDATE "designer_ru'):  # the one-statement saves
        assert hot in starts, (hot, first)
    assert _start_and_run(cast) == "completed"
    # Fixed shapes: the second run runs the statements the first prepared, and prepares none of its own.
    assert _prepared() == first


@pytest.mark.django_db
def test_a_prepared_statement_reads_in_the_query_log_with_its_values_as_any_other() -> None:
    with CaptureQueriesContext(connection) as captured, prepared_cursor(connection) as cursor:
        cursor.execute("SELECT %s + 1, %s", [41, "it's"])
        assert cursor.fetchone() == (42, "it's")
    # As Django's own cursors log it, not the "QUERY = ... PARAMS = ..." it falls back to for a prepared statement.
    assert [query["sql"] for query in captured.captured_queries] == ["SELECT 41 + 1, 'it''s'"]


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_with_prepared_statements_off_the_cursor_is_djangos_and_prepares_nothing() -> None:
    settings = copy.deepcopy(connection.settings_dict)
    settings["OPTIONS"].pop("prepare_threshold")
    wrapper = connections.create_connection("default")
    wrapper.settings_dict = settings
    try:
        assert not preparing(wrapper)
        for _ in range(3):
            with prepared_cursor(wrapper) as cursor:
                cursor.execute("SELECT %s + 1", [41])
                assert cursor.fetchone() == (42,)
        assert _prepared(wrapper) == []
    finally:
        wrapper.close()


@pytest.mark.parametrize(("value", "threshold"), [("", "5"), ("off", "None")])
def test_the_switch_sets_psycopgs_threshold_for_postgresql(value: str, threshold: str) -> None:
    env = {key: text for key, text in os.environ.items() if not key.startswith(("DJANGO_", "TRELLIS_"))}
    env |= {"DJANGO_SETTINGS_MODULE": "designer.settings", "DATABASE_URL": "postgres://u:p@127.0.0.1:9/trellis",
            "TRELLIS_DB_PREPARED_STATEMENTS": value}
    read = subprocess.run([sys.executable, "-c", "from django.conf import settings; "
                           "print(settings.DATABASES['default']['OPTIONS'].get('prepare_threshold'))"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert read.returncode == 0, read.stderr
    assert read.stdout.strip() == threshold
