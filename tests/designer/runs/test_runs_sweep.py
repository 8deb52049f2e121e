"""The recovery chain: recovery travels through the task queue, so any worker process runs it.

One chain is live at a time (its token on the RecoveryChain row); each sweep enqueues its successor one
interval ahead before recovering, a superseded sweep ends its chain, and a chain whose next sweep is long
overdue is restarted by the next process that looks.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.tasks import TaskResultStatus
from django.utils import timezone

from designer.models import RecoveryChain, Run
from designer.runs import chain, lease, queue, sweep
from designer.tasks import recover_runs

pytestmark = pytest.mark.django_db


def sweeps(enqueued: list[Any]) -> list[Any]:
    return [result for result in enqueued if result.task.name == "recover_runs"]


def chain_row() -> RecoveryChain:
    return RecoveryChain.objects.get()


def test_the_first_enqueue_of_a_run_starts_one_chain(workflow: Any, enqueued: list[Any]) -> None:
    first = Run.objects.create(team=workflow.team, workflow=workflow, document=workflow.document)
    second = Run.objects.create(team=workflow.team, workflow=workflow, document=workflow.document)
    queue.enqueue_run(first.pk)
    queue.enqueue_run(second.pk)

    [started] = sweeps(enqueued)
    assert started.status == TaskResultStatus.READY and started.args == [chain_row().token]
    assert chain_row().task_result_id == str(started.id)
    assert chain.ensure_chain() is None  # alive: nothing more


def test_a_sweep_enqueues_its_successor_later_then_recovers(workflow: Any, enqueued: list[Any]) -> None:
    token = chain.ensure_chain()
    assert token is not None
    stale = Run.objects.create(team=workflow.team, workflow=workflow, document=workflow.document,
                               lease_expires_at=timezone.now() - timedelta(seconds=1))
    before = timezone.now()

    assert sweep.sweep(token) == "re-enqueued 1"

    successor = sweeps(enqueued)[-1]
    assert successor.args == [token] and chain_row().task_result_id == str(successor.id)
    assert recover_runs.get_result(successor.id).status == TaskResultStatus.READY
    # Deferred by one interval: no worker takes it before then, so the chain does not spin.
    assert successor.task.run_after >= before + timedelta(seconds=chain.interval() * 0.9)
    assert Run.objects.get(pk=stale.pk).task_result_id  # the stale run was enqueued again


def test_a_superseded_sweep_ends_its_chain(enqueued: list[Any]) -> None:
    token = chain.ensure_chain()
    assert token is not None
    count = len(sweeps(enqueued))

    assert sweep.sweep("an-older-chain") == "superseded"
    assert len(sweeps(enqueued)) == count and chain_row().token == token


def test_a_broken_chain_is_restarted_and_the_old_one_ends(enqueued: list[Any]) -> None:
    old = chain.ensure_chain()
    assert old is not None
    # The worker that took the last sweep died before enqueuing the next: due_at passes and stays past.
    RecoveryChain.objects.update(due_at=timezone.now() - timedelta(hours=1))

    new = chain.ensure_chain()
    assert new is not None and new != old and chain_row().token == new
    assert sweeps(enqueued)[-1].args == [new]
    assert sweep.sweep(old) == "superseded"  # should the old sweep still turn up


@pytest.mark.django_db(transaction=True)
def test_processes_that_find_the_chain_broken_at_once_start_exactly_one(enqueued: list[Any]) -> None:
    barrier = threading.Barrier(6)
    started: list[str] = []

    def look() -> None:
        try:
            barrier.wait()
            token = chain.ensure_chain()
            if token is not None:
                started.append(token)
        finally:
            connection.close()

    threads = [threading.Thread(target=look) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(started) == 1 and chain_row().token == started[0]
    assert [result.args for result in sweeps(enqueued)] == [started]


def test_a_worker_taking_a_run_keeps_the_chain_alive(workflow: Any, enqueued: list[Any]) -> None:
    from designer.tasks import execute_run

    RecoveryChain.objects.create(pk=1, token="dead", due_at=timezone.now() - timedelta(hours=1))
    run = Run.objects.create(team=workflow.team, workflow=workflow, document=workflow.document)
    assert lease.claim(run.pk, "someone")  # execute_run will skip it: only the chain check matters here

    assert execute_run.call(run.pk) == "skipped"
    assert chain_row().token != "dead" and sweeps(enqueued)[-1].args == [chain_row().token]


def test_a_sweep_prunes_finished_sweep_rows_past_the_retention_only(settings: Any, workflow: Any) -> None:
    from django_tasks_db.models import DBTaskResult

    from designer.tasks import execute_run

    settings.TRELLIS_SWEEP_RETENTION_SECONDS = 3600
    now = timezone.now()

    def finished(task: Any, arg: Any, *, age: timedelta, status: str = TaskResultStatus.SUCCESSFUL) -> str:
        result_id = str(task.enqueue(arg).id)
        DBTaskResult.objects.filter(pk=result_id).update(status=status, finished_at=now - age)
        return result_id

    old = [finished(recover_runs, "old-chain", age=timedelta(hours=2)),
           finished(recover_runs, "old-chain", age=timedelta(days=3), status=TaskResultStatus.FAILED)]
    recent = finished(recover_runs, "old-chain", age=timedelta(minutes=5))
    old_run_task = finished(execute_run, 1, age=timedelta(days=3))  # not a sweep: left alone
    waiting = str(recover_runs.enqueue("old-chain").id)  # not finished: left alone
    token = chain.ensure_chain()
    assert token is not None

    sweep.sweep(token)

    left = set(DBTaskResult.objects.values_list("pk", flat=True).order_by())
    assert {str(pk) for pk in left} >= {recent, old_run_task, waiting, chain_row().task_result_id}
    assert not {str(pk) for pk in left} & set(old)

    settings.TRELLIS_SWEEP_RETENTION_SECONDS = 0  # every finished sweep
    assert sweep.prune_finished_sweeps() == 1
    assert not DBTaskResult.objects.filter(pk=recent).exists() and DBTaskResult.objects.filter(pk=waiting).exists()
