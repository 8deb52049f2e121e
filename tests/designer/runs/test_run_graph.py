"""The run page's graph: each node's state and each loop's done / failed / running / total in one scope of a run
(the root workflow or one subgraph call's child), from real runs executed in-process."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from designer.models import Run
from designer.runs import history as run_history
from designer.runs import services as run_services
from designer.runs.display import build_timeline
from designer.runs.executor import execute
from designer.runs.overlay import NODE_STATES, NodeRun, frame_state
from runtime import WorkflowBuilder
from tests.designer.clients import client_for
from tests.designer.nested_failure import start_failed_run
from tests.designer.runs_support import STEP_TASKS, flaky_calls, flaky_document

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def failed_run(cast: Any) -> Run:
    return start_failed_run(cast)


def test_a_failed_nested_run_counts_its_failed_items_as_failed_never_as_running(cast: Any, failed_run: Run) -> None:
    data = client_for(cast.viewer).get(f"/runs/{failed_run.pk}/graph/").json()
    assert data["run"] == {"id": failed_run.pk, "status": "failed"}
    # Bob's item failed (inside his order's subgraph call); Ada's and Cy's were stopped by the failure.
    assert data["loops"]["customers"] == {"done": 0, "failed": 1, "running": 0, "total": 3, "activations": 1}
    assert data["loops"]["orders"]["failed"] == 1 and data["loops"]["orders"]["running"] == 0
    states = {node: entry["state"] for node, entry in data["nodes"].items()}
    assert states == {"customers": "failed", "fetch": "completed", "orders": "failed", "process": "failed"}
    # The drawing comes with it: the run's own document and its analysis (labels for the handles).
    assert [node["id"] for node in data["document"]["nodes"]] == ["customers", "fetch", "orders", "process"]
    assert data["analysis"]["labels"]["customers"] == ["loop", "done", "error"]
    assert data["crumbs"] == [{"key": "", "title": "Checked orders"}]
    assert data["executions_url"] == f"/runs/{failed_run.pk}/nodes/__node__/executions/"

    # The progress list of the run page says the same: 1 failed, nothing running.
    page = client_for(cast.viewer).get(f"/runs/{failed_run.pk}/").content.decode()
    row = re.search(r'<div class="progress-row[^"]*"[^>]*data-node="customers"[^>]*>', page)
    assert row is not None
    assert 'data-done="0"' in row.group(0) and 'data-failed="1"' in row.group(0)
    assert 'data-running="0"' in row.group(0)
    assert "1 failed" in page and " running</span>" not in page


def test_each_subgraph_call_opens_as_its_child_scope_with_a_way_back(cast: Any, failed_run: Run) -> None:
    client = client_for(cast.viewer)
    calls = client.get(f"/runs/{failed_run.pk}/graph/").json()["calls"]["process"]
    assert [call["state"] for call in calls] == ["cancelled", "failed", "cancelled"]
    assert [call["item"].split(" › ")[0] for call in calls] == ["customers[0] 'Ada'", "customers[1] 'Bob'",
                                                                  "customers[2] 'Cy'"]
    failed = calls[1]
    child = client.get(f"/runs/{failed_run.pk}/graph/", {"scope": failed["key"]}).json()
    assert child["scope"] == {"key": failed["key"], "title": "Check order", "workflow": "check-order"}
    assert [node["id"] for node in child["document"]["nodes"]] == ["ratio", "price"]
    assert child["nodes"]["ratio"]["state"] == "failed"
    assert child["nodes"].get("price", {"state": "not reached"})["state"] == "not reached"
    assert [crumb["key"] for crumb in child["crumbs"]] == ["", failed["key"]]
    assert child["crumbs"][1]["title"].startswith("process → Check order · customers[1] 'Bob'")
    # A poll asks for the states only: the drawing is not sent again.
    states = client.get(f"/runs/{failed_run.pk}/graph/", {"scope": failed["key"], "states": "1"}).json()
    assert "document" not in states and states["nodes"] == child["nodes"]


def test_the_graph_is_for_the_runs_team_only_and_names_an_unknown_scope(cast: Any, failed_run: Run) -> None:
    assert client_for(cast.stranger).get(f"/runs/{failed_run.pk}/graph/").status_code == 404
    missing = client_for(cast.viewer).get(f"/runs/{failed_run.pk}/graph/", {"scope": "frame_nope"})
    assert missing.status_code == 404
    assert "no subgraph scope" in missing.content.decode()


@pytest.mark.parametrize(("frame", "run", "expected"), [
    ("ready", "running", "running"),
    ("ready", "queued", "queued"),
    ("ready", "waiting", "waiting"),
    ("suspended", "running", "waiting"),
    ("waiting", "running", "running"),
    ("waiting", "interrupted", "waiting"),
    ("interrupted", "interrupted", "interrupted"),
    ("ready", "failed", "cancelled"),
    ("ready", "cancelled", "cancelled"),
    ("failed", "failed", "failed"),
])
def test_a_live_frame_means_a_state_for_its_node(frame: str, run: str, expected: str) -> None:
    assert frame_state(frame, run) == expected


def test_a_node_shows_its_most_pressing_state() -> None:
    assert NodeRun().state == "not reached"
    assert NodeRun(completed=2).state == "completed"
    assert NodeRun(completed=2, failed=1).state == "failed"
    assert NodeRun(completed=2, failed=1, frames={"running"}).state == "running"
    assert NodeRun(frames={"cancelled"}, failed=1).state == "failed"
    assert NodeRun(frames={"interrupted", "running"}).state == "interrupted"
    assert set(NODE_STATES) == {"queued", "running", "waiting", "interrupted", "completed", "failed", "cancelled",
                                "not reached"}


def test_the_timeline_draws_steps_a_failed_run_stopped_as_stopped_not_running(cast: Any, failed_run: Run) -> None:
    events = list(failed_run.events.order_by("seq"))
    timeline = build_timeline(events, now=timezone.now(), end=failed_run.finished_at)
    steps = [step for row in timeline.rows for step in row.steps]
    assert "running" not in {step.status for step in steps}
    # Bob's call failed; Ada's and Cy's calls were under way when it did, and were stopped.
    process = sorted(step.status for step in steps if step.node_id == "process")
    assert process == ["cancelled", "cancelled", "failed"]


def tolerant_loop() -> dict[str, Any]:
    """Each item divides 1 by itself, then asks a question; the loop lets up to 5 items fail."""
    g = WorkflowBuilder("tolerant", "Tolerant", input_schema={"type": "object", "properties": {
        "xs": {"type": "array", "items": {"type": "number"}}}})
    each = g.foreach("each", "input.xs", tolerated_failure_count=5)
    ratio = g.use("math", id="ratio", input=[{"target": "op", "value": "div"}, {"target": "a", "value": 1},
                                             {"target": "b", "path": each.item}])
    ask = g.interrupt("ask", prompt="Go on?")
    for source, label, target in ((each, "loop", ratio), (ratio, "ok", ask), (ask, "ok", each)):
        g.set_route(source, label, target)
    return g.build().model_dump(mode="json")


def test_a_live_loops_tolerated_failed_item_counts_as_failed_not_as_done(cast: Any) -> None:
    workflow = cast.workflow("Tolerant", tolerant_loop())
    run = run_services.start_run(actor=cast.editor, workflow=workflow, input={"xs": [0, 1]})
    # Item 0 fails (1 / 0) and the loop lets it; item 1 waits for an answer, so the loop is still live.
    assert execute(run.pk) == "interrupted"
    run = Run.objects.get(pk=run.pk)
    assert run.progress["foreach"][0]["failed"] == 1  # the live counters the checkpointer keeps
    data = client_for(cast.viewer).get(f"/runs/{run.pk}/graph/").json()
    assert data["loops"]["each"] == {"done": 0, "failed": 1, "running": 1, "total": 2, "activations": 1}
    assert data["nodes"]["each"]["state"] == "running"
    assert data["nodes"]["ask"]["state"] == "interrupted"
    assert data["nodes"]["ratio"]["state"] == "failed"
    page = client_for(cast.viewer).get(f"/runs/{run.pk}/").content.decode()
    row = re.search(r'<div class="progress-row[^"]*"[^>]*data-node="each"[^>]*>', page)
    assert row is not None and 'data-done="0"' in row.group(0) and 'data-failed="1"' in row.group(0)


def test_a_step_a_redrive_ran_again_to_completion_is_completed_not_failed(cast: Any, settings: Any,
                                                                           tmp_path: Path) -> None:
    settings.TRELLIS_TASK_MODULES = [STEP_TASKS]
    workflow = cast.workflow("Flaky", flaky_document())
    run = run_services.start_run(actor=cast.editor, workflow=workflow,
                                 input={"keys": ["a", "bad1", "b"], "folder": str(tmp_path)})
    assert execute(run.pk) == "failed"
    client = client_for(cast.viewer)
    failed = client.get(f"/runs/{run.pk}/graph/").json()["nodes"]["call"]
    assert (failed["state"], failed["completed"], failed["failed"]) == ("failed", 1, 1)

    # The redrive runs bad1 again (it fails only its first call) and then b: the run completes.
    run_history.redrive_run(actor=cast.editor, run=Run.objects.get(pk=run.pk))
    assert execute(run.pk) == "completed"
    assert flaky_calls(tmp_path) == {"a": 1, "bad1": 2, "b": 1}
    call = client.get(f"/runs/{run.pk}/graph/").json()["nodes"]["call"]
    # Every item's step ended well in the end: the node is completed, its earlier failure redriven away.
    assert (call["state"], call["completed"], call["failed"]) == ("completed", 3, 0)
    assert client.get(f"/runs/{run.pk}/graph/").json()["loops"]["each"]["failed"] == 0
    # The failure is history, still there for whoever opens the node: its executions list both attempts of bad1.
    panel = client.get(f"/runs/{run.pk}/nodes/call/executions/").content.decode()
    assert "4 executions" in panel and panel.count("execution--failed") == 1
    assert "bad1: service unavailable" in panel
    # One attempt count: the redriven step says attempt 2, as the run page does, not its own try count (1).
    attempts = re.findall(r'<p class="muted small">attempt (\d+)', panel)
    assert attempts == ["1", "1", "2", "2"], attempts
    api = client.get(f"/api/runs/{run.pk}/nodes/call/executions/").json()
    assert [(e["run_attempt"], e["attempt"]) for e in api["results"]] == [(1, 1), (1, 1), (2, 1), (2, 1)]
