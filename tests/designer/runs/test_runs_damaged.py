"""A run whose checkpoint is damaged is shown as damaged everywhere, never as something else.

Each corrupt form is made from a real run (a foreach whose items wait at interrupts, executed in-process by the
real executor and checkpointed by the ORM checkpointer): every run view answers 409 ``runstate.corrupt`` with
the reason (API), or renders the run as damaged with the reason and no answer form (pages, admin); lists mark
it; cancel and delete always work. ``RunEvent.data`` that is not an object never breaks a page or the API.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db.models import JSONField as JSONModelField
from django.db.models import Value
from django.test import Client
from django.urls import reverse
from django.utils.html import escape as html_escape

from designer.models import Run, RunEvent, RunStatePart
from designer.runs import services as run_services
from designer.runs.checkpoints import damage_of
from designer.runs.executor import execute
from designer.workflows import services as workflow_services
from tests.designer.clients import client_for, htmx
from tests.designer.runs_support import counting_document, greeting_document

pytestmark = pytest.mark.django_db


def _garbage(run: Run) -> None:
    Run.objects.filter(pk=run.pk).update(run_state="garbage")


def _torn_text(run: Run) -> None:
    # The database keeps the column valid JSON, so text that is not JSON arrives as a JSON string.
    Run.objects.filter(pk=run.pk).update(run_state='{"version": 1, "run_id": "run_')


def _array(run: Run) -> None:
    Run.objects.filter(pk=run.pk).update(run_state=[1, 2, 3])


def _wrong_types(run: Run) -> None:
    state = dict(run.run_state)
    state["step"] = "three"
    state["frames"] = ["not", "a", "map"]
    Run.objects.filter(pk=run.pk).update(run_state=state)


def _lost_part(run: Run) -> None:
    assert RunStatePart.objects.filter(run=run, key__startswith="items:").delete()[0] == 1


def _tampered_foreach(run: Run) -> None:
    state = run.run_state
    item = next(fid for fid, frame in state["frames"].items() if "foreach" in frame["metadata"])
    del state["frames"][item]["metadata"]["foreach"]  # the frame would run as an ordinary one
    Run.objects.filter(pk=run.pk).update(run_state=state)


def _null_foreach(run: Run) -> None:
    state = run.run_state
    item = next(fid for fid, frame in state["frames"].items() if "foreach" in frame["metadata"])
    state["frames"][item]["metadata"]["foreach"] = None
    Run.objects.filter(pk=run.pk).update(run_state=state)


CORRUPTIONS = {"garbage": _garbage, "torn_text": _torn_text, "array": _array, "wrong_types": _wrong_types,
               "lost_part": _lost_part, "tampered_foreach": _tampered_foreach, "null_foreach": _null_foreach}


@pytest.fixture
def greetings(cast: Any) -> Any:
    return workflow_services.create_workflow(actor=cast.owner, team=cast.team, name="Greetings",
                                             document=greeting_document())


def interrupted_run(cast: Any, workflow: Any) -> Run:
    run = run_services.start_run(actor=cast.editor, workflow=workflow, input={"names": ["Ada", "Grace", "Edsger"]})
    assert execute(run.pk) == "interrupted"
    return Run.objects.get(pk=run.pk)


@pytest.fixture(params=sorted(CORRUPTIONS))
def damaged(request: Any, cast: Any, greetings: Any) -> tuple[Run, dict[str, Any]]:
    """A real interrupted run, then damaged; and one of its open interrupts (as the row lists it)."""
    run = interrupted_run(cast, greetings)
    interrupt = run.interrupts[0]
    CORRUPTIONS[request.param](run)
    return Run.objects.get(pk=run.pk), interrupt


def assert_corrupt(response: Any) -> str:
    assert response.status_code == 409, response.content[:500]
    body = response.json()
    assert body["code"] == "runstate.corrupt" and body["message"]
    return str(body["message"])


def test_every_api_view_answers_409_and_cancel_still_works(damaged: tuple[Run, dict[str, Any]], api: Any,
                                                          cast: Any) -> None:
    run, interrupt = damaged
    client = api(cast.editor)
    reason = assert_corrupt(client.get(reverse("api:run-detail", args=[run.pk])))
    assert assert_corrupt(api(cast.viewer).get(reverse("api:run-detail", args=[run.pk]))) == reason
    assert_corrupt(client.get(reverse("api:run-events", args=[run.pk])))
    assert_corrupt(client.get(reverse("api:run-frame-context", args=[run.pk, interrupt["frame_id"]])))
    assert_corrupt(client.post(reverse("api:run-resume", args=[run.pk]),
                               {"interrupt_id": interrupt["id"], "value": {"answer": "hi"}}, format="json"))
    assert Run.objects.get(pk=run.pk).resume_request is None  # the refused answer left nothing behind

    listed = client.get(reverse("api:run-list")).json()["results"]
    assert [entry["damage"] for entry in listed if entry["id"] == run.pk] == [reason]

    cancelled = client.post(reverse("api:run-cancel", args=[run.pk]))
    assert cancelled.status_code == 200, cancelled.json()
    assert cancelled.json()["status"] == "cancelled" and cancelled.json()["damage"] == reason
    assert Run.objects.get(pk=run.pk).status == "cancelled"
    assert_corrupt(client.get(reverse("api:run-detail", args=[run.pk])))  # still damaged, now cancelled


def test_api_delete_removes_a_damaged_run_with_its_trace(damaged: tuple[Run, dict[str, Any]], api: Any,
                                                         cast: Any) -> None:
    run, _ = damaged
    assert api(cast.viewer).delete(reverse("api:run-detail", args=[run.pk])).status_code == 403
    response = api(cast.editor).delete(reverse("api:run-detail", args=[run.pk]))
    assert response.status_code == 204
    assert not Run.objects.filter(pk=run.pk).exists()
    assert not RunEvent.objects.filter(run_id=run.pk).exists()
    assert not RunStatePart.objects.filter(run_id=run.pk).exists()


def test_every_page_shows_the_run_as_damaged(damaged: tuple[Run, dict[str, Any]], cast: Any) -> None:
    run, interrupt = damaged
    reason = damage_reason(run)
    client = client_for(cast.editor)

    page = client.get(reverse("run-detail", args=[run.pk]))
    assert page.status_code == 409
    body = page.content.decode()
    assert 'id="run-damage"' in body and "runstate.corrupt" in body
    assert escape(reason) in body
    assert 'name="interrupt_id"' not in body and "No checkpoint yet" not in body
    assert 'hx-trigger="every' not in body  # not polled
    assert "Delete run" in body and "Cancel run" in body

    # htmx fragments are not swapped on a 409: they tell the page to reload, into the damaged page above.
    for url, target in ((reverse("run-detail", args=[run.pk]), "run-live"),
                        (reverse("run-events", args=[run.pk]), "run-events"),
                        (reverse("run-frame", args=[run.pk, interrupt["frame_id"]]), "frame-panel")):
        fragment = client.get(url, **htmx(target))
        assert fragment.status_code == 409 and fragment["HX-Refresh"] == "true", url
    frame_page = client.get(reverse("run-frame", args=[run.pk, interrupt["frame_id"]]))
    assert frame_page.status_code == 409 and 'id="run-damage"' in frame_page.content.decode()

    answer = client.post(reverse("run-resume", args=[run.pk]),
                         {"interrupt_id": interrupt["id"], "field.answer": "hi"})
    assert answer.status_code == 409 and 'id="run-damage"' in answer.content.decode()
    assert Run.objects.get(pk=run.pk).status == "interrupted"

    chooser = client.get(reverse("editor-runs", args=[run.workflow_id])).json()["runs"]
    assert [(r["damage"], r["label"].endswith("damaged")) for r in chooser if r["id"] == run.pk] == [(reason, True)]
    overlay = client.get(reverse("editor-run-overlay", args=[run.workflow_id]), {"run": run.pk})
    assert overlay.status_code == 409 and overlay.json()["code"] == "runstate.corrupt"
    assert reason in overlay.json()["message"]
    drawer = client.get(reverse("editor-run-node", args=[run.workflow_id]), {"run": run.pk, "node": "ask"},
                        **htmx("run-node"))
    assert drawer.status_code == 409 and "runstate.corrupt" in drawer.content.decode()

    history = client.get(reverse("workflow-runs", args=[run.workflow_id])).content.decode()
    assert f'data-run="{run.pk}" data-status="interrupted" data-damaged="true"' in history
    recent = client.get(reverse("run-panel", args=[run.workflow_id]), {"part": "recent"},
                        **htmx("run-recent")).content.decode()
    assert "run-damaged" in recent

    assert client.post(reverse("run-cancel", args=[run.pk])).status_code == 302
    assert Run.objects.get(pk=run.pk).status == "cancelled"
    assert client.post(reverse("run-delete", args=[run.pk])).status_code == 302
    assert not Run.objects.filter(pk=run.pk).exists()


def damage_reason(run: Run) -> str:
    reason = damage_of(run)
    assert reason
    return reason


def escape(text: str) -> str:
    return str(html_escape(text))


@pytest.fixture
def admin_client(make_user: Any) -> Client:
    return client_for(make_user("root", is_staff=True, is_superuser=True))


def test_admin_marks_the_run_and_cancel_and_delete_work(damaged: tuple[Run, dict[str, Any]],
                                                         admin_client: Client) -> None:
    run, _ = damaged
    reason = damage_reason(run)
    listing = admin_client.get(reverse("admin:designer_run_changelist"))
    assert listing.status_code == 200
    assert "damaged" in listing.content.decode() and escape(reason) in listing.content.decode()

    change = admin_client.get(reverse("admin:designer_run_change", args=[run.pk]))
    assert change.status_code == 409
    assert escape(reason) in change.content.decode() and "the stored value as it is" in change.content.decode()

    admin_client.post(reverse("admin:designer_run_changelist"), {"action": "cancel_runs",
                                                                 "_selected_action": [run.pk]})
    assert Run.objects.get(pk=run.pk).status == "cancelled"
    confirm = admin_client.get(reverse("admin:designer_run_delete", args=[run.pk]))
    assert confirm.status_code == 200
    assert admin_client.post(reverse("admin:designer_run_delete", args=[run.pk]), {"post": "yes"}).status_code == 302
    assert not Run.objects.filter(pk=run.pk).exists()


def test_a_worker_fails_a_damaged_run_instead_of_starting_it_over(cast: Any, greetings: Any) -> None:
    run = interrupted_run(cast, greetings)
    _garbage(run)
    Run.objects.filter(pk=run.pk).update(status="queued")  # as if recovered and queued for a worker
    assert execute(run.pk) == "failed"
    run.refresh_from_db()
    assert run.error["code"] == "runstate.corrupt"
    assert run.run_state == "garbage"  # kept as it was, for whoever investigates
    assert not run.events.filter(kind="run_started", seq__gt=0).exists()  # not run again from the start


def test_an_intact_run_is_not_damaged(cast: Any, greetings: Any, api: Any) -> None:
    run = interrupted_run(cast, greetings)
    detail = api(cast.editor).get(reverse("api:run-detail", args=[run.pk]))
    assert detail.status_code == 200 and detail.json()["damage"] is None
    page = client_for(cast.editor).get(reverse("run-detail", args=[run.pk]))
    assert page.status_code == 200 and 'id="run-damage"' not in page.content.decode()
    assert 'name="interrupt_id"' in page.content.decode()


@pytest.mark.parametrize("data", [[1, "two"], "just text", None, 42, 1.5, True])
def test_event_data_that_is_not_an_object_breaks_nothing(data: Any, cast: Any, greetings: Any, api: Any,
                                                         admin_client: Client) -> None:
    run = interrupted_run(cast, greetings)
    RunEvent.objects.filter(run=run).update(data=Value(data, output_field=JSONModelField()))
    assert all(event.data == data for event in RunEvent.objects.filter(run=run))
    frame_id = run.interrupts[0]["frame_id"]
    client = client_for(cast.editor)
    for url, headers in ((reverse("run-detail", args=[run.pk]), {}),
                         (reverse("run-detail", args=[run.pk]), htmx("run-live")),
                         (reverse("run-events", args=[run.pk]), htmx("run-events")),
                         (reverse("run-frame", args=[run.pk, frame_id]), {}),
                         (reverse("run-frame", args=[run.pk, frame_id]), htmx("frame-panel"))):
        response = client.get(url, **headers)
        assert response.status_code == 200, (url, headers)
    assert 'name="interrupt_id"' in client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert client.get(reverse("editor-run-overlay", args=[run.workflow_id]), {"run": run.pk}).status_code == 200
    assert client.get(reverse("editor-runs", args=[run.workflow_id])).json()["runs"][0]["damage"] is None
    assert client.get(reverse("editor-run-node", args=[run.workflow_id]), {"run": run.pk, "node": "ask"},
                      **htmx("run-node")).status_code == 200
    events = api(cast.viewer).get(reverse("api:run-events", args=[run.pk]))
    assert events.status_code == 200 and [e["data"] for e in events.json()["events"]][0] == data
    assert api(cast.viewer).get(reverse("api:run-detail", args=[run.pk])).status_code == 200
    assert admin_client.get(reverse("admin:designer_run_change", args=[run.pk])).status_code == 200


@pytest.mark.parametrize("data", [["a"], "text", None, 7])
def test_event_data_that_is_not_an_object_breaks_no_view_of_a_finished_run(data: Any, cast: Any) -> None:
    workflow = workflow_services.create_workflow(actor=cast.owner, team=cast.team, name="Counting",
                                                 document=counting_document(pause=False))
    run = run_services.start_run(actor=cast.editor, workflow=workflow, input={"x": 1})
    assert execute(run.pk) == "completed"
    RunEvent.objects.filter(run=run).update(data=Value(data, output_field=JSONModelField()))
    client = client_for(cast.viewer)
    assert client.get(reverse("run-detail", args=[run.pk])).status_code == 200
    assert client.get(reverse("editor-run-overlay", args=[workflow.pk]), {"run": run.pk}).status_code == 200
    drawer = client.get(reverse("editor-run-node", args=[workflow.pk]), {"run": run.pk, "node": "first"},
                        **htmx("run-node"))
    assert drawer.status_code == 200 and 'data-run-node="first"' in drawer.content.decode()
