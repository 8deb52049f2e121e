"""``run_worker`` takes a run's lease in the transaction that takes its task from the queue (issue 33): a one-step
run costs the worker three write transactions (the claim, the first checkpoint, the end), not four. On SQLite each
one waits for the database's one write lock, which the API creating runs takes as well. Driven through the
worker's own claim and task on the real database, in this process, so every statement can be seen."""

from __future__ import annotations

import gc
from collections import Counter
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.backends.signals import connection_created
from django.test.utils import CaptureQueriesContext

from bench._workloads import one_math_step_document
from designer.models import Run
from designer.runs import executor, fairness
from designer.runs import services as run_services
from designer.runs.dispatch import task_named

pytestmark = pytest.mark.django_db(transaction=True)


def _claim() -> fairness.Claimed:
    """The next run's task, as a ``run_worker`` slot claims it (past the ownerless recovery sweep)."""
    while True:
        claimed = fairness.claim_next(fairness.ReadyTasks(), worker_id="test", worker_teams=Counter(),
                                      free_slots=1, slots=1, prepare=executor.claim_ahead)
        assert claimed is not None
        if claimed.team_id is not None:
            return claimed
        assert claimed.prepared is None  # nothing is taken ahead for a task that is not a run's


def _execute(claimed: fairness.Claimed) -> str:
    with executor.ahead(claimed.prepared):
        return str(task_named("execute_run").call(*claimed.task.args_kwargs["args"]))


def _begins(captured: CaptureQueriesContext) -> list[int]:
    return [at for at, query in enumerate(captured.captured_queries) if query["sql"].upper().startswith("BEGIN")]


@pytest.fixture
def started(cast: Any) -> Run:
    workflow = cast.workflow("One", one_math_step_document())
    return run_services.start_run(actor=cast.editor, workflow=workflow)


def test_a_runs_lease_is_taken_with_its_task_and_the_run_then_costs_two_transactions_more(started: Run) -> None:
    with CaptureQueriesContext(connection) as claiming:
        claimed = _claim()
    ahead = claimed.prepared
    assert isinstance(ahead, executor.Ahead) and ahead.run is not None and ahead.run.pk == started.pk
    stored = Run.objects.get(pk=started.pk)
    # Committed with the claim: the run is the worker's before its task starts.
    assert (stored.status, stored.lease_owner, stored.attempts) == ("running", ahead.owner, 1)
    assert {field.attname: getattr(ahead.run, field.attname) for field in Run._meta.concrete_fields} == {
        field.attname: getattr(stored, field.attname) for field in Run._meta.concrete_fields}
    assert (ahead.run.trace_next, ahead.run.input, ahead.run.team.slug) == (0, {}, started.team.slug)
    statements = [query["sql"] for query in claiming.captured_queries]
    lease = [at for at, sql in enumerate(statements) if sql.startswith(f'UPDATE "{Run._meta.db_table}"')]
    assert len(lease) == 1 and _begins(claiming)[-1] < lease[0]  # in the claim's own transaction
    # The whole claim: what is queued and whose with the teams' shares (one read); the task taken (one UPDATE that
    # returns it) and the shares moved on, one statement on PostgreSQL; the run's lease (one UPDATE that returns
    # the run).
    verbs = [sql.split()[0].upper() for sql in statements[_begins(claiming)[-1] + 1:] if sql.upper() != "COMMIT"]
    if connection.vendor == "postgresql":
        assert verbs == ["WITH", "WITH", "UPDATE"]
        assert "moved AS (INSERT INTO \"designer_fairshare\"" in statements[-3]
    else:
        assert verbs == ["WITH", "UPDATE", "INSERT", "UPDATE"]
    with CaptureQueriesContext(connection) as running:
        assert _execute(claimed) == "completed"
    if connection.vendor == "postgresql":
        # The first checkpoint (the run's row, its input as a part, the kept checkpoint, the events) is one
        # statement, and a transaction on its own: its atomic block ends before anything is sent (BEGIN, COMMIT).
        first = [query["sql"] for query in running.captured_queries[:3]]
        assert first[:2] == ["BEGIN", "COMMIT"] and first[2].startswith("WITH run AS (UPDATE"), first
        assert "parts AS (INSERT" in first[2]
    # The first checkpoint and the end (with the task's success): no transaction of its own for the lease.
    assert len(_begins(running)) == 2
    assert not [query for query in running.captured_queries if "attempts = attempts + 1" in query["sql"]]
    ended = Run.objects.get(pk=started.pk)
    assert (ended.status, ended.output, ended.lease_owner, ended.attempts) == ("completed", {"sum": 3}, "", 1)


def test_a_run_that_cannot_be_claimed_when_its_task_is_taken_is_skipped(started: Run) -> None:
    Run.objects.filter(pk=started.pk).update(lease_owner="another-worker", status="running",
                                             lease_expires_at=started.lease_expires_at)  # a live worker has it
    claimed = _claim()
    assert isinstance(claimed.prepared, executor.Ahead) and claimed.prepared.run is None
    with CaptureQueriesContext(connection) as running:
        assert _execute(claimed) == "skipped"
    assert not [query for query in running.captured_queries if query["sql"].startswith("UPDATE")]
    assert Run.objects.get(pk=started.pk).lease_owner == "another-worker"


def test_a_lease_taken_ahead_serves_only_its_own_run_and_only_once(started: Run, cast: Any) -> None:
    claimed = _claim()
    ahead = claimed.prepared
    assert isinstance(ahead, executor.Ahead)
    other = run_services.start_run(actor=cast.editor, workflow=started.workflow)
    with executor.ahead(claimed.prepared):
        # Another run executed on this thread claims its own lease; the one taken ahead is not its.
        assert task_named("execute_run").call(other.pk) == "completed"
        assert task_named("execute_run").call(started.pk) == "skipped"  # its lease is held, by the ahead owner
    assert Run.objects.get(pk=started.pk).lease_owner == ahead.owner


def test_a_busy_worker_spends_three_transactions_a_run_and_no_query_on_its_connection_or_the_chain(
        cast: Any) -> None:
    """Three one-step runs through a real ``run_worker`` loop (one slot, until the queue is empty), every
    statement of every connection it opened recorded: per run the claim, the first checkpoint and the end, and
    neither a health check of the connection (a round trip on PostgreSQL) nor the recovery chain's read."""
    workflow = cast.workflow("One", one_math_step_document())
    runs = [run_services.start_run(actor=cast.editor, workflow=workflow) for _ in range(3)]
    call_command("run_worker", batch=True, slots=1, startup_delay=False, reload=False, max_tasks=1,
                 verbosity=0)  # the recovery sweep the first run's enqueue queued, ahead of the runs
    opened: list[Any] = []
    checks: list[Any] = []

    def record(sender: Any, connection: Any, **kwargs: Any) -> None:
        connection.force_debug_cursor = True
        opened.append(connection)
        usable = connection.is_usable

        def checked() -> bool:  # Django's health check: "SELECT 1" on PostgreSQL, outside the queries log
            checks.append(connection)
            return bool(usable())

        connection.is_usable = checked

    connection_created.connect(record)
    try:
        call_command("run_worker", batch=True, slots=1, startup_delay=False, reload=False, verbosity=0)
    finally:
        connection_created.disconnect(record)
    assert [run.status for run in Run.objects.filter(pk__in=[run.pk for run in runs])] == ["completed"] * 3
    statements = [query["sql"] for wrapper in opened for query in wrapper.queries_log]
    begins = [sql for sql in statements if sql.upper().startswith("BEGIN")]
    # The slot's connection: three a run, and the last claim, which finds the queue empty.
    assert len(begins) == 3 * len(runs) + 1
    assert len(checks) <= 1  # the one connection, checked at most once
    assert not [sql for sql in statements if "designer_recoverychain" in sql]


def test_the_worker_starts_with_its_start_up_heap_out_of_the_collectors_sight() -> None:
    """``run_worker`` freezes what start-up built (``gc.freeze``): the cyclic collector's full collections walked
    all of it, about 75 ms each, twice in a burst of 50 one-step runs (issue 33)."""
    gc.unfreeze()
    try:
        call_command("run_worker", batch=True, slots=1, startup_delay=False, reload=False, verbosity=0)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
