"""Step limits in a real ``run_worker``: a runaway step is killed at its timeout and the worker goes on with the
next run; a cancel ends a long step within seconds. One step process per worker here
(``TRELLIS_STEP_PROCESSES=1``), so the next run can only run if the runaway step's process was really ended."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.urls import reverse

from designer.models import Run
from runtime import WorkflowBuilder
from tests.designer.runs_support import (
    FINISHED,
    all_events,
    counting_document,
    run_detail,
    start_run,
    start_worker,
    status_of,
    stop_worker,
    wait_for,
    work_until_finished,
)

pytestmark = pytest.mark.django_db(transaction=True)

BOMB = " | ".join(["[@,@][]"] * 25) + " | length(@)"


def bomb_document() -> dict[str, Any]:
    graph = WorkflowBuilder("bomb", "JMESPath bomb", state_schema={"type": "object", "properties": {
        "count": {"type": "integer"}}})
    graph.use("transform", id="explode", input=[{"target": "expression", "value": BOMB},
                                                {"target": "data", "value": [1]}],
              output=[{"source": ".", "target": "count"}])
    graph.output("count", "state.count")
    return graph.build().model_dump(mode="json")


def test_the_jmespath_bomb_fails_with_step_timeout_and_the_worker_runs_the_next_run(
        api: Any, cast: Any, env: dict[str, str]) -> None:
    limit = 2
    client = api(cast.editor)
    bomb = start_run(client, cast.workflow("Bomb", bomb_document()), {})
    worker = start_worker({**env, "TRELLIS_STEP_TIMEOUT_SECONDS": str(limit), "TRELLIS_STEP_PROCESSES": "1"})
    try:
        wait_for(lambda: status_of(bomb["id"]) != "queued", message="the bomb run to start", worker=worker)
        following = start_run(client, cast.workflow("Counting", counting_document(pause=False)), {"x": 1})
        wait_for(lambda: status_of(bomb["id"]) in FINISHED and status_of(following["id"]) in FINISHED,
                 message="both runs to finish", worker=worker)
    finally:
        stop_worker(worker)

    detail = run_detail(client, bomb["id"])
    assert detail["status"] == "failed"
    error = detail["error"]
    assert error["code"] == "node.failed" and error["node_id"] == "explode"
    assert error["cause"]["code"] == "step.timeout" and error["cause"]["limit_seconds"] == limit
    assert error["cause"]["frame_id"] == error["frame_id"]
    run = Run.objects.get(pk=bomb["id"])
    # Within the limit, generously: unbounded, this expression runs for tens of seconds (and completes).
    assert (run.finished_at - run.started_at).total_seconds() < limit + 15
    assert all_events(client, bomb["id"])[-1]["kind"] == "run_failed"

    after = run_detail(client, following["id"])
    assert after["status"] == "completed" and after["output"] == {"first": 2, "second": 4}


def test_cancel_ends_a_step_sleeping_300_seconds_within_10_seconds(api: Any, cast: Any, env: dict[str, str]) -> None:
    client = api(cast.editor)
    workflow = cast.workflow("Counting", counting_document(pause=True, blocking=True))
    run = start_run(client, workflow, {"x": 1, "pause": 300})
    worker = start_worker({**env, "TRELLIS_STEP_TIMEOUT_SECONDS": "600", "TRELLIS_STEP_PROCESSES": "1"})
    try:
        # The checkpoint after "first" is committed: the worker is now in the superstep that waits 300 s.
        wait_for(lambda: (Run.objects.get(pk=run["id"]).run_state or {}).get("scopes", {}).get("root", {})
                 .get("state", {}).get("first") == 2, message="the first step's checkpoint", worker=worker)
        asked = time.monotonic()
        response = client.post(reverse("api:run-cancel", args=[run["id"]]))
        assert response.status_code == 202
        wait_for(lambda: status_of(run["id"]) == "cancelled", message="cancellation", worker=worker)
        took = time.monotonic() - asked
        assert took < 10, f"cancel took {took:.1f} s"

        # The worker's only step process was killed and replaced: the next run completes.
        following = start_run(client, workflow, {"x": 5, "pause": 0})
        wait_for(lambda: status_of(following["id"]) in FINISHED, message="the next run", worker=worker)
    finally:
        stop_worker(worker)

    detail = run_detail(client, run["id"])
    assert detail["state"] == {"first": 2} and detail["output"] is None
    events = all_events(client, run["id"])
    assert events[-1]["kind"] == "run_cancelled"
    assert ("pause", "node_completed") not in {(e["node_id"], e["kind"]) for e in events}
    assert run_detail(client, following["id"])["output"] == {"first": 6, "second": 12}


def step_document(task: str, payload: dict[str, Any]) -> dict[str, Any]:
    graph = WorkflowBuilder(f"{task}-doc", task, state_schema={"type": "object", "properties": {"out": {}}})
    graph.use(task, id="step", input=[{"target": key, "value": value} for key, value in payload.items()],
              output=[{"source": ".", "target": "out"}])
    graph.output("out", "state.out")
    return graph.build().model_dump(mode="json")


def test_a_memory_bomb_and_an_oversized_result_fail_their_runs_and_the_worker_goes_on(
        api: Any, cast: Any, env: dict[str, str], settings: Any) -> None:
    settings.TRELLIS_TASK_MODULES = ["tests.designer.step_tasks"]  # so this process accepts the documents too
    client = api(cast.editor)
    hog = start_run(client, cast.workflow("Hog", step_document("hog", {"megabytes": 1024})), {})
    big = start_run(client, cast.workflow("Big", step_document("big", {"size": 5000})), {})
    fine = start_run(client, cast.workflow("Fine", step_document("big", {"size": 10})), {})
    work_until_finished({**env, "TRELLIS_TASK_MODULES": "tests.designer.step_tasks", "TRELLIS_STEP_PROCESSES": "1",
                         "TRELLIS_STEP_MAX_MEMORY_MB": "64", "TRELLIS_STEP_MAX_RESULT_BYTES": "1000"},
                        (hog, big, fine), message="the runs")

    hogged = run_detail(client, hog["id"])
    assert hogged["status"] == "failed" and hogged["error"]["cause"]["code"] == "step.memory"
    assert hogged["error"]["cause"]["limit_mb"] == 64 and hogged["error"]["node_id"] == "step"
    too_big = run_detail(client, big["id"])
    assert too_big["status"] == "failed" and too_big["error"]["cause"]["code"] == "step.result_too_large"
    assert too_big["error"]["cause"]["size_bytes"] == 5002
    assert run_detail(client, fine["id"])["output"] == {"out": "x" * 10}
