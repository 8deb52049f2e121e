"""Runs executed by a real ``run_worker`` process on the test database, driven through the real API."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from demo.data import orders_via_subgraph, process_order, spending_approval
from designer.models import Run
from designer.workflows import services as workflow_services
from tests.designer import runs_support as runs

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_started_run_completes_in_the_worker_with_state_output_and_trace(api: Any, cast: Any,
                                                                           env: dict[str, str]) -> None:
    workflow = cast.workflow("Counting", runs.counting_document(pause=False))
    client = api(cast.editor)
    run = runs.start_run(client, workflow, {"x": 4})

    runs.run_batch(env)

    detail = runs.run_detail(client, run["id"])
    assert detail["status"] == "completed", detail["error"]
    assert detail["output"] == {"first": 5, "second": 10}
    assert detail["state"] == {"first": 5, "second": 10}
    assert detail["started_at"] and detail["finished_at"] and detail["duration_ms"] is not None
    assert detail["attempts"] == 1 and detail["error"] is None
    events = runs.all_events(client, run["id"])
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert events[0]["kind"] == "run_started" and events[-1]["kind"] == "run_completed"
    started = [e["node_id"] for e in events if e["kind"] == "node_started"]
    assert started == ["first", "second"]
    assert detail["last_seq"] == events[-1]["seq"]


def test_a_failing_task_fails_the_run_with_a_structured_error(api: Any, cast: Any, env: dict[str, str]) -> None:
    workflow = cast.workflow("Counting", runs.counting_document(pause=True))
    client = api(cast.editor)
    # A negative pause breaks the wait task's input constraint at run time: the node fails, so does the run.
    run = runs.start_run(client, workflow, {"x": 1, "pause": -1})

    runs.run_batch(env)

    detail = runs.run_detail(client, run["id"])
    assert detail["status"] == "failed"
    assert detail["error"]["code"] == "node.failed" and detail["error"]["node_id"] == "pause"
    assert detail["output"] is None and detail["finished_at"] is not None
    assert runs.all_events(client, run["id"])[-1]["kind"] == "run_failed"


def test_interrupt_then_resume_through_the_api(api: Any, cast: Any, env: dict[str, str]) -> None:
    workflow = cast.workflow("Approval", spending_approval().model_dump(mode="json"))
    client = api(cast.editor)
    run = runs.start_run(client, workflow, {"amount": 2500, "requester": "eddie", "purpose": "laptops"})

    runs.run_batch(env)
    detail = runs.run_detail(client, run["id"])
    assert detail["status"] == "interrupted" and detail["finished_at"] is None
    [interrupt] = detail["interrupts"]
    assert interrupt["node_id"] == "review" and interrupt["payload"]["amount"] == 2500
    assert interrupt["resume_schema"]["required"] == ["approved"]

    resume_url = reverse("api:run-resume", args=[run["id"]])
    bad = client.post(resume_url, {"interrupt_id": interrupt["id"], "value": {"approved": "yes"}}, format="json")
    assert bad.status_code == 400 and bad.json()["code"] == "resume.invalid"
    assert bad.json()["errors"][0]["field"] == "approved"
    unknown = client.post(resume_url, {"interrupt_id": "int_0", "value": {"approved": True}}, format="json")
    assert unknown.status_code == 409

    accepted = client.post(resume_url, {"interrupt_id": interrupt["id"], "value": {"approved": True}},
                           format="json")
    assert accepted.status_code == 202 and accepted.json()["resume_pending"] is True
    assert accepted.json()["status"] == "queued"
    runs.run_batch(env)

    detail = runs.run_detail(client, run["id"])
    assert detail["status"] == "completed", detail["error"]
    assert detail["output"]["decision"] == {"approved": True, "comment": "", "decided_by": "reviewer"}
    assert detail["interrupts"] == [] and detail["resume_pending"] is False
    kinds = [e["kind"] for e in runs.all_events(client, run["id"])]
    assert kinds.count("run_started") == 1 and "resumed" in kinds and kinds[-1] == "run_completed"
    assert detail["attempts"] == 1  # counts workers per stretch of running: answering interrupts is not a retry


def test_a_subgraph_runs_the_published_child_version(api: Any, cast: Any, env: dict[str, str]) -> None:
    child = cast.workflow("Process order", process_order().model_dump(mode="json"))
    workflow_services.publish_workflow(actor=cast.owner, workflow=child)
    parent = cast.workflow("Orders via subgraph", orders_via_subgraph().model_dump(mode="json"))
    client = api(cast.editor)
    customer = {"id": "C-100", "name": "Ada", "tier": "gold"}
    run = runs.start_run(client, parent, {"customers": [customer]})

    runs.run_batch(env)

    detail = runs.run_detail(client, run["id"])
    assert detail["status"] == "completed", detail["error"]
    results = detail["output"]["results"]
    assert results and all(r["priced"]["customer_id"] == "C-100" for r in results)
    kinds = [e["kind"] for e in runs.all_events(client, run["id"])]
    assert kinds.count("scope_opened") == len(results) == kinds.count("scope_closed")


def test_cancel_kills_the_running_step_and_runs_nothing_after(api: Any, cast: Any, env: dict[str, str]) -> None:
    workflow = cast.workflow("Counting", runs.counting_document(pause=True, blocking=True))
    client = api(cast.editor)
    run = runs.start_run(client, workflow, {"x": 1, "pause": 1.5})
    worker = runs.start_worker(env)
    try:
        # The checkpoint after "first" is committed: the worker is now in the superstep running "pause".
        runs.wait_for(lambda: Run.objects.get(pk=run["id"]).run_state and
                 Run.objects.get(pk=run["id"]).run_state["scopes"]["root"]["state"].get("first") == 2,
                 message="the first step's checkpoint", worker=worker)
        response = client.post(reverse("api:run-cancel", args=[run["id"]]))
        assert response.status_code == 202 and response.json()["cancel_requested"] is True
        runs.wait_for(lambda: Run.objects.get(pk=run["id"]).status == "cancelled", message="cancellation",
                 worker=worker)
    finally:
        runs.stop_worker(worker)

    detail = runs.run_detail(client, run["id"])
    assert detail["state"] == {"first": 2}  # "second" never ran
    assert detail["finished_at"] is not None and detail["output"] is None
    kinds = [e["kind"] for e in runs.all_events(client, run["id"])]
    assert kinds[-1] == "run_cancelled"
    assert ("second", "node_started") not in {(e["node_id"], e["kind"]) for e in runs.all_events(client, run["id"])}


def test_a_step_longer_than_the_lease_keeps_its_worker(api: Any, cast: Any, env: dict[str, str]) -> None:
    # The step waits for 2.5 leases. Without the heartbeat, the worker's own stale-run check would see the lease
    # expire, re-enqueue the run and make the running attempt lose it (a second attempt, a second run_started).
    workflow = cast.workflow("Counting", runs.counting_document(pause=True, blocking=True))
    client = api(cast.editor)
    run = runs.start_run(client, workflow, {"x": 1, "pause": 2.5 * float(env["TRELLIS_RUN_LEASE_SECONDS"])})
    worker = runs.start_worker(env)
    try:
        runs.wait_for(lambda: Run.objects.get(pk=run["id"]).status == "completed", message="completion", worker=worker)
    finally:
        log = runs.stop_worker(worker)

    assert "re-enqueued" not in log
    detail = runs.run_detail(client, run["id"])
    assert detail["attempts"] == 1 and detail["output"] == {"first": 2, "second": 4}
    assert [e["kind"] for e in runs.all_events(client, run["id"])].count("node_started") == 3


def gated_parent_document() -> dict[str, Any]:
    """Waits at an interrupt, then calls the latest published "stamp" (no version in the reference)."""
    from runtime import WorkflowBuilder

    graph = WorkflowBuilder("gated", "Gated")
    gate = graph.interrupt("gate", prompt="Go?")
    child = graph.subgraph("stamp", id="child", output=[{"source": "stamp", "target": "stamp"}])
    graph.set_route(gate, "ok", child)
    graph.output("stamp", "state.stamp")
    return graph.build().model_dump(mode="json")


def test_a_run_keeps_the_child_versions_that_were_latest_when_it_started(api: Any, cast: Any,
                                                                          env: dict[str, str]) -> None:
    child = cast.workflow("Stamp", runs.one_value_document("stamp", "v1"))
    workflow_services.publish_workflow(actor=cast.owner, workflow=child)
    parent = cast.workflow("Gated", gated_parent_document())
    client = api(cast.editor)
    early = runs.start_run(client, parent, {})
    assert early["subgraph_versions"] == {"stamp": 1}
    runs.run_batch(env)

    # A new child version is published while the run waits at its interrupt.
    child.refresh_from_db()
    workflow_services.save_document(actor=cast.owner, workflow=child, revision=child.revision,
                                    document=runs.one_value_document("stamp", "v2"))
    workflow_services.publish_workflow(actor=cast.owner, workflow=child)
    late = runs.start_run(client, parent, {})
    [interrupt] = runs.run_detail(client, early["id"])["interrupts"]
    client.post(reverse("api:run-resume", args=[early["id"]]), {"interrupt_id": interrupt["id"], "value": {}},
                format="json")
    runs.run_batch(env)
    [interrupt] = runs.run_detail(client, late["id"])["interrupts"]
    client.post(reverse("api:run-resume", args=[late["id"]]), {"interrupt_id": interrupt["id"], "value": {}},
                format="json")
    runs.run_batch(env)

    assert runs.run_detail(client, early["id"])["output"] == {"stamp": "v1"}
    assert runs.run_detail(client, late["id"])["output"] == {"stamp": "v2"}
