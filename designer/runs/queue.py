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

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.tasks import TaskResultStatus
from django.tasks.exceptions import TaskResultDoesNotExist, TaskResultMismatch

from designer.models import ForeachBatch, Run
from designer.monitoring import tracing
from designer.runs import fairness, task_backend, wakeup
from designer.runs.lease import expiry_in, lease_seconds
from designer.tasks import deliver_notification, execute_batch, execute_run

logger = logging.getLogger("designer.runs")


def enqueue(task: Any, *args: Any, record: Callable[[str], object] | None = None,
            run_after: datetime | None = None) -> None:
    """Enqueue ``task(*args)`` as part of the current transaction and hand its result id to ``record``.

    With a backend whose queue is in this database the task commits (or rolls back) with the caller's writes
    and ``record`` runs at once; otherwise the enqueue waits for the commit (a rolled-back caller enqueues
    nothing) and ``record`` runs then. ``run_after`` defers the task (the backend must support it).
    """
    if run_after is not None:
        task = task.using(run_after=run_after)

    def send() -> None:
        result = task.enqueue(*args)
        if record is not None:
            record(result.id)
        if run_after is None:
            wakeup.announce()

    if task_backend.enqueues_in_transaction(task):
        send()
    else:
        transaction.on_commit(send)


def status_of(task: Any, result_id: str) -> TaskResultStatus | None:
    """The queue's word on one enqueued task: READY (waiting), RUNNING (a worker took it), SUCCESSFUL or
    FAILED; None when unknown (no id recorded, a backend without results, a result pruned since)."""
    if not result_id or not task.get_backend().supports_get_result:
        return None
    try:
        return TaskResultStatus(task.get_result(result_id).status)
    except (TaskResultDoesNotExist, TaskResultMismatch):
        return None


def enqueue_run(run_id: int, *, run_after: datetime | None = None) -> None:
    """Enqueue ``execute_run(run_id)``, stamp the queue deadline and record the task's result id. Call inside
    the transaction that made the run runnable: with the database backend the task commits (or rolls back)
    together with it. Also makes sure the recovery chain is alive (``sweep.ensure_chain``).

    ``run_after`` (a waiting run's ``wake_at``): the task is enqueued to run then and the queue's deadline is a
    lease after it, so recovery does not take the waiting run for an orphan before its time. When the run's
    recorded task still waits in the queue for that time (a duplicate task claimed the run a little early and
    the engine waited again), no other is enqueued: a waiting run has one future task, not one more per early
    duplicate."""
    from designer.runs import sweep  # sweep enqueues its own successor through this module

    deadline = expiry_in(lease_seconds()) if run_after is None else run_after + timedelta(seconds=lease_seconds())
    Run.objects.filter(pk=run_id).update(lease_owner="", lease_expires_at=deadline)
    traceparent = tracing.current_traceparent()
    if traceparent:  # the span that first enqueued the run is its trace's root (designer/monitoring/tracing.py)
        Run.objects.filter(pk=run_id, traceparent="").update(traceparent=traceparent)
    if run_after is None or not _already_queued_for(run_id, run_after):
        owner = Run.objects.filter(pk=run_id).values_list("team_id", "workflow_id").first()

        def recorded(result_id: str) -> None:
            Run.objects.filter(pk=run_id).update(task_result_id=result_id)
            _own(execute_run, result_id, owner)

        enqueue(execute_run, run_id, run_after=run_after, record=recorded)
    sweep.ensure_chain()


def _own(task: Any, result_id: str, owner: tuple[int, int] | None) -> None:
    """Say whose work the task is, for ``run_worker``'s fair pick (only the database backend's rows can)."""
    if owner is not None and task_backend.enqueues_in_transaction(task):
        fairness.record_owner(result_id, team_id=owner[0], workflow_id=owner[1])


def _already_queued_for(run_id: int, run_after: datetime) -> bool:
    """Whether the run's recorded task still waits in the queue to run at ``run_after``: not later (the run
    would wake late) and not earlier than the claim's clock slack (it would find the run not due and skip)."""
    from designer.runs.waiting import CLOCK_SLACK_SECONDS  # waiting enqueues through this module

    result_id = Run.objects.filter(pk=run_id).values_list("task_result_id", flat=True).first()
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
    enqueue(execute_batch, batch_pk, run_after=run_after,
            record=lambda result_id: _own(execute_batch, result_id, owner))


def enqueue_delivery(delivery_id: int, *, run_after: datetime | None = None) -> None:
    """Enqueue one attempt at a notification (``designer.notifications``), with the caller's transaction."""
    enqueue(deliver_notification, delivery_id, run_after=run_after)
