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
from datetime import timedelta

from django.db import transaction
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from designer.conf import trellis
from designer.models import RecoveryChain
from designer.runs import chain, retention, signals
from designer.runs.lease import expiry_in
from designer.runs.recovery import requeue_stale_runs

logger = logging.getLogger("designer.runs")

#: Finished sweep rows one sweep deletes at most: bounded work per link, far above the one row a link adds.
PRUNE_BATCH = 1000


def sweep(token: str) -> str:
    """One link of the chain: enqueue the next sweep, then recover. ``superseded`` when another chain is live."""
    every = chain.interval()
    with transaction.atomic():
        if not RecoveryChain.objects.filter(pk=chain.CHAIN, token=token).update(due_at=expiry_in(every)):
            return "superseded"
        chain.enqueue_sweep(token, delay=every)
    requeued = requeue_stale_runs()
    signals.recovery_swept.send(sender=RecoveryChain)  # e.g. lost schedule ticks (designer.triggers.receivers)
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
    old = (DBTaskResult.objects.finished().filter(task_path=chain.recover_task().module_path, finished_at__lte=cutoff)
           .order_by())
    pks = list(old.values_list("pk", flat=True)[:PRUNE_BATCH])
    if not pks:
        return 0
    deleted, _ = DBTaskResult.objects.filter(pk__in=pks).delete()
    logger.debug("pruned %d finished recovery sweeps", deleted)
    return deleted

