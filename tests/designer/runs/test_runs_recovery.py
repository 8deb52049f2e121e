"""Crash recovery and exclusivity with real worker processes.

* A worker SIGKILLed in the middle of a run leaves it ``running`` with a lease nobody renews; once the lease
  has expired another worker picks the run up from its last checkpoint and finishes it with the same result,
  without re-running the step that had already committed.
* Two workers on one database, each handed a task for every run, never execute a run twice.
"""

from __future__ import annotations

import os
import signal
import threading
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.tasks import TaskResultStatus
from django.utils import timezone

from designer.models import Run
from designer.monitoring.models import WorkerHeartbeat
from designer.runs import lease, queue
from designer.tasks import execute_run
from tests.designer.runs_support import (
    all_events,
    counting_document,
    run_batch,
    run_detail,
    start_run,
    start_worker,
    stop_worker,
    take_as_dead_worker,
    wait_for,
)

pytestmark = pytest.mark.django_db(transaction=True)


def node_runs(events: list[dict[str, Any]], node_id: str) -> int:
    return sum(1 for e in events if e["kind"] == "node_started" and e["node_id"] == node_id)


def test_a_run_whose_worker_was_killed_completes_from_its_last_checkpoint(api: Any, cast: Any,
                                                                          env: dict[str, str]) -> None:
    workflow = cast.workflow("Counting", counting_document(blocking=True))
    client = api(cast.editor)
    run = start_run(client, workflow, {"x": 20, "pause": 2})

    worker = start_worker(env)
    try:
        # "first" has committed (its checkpoint is in the row): the worker is inside the "pause" superstep.
        wait_for(lambda: (Run.objects.get(pk=run["id"]).run_state or {}).get("scopes", {}).get("root", {})
                 .get("state", {}).get("first") == 21, message="the first step's checkpoint", worker=worker)
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)
    finally:
        stop_worker(worker)

    killed = Run.objects.get(pk=run["id"])
    assert killed.status == "running" and killed.lease_owner  # orphaned mid-run, lease still held
    events_before = all_events(client, run["id"])
    assert node_runs(events_before, "first") == 1 and node_runs(events_before, "second") == 0

    # Nobody renews the lease any more. A new worker (as `make run` restarts one) finds the run once the lease
    # has expired, through its periodic stale-run check, and carries on from the checkpoint.
    survivor = start_worker(env)
    try:
        wait_for(lambda: Run.objects.get(pk=run["id"]).status == "completed", message="the recovered run",
                 worker=survivor)
    finally:
        log = stop_worker(survivor)
    assert "re-enqueued 1 run(s) whose worker stopped" in log

    detail = run_detail(client, run["id"])
    assert detail["status"] == "completed", detail["error"]
    assert detail["output"] == {"first": 21, "second": 42}  # what an uninterrupted run gives (x + 1, then * 2)
    assert detail["attempts"] == 2
    events = all_events(client, run["id"])
    assert events[: len(events_before)] == events_before  # the committed trace is kept as it was
    assert [e["seq"] for e in events] == list(range(len(events)))
    # The committed step did not run again; the step in flight at the kill ran again; the rest ran once.
    assert node_runs(events, "first") == 1
    assert node_runs(events, "pause") == 1  # its node_started of the killed attempt was never committed
    assert node_runs(events, "second") == 1
    assert [e["kind"] for e in events].count("run_started") == 1


def test_a_worker_that_dies_while_storing_the_end_of_a_run_has_stored_none_of_it(
        api: Any, cast: Any, env: dict[str, str]) -> None:
    """The run's last checkpoint, its outcome and its task's success are one transaction: a worker that dies in it
    leaves the run at its previous checkpoint, leased and running, and its task running; recovery drives the run
    again to the same end, each step once in its trace."""
    workflow = cast.workflow("Counting", counting_document(pause=False))
    client = api(cast.editor)
    run = start_run(client, workflow, {"x": 1})
    dying = {**env, "TRELLIS_TASK_MODULES": f"{env['TRELLIS_TASK_MODULES']},tests.designer.die_at_end",
             "TRELLIS_TEST_DIE_AT_END": "1"}
    worker = start_worker(dying)
    try:
        assert worker.wait(timeout=60) == 9  # it died when the run reached its end
    finally:
        stop_worker(worker)

    died = Run.objects.get(pk=run["id"])
    assert (died.status, died.finished_at, died.output) == ("running", None, None) and died.lease_owner
    assert died.run_state["status"] == "running"  # the final checkpoint did not commit without the outcome
    assert execute_run.get_result(died.task_result_id).status == TaskResultStatus.RUNNING
    events_before = all_events(client, run["id"])
    assert "run_completed" not in [e["kind"] for e in events_before]

    survivor = start_worker(env)
    try:
        wait_for(lambda: Run.objects.get(pk=run["id"]).status == "completed", message="the recovered run",
                 worker=survivor)
    finally:
        stop_worker(survivor)
    detail = run_detail(client, run["id"])
    assert detail["output"] == {"first": 2, "second": 4} and detail["attempts"] == 2
    events = all_events(client, run["id"])
    assert events[: len(events_before)] == events_before
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert [e["kind"] for e in events].count("run_completed") == 1
    assert node_runs(events, "first") == 1 and node_runs(events, "second") == 1
    done = Run.objects.get(pk=run["id"])
    assert execute_run.get_result(done.task_result_id).status == TaskResultStatus.SUCCESSFUL


def test_a_worker_starting_up_recovers_runs_orphaned_while_no_worker_ran(api: Any, cast: Any,
                                                                        env: dict[str, str]) -> None:
    workflow = cast.workflow("Counting", counting_document(pause=False))
    client = api(cast.editor)
    run = start_run(client, workflow, {"x": 1})
    # As a worker leaves things when it dies right after taking the task and claiming the run.
    take_as_dead_worker(Run.objects.get(pk=run["id"]).task_result_id)
    assert lease.claim(run["id"], "dead-worker")
    Run.objects.filter(pk=run["id"]).update(lease_expires_at=timezone.now() - timedelta(seconds=1))

    output = run_batch(env)

    assert f"re-enqueued stale run(s): {run['id']}" in output.stdout
    detail = run_detail(client, run["id"])
    assert detail["status"] == "completed" and detail["output"] == {"first": 2, "second": 4}


def test_two_workers_never_execute_the_same_run_twice(api: Any, cast: Any, env: dict[str, str]) -> None:
    workflow = cast.workflow("Counting", counting_document(blocking=True))
    client = api(cast.editor)
    # Both workers are up (their heartbeat rows written) before the runs appear, so both get to take tasks however
    # slowly a loaded machine starts the second one; the runs and both their tasks commit together.
    workers = [start_worker(env), start_worker(env)]
    try:
        wait_for(lambda: WorkerHeartbeat.objects.count() == 2, message="both workers to start", worker=workers[1])
        with transaction.atomic():
            runs = [start_run(client, workflow, {"x": n, "pause": 0.2})["id"] for n in range(6)]
            tasks = {run_id: [Run.objects.get(pk=run_id).task_result_id] for run_id in runs}
            for run_id in runs:  # a second task for every run: both workers get to try each one
                queue.enqueue_run(run_id)
                tasks[run_id].append(Run.objects.get(pk=run_id).task_result_id)
        assert all(len(set(ids)) == 2 for ids in tasks.values())

        def results() -> list[Any]:
            return [execute_run.get_result(result_id) for ids in tasks.values() for result_id in ids]

        wait_for(lambda: all(result.is_finished for result in results()), message="every task to finish",
                 worker=workers[0])
    finally:
        for worker in workers:
            stop_worker(worker)

    outcomes: dict[int, list[str]] = {run_id: [] for run_id in runs}
    worker_ids: set[str] = set()
    for result in results():
        assert result.status == TaskResultStatus.SUCCESSFUL, result.errors
        outcomes[result.args[0]].append(result.return_value)
        worker_ids.update(result.worker_ids)
    assert len(worker_ids) == 2  # both workers took tasks
    for n, run_id in enumerate(runs):
        assert sorted(outcomes[run_id]) == ["completed", "skipped"]
        detail = run_detail(client, run_id)
        assert detail["status"] == "completed" and detail["attempts"] == 1
        assert detail["output"] == {"first": n + 1, "second": 2 * (n + 1)}
        events = all_events(client, run_id)
        assert [e["kind"] for e in events].count("run_started") == 1
        assert [e["seq"] for e in events] == list(range(len(events)))
        assert all(node_runs(events, node) == 1 for node in ("first", "pause", "second"))


def test_concurrent_claims_have_exactly_one_winner(cast: Any) -> None:
    workflow = cast.workflow("Counting", counting_document())
    run = Run.objects.create(team=cast.team, workflow=workflow, document=workflow.document)
    barrier = threading.Barrier(6)
    winners: list[str] = []

    def contend(owner: str) -> None:
        try:
            barrier.wait()
            if lease.claim(run.pk, owner) is not None:
                winners.append(owner)
        finally:
            connection.close()

    threads = [threading.Thread(target=contend, args=(f"worker-{n}",)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(winners) == 1
    assert Run.objects.get(pk=run.pk).lease_owner == winners[0]
