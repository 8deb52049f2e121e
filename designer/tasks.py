"""Background tasks (``django.tasks``). The default backend is django-tasks-db; its worker runs them.

Run ``manage.py run_worker`` (``db_worker`` plus recovery of orphaned runs) to process them.
"""

from __future__ import annotations

from django.tasks import task


@task()
def execute_run(run_id: int) -> str:
    """Execute (or continue) one run until it completes, fails, is interrupted or cancelled.

    Returns what happened, for the task result: the run's final status, or ``skipped`` when another
    worker holds the run or it no longer needs one (a duplicate enqueue is harmless by design).
    """
    from designer.runs.executor import execute  # keeps task discovery free of runtime imports

    return execute(run_id)


@task()
def fire_schedule(schedule_id: int, tick: str) -> str:
    """Fire one tick of a schedule (a run of its workflow) and queue its next tick; a duplicate does nothing.

    Enqueued due at the tick (``run_after``); see ``designer.services.triggers``."""
    from designer.services.triggers import fire_tick

    return fire_tick(schedule_id, tick)


@task()
def execute_batch(batch_id: int) -> str:
    """Run one batch of a distributed foreach (``designer.runs.batches``): ``done``, ``cancelled``, or ``skipped``
    when another worker holds it or it is over (a duplicate enqueue is harmless)."""
    from designer.runs.batches import execute_batch as run_batch

    return run_batch(batch_id)
