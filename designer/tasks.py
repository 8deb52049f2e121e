"""Background tasks (``django.tasks``). The default backend is django-tasks-db; its worker runs them.

The designer app imports this module when it is ready, which hands the task objects to ``designer.runs.dispatch``
(``dispatch.provide``): everything that enqueues goes through the queue, and nothing imports this module back.

Any worker process runs them: ``manage.py run_worker`` (``db_worker`` that also forks the step processes up
front and recovers at once when it starts) or the backend's plain ``db_worker``. Recovery of orphaned runs
travels through the queue itself (``recover_runs``, designer/runs/sweep.py), so it needs no process of its own.
"""

from __future__ import annotations

from typing import Any

from django.tasks import task

from designer.notifications.services import deliver
from designer.runs import chain, dispatch, sweep
from designer.runs.batches import execute_batch as run_batch
from designer.runs.executor import execute, taken_ahead
from designer.runs.trial import run_trial
from designer.triggers.services import fire_tick


@task()
def execute_run(run_id: int) -> str:
    """Execute (or continue) one run until it completes, fails, is interrupted or cancelled.

    Returns what happened, for the task result: the run's final status, or ``skipped`` when another
    worker holds the run or it no longer needs one (a duplicate enqueue is harmless by design).
    """
    # A worker that takes work keeps recovery alive too; run_worker's sweep thread does it for the runs it takes
    # (issue 33: a query less per run).
    if not taken_ahead(run_id):
        chain.ensure_chain()
    return execute(run_id)


@task()
def fire_schedule(schedule_id: int, tick: str) -> str:
    """Fire one tick of a schedule (a run of its workflow) and queue its next tick; a duplicate does nothing.

    Enqueued due at the tick (``run_after``); see ``designer.triggers.services``."""
    return fire_tick(schedule_id, tick)


@task()
def execute_batch(batch_id: int) -> str:
    """Run one batch of a distributed foreach (``designer.runs.batches``): ``done``, ``cancelled``, or ``skipped``
    when another worker holds it or it is over (a duplicate enqueue is harmless)."""
    return run_batch(batch_id)


@task()
def try_node(workflow_id: int, node_id: str, document: dict[str, Any]) -> dict[str, Any]:
    """Run one task node on sample data (``designer.runs.trial``); nothing is saved but this task's result.

    ``workflow_id`` and ``node_id`` tell the editor whose trial a result is."""
    return run_trial(document)


@task()
def recover_runs(token: str) -> str:
    """One sweep of the recovery chain: enqueue the next sweep, then re-enqueue runs, batches and schedule ticks
    whose worker stopped or whose task was lost."""
    return sweep.sweep(token)


@task()
def deliver_notification(delivery_id: int) -> str:
    """One attempt at one notification (an email or a signed webhook call); a failed one queues its retry
    (``designer.notifications.services.deliver``). Returns the delivery's status."""
    return deliver(delivery_id)


# Enqueued by name (designer.runs.dispatch): their bodies enqueue, so nothing that enqueues imports this module.
dispatch.provide({"execute_run": execute_run, "execute_batch": execute_batch,
                  "deliver_notification": deliver_notification, "fire_schedule": fire_schedule,
                  "recover_runs": recover_runs, "try_node": try_node})
