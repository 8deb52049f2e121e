"""Run leases and stale-run recovery against the real database."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.tasks import TaskResultStatus
from django.utils import timezone

from designer.models import Run, RunInput
from designer.runs import lease, queue
from designer.runs.recovery import requeue_stale_runs
from designer.tasks import execute_run
from tests.designer.runs_support import finish_as_worker, take_as_dead_worker, task_result

pytestmark = pytest.mark.django_db


def make_run(workflow: Any, **fields: Any) -> Run:
    return Run.objects.create(team=workflow.team, workflow=workflow, document=workflow.document, **fields)


def expire(run: Run) -> None:
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))


def test_claim_is_exclusive_until_the_lease_expires(workflow: Any) -> None:
    run = make_run(workflow)

    first = lease.claim(run.pk, "worker-a")
    assert first is not None and first.status == "running" and first.attempts == 1
    assert first.started_at is not None
    assert lease.claim(run.pk, "worker-b") is None

    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    second = lease.claim(run.pk, "worker-b")
    assert second is not None and second.lease_owner == "worker-b" and second.attempts == 2
    assert second.started_at == first.started_at  # the run started once, however many workers it took


def test_a_claimed_run_is_the_whole_row_with_its_team_and_workflow(workflow: Any,
                                                                    django_assert_num_queries: Any) -> None:
    run = make_run(workflow, output={"x": 1})
    claimed = lease.claim(run.pk, "worker-a")
    assert claimed is not None
    stored = Run.objects.get(pk=run.pk)
    assert {field.attname: getattr(claimed, field.attname) for field in Run._meta.concrete_fields} == {
        field.attname: getattr(stored, field.attname) for field in Run._meta.concrete_fields}
    with django_assert_num_queries(0):  # what the worker labels the run with comes with the claim
        assert (claimed.team.slug, claimed.workflow.name) == (workflow.team.slug, workflow.name)
    with django_assert_num_queries(2):  # the rest is read when asked for, never a wrong default
        assert (claimed.team.name, claimed.workflow.team_id) == (workflow.team.name, workflow.team_id)


def test_a_claimed_run_comes_with_its_input(workflow: Any, django_assert_num_queries: Any) -> None:
    given = make_run(workflow, input={"customers": [{"id": 7}], "note": "é"})
    without = make_run(workflow)
    RunInput.objects.filter(run_id=without.pk).delete()  # a run stored before inputs had a row of their own
    claimed, bare = lease.claim(given.pk, "worker-a"), lease.claim(without.pk, "worker-a")
    assert claimed is not None and bare is not None
    stored = Run.objects.get(pk=given.pk).input
    with django_assert_num_queries(0):  # the drive reads the input at once: it came with the claim
        assert claimed.input == {"customers": [{"id": 7}], "note": "é"} == stored
        assert bare.input == {}


def test_renew_fails_for_a_worker_that_lost_its_lease(workflow: Any) -> None:
    run = make_run(workflow)
    assert lease.claim(run.pk, "worker-a")
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert lease.claim(run.pk, "worker-b")

    with pytest.raises(lease.LeaseLost):
        lease.renew(run.pk, "worker-a")
    lease.renew(run.pk, "worker-b")
    assert not lease.release(run.pk, "worker-a", status="failed")
    assert Run.objects.get(pk=run.pk).status == "running"


@pytest.mark.parametrize("status", ["completed", "failed", "cancelled", "interrupted"])
def test_runs_that_need_no_worker_cannot_be_claimed(workflow: Any, status: str) -> None:
    run = make_run(workflow, status=status)
    assert lease.claim(run.pk, "worker-a") is None


def test_enqueueing_records_the_tasks_result_id_on_the_run(workflow: Any, enqueued: list[Any]) -> None:
    run = make_run(workflow)
    queue.enqueue_run(run.pk)

    [execution] = [result for result in enqueued if result.task.name == "execute_run"]
    assert Run.objects.get(pk=run.pk).task_result_id == str(execution.id)
    recorded = task_result(run.pk)
    assert recorded.status == TaskResultStatus.READY and recorded.args == [run.pk]


def test_recovery_requeues_a_run_whose_worker_stopped_renewing(workflow: Any) -> None:
    run = make_run(workflow)
    queue.enqueue_run(run.pk)
    first = Run.objects.get(pk=run.pk).task_result_id
    take_as_dead_worker(first)  # taken by a worker ...
    assert lease.claim(run.pk, "dead-worker")  # ... that claimed the run and then died
    assert requeue_stale_runs() == []  # the lease is still live

    expire(run)
    assert requeue_stale_runs() == [run.pk]
    second = Run.objects.get(pk=run.pk).task_result_id
    assert second != first
    assert task_result(run.pk).status == TaskResultStatus.READY
    orphan = execute_run.get_result(first)
    assert orphan.status == TaskResultStatus.FAILED
    assert orphan.errors[-1].exception_class_path.endswith("recovery.WorkerLost")
    # Re-stamped with a queue deadline: checking again does not pile up duplicates.
    assert requeue_stale_runs() == []
    assert Run.objects.get(pk=run.pk).task_result_id == second
    # The dead worker, should it wake up, can no longer write.
    with pytest.raises(lease.LeaseLost):
        lease.renew(run.pk, "dead-worker")


def test_recovery_skips_a_run_whose_task_still_waits_in_the_queue(workflow: Any) -> None:
    run = make_run(workflow)
    queue.enqueue_run(run.pk)
    waiting = Run.objects.get(pk=run.pk).task_result_id
    expire(run)  # a backlog longer than the queue deadline

    assert requeue_stale_runs() == []
    assert Run.objects.get(pk=run.pk).task_result_id == waiting


@pytest.mark.parametrize("task_result_id", ["", "00000000-0000-0000-0000-000000000000", "not-an-id"])
def test_recovery_requeues_a_queued_run_whose_task_was_lost(workflow: Any, task_result_id: str) -> None:
    # Never enqueued, or its result pruned since, or an id the backend cannot read: the lease decides alone.
    run = make_run(workflow, lease_expires_at=timezone.now() - timedelta(seconds=1), task_result_id=task_result_id)
    assert requeue_stale_runs() == [run.pk]
    assert task_result(run.pk).status == TaskResultStatus.READY


def test_recovery_requeues_a_run_whose_last_task_finished_without_finishing_it(workflow: Any) -> None:
    # E.g. the task returned "skipped" while a now-dead worker still held the lease.
    run = make_run(workflow)
    queue.enqueue_run(run.pk)
    first = Run.objects.get(pk=run.pk).task_result_id
    take_as_dead_worker(first)
    finish_as_worker(first, "skipped")
    expire(run)
    assert requeue_stale_runs() == [run.pk]
    assert execute_run.get_result(first).status == TaskResultStatus.SUCCESSFUL  # left as it was
    assert task_result(run.pk).status == TaskResultStatus.READY


def test_a_run_that_keeps_killing_its_workers_is_failed_after_the_attempt_limit(workflow: Any, settings: Any) -> None:
    from designer.runs.executor import execute

    settings.TRELLIS_RUN_MAX_ATTEMPTS = 3
    run = make_run(workflow, attempts=3, status="running",
                   lease_owner="dead", lease_expires_at=timezone.now() - timedelta(seconds=1))

    assert execute(run.pk) == "failed"
    run.refresh_from_db()
    assert run.status == "failed" and run.error["code"] == "run.attempts_exhausted"
    assert run.lease_owner == "" and run.finished_at is not None


def test_a_run_whose_routes_cycle_forever_fails_at_the_step_limit(workflow: Any, settings: Any) -> None:
    from designer.runs.executor import execute

    settings.TRELLIS_RUN_MAX_STEPS = 12
    spin = {
        "id": "spin", "nodes": [
            # "review" (above the limit) would leave the cycle, so the analyzer accepts it; 1 never gets there.
            {"kind": "task", "id": "a", "task": "assess_request", "input": [{"target": "amount", "value": 1}]},
            {"kind": "task", "id": "b", "task": "set_value", "input": [{"target": "value", "value": 2}]},
        ],
        "routes": [{"source": "a", "label": "auto", "target": "b"}, {"source": "b", "label": "ok", "target": "a"}],
    }
    run = Run.objects.create(team=workflow.team, workflow=workflow, document=spin, input={})

    assert execute(run.pk) == "failed"
    run.refresh_from_db()
    assert run.status == "failed" and run.error["code"] == "run.step_limit"
    assert run.run_state is not None and run.events.filter(kind="run_failed").exists()
