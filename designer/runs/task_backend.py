"""The two things runs need from the task backend that ``django.tasks``' public API does not offer.

Everything else goes through ``designer.runs.queue`` on the public API. Only this module knows a backend's
internals, and only django-tasks-db's (the default); with any other backend both answers fall back to
behaviour that is safe without them.

* Whether ``enqueue`` joins the caller's database transaction. The API does not say; django-tasks-db writes
  a row in the same database, so a run and its task commit together. Elsewhere the enqueue is deferred to
  ``on_commit`` (and a process dying between the two is covered by the run's queue deadline).
* Marking the task a worker thread runs SUCCESSFUL in the caller's transaction (``running`` and ``succeed``), so
  a run's end is one commit with its task's (issue 33). Without a running task (the plain ``db_worker``, a test
  calling the executor) the backend's worker marks it as usual.
* Closing the result of a task whose worker died. ``TaskResult`` is read-only and no backend call marks a
  result failed, so django-tasks-db would list that task as RUNNING forever; recovery marks it FAILED with
  ``WorkerLost`` so the task list tells the truth. Elsewhere the stale result is left as the backend has it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from django.db import connections
from django.tasks import TaskResultStatus, task_backends
from django.utils import timezone

from designer.core.prepared import prepared_cursor

#: The task result a ``run_worker`` slot runs on this thread (``running``), and whether ``succeed`` marked it.
_local = threading.local()


class Running:
    """A task result being run on this thread; ``done`` once ``succeed`` has written its success."""

    def __init__(self, result: Any) -> None:
        self.result = result
        self.done = False


@contextlib.contextmanager
def running(result: Any) -> Iterator[Running]:
    """While the block runs the task of ``result`` (a django-tasks-db ``DBTaskResult``) on this thread."""
    current = Running(result)
    _local.running = current
    try:
        yield current
    finally:
        _local.running = None


def succeed(return_value: Any) -> bool:
    """Mark the task this thread runs SUCCESSFUL with ``return_value`` in the caller's transaction; False when no
    task is running here (the backend's worker then marks it when the task returns). What django-tasks-db's
    ``set_successful`` writes, as one SQL UPDATE."""
    current: Running | None = getattr(_local, "running", None)
    if current is None or current.done:
        return False
    result = current.result
    result.status = TaskResultStatus.SUCCESSFUL
    result.finished_at = timezone.now()
    result.return_value = return_value
    result.exception_class_path = ""
    result.traceback = ""
    connection = connections[result._state.db or "default"]
    names = ("status", "finished_at", "return_value", "exception_class_path", "traceback", "id")
    fields = [type(result)._meta.get_field(name) for name in names]
    values = [field.get_db_prep_save(getattr(result, field.attname), connection) for field in fields]
    quote = connection.ops.quote_name
    sets = ", ".join(f"{quote(field.column)} = %s" for field in fields[:-1])
    with prepared_cursor(connection) as cursor:
        cursor.execute(f"UPDATE {quote(type(result)._meta.db_table)} SET {sets} WHERE {quote(fields[-1].column)} = %s",
                       values)
    current.done = True
    return True


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
