"""Finding runs that nobody is executing and handing them to a worker again.

Every enqueue of a run's task also stamps ``lease_expires_at`` (with no owner):
"the queue has this long to hand the run to a worker". A runnable run whose
lease has expired is therefore either orphaned by a dead worker or lost by the
queue, and is enqueued again. For the database task backend the check also
skips runs that still have a READY task row, so a long queue never piles up
duplicates. A duplicate would be harmless anyway: only one task can claim the
run's lease, the others return at once.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from django.db import DatabaseError, transaction
from django.db.models import Q
from django.tasks import task_backends

from designer.models import Run
from designer.runs.lease import RUNNABLE, bounded_lock_wait, expiry_in, lease_now, lease_seconds

logger = logging.getLogger(__name__)


def _execute_task() -> Any:
    from designer.tasks import execute_run  # the task module imports the executor, which imports this one

    return execute_run


def _is_database_backend(task: Any) -> bool:
    try:
        from django_tasks_db.backend import DatabaseBackend
    except ImportError:  # another backend configured and django-tasks-db not installed
        return False
    return isinstance(task_backends[task.backend], DatabaseBackend)


def enqueue_execution(run_id: int) -> None:
    """Enqueue ``execute_run(run_id)`` and stamp the queue deadline. Call inside the transaction that made
    the run runnable: with the database backend the task row commits (or rolls back) together with it."""
    task = _execute_task()
    Run.objects.filter(pk=run_id).update(lease_owner="", lease_expires_at=expiry_in(lease_seconds()))
    if _is_database_backend(task):
        task.enqueue(run_id)
    else:
        transaction.on_commit(lambda: task.enqueue(run_id))


def _pending_run_ids(run_ids: Iterable[int]) -> set[int]:
    """Runs among ``run_ids`` that already wait in the database queue (READY task rows)."""
    task = _execute_task()
    if not _is_database_backend(task):
        return set()
    from django_tasks_db.models import DBTaskResult

    wanted = set(run_ids)
    pending: set[int] = set()
    rows = DBTaskResult.objects.ready().filter(task_path=task.module_path).values_list("args_kwargs", flat=True)
    for args_kwargs in rows.iterator():
        args = (args_kwargs or {}).get("args") or []
        kwargs = (args_kwargs or {}).get("kwargs") or {}
        run_id = args[0] if args else kwargs.get("run_id")
        if run_id in wanted:
            pending.add(run_id)
    return pending


class WorkerLost(Exception):
    """Recorded on the task result of an execution whose worker stopped renewing the run's lease."""


def _close_orphaned_tasks(run_id: int) -> None:
    """Mark the database task rows still RUNNING for ``run_id`` as failed: their worker is gone (the run's
    lease expired), and the task list should say so rather than show them running forever."""
    task = _execute_task()
    if not _is_database_backend(task):
        return
    from django_tasks_db.models import DBTaskResult

    for row in DBTaskResult.objects.running().filter(task_path=task.module_path):
        args = (row.args_kwargs or {}).get("args") or []
        if args[:1] == [run_id]:
            row.set_failed(WorkerLost(f"the worker executing run {run_id} stopped renewing its lease"))


def stale_runs() -> Any:
    """Runnable runs whose lease (or queue deadline) has expired."""
    return Run.objects.filter(status__in=RUNNABLE).filter(
        Q(lease_expires_at__lt=lease_now()) | Q(lease_expires_at__isnull=True)
    )


def requeue_stale_runs() -> list[int]:
    """Enqueue every stale run once; returns their ids. Safe to call from several workers at once: the
    conditional UPDATE lets exactly one of them re-stamp (and so enqueue) each run. Never waits on a locked
    row: a run whose row another transaction holds (a worker frozen mid-checkpoint) is passed by this time."""
    from designer.runs.batches import requeue_stale_batches  # batches import this module

    requeue_stale_batches()  # the batches of distributed foreach nodes are leased the same way
    candidates = list(stale_runs().values_list("pk", "lease_expires_at"))
    if not candidates:
        return []
    pending = _pending_run_ids(pk for pk, _ in candidates)
    requeued: list[int] = []
    for run_id, expired_at in candidates:
        if run_id in pending:
            continue
        try:
            with transaction.atomic():
                bounded_lock_wait()
                # Still exactly as we saw it? Then nobody claimed or re-stamped it in between.
                still_stale = Run.objects.filter(pk=run_id, status__in=RUNNABLE, lease_expires_at=expired_at)
                if expired_at is None:
                    still_stale = Run.objects.filter(pk=run_id, status__in=RUNNABLE, lease_expires_at__isnull=True)
                if not still_stale.select_for_update(skip_locked=True).values_list("pk", flat=True):
                    continue
                still_stale.update(lease_owner="")
                _close_orphaned_tasks(run_id)
                enqueue_execution(run_id)
        except DatabaseError:  # a lock wait that timed out (a task row held by a frozen worker): next time
            logger.warning("run %s: recovery passed it by (a row it needs is locked); retrying later", run_id,
                           exc_info=True)
            continue
        requeued.append(run_id)
    if requeued:
        logger.warning("re-enqueued %d run(s) whose worker stopped: %s", len(requeued), requeued)
    return requeued
