"""Runs that wait for a time without a worker: a retry's backoff or a ``wait`` step.

The worker's engine runs with ``sleep_in_process=False``: instead of sleeping
through a backoff (while its heartbeat keeps the lease), it checkpoints the
frame's wake-up time and returns ``waiting``. The worker then stores the run
as ``waiting`` with ``wake_at``, drops the lease and enqueues the run's task
again with ``run_after=wake_at`` (django.tasks' ``Task.using``), all in one
transaction, and goes on with other work. Whichever worker takes the task at
that time claims the run and continues it from the checkpoint.

Recovery (``designer.runs.recovery``) treats a waiting run like a queued one
whose queue deadline is ``wake_at`` plus a lease: not orphaned before then.

``TRELLIS_RUN_MAX_RETRY_DELAY_SECONDS`` caps the total backoff of one node's
retry policy (``runtime.engine.EngineOptions(max_retry_delay=)``): a document over it gets
the ``retry.delay_too_long`` diagnostic in the editor and is refused when a
run starts.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.db import transaction

from designer.conf import trellis
from designer.models import Run
from designer.runs import queue
from designer.runs.lease import LeaseLost, release


def max_retry_delay() -> float | None:
    """Seconds of backoff one node's retry policy may add up to; ``0`` (or less) turns the cap off."""
    return trellis.RUN_MAX_RETRY_DELAY_SECONDS


def as_datetime(wake_at: float) -> datetime:
    """The engine's wake-up time (Unix seconds) as an aware datetime."""
    return datetime.fromtimestamp(wake_at, UTC)


def suspend(run_id: int, owner: str, wake_at: float, **fields: Any) -> str:
    """Store a run the engine left ``waiting`` (with ``fields``), drop the lease and enqueue its task for
    ``wake_at``; ``LeaseLost`` (and nothing written) when this worker no longer holds the run."""
    when = as_datetime(wake_at)
    with transaction.atomic():
        if not release(run_id, owner, status=Run.Status.WAITING, wake_at=when, **fields):
            raise LeaseLost(f"run {run_id}: lease lost before the run could wait")
        queue.enqueue_run(run_id, run_after=when)
    return "waiting"
