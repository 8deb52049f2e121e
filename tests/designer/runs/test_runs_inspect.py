"""What the API shows about a live run, from the runtime's own reading of the checkpoint: progress per
foreach activation, live frames and each frame's structured context; answering concurrent interrupts."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from designer.workflows import services as workflow_services
from tests.designer.runs_support import (
    all_events,
    greeting_document,
    run_batch,
    run_detail,
    start_run,
    worker_environment,
)

pytestmark = pytest.mark.django_db(transaction=True)


def test_progress_frames_and_context_of_an_interrupted_foreach(api: Any, cast: Any,
                                                               worker_env: dict[str, str]) -> None:
    env = worker_environment(worker_env)
    workflow = workflow_services.create_workflow(actor=cast.owner, team=cast.team, name="Greetings",
                                                 document=greeting_document())
    client = api(cast.editor)
    run = start_run(client, workflow, {"names": ["Ada", "Grace", "Edsger"]})
    run_batch(env)

    detail = run_detail(client, run["id"])
    assert detail["status"] == "interrupted"
    [progress] = detail["progress"]
    assert progress["node_id"] == "people"
    assert (progress["total"], progress["done"], progress["running"]) == (3, 0, 2)
    assert progress["parent_activation_id"] is None
    items = {f["frame_id"]: f for f in detail["frames"] if f["foreach"]}
    assert sorted(f["foreach"]["item"] for f in items.values()) == ["Ada", "Grace"]
    assert {f["status"] for f in items.values()} == {"interrupted"}
    assert {i["frame_id"] for i in detail["interrupts"]} == set(items)

    viewer = api(cast.viewer)
    for frame_id, frame in items.items():
        response = viewer.get(reverse("api:run-frame-context", args=[run["id"], frame_id]))
        assert response.status_code == 200, response.json()
        body = response.json()
        assert body["frame_id"] == frame_id and body["node_id"] == "ask"
        entry = body["context"]["foreach"]["people"]
        assert entry["item"] == frame["foreach"]["item"] and entry["index"] == frame["foreach"]["index"]
        assert entry["activation_id"] == progress["activation_id"]
        assert body["context"]["person"] == entry["item"] == body["context"]["loop_item"]
    missing = viewer.get(reverse("api:run-frame-context", args=[run["id"], "frame_0"]))
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"

    # Answer Grace first (the second open interrupt): the other stays open and Edsger's item starts.
    grace = next(i for i in detail["interrupts"] if i["payload"] == {"name": "Grace"})
    response = client.post(reverse("api:run-resume", args=[run["id"]]),
                           {"interrupt_id": grace["id"], "value": {"answer": "hi Grace"}}, format="json")
    assert response.status_code == 202
    again = client.post(reverse("api:run-resume", args=[run["id"]]),
                        {"interrupt_id": grace["id"], "value": {"answer": "twice"}}, format="json")
    assert again.status_code == 409  # one answer at a time; the worker has not applied the first yet
    run_batch(env)

    detail = run_detail(client, run["id"])
    assert detail["status"] == "interrupted"
    assert sorted(i["payload"]["name"] for i in detail["interrupts"]) == ["Ada", "Edsger"]
    [progress] = detail["progress"]
    assert (progress["done"], progress["running"]) == (1, 2)
    assert detail["state"] == {"greetings": ["hi Grace"]}

    for name in ("Ada", "Edsger"):
        pending = next(i for i in run_detail(client, run["id"])["interrupts"] if i["payload"] == {"name": name})
        client.post(reverse("api:run-resume", args=[run["id"]]),
                    {"interrupt_id": pending["id"], "value": {"answer": f"hi {name}"}}, format="json")
        run_batch(env)

    detail = run_detail(client, run["id"])
    assert detail["status"] == "completed"
    assert detail["output"] == {"greetings": ["hi Grace", "hi Ada", "hi Edsger"]}
    assert detail["progress"] == [] and detail["frames"] == []  # finished: nothing live remains
    # Finished frames keep their context in the trace: each item's node_started carries it.
    contexts = [e["data"]["summary"]["context"]["foreach"]["people"]["item"]
                for e in all_events(client, run["id"]) if e["kind"] == "node_started" and e["node_id"] == "ask"]
    assert sorted(contexts) == ["Ada", "Edsger", "Grace"]
