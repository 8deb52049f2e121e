from __future__ import annotations

import time

from django.tasks import TaskResultStatus, task

# Tasks are found by module path, so the worker subprocess imports this module
# as ``tests.designer.runs.test_task_worker`` (pytest's importlib mode, repo on sys.path).


@task
def add(a: int, b: int) -> int:
    return a + b


def test_run_worker_executes_task_enqueued_by_the_test(run_worker):
    result = add.enqueue(2, 3)
    assert result.status == TaskResultStatus.READY

    run_worker()

    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 5


def test_background_worker_picks_up_tasks_while_running(background_worker):
    result = add.enqueue(20, 22)

    deadline = time.monotonic() + 60
    while result.status != TaskResultStatus.SUCCESSFUL and time.monotonic() < deadline:
        assert background_worker.poll() is None, background_worker.stdout.read()
        time.sleep(0.1)
        result.refresh()

    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 42
