"""The recovery chain: one ``recover_runs`` task at a time, each enqueuing its successor (``designer.runs.sweep``
does the sweeping). ``ensure_chain`` starts a chain when none is alive; every enqueue of a run, every
``execute_run`` a worker takes and every ``run_worker`` that starts calls it (one indexed read when alive).
"""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from designer.conf import trellis
from designer.core.prepared import prepared_cursor
from designer.models import RecoveryChain
from designer.runs.dispatch import enqueue, task_named
from designer.runs.lease import expiry_in, lease_seconds

logger = logging.getLogger("designer.runs")

CHAIN = 1  # RecoveryChain's one row


def interval() -> float:
    """Seconds between sweeps: ``TRELLIS_RECOVERY_INTERVAL_SECONDS``, else half the run lease (a dead worker's
    run waits at most a lease and a half)."""
    value = trellis.RECOVERY_INTERVAL_SECONDS
    return value if value is not None else max(lease_seconds() / 2, 0.5)


def _grace() -> float:
    """How long past ``due_at`` a sweep may still be waiting for a free worker before the chain counts as
    broken. Too short only costs a superseded chain (one extra sweep), never two live ones."""
    return max(lease_seconds(), 2 * interval())


def recover_task() -> Any:
    return task_named("recover_runs")


def _can_chain(task: Any) -> bool:
    # A backend that cannot defer would run the successor at once, forever; run_worker's start-up recovery
    # is then all there is (README: Deployment).
    return bool(task.get_backend().supports_defer)


def enqueue_sweep(token: str, *, delay: float) -> None:
    task = recover_task()
    enqueue(task, token, run_after=timezone.now() + timedelta(seconds=delay) if delay else None,
                  record=lambda result_id: RecoveryChain.objects.filter(pk=CHAIN, token=token)
                  .update(task_result_id=result_id))


def _broken() -> Q:
    return Q(due_at__isnull=True) | Q(due_at__lt=expiry_in(-_grace()))


def _alive() -> bool:
    """The chain is not ``_broken()``: one indexed read, as SQL. Every run's enqueue and every ``execute_run``
    asks, and compiling the ORM's query cost more than running it (issue 33: ~4% of a one-step run's worker
    CPU). "Now" is ``lease_now()``'s, as in ``_broken``: the database's clock on PostgreSQL."""
    table = connection.ops.quote_name(RecoveryChain._meta.db_table)
    if connection.vendor == "postgresql":
        since, params = "STATEMENT_TIMESTAMP() - make_interval(secs => %s)", [_grace()]
    else:
        since = "%s"
        params = [connection.ops.adapt_datetimefield_value(timezone.now() - timedelta(seconds=_grace()))]
    with prepared_cursor(connection) as cursor:
        cursor.execute(f"SELECT 1 FROM {table} WHERE id = %s AND due_at IS NOT NULL AND due_at >= {since}",
                       [CHAIN, *params])
        return cursor.fetchone() is not None


def ensure_chain() -> str | None:
    """Start a recovery chain unless one is alive; the new chain's token, or None. Cheap when it is alive."""
    if not _can_chain(recover_task()):
        return None
    if _alive():
        return None
    token = uuid.uuid4().hex
    with transaction.atomic():
        RecoveryChain.objects.bulk_create([RecoveryChain(pk=CHAIN)], ignore_conflicts=True)
        # Conditional: of several processes that saw the chain broken, exactly one restarts it.
        if not RecoveryChain.objects.filter(pk=CHAIN).filter(_broken()).update(
                token=token, due_at=expiry_in(interval()), task_result_id=""):
            return None
        enqueue_sweep(token, delay=0)
    logger.info("started the recovery chain %s (every %.1fs)", token, interval())
    return token
