"""Redrive, re-run and fork through the API, executed by a real worker process; who may do what."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from designer.models import Run, RunCheckpoint
from tests.designer import runs_support
from tests.designer.runs_support import all_events, flaky_calls, run_batch, run_detail, start_run

pytestmark = pytest.mark.django_db(transaction=True)


def flaky_document() -> dict[str, Any]:
    """The flaky keys two at a time, with a state field for the fork tests to set."""
    return runs_support.flaky_document(max_concurrency=2, state_schema={
        "type": "object", "properties": {"suffix": {"type": "string", "default": ""}}})


def post(client: Any, name: str, run_id: int, body: Any = None) -> Any:
    return client.post(reverse(f"api:{name}", args=[run_id]), body, format="json")


def test_redrive_runs_only_the_failed_items_again_as_new_attempts(api: Any, cast: Any, env: dict[str, str],
                                                                    tmp_path: Path) -> None:
    workflow = cast.workflow("Flaky", flaky_document())
    editor, viewer = api(cast.editor), api(cast.viewer)
    keys = ["a", "bad1", "b", "c", "bad2"]
    run = start_run(editor, workflow, {"keys": keys, "folder": str(tmp_path)})
    run_batch(env)
    assert run_detail(editor, run["id"])["status"] == "failed"

    refused = post(viewer, "run-redrive", run["id"])
    assert refused.status_code == 403 and refused.json()["required"] == "runner"
    redrives = 0
    while (detail := run_detail(editor, run["id"]))["status"] == "failed":
        assert detail["error"]["code"] == "node.failed"
        answer = post(editor, "run-redrive", run["id"])
        assert answer.status_code == 202, answer.json()
        assert answer.json()["status"] == "queued" and answer.json()["redrive_pending"] is True
        redrives += 1
        assert redrives <= 2
        run_batch(env)

    assert detail["status"] == "completed", detail["error"]
    assert detail["output"] == {"done": [k.upper() for k in keys]}
    assert detail["attempt"] == redrives + 1 and detail["redrive_pending"] is False
    assert flaky_calls(tmp_path) == {"a": 1, "b": 1, "c": 1, "bad1": 2, "bad2": 2}
    events = all_events(editor, run["id"])
    marks = [e for e in events if e["kind"] == "run_redriven"]
    assert [m["data"]["summary"]["attempt"] for m in marks] == list(range(2, redrives + 2))
    assert [e["seq"] for e in events] == list(range(len(events)))

    again = post(editor, "run-redrive", run["id"])
    assert again.status_code == 409 and again.json()["code"] == "run.conflict"


def test_history_is_visible_to_viewers_and_forks_and_reruns_are_for_runners(
        api: Any, cast: Any, env: dict[str, str], tmp_path: Path) -> None:
    workflow = cast.workflow("Keys", flaky_document())
    editor, viewer = api(cast.editor), api(cast.viewer)
    run = start_run(editor, workflow, {"keys": ["a", "b", "c"], "folder": str(tmp_path)})
    run_batch(env)
    original = run_detail(editor, run["id"])
    assert original["status"] == "completed"

    listed = viewer.get(reverse("api:run-checkpoints", args=[run["id"]]))
    assert listed.status_code == 200
    steps = [c["step"] for c in listed.json()["checkpoints"]]
    assert steps == list(range(len(steps))) and len(steps) > 3
    middle = steps[len(steps) // 2]
    shown = viewer.get(reverse("api:run-checkpoint", args=[run["id"], middle])).json()
    assert shown["forkable"] is True and shown["status"] == "running"
    items = [f for f in shown["frames"] if f["foreach"] is not None]
    assert items and all(f["context"]["foreach"]["each"]["item"] == ["a", "b", "c"][f["foreach"]["index"]]
                         for f in items)
    missing = viewer.get(reverse("api:run-checkpoint", args=[run["id"], 999]))
    assert missing.status_code == 404 and "kept:" in missing.json()["message"]

    for name, body in (("run-fork", {"step": middle}), ("run-rerun", {})):
        refused = post(viewer, name, run["id"], body)
        assert refused.status_code == 403, name
    assert Run.objects.count() == 1

    bad = post(editor, "run-fork", run["id"], {"step": middle, "state": {"suffix": 5}})
    assert bad.status_code == 422 and bad.json()["code"] == "input.invalid"
    assert [e["field"] for e in bad.json()["errors"]] == ["suffix"]
    finished = post(editor, "run-fork", run["id"], {"step": steps[-1]})
    assert finished.status_code == 409 and finished.json()["code"] == "fork.invalid"
    assert Run.objects.count() == 1  # nothing refused was started

    fork = post(editor, "run-fork", run["id"], {"step": middle})
    assert fork.status_code == 201, fork.json()
    assert fork.json()["parent"] == run["id"] and fork.json()["forked_from_step"] == middle
    rerun = post(editor, "run-rerun", run["id"], {"input": {"keys": ["z"], "folder": str(tmp_path)}})
    assert rerun.status_code == 201 and rerun.json()["parent"] == run["id"]
    invalid = post(editor, "run-rerun", run["id"], {"input": {"keys": "z"}})
    assert invalid.status_code == 422 and invalid.json()["code"] == "input.invalid"
    run_batch(env)

    forked = run_detail(editor, fork.json()["id"])
    assert forked["status"] == "completed" and forked["output"] == original["output"]
    first = all_events(editor, fork.json()["id"])[0]
    assert first["kind"] == "run_forked"
    assert first["data"]["summary"]["parent_step"] == middle
    assert run_detail(editor, rerun.json()["id"])["output"] == {"done": ["Z"]}
    # Only the items after the fork point ran again in the fork; the re-run ran its own input.
    assert flaky_calls(tmp_path)["z"] == 1 and sum(flaky_calls(tmp_path).values()) < 2 * 3 + 1
    assert RunCheckpoint.objects.filter(run_id=fork.json()["id"]).exists()
