"""Background tasks (``django.tasks``). The default backend is django-tasks-db; its worker runs them.

Any worker process runs them: ``manage.py run_worker`` (``db_worker`` that also forks the step processes up
front and recovers at once when it starts) or the backend's plain ``db_worker``. Recovery of orphaned runs
travels through the queue itself (``recover_runs``, designer/runs/sweep.py), so it needs no process of its own.
"""

from __future__ import annotations

from django.tasks import task


@task()
def execute_run(run_id: int) -> str:
    """Execute (or continue) one run until it completes, fails, is interrupted or cancelled.

    Returns what happened, for the task result: the run's final status, or ``skipped`` when another
    worker holds the run or it no longer needs one (a duplicate enqueue is harmless by design).
    """
    from designer.runs import sweep
    from designer.runs.executor import execute  # keeps task discovery free of runtime imports

    sweep.ensure_chain()  # a worker that takes work keeps recovery alive too
    return execute(run_id)


@task()
def recover_runs(token: str) -> str:
    """One sweep of the recovery chain: enqueue the next sweep, then re-enqueue runs whose worker stopped."""
    from designer.runs import sweep

    return sweep.sweep(token)
