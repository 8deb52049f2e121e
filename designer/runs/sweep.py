"""Recovery that runs in every worker, whatever command started it.

Recovery (``recovery.requeue_stale_runs``) is itself a task, ``recover_runs``, that enqueues its successor
one interval ahead (``run_after``) before it does its work. Whatever works the queue, ``run_worker`` or the
backend's plain ``db_worker`` on any machine, therefore also recovers orphaned runs, and no deployment has a
recovery process to forget. At any time one chain is live: ``RecoveryChain`` (one row) holds its token, and
a sweep whose token is not that one ends without a successor, so chains never multiply.

A chain breaks only if a worker dies between taking a sweep and enqueuing the next one. Then ``due_at``
passes, and the next enqueue of a run, the next ``execute_run`` a worker takes or the next ``run_worker`` to
start (``ensure_chain``, one indexed read) starts a new one. A sweep waits in the queue while every worker is
busy; but then no worker would be free to run a recovered run either.
"""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from designer.conf import trellis
from designer.models import RecoveryChain
from designer.runs import queue, retention
from designer.runs.lease import expiry_in, lease_seconds
from designer.runs.recovery import requeue_stale_runs
from designer.triggers.services import requeue_lost_ticks

logger = logging.getLogger("designer.runs")

CHAIN = 1  # RecoveryChain's one row
#: Finished sweep rows one sweep deletes at most: bounded work per link, far above the one row a link adds.
PRUNE_BATCH = 1000


def interval() -> float:
    """Seconds between sweeps: ``TRELLIS_RECOVERY_INTERVAL_SECONDS``, else half the run lease (a dead worker's
    run waits at most a lease and a half)."""
    value = trellis.RECOVERY_INTERVAL_SECONDS
    return value if value is not None else max(lease_seconds() / 2, 0.5)


def _grace() -> float:
    """How long past ``due_at`` a sweep may still be waiting for a free worker before the chain counts as
    broken. Too short only costs a superseded chain (one extra sweep), never two live ones."""
    return max(lease_seconds(), 2 * interval())


def _recover_task() -> Any:
    from designer.tasks import recover_runs  # the task module imports the executor, which imports recovery

    return recover_runs


def _can_chain(task: Any) -> bool:
    # A backend that cannot defer would run the successor at once, forever; run_worker's start-up recovery
    # is then all there is (README: Deployment).
    return bool(task.get_backend().supports_defer)


def _enqueue_sweep(token: str, *, delay: float) -> None:
    task = _recover_task()
    queue.enqueue(task, token, run_after=timezone.now() + timedelta(seconds=delay) if delay else None,
                  record=lambda result_id: RecoveryChain.objects.filter(pk=CHAIN, token=token)
                  .update(task_result_id=result_id))


def _broken() -> Q:
    return Q(due_at__isnull=True) | Q(due_at__lt=expiry_in(-_grace()))


def ensure_chain() -> str | None:
    """Start a recovery chain unless one is alive; the new chain's token, or None. Cheap when it is alive."""
    if not _can_chain(_recover_task()):
        return None
    if RecoveryChain.objects.filter(pk=CHAIN).exclude(_broken()).exists():
        return None
    token = uuid.uuid4().hex
    with transaction.atomic():
        RecoveryChain.objects.bulk_create([RecoveryChain(pk=CHAIN)], ignore_conflicts=True)
        # Conditional: of several processes that saw the chain broken, exactly one restarts it.
        if not RecoveryChain.objects.filter(pk=CHAIN).filter(_broken()).update(
                token=token, due_at=expiry_in(interval()), task_result_id=""):
            return None
        _enqueue_sweep(token, delay=0)
    logger.info("started the recovery chain %s (every %.1fs)", token, interval())
    return token


def sweep(token: str) -> str:
    """One link of the chain: enqueue the next sweep, then recover. ``superseded`` when another chain is live."""
    every = interval()
    with transaction.atomic():
        if not RecoveryChain.objects.filter(pk=CHAIN, token=token).update(due_at=expiry_in(every)):
            return "superseded"
        _enqueue_sweep(token, delay=every)
    requeued = requeue_stale_runs()
    requeue_lost_ticks()  # a schedule whose queued tick was lost gets it back (designer.triggers.services)
    prune_finished_sweeps()
    pruned = retention.prune_if_due()
    if pruned is not None and (pruned.runs or pruned.task_rows):
        return f"re-enqueued {len(requeued)}; pruned {pruned.runs} runs and {pruned.task_rows} task rows"
    return f"re-enqueued {len(requeued)}"


def prune_finished_sweeps() -> int:
    """Delete finished sweep task rows older than ``TRELLIS_SWEEP_RETENTION_SECONDS``; how many.

    A chain adds a row every interval (thousands a day) that nobody reads once it has ended; the queue's
    other rows (runs, batches, ticks, trials) are left to the deployment's own pruning."""
    cutoff = timezone.now() - timedelta(seconds=trellis.SWEEP_RETENTION_SECONDS)
    old = (DBTaskResult.objects.finished().filter(task_path=_recover_task().module_path, finished_at__lte=cutoff)
           .order_by())
    pks = list(old.values_list("pk", flat=True)[:PRUNE_BATCH])
    if not pks:
        return 0
    deleted, _ = DBTaskResult.objects.filter(pk__in=pks).delete()
    logger.debug("pruned %d finished recovery sweeps", deleted)
    return deleted

