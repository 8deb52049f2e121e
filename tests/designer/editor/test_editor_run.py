"""A run on the editor's graph: the runs to choose from, node statuses and loop counts, one node's item."""

from __future__ import annotations

import re
from typing import Any

import pytest

from designer.runs import services as run_services
from designer.runs.executor import execute
from tests.designer.clients import client_for
from tests.documents_support import routes

pytestmark = pytest.mark.django_db(transaction=True)

LENGTHS: dict[str, Any] = {
    "id": "lengths",
    "input_schema": {"type": "object", "properties": {"items": {"type": "array"}}},
    "nodes": [
        {"id": "each", "kind": "foreach", "over": "input.items"},
        {"id": "measure", "kind": "task", "task": "length",
         "input": [{"target": "value", "path": "context.foreach.each.item"}]},
        {"id": "after", "kind": "task", "task": "set_value"},
    ],
    "routes": routes("each loop measure ok each", "measure error each done after"),
}


@pytest.fixture
def finished(cast: Any) -> tuple[Any, Any]:
    workflow = cast.workflow("Lengths", LENGTHS)
    run = run_services.start_run(actor=cast.editor, workflow=workflow, input={"items": ["ab", "abcd", 5]})
    assert execute(run.pk) == "completed"
    return workflow, run


def test_the_editor_lists_this_workflows_runs_for_members_only(cast: Any, finished: tuple[Any, Any]) -> None:
    workflow, run = finished
    listed = client_for(cast.viewer).get(f"/workflows/{workflow.pk}/edit/runs/").json()["runs"]
    assert [(r["id"], r["status"]) for r in listed] == [(run.pk, "completed")]
    assert listed[0]["label"].startswith(f"#{run.pk} · completed · draft")
    assert client_for(cast.stranger).get(f"/workflows/{workflow.pk}/edit/runs/").status_code == 404


def test_overlay_gives_each_nodes_status_and_each_loops_counts(cast: Any, finished: tuple[Any, Any]) -> None:
    workflow, run = finished
    data = client_for(cast.viewer).get(f"/workflows/{workflow.pk}/edit/run-overlay/?run={run.pk}").json()
    assert data["run"] == {"id": run.pk, "status": "completed"}
    measure = data["nodes"]["measure"]
    assert (measure["started"], measure["completed"], measure["failed"]) == (3, 2, 1)
    assert measure["status"] == "failed"
    assert data["nodes"]["after"]["status"] == "done"
    # A loop's own status is its items': three handed out, all done. The one whose step failed went on along
    # that step's error route, so that item did not fail (the failed step is counted on ``measure``).
    assert (data["nodes"]["each"]["status"], data["nodes"]["each"]["completed"]) == ("done", 3)
    assert data["loops"]["each"] == {"done": 3, "total": 3, "failed": 0, "running": 0, "activations": 1}
    # Another workflow's editor does not show this run; a stranger sees nothing.
    other = cast.workflow("Other", LENGTHS)
    assert client_for(cast.owner).get(f"/workflows/{other.pk}/edit/run-overlay/?run={run.pk}").status_code == 404
    assert client_for(cast.stranger).get(f"/workflows/{workflow.pk}/edit/run-overlay/?run={run.pk}").status_code == 404


def test_a_node_shows_its_latest_item_and_any_chosen_one(cast: Any, finished: tuple[Any, Any]) -> None:
    workflow, run = finished
    client = client_for(cast.viewer)
    html = client.get(f"/workflows/{workflow.pk}/edit/run-node/?run={run.pk}&node=measure").content.decode()
    options = re.findall(r'<option value="([^"]+)"[^>]*>([^<]+)</option>', html)
    assert [label for _, label in options] == ["each[2] 5 (latest)", "each[1] &#x27;abcd&#x27;",
                                               "each[0] &#x27;ab&#x27;"]
    assert "failed" in html and "Error" in html  # the latest item (5) has no length
    frame = options[1][0]
    chosen = client.get(f"/workflows/{workflow.pk}/edit/run-node/?run={run.pk}&node=measure&frame={frame}")
    text = chosen.content.decode()
    # the input the engine recorded for that step, as the task received it
    assert re.search(r'data-testid="run-node-input">\{\s*&quot;value&quot;: &quot;abcd&quot;\s*\}<', text)
    assert re.search(r'data-testid="run-node-output">4<', text)
    assert "context.foreach.each.item" in text and "bound-value" not in text
    # a run recorded before inputs were kept: the values are read again from the bindings, and it says so
    started = run.events.get(kind="node_started", node_id="measure", frame_id=frame)
    started.data = {**started.data, "summary": {k: v for k, v in started.data["summary"].items() if k != "input"}}
    started.save()
    text = client.get(f"/workflows/{workflow.pk}/edit/run-node/?run={run.pk}&node=measure&frame={frame}"
                      ).content.decode()
    assert "did not record the task" in text and re.search(r'data-testid="bound-value">&quot;abcd&quot;<', text)
    missing = client.get(f"/workflows/{workflow.pk}/edit/run-node/?run={run.pk}&node=ghost")
    assert missing.status_code == 404


def test_the_run_pages_frame_drawer_is_titled_with_the_clicked_step_and_its_item(
    cast: Any, finished: tuple[Any, Any]
) -> None:
    _, run = finished
    client = client_for(cast.viewer)
    root = run.events.get(kind="node_started", node_id="after")  # the root frame went each -> after
    assert run.events.filter(frame_id=root.frame_id, node_id="each").exists()
    html = client.get(f"/runs/{run.pk}/frames/{root.frame_id}/?seq={root.seq}", HTTP_HX_REQUEST="true").content.decode()
    assert re.search(r'data-testid="frame-title">after\s*</h3>', html)
    item = run.events.filter(kind="node_started", node_id="measure").order_by("seq")[1]
    html = client.get(f"/runs/{run.pk}/frames/{item.frame_id}/?seq={item.seq}", HTTP_HX_REQUEST="true").content.decode()
    assert re.search(r'data-testid="frame-title">measure <span class="muted small">each\[1\] &#x27;abcd&#x27;</span>',
                     html)
    # Ids are one click away, after the names.
    assert html.index("frame-title") < html.index('<details class="frame-ids">')
