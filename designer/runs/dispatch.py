"""Handing tasks to ``django.tasks``: the task objects by name, an enqueue that joins the caller's transaction,
and the queue's word on a task enqueued earlier.

The task objects are defined in ``designer.tasks``, whose bodies (the executor, batches, sweeps) enqueue through
here and ``designer.runs.queue``; so nothing here imports them. ``designer.tasks`` hands them over when the app
is ready (``provide``), and callers ask for one by name (``task_named``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Literal

from django.db import transaction
from django.tasks import TaskResultStatus
from django.tasks.exceptions import TaskResultDoesNotExist, TaskResultMismatch

from designer.runs import task_backend, wakeup

TaskName = Literal["execute_run", "execute_batch", "deliver_notification", "fire_schedule", "recover_runs",
                   "try_node"]

_tasks: dict[TaskName, Any] = {}


def provide(tasks: Mapping[TaskName, Any]) -> None:
    """Hand the queue the task objects it enqueues (``designer.tasks`` does, once, when it is imported)."""
    _tasks.update(tasks)


def task_named(name: TaskName) -> Any:
    """The ``django.tasks`` task called ``name``."""
    try:
        return _tasks[name]
    except KeyError:
        raise RuntimeError(f"the task {name!r} is not wired into the queue: designer.tasks provides it when the "
                           "designer app is ready (is 'designer' in INSTALLED_APPS?)") from None


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
