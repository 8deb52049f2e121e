"""The boundary between runs and the task queue, on ``django.tasks``' public API only.

A run's execution is the ``execute_run`` task; the id of the latest one enqueued is stored on the run
(``Run.task_result_id``) and read back with ``task.get_result(id)``, whose ``status`` says whether the task
still waits in the queue (READY), was taken by a worker (RUNNING) or ended. Any backend that implements
``get_result`` works the same; one that does not (or a result it has pruned) answers "unknown", and recovery
then relies on the run's lease alone (a duplicate enqueue is harmless: only one task can claim a run).

What the public API cannot say lives in ``designer.runs.task_backend`` (see there).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db import transaction
from django.tasks import TaskResultStatus
from django.tasks.exceptions import TaskResultDoesNotExist, TaskResultMismatch

from designer.runs import task_backend

logger = logging.getLogger("designer.runs")


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
