"""Finding runs that nobody is executing and handing them to a worker again.

Every enqueue of a run's task (``queue.enqueue_run``) also stamps ``lease_expires_at`` (with no owner):
"the queue has this long to hand the run to a worker", and records the task's
result id on the run. A runnable run whose lease has expired is therefore
orphaned by a dead worker or lost by the queue, and is enqueued again, unless
the queue says (``queue.status_of``, public ``django.tasks`` API) that its
task still waits there, so a long queue never piles up duplicates. A duplicate
would be harmless anyway: only one task can claim the run's lease, the others
return at once.

Who calls ``requeue_stale_runs``: the ``recover_runs`` task chain
(``designer.runs.sweep``), which any worker process runs, and ``run_worker``
once at start-up.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import DatabaseError, transaction
from django.db.models import Q
from django.tasks import TaskResultStatus

from designer.models import Run
from designer.runs import queue, task_backend
from designer.runs.batches import requeue_stale_batches
from designer.runs.dispatch import status_of, task_named
from designer.runs.lease import RUNNABLE, WANTS_WORKER, bounded_lock_wait, lease_now

logger = logging.getLogger(__name__)


class WorkerLost(Exception):
    """Recorded on the task result of an execution whose worker stopped renewing the run's lease."""


def stale_runs() -> Any:
    """Runs that want a worker whose lease (or queue deadline, for a waiting run its ``wake_at`` plus a lease)
    has expired."""
    # A run waiting for its distributed foreach batches (no wake_at) is woken by its last batch, not by this.
    wanted = Q(status__in=RUNNABLE) | Q(status=Run.Status.WAITING, wake_at__isnull=False)
    return Run.objects.filter(wanted).filter(
        Q(lease_expires_at__lt=lease_now()) | Q(lease_expires_at__isnull=True)
    )


def requeue_stale_runs() -> list[int]:
    """Enqueue every stale run once; returns their ids. Safe to call from several workers at once: the
    conditional UPDATE lets exactly one of them re-stamp (and so enqueue) each run. Never waits on a locked
    row: a run whose row another transaction holds (a worker frozen mid-checkpoint) is passed by this time."""
    requeue_stale_batches()  # the batches of distributed foreach nodes are leased the same way
    candidates = list(stale_runs().values_list("pk", "lease_expires_at", "task_result_id"))
    if not candidates:
        return []
    requeued: list[int] = []
    for run_id, expired_at, result_id in candidates:
        status = status_of(task_named("execute_run"), result_id)
        if status == TaskResultStatus.READY:  # still waiting in the queue (a backlog longer than the deadline)
            continue
        try:
            with transaction.atomic():
                bounded_lock_wait()
                # Still exactly as we saw it? Then nobody claimed or re-stamped it in between.
                still_stale = Run.objects.filter(pk=run_id, status__in=WANTS_WORKER, lease_expires_at=expired_at)
                if expired_at is None:
                    still_stale = Run.objects.filter(pk=run_id, status__in=WANTS_WORKER,
                                                     lease_expires_at__isnull=True)
                if not still_stale.select_for_update(skip_locked=True).values_list("pk", flat=True):
                    continue
                still_stale.update(lease_owner="")
                if status == TaskResultStatus.RUNNING:  # taken by a worker that stopped renewing the lease
                    task_backend.close_abandoned(
                        task_named("execute_run"), result_id,
                        WorkerLost(f"the worker executing run {run_id} stopped renewing its lease"))
                queue.enqueue_run(run_id)
        except DatabaseError:  # a lock wait that timed out (a task row held by a frozen worker): next time
            logger.warning("run %s: recovery passed it by (a row it needs is locked); retrying later", run_id,
                           exc_info=True)
            continue
        requeued.append(run_id)
    if requeued:
        logger.warning("re-enqueued %d run(s) whose worker stopped: %s", len(requeued), requeued)
    return requeued
