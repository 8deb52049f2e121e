"""The two things runs need from the task backend that ``django.tasks``' public API does not offer.

Everything else goes through ``designer.runs.queue`` on the public API. Only this module knows a backend's
internals, and only django-tasks-db's (the default); with any other backend both answers fall back to
behaviour that is safe without them.

* Whether ``enqueue`` joins the caller's database transaction. The API does not say; django-tasks-db writes
  a row in the same database, so a run and its task commit together. Elsewhere the enqueue is deferred to
  ``on_commit`` (and a process dying between the two is covered by the run's queue deadline).
* Closing the result of a task whose worker died. ``TaskResult`` is read-only and no backend call marks a
  result failed, so django-tasks-db would list that task as RUNNING forever; recovery marks it FAILED with
  ``WorkerLost`` so the task list tells the truth. Elsewhere the stale result is left as the backend has it.
"""

from __future__ import annotations

from typing import Any

from django.tasks import TaskResultStatus, task_backends


def _database_backend() -> type | None:
    try:
        from django_tasks_db.backend import DatabaseBackend
    except ImportError:  # another backend configured and django-tasks-db not installed
        return None
    return DatabaseBackend


def enqueues_in_transaction(task: Any) -> bool:
    backend_class = _database_backend()
    return backend_class is not None and isinstance(task_backends[task.backend], backend_class)


def close_abandoned(task: Any, result_id: str, exc: BaseException) -> bool:
    """Mark the RUNNING result ``result_id`` FAILED with ``exc``: its worker is gone. True when it did."""
    if not result_id or not enqueues_in_transaction(task):
        return False
    from django_tasks_db.models import DBTaskResult

    row = DBTaskResult.objects.filter(pk=result_id, status=TaskResultStatus.RUNNING).first()
    if row is None:
        return False
    row.set_failed(exc)
    return True
