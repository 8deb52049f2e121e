"""Starting a run checks everything before it takes SQLite's write lock (issue 33): its transaction holds the
database's one write lock from its first statement, and an API starting runs back to back held it nearly all
the time, through each draft's analysis, so the worker that was to run them waited. Against a real second
connection holding the write lock, as another process would."""

from __future__ import annotations

import sqlite3
import threading
import time
from typing import Any

import pytest
from django.db import connection

from designer.core.errors import DesignerError
from designer.models import Run
from designer.runs import services as run_services
from designer.workflows import services as workflow_services
from runtime.errors import WorkflowError

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's one write lock"),
]


def broken_draft(cast: Any, workflow: Any) -> None:
    document = {**workflow.document, "routes": [*workflow.document["routes"],
                                                {"source": "assess", "label": "nope", "target": "record"}]}
    workflow_services.save_document(actor=cast.owner, workflow=workflow, revision=workflow.revision,
                                    document=document)


@pytest.mark.parametrize(("case", "code"), [
    ("input", "request.invalid"),      # not an object
    ("unpublished", "workflow.not_published"),  # the latest version, of a workflow with none (a read)
    ("draft", "workflow.invalid"),     # the draft's analysis finds an error
])
def test_a_refused_run_is_refused_while_another_process_holds_the_write_lock(
        cast: Any, workflow: Any, write_lock_holder: sqlite3.Connection, case: str, code: str) -> None:
    if case == "draft":
        broken_draft(cast, workflow)
    workflow.refresh_from_db()
    arguments: dict[str, Any] = {"input": "not an object"} if case == "input" else {}
    version = run_services.LATEST if case == "unpublished" else run_services.DRAFT
    write_lock_holder.execute("BEGIN IMMEDIATE")
    # Without the lock: the old start_run waited for it here (20 s, then "database is locked").
    with pytest.raises((DesignerError, WorkflowError)) as refused:
        run_services.start_run(actor=cast.editor, workflow=workflow, version=version, **arguments)
    assert refused.value.code == code
    write_lock_holder.execute("ROLLBACK")
    assert not Run.objects.exists()


def test_a_run_checked_while_another_process_writes_is_recorded_once_it_lets_go(
        cast: Any, workflow: Any, write_lock_holder: sqlite3.Connection) -> None:
    started: dict[str, Any] = {}
    write_lock_holder.execute("BEGIN IMMEDIATE")

    def start() -> None:
        try:
            started["run"] = run_services.start_run(actor=cast.editor, workflow=workflow,
                                                    input={"amount": 3}, version=run_services.DRAFT)
        except BaseException as exc:  # handed to the test
            started["error"] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=start)
    thread.start()
    time.sleep(0.1)  # nothing can be recorded before the commit below, however long the thread waits
    assert write_lock_holder.execute(f"SELECT COUNT(*) FROM {Run._meta.db_table}").fetchone() == (0,)
    write_lock_holder.execute("COMMIT")
    thread.join(60)
    assert "error" not in started, started.get("error")
    run = Run.objects.get()
    assert (started["run"].pk, run.status, run.input, run.task_result_id != "") == (run.pk, "queued", {"amount": 3},
                                                                                   True)
