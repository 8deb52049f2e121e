"""Waiting without a worker: a retry's backoff or a ``wait`` step suspends the run, releases its lease and
re-enqueues its task with ``run_after`` (designer/runs/waiting.py); the worker meanwhile does other work.

Every test uses a real worker process. A single worker runs one task at a time, so a run that finishes
between another run's attempts proves that the worker was not sleeping on the other run's behalf.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.tasks import TaskResult
from django.test import Client
from django.urls import reverse
from django_tasks_db.models import DBTaskResult

from designer.models import Run
from designer.runs.recovery import requeue_stale_runs
from designer.tasks import execute_run
from runtime import WorkflowBuilder
from tests.designer import runs_support as runs


def flaky_document(fail: int, *, attempts: int = 3, backoff: float = 1.0) -> dict[str, Any]:
    graph = WorkflowBuilder("flaky", "Flaky", state_schema={"type": "object", "properties": {
        "attempt": {"type": "integer"}}})
    graph.use("flaky", id="f", input=[{"target": "fail", "value": fail}],
              retry={"max_attempts": attempts, "backoff_seconds": backoff, "backoff_multiplier": 1,
                     "max_backoff_seconds": backoff},
              output=[{"source": ".", "target": "attempt"}])
    graph.output("attempt", "state.attempt")
    return graph.build().model_dump(mode="json")


def task_results(run_id: int) -> list[TaskResult]:
    """The run's enqueued tasks, oldest first, as django.tasks' public results."""
    found = [execute_run.get_result(str(pk)) for pk in
             DBTaskResult.objects.filter(task_path=execute_run.module_path).values_list("pk", flat=True)]
    return sorted((r for r in found if r.args[:1] == [run_id]), key=lambda r: r.enqueued_at or r.task.run_after)


def test_a_retry_backoff_frees_the_worker_for_other_runs(api: Any, cast: Any, env: dict[str, str]) -> None:
    client = api(cast.editor)
    flaky = runs.start_run(client, cast.workflow("Flaky", flaky_document(fail=2, backoff=2.0)), {})
    other = runs.start_run(client, cast.workflow("Counting", runs.counting_document(pause=False)), {"x": 1})
    runs.work_until_finished(env, (flaky, other), message="both runs")  # one worker process: one task at a time

    done = runs.run_detail(client, flaky["id"])
    assert done["status"] == "completed" and done["output"] == {"attempt": 3}
    assert done["wake_at"] is None
    events = runs.all_events(client, flaky["id"])
    kinds = [e["kind"] for e in events]
    assert kinds.count("node_retrying") == 2 and kinds.count("node_waiting") == 2
    assert kinds.count("run_waiting") == 2

    # The run's task was enqueued three times: at the start, then once per backoff, each for a later time.
    first, *again = task_results(flaky["id"])
    assert len(again) == 2
    assert first.task.run_after is None
    for result in again:
        assert result.task.run_after is not None and result.enqueued_at is not None
        assert result.task.run_after > result.enqueued_at
    assert [result.return_value for result in (first, *again)] == ["waiting", "waiting", "completed"]

    # The other run, queued behind the flaky one, ran while the flaky one waited for its second attempt.
    second_attempt = next(e for e in events if e["kind"] == "node_started" and e["node_id"] == "f"
                          and e["seq"] > kinds.index("run_waiting"))
    counted = Run.objects.get(pk=other["id"])
    assert counted.status == "completed"
    assert counted.finished_at.isoformat() < second_attempt["at"]


def test_a_wait_step_holds_no_worker_and_outlasts_the_step_timeout(api: Any, cast: Any, env: dict[str, str]
                                                                   ) -> None:
    client = api(cast.editor)
    waiting = runs.start_run(client, cast.workflow("Waiting", runs.counting_document()), {"x": 1, "pause": 2})
    other = runs.start_run(client, cast.workflow("Counting", runs.counting_document(pause=False)), {"x": 5})
    # A 1 s step timeout: a wait that ran as a step would be killed (step.timeout) long before its 2 s.
    runs.work_until_finished({**env, "TRELLIS_STEP_TIMEOUT_SECONDS": "1"}, (waiting, other), message="both runs")

    done = runs.run_detail(client, waiting["id"])
    assert done["status"] == "completed", done["error"]
    assert done["output"] == {"first": 2, "second": 4}
    events = runs.all_events(client, waiting["id"])
    suspended = [e for e in events if e["kind"] == "node_waiting"]
    assert [(e["node_id"], e["data"]["summary"]["reason"]) for e in suspended] == [("pause", "wait")]
    completed = next(e for e in events if e["kind"] == "node_completed" and e["node_id"] == "pause")
    assert Run.objects.get(pk=other["id"]).finished_at.isoformat() < completed["at"]


def test_a_waiting_run_is_shown_with_its_next_attempt_and_is_not_orphaned(api: Any, cast: Any,
                                                                          env: dict[str, str]) -> None:
    client = api(cast.editor)
    run = runs.start_run(client, cast.workflow("Flaky", flaky_document(fail=1, attempts=2, backoff=3_600)), {})
    worker = runs.start_worker(env)
    try:
        runs.wait_for(lambda: runs.status_of(run["id"]) == "waiting", message="the run to wait", worker=worker)
    finally:
        runs.stop_worker(worker)

    row = Run.objects.get(pk=run["id"])
    assert row.lease_owner == "" and row.wake_at is not None
    assert row.wake_at - row.started_at > timedelta(minutes=59)  # the backoff is an hour
    detail = runs.run_detail(client, run["id"])
    assert detail["status"] == "waiting"
    assert detail["wake_at"] == row.wake_at.isoformat()
    (pending,) = task_results(run["id"])[1:]
    assert pending.task.run_after == row.wake_at

    # Recovery leaves it alone: it is not orphaned, its task is due in an hour.
    assert requeue_stale_runs() == []

    page = Client()
    page.force_login(cast.editor)
    html = page.get(reverse("run-detail", args=[run["id"]])).content.decode()
    assert 'id="run-wake-at"' in html and "Next attempt at" in html
    assert f'datetime="{row.wake_at.isoformat()}"' in html

    # No worker holds it: a cancel ends it at once.
    response = client.post(reverse("api:run-cancel", args=[run["id"]]))
    assert response.status_code in (200, 202)
    assert runs.status_of(run["id"]) == "cancelled"


def test_a_retry_policy_over_the_total_delay_cap_is_refused(api: Any, cast: Any, settings: Any) -> None:
    settings.TRELLIS_RUN_MAX_RETRY_DELAY_SECONDS = 60
    settings.TRELLIS_TASK_MODULES = ["tests.designer.step_tasks"]
    client = api(cast.editor)
    workflow = cast.workflow("Flaky", flaky_document(fail=0, attempts=4, backoff=30))  # 90 s in all
    response = client.post(reverse("api:workflow-runs", args=[workflow.pk]), {"input": {}, "version": "draft"},
                           format="json")
    assert response.status_code == 400
    body = response.json()
    (diagnostic,) = [d for d in body["diagnostics"] if d["code"] == "retry.delay_too_long"]
    assert diagnostic["node_id"] == "f" and diagnostic["field"] == "retry"
    assert "90 s" in diagnostic["message"] and "60 s" in diagnostic["message"]
    assert not Run.objects.filter(workflow=workflow).exists()

    settings.TRELLIS_RUN_MAX_RETRY_DELAY_SECONDS = 90
    response = client.post(reverse("api:workflow-runs", args=[workflow.pk]), {"input": {}, "version": "draft"},
                           format="json")
    assert response.status_code == 201


def test_an_early_duplicate_task_leaves_a_waiting_run_one_future_task(cast: Any, db: None) -> None:
    from django.utils import timezone

    from designer.runs.executor import execute
    from designer.runs.services import start_run as start

    run = start(actor=cast.editor, workflow=cast.workflow("Waiting", runs.counting_document()),
                input={"x": 1, "pause": 120})
    assert execute(run.pk) == "waiting"  # in this process, as the worker that took the start task would
    waiting = Run.objects.get(pk=run.pk)
    wake_at, planned = waiting.wake_at, waiting.task_result_id
    assert wake_at is not None and execute_run.get_result(planned).task.run_after == wake_at

    def future_tasks() -> list[str]:
        return [str(r.id) for r in task_results(run.pk) if r.status == "READY" and r.task.run_after is not None]

    def early_duplicate() -> str:
        """A duplicate task claims the run within the clock slack before its time; the engine waits again."""
        Run.objects.filter(pk=run.pk).update(wake_at=timezone.now())
        return execute(run.pk)

    for _ in range(3):
        assert early_duplicate() == "waiting"
        again = Run.objects.get(pk=run.pk)
        assert (again.status, again.wake_at, again.task_result_id) == ("waiting", wake_at, planned)
        assert future_tasks() == [planned]  # still the one task for that time, none beside it

    # Once that task has been taken (it is running, not waiting in the queue), a new one is needed and made.
    DBTaskResult.objects.filter(pk=planned).update(status="RUNNING")
    assert early_duplicate() == "waiting"
    [successor] = future_tasks()
    assert successor != planned and Run.objects.get(pk=run.pk).task_result_id == successor
    assert execute_run.get_result(successor).task.run_after == wake_at
