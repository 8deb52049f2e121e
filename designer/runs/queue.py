"""Handing runs and batches to the task queue, on ``django.tasks``' public API only.

``enqueue_run`` and ``enqueue_batch`` are how anything starts (or continues) a run or a distributed foreach
batch: each stamps the queue's deadline on the row, so recovery (``designer.runs.recovery``) knows when a task
was lost. A run's execution is the ``execute_run`` task; the id of the latest one enqueued is stored on the run
(``Run.task_result_id``) and read back with ``task.get_result(id)``, whose ``status`` says whether the task
still waits in the queue (READY), was taken by a worker (RUNNING) or ended. Any backend that implements
``get_result`` works the same; one that does not (or a result it has pruned) answers "unknown", and recovery
then relies on the run's lease alone (a duplicate enqueue is harmless: only one task can claim a run).

What the public API cannot say lives in ``designer.runs.task_backend`` (see there).
"""

from __future__ import annotations

import functools
import logging
from datetime import datetime, timedelta
from typing import Any

from django.db import connection
from django.db.models import Field
from django.tasks import TaskResultStatus

from designer.core.prepared import prepared_cursor
from designer.models import ForeachBatch, Run, RunInput, RunValue
from designer.monitoring import tracing
from designer.runs import chain, fairness, task_backend
from designer.runs.dispatch import enqueue, status_of, task_named
from designer.runs.lease import CLOCK_SLACK_SECONDS, DATABASE_EXPIRY_SQL, expiry_in, lease_seconds

logger = logging.getLogger("designer.runs")


@functools.lru_cache(maxsize=4)
def _run_insert(vendor: str) -> tuple[str, tuple[Field[Any, Any], ...]]:
    """A new run's INSERT (every column but the id, which it returns) and its fields in the order of the values.
    On PostgreSQL the lease deadline is the database's clock plus a lease (``lease.expiry_in``): its value is
    the lease's length in seconds."""
    quote = connection.ops.quote_name
    fields = tuple(field for field in Run._meta.concrete_fields if not field.primary_key)
    marks = [DATABASE_EXPIRY_SQL
             if vendor == "postgresql" and field.name == "lease_expires_at" else "%s" for field in fields]
    sql = (f"INSERT INTO {quote(Run._meta.db_table)} ({', '.join(quote(field.column) for field in fields)}) "
           f"VALUES ({', '.join(marks)}) RETURNING {quote(Run._meta.pk.column)}, {quote('lease_expires_at')}")
    return sql, fields


def enqueue_new_run(run: Run, run_input: dict[str, Any]) -> None:
    """Record ``run`` (built, not saved) with its input and enqueue it: ``Run.objects.create`` then
    ``enqueue_run``, in the caller's transaction, as one INSERT of the run (queue deadline and trace included),
    its input's rows, the task's, and one UPDATE for what needs the new id (the runtime id, the task's id).

    On SQLite the caller's transaction holds the database's one write lock throughout, and the worker that is to
    run these runs waits for it: the ORM's create, input upsert, three savepoints, separate UPDATEs and a re-read
    were 20 statements and most of a creation's CPU inside that lock (issue 33). Nothing is read back: the
    object is given the values the row got."""
    vendor = connection.vendor
    sql, fields = _run_insert(vendor)
    run.status = Run.Status.QUEUED
    run.lease_owner = ""
    run.traceparent = tracing.current_traceparent()  # the span that first enqueued the run is its trace's root
    if vendor != "postgresql":
        run.lease_expires_at = expiry_in(lease_seconds())
    values = [lease_seconds() if vendor == "postgresql" and field.name == "lease_expires_at"
              else field.get_db_prep_save(field.pre_save(run, True), connection) for field in fields]
    with prepared_cursor(connection) as cursor:
        cursor.execute(sql, values)
        run.pk, deadline = cursor.fetchone()
        if vendor == "postgresql":
            run.lease_expires_at = deadline
        run._state.adding, run._state.db = False, connection.alias
        stored = RunInput._meta.get_field("value").get_db_prep_save(run_input, connection)
        cursor.execute(f"INSERT INTO {connection.ops.quote_name(RunInput._meta.db_table)} (run_id, value) "
                       "VALUES (%s, %s)", [run.pk, stored])
    run.input_read(run_input)
    RunValue.objects.add(run_id=run.pk, side="input", value=run_input)
    execute_run = task_named("execute_run")
    in_transaction = task_backend.enqueues_in_transaction(execute_run)

    def recorded(result_id: str) -> None:
        run.task_result_id = result_id
        if not in_transaction:  # after the commit: the UPDATE below is long done
            Run.objects.filter(pk=run.pk).update(task_result_id=result_id)
        _own(execute_run, result_id, (run.team_id, run.workflow_id))

    enqueue(execute_run, run.pk, record=recorded)
    run.runtime_id = Run.runtime_id_for(run.pk)
    with prepared_cursor(connection) as cursor:
        cursor.execute(f"UPDATE {connection.ops.quote_name(Run._meta.db_table)} SET runtime_id = %s, "
                       "task_result_id = %s WHERE id = %s", [run.runtime_id, run.task_result_id, run.pk])
    chain.ensure_chain()


def enqueue_run(run_id: int, *, run_after: datetime | None = None, owner: tuple[int, int] | None = None) -> None:
    """Enqueue ``execute_run(run_id)``, stamp the queue deadline and record the task's result id. Call inside
    the transaction that made the run runnable: with the database backend the task commits (or rolls back)
    together with it. Also makes sure the recovery chain is alive (``chain.ensure_chain``).

    ``run_after`` (a waiting run's ``wake_at``): the task is enqueued to run then and the queue's deadline is a
    lease after it, so recovery does not take the waiting run for an orphan before its time. When the run's
    recorded task still waits in the queue for that time (a duplicate task claimed the run a little early and
    the engine waited again), no other is enqueued: a waiting run has one future task, not one more per early
    duplicate.

    ``owner``: the run's ``(team_id, workflow_id)`` when the caller holds the run (read here otherwise)."""
    deadline = expiry_in(lease_seconds()) if run_after is None else run_after + timedelta(seconds=lease_seconds())
    Run.objects.filter(pk=run_id).update(lease_owner="", lease_expires_at=deadline)
    traceparent = tracing.current_traceparent()
    if traceparent:  # the span that first enqueued the run is its trace's root (designer/monitoring/tracing.py)
        Run.objects.filter(pk=run_id, traceparent="").update(traceparent=traceparent)
    if run_after is None or not _already_queued_for(run_id, run_after):
        if owner is None:
            owner = Run.objects.filter(pk=run_id).values_list("team_id", "workflow_id").first()

        def recorded(result_id: str) -> None:
            Run.objects.filter(pk=run_id).update(task_result_id=result_id)
            _own(task_named("execute_run"), result_id, owner)

        enqueue(task_named("execute_run"), run_id, run_after=run_after, record=recorded)
    chain.ensure_chain()


def _own(task: Any, result_id: str, owner: tuple[int, int] | None) -> None:
    """Say whose work the task is, for ``run_worker``'s fair pick (only the database backend's rows can)."""
    if owner is not None and task_backend.enqueues_in_transaction(task):
        fairness.record_owner(result_id, team_id=owner[0], workflow_id=owner[1])


def _already_queued_for(run_id: int, run_after: datetime) -> bool:
    """Whether the run's recorded task still waits in the queue to run at ``run_after``: not later (the run
    would wake late) and not earlier than the claim's clock slack (it would find the run not due and skip)."""
    result_id = Run.objects.filter(pk=run_id).values_list("task_result_id", flat=True).first()
    execute_run = task_named("execute_run")
    if status_of(execute_run, result_id or "") != TaskResultStatus.READY:
        return False
    planned = execute_run.get_result(result_id).task.run_after
    return planned is not None and run_after - timedelta(seconds=CLOCK_SLACK_SECONDS) <= planned <= run_after


def enqueue_batch(batch_pk: int, *, run_after: datetime | None = None) -> None:
    """Enqueue ``execute_batch`` inside the caller's transaction and stamp the queue deadline, as ``enqueue_run``
    does: a queued batch nobody takes within a lease is enqueued again (one that waits for ``run_after``, its
    items' wake-up time, not before a lease after it)."""
    deadline = expiry_in(lease_seconds()) if run_after is None else run_after + timedelta(seconds=lease_seconds())
    ForeachBatch.objects.filter(pk=batch_pk).update(status=ForeachBatch.Status.QUEUED, lease_owner="",
                                                    lease_expires_at=deadline)
    owner = ForeachBatch.objects.filter(pk=batch_pk).values_list("run__team_id", "run__workflow_id").first()
    execute_batch = task_named("execute_batch")
    enqueue(execute_batch, batch_pk, run_after=run_after,
            record=lambda result_id: _own(execute_batch, result_id, owner))


def enqueue_delivery(delivery_id: int, *, run_after: datetime | None = None) -> None:
    """Enqueue one attempt at a notification (``designer.notifications``), with the caller's transaction."""
    enqueue(task_named("deliver_notification"), delivery_id, run_after=run_after)
