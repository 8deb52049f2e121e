"""Starting a run writes its rows in one short transaction (issue 33): on SQLite that transaction holds the
database's one write lock, which the worker running the runs waits for, so every statement in it is paid twice.
The run comes back as stored, without being read again."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from designer.models import QueuedTask, Run, RunValue
from designer.runs import services as run_services
from designer.runs.dispatch import task_named

pytestmark = pytest.mark.django_db

_WRITE = re.compile(r'^\s*(INSERT INTO|UPDATE|DELETE FROM)\s+"?(\w+)"?', re.I)


def _statements(captured: CaptureQueriesContext) -> list[str]:
    return [query["sql"] for query in captured.captured_queries]


@pytest.mark.django_db(transaction=True)  # the service's own transaction, not a savepoint in the test's
def test_a_run_is_recorded_and_queued_in_six_writes_and_one_read(cast: Any, workflow: Any) -> None:
    run_services.start_run(actor=cast.editor, workflow=workflow, input={"amount": 3})  # the chain starts once
    with CaptureQueriesContext(connection) as captured:
        run = run_services.start_run(actor=cast.editor, workflow=workflow, input={"amount": 3})
    statements = _statements(captured)
    writes = [(found.group(1).split()[0].upper(), found.group(2)) for sql in statements
              if (found := _WRITE.match(sql))]
    # The run, its input, its one searchable input value, the task and whose it is; then what needs the new id.
    assert writes == [("INSERT", Run._meta.db_table), ("INSERT", "designer_runinput"),
                      ("INSERT", RunValue._meta.db_table), ("INSERT", "django_tasks_database_dbtaskresult"),
                      ("INSERT", QueuedTask._meta.db_table), ("UPDATE", Run._meta.db_table)]
    # No savepoints, no re-read of what was just written: only the recovery chain's one indexed read (and the
    # permission check's one before the transaction).
    assert not [sql for sql in statements if sql.upper().startswith(("SAVEPOINT", "RELEASE"))]
    reads = [sql for sql in statements if sql.lstrip().upper().startswith("SELECT")]
    assert len(reads) == 2
    assert "designer_recoverychain" in reads[-1]
    assert run.status == "queued"


def test_the_run_started_is_the_row_as_committed(cast: Any, workflow: Any) -> None:
    run = run_services.start_run(actor=cast.editor, workflow=workflow, input={"amount": 3, "who": ["a", "b"]})
    stored = Run.objects.get(pk=run.pk)
    assert {field.attname: getattr(run, field.attname) for field in Run._meta.concrete_fields} == {
        field.attname: getattr(stored, field.attname) for field in Run._meta.concrete_fields}
    assert (run.runtime_id, run.lease_owner, run.lease_expires_at is not None) == (f"run_{run.pk:013d}", "", True)
    assert run.input == stored.input == {"amount": 3, "who": ["a", "b"]}
    assert sorted(RunValue.objects.filter(run_id=run.pk).values_list("side", "path", "text")) == [
        ("input", "amount", "3"), ("input", "who[*]", "a"), ("input", "who[*]", "b")]
    task = task_named("execute_run").get_result(run.task_result_id)
    assert (task.status, task.args) == ("READY", [run.pk])
    assert QueuedTask.objects.filter(task_id=run.task_result_id, team_id=workflow.team_id,
                                     workflow_id=workflow.pk).exists()
    run.save()  # an ordinary save of what came back changes nothing
    assert Run.objects.get(pk=run.pk).input == {"amount": 3, "who": ["a", "b"]}


def test_with_a_backend_outside_the_database_the_task_is_enqueued_and_recorded_at_commit(
        cast: Any, workflow: Any, settings: Any, django_capture_on_commit_callbacks: Any) -> None:
    settings.TASKS = {"default": {"BACKEND": "django.tasks.backends.dummy.DummyBackend"}}
    with django_capture_on_commit_callbacks(execute=True):
        run = run_services.start_run(actor=cast.editor, workflow=workflow, input={"amount": 3})
        assert Run.objects.get(pk=run.pk).task_result_id == ""  # nothing is enqueued before the commit
    stored = Run.objects.get(pk=run.pk)
    assert stored.task_result_id == run.task_result_id != ""
    assert stored.runtime_id == f"run_{run.pk:013d}"
    assert not QueuedTask.objects.exists()  # whose a task is is kept for the database backend's rows only
