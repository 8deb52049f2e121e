"""Run pages: the editor's run panel, history with filters and paging, the detail page and its partials.

Runs that must have executed are executed by the real executor in-process (``execute``), the same code the
worker runs; starting, roles and history need no execution at all.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from designer.models import Run
from designer.runs import services as run_services
from designer.workflows import services as workflow_services
from tests.designer.clients import client_for, htmx

pytestmark = pytest.mark.django_db


def start(cast: Any, workflow: Any, amount: float = 5, **fields: Any) -> Run:
    return run_services.start_run(actor=cast.editor, workflow=workflow, input={"amount": amount}, **fields)


# --- run panel ------------------------------------------------------------------------------------------------


def test_panel_builds_the_input_form_from_the_input_schema(cast: Any, workflow: Any) -> None:
    body = client_for(cast.editor).get(reverse("run-panel", args=[workflow.pk]), **htmx("")).content.decode()
    assert 'id="run-panel"' in body and "Start run" in body
    assert 'type="number" step="any" name="field.amount"' in body
    assert 'name="_json"' in body  # the expert JSON editor is always there
    # the draft is asked for by name, as the API wants it (a run that names no version runs the latest published)
    assert '<option value="draft">Current draft</option>' in body


def test_panel_prefills_the_documents_sample_input(cast: Any, workflow: Any) -> None:
    document = {**workflow.document, "metadata": {"sample_input": {"amount": 1234.5}}}
    workflow_services.save_document(actor=cast.owner, workflow=workflow, revision=workflow.revision,
                                    document=document)
    body = client_for(cast.editor).get(reverse("run-panel", args=[workflow.pk]), **htmx("")).content.decode()
    assert 'name="field.amount" id="run-input-f-amount" value="1234.5"' in body


def test_a_panel_refresh_keeps_what_was_typed(cast: Any, workflow: Any) -> None:
    body = client_for(cast.editor).get(reverse("run-panel", args=[workflow.pk]),
                                       {"_mode": "fields", "field.amount": "42"}, **htmx("")).content.decode()
    assert 'name="field.amount" id="run-input-f-amount" value="42"' in body
    assert "error" not in body.split('id="run-inputs"', 1)[1].split("</div>", 1)[0]


def test_viewer_sees_runs_but_no_start_form(cast: Any, workflow: Any) -> None:
    start(cast, workflow)
    body = client_for(cast.viewer).get(reverse("run-panel", args=[workflow.pk]), **htmx("")).content.decode()
    assert "Start run" not in body and "needs the editor role" in body
    assert 'class="run-link"' in body


def test_starting_from_the_panel_queues_a_run_and_polls_its_status(cast: Any, workflow: Any) -> None:
    response = client_for(cast.editor).post(
        reverse("run-start", args=[workflow.pk]), {"version": "draft", "_mode": "fields", "field.amount": "250"},
        **htmx("run-panel"),
    )
    run = Run.objects.get()
    body = response.content.decode()
    assert run.input == {"amount": 250} and run.status == "queued" and run.workflow_version is None
    assert f'Run <a href="{reverse("run-detail", args=[run.pk])}">#{run.pk}</a> started' in body
    recent = re.search(r'<div id="run-recent"[^>]*>', body)
    assert recent and 'hx-trigger="every 1s"' in recent.group(0)


def test_starting_without_htmx_redirects_to_the_run(cast: Any, workflow: Any) -> None:
    response = client_for(cast.editor).post(reverse("run-start", args=[workflow.pk]),
                                            {"_mode": "json", "_json": '{"amount": 7}'})
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("run-detail", args=[run.pk])
    assert run.input == {"amount": 7}


def test_a_published_version_can_be_chosen(cast: Any, workflow: Any) -> None:
    version = workflow_services.publish_workflow(actor=cast.owner, workflow=workflow)
    client = client_for(cast.editor)
    panel = client.get(reverse("run-panel", args=[workflow.pk]), **htmx("")).content.decode()
    assert f'<option value="{version.number}"' in panel
    client.post(reverse("run-start", args=[workflow.pk]),
                {"version": str(version.number), "field.amount": "1"}, **htmx("run-panel"))
    assert Run.objects.get().workflow_version == version


def test_form_errors_are_shown_and_nothing_starts(cast: Any, workflow: Any) -> None:
    response = client_for(cast.editor).post(reverse("run-start", args=[workflow.pk]),
                                            {"field.amount": "lots"}, **htmx("run-panel"))
    assert response.status_code == 400 and "Enter a number." in response.content.decode()
    assert not Run.objects.exists()


def test_a_draft_with_errors_shows_its_diagnostics(cast: Any, workflow: Any) -> None:
    broken = {**workflow.document, "routes": [*workflow.document["routes"],
                                              {"source": "assess", "label": "nope", "target": "record"}]}
    workflow_services.save_document(actor=cast.owner, workflow=workflow, revision=workflow.revision,
                                    document=broken)
    body = client_for(cast.editor).post(reverse("run-start", args=[workflow.pk]), {"field.amount": "1"},
                                        **htmx("run-panel")).content.decode()
    assert '<ul class="diagnostics">' in body and "<code>assess</code>" in body
    assert not Run.objects.exists()


def test_viewer_cannot_start_and_stranger_sees_nothing(cast: Any, workflow: Any) -> None:
    url = reverse("run-start", args=[workflow.pk])
    assert client_for(cast.viewer).post(url, {"field.amount": "1"}).status_code == 403
    # Told they cannot run, not that their (empty or bad) input is wrong: the role is checked before the form.
    for refused in ({}, {"field.amount": "not a number"}):
        answer = client_for(cast.viewer).post(url, refused, **htmx("run-panel"))
        assert answer.status_code == 403, (refused, answer.status_code)
    assert client_for(cast.stranger).post(url, {"field.amount": "1"}).status_code == 404
    assert client_for(cast.stranger).get(reverse("run-panel", args=[workflow.pk])).status_code == 404
    assert not Run.objects.exists()


# --- history ----------------------------------------------------------------------------------------------------


def run_ids(body: str) -> list[int]:
    return [int(n) for n in re.findall(r'<tr data-run="(\d+)"', body)]


def test_history_filters_by_status_version_who_and_date(cast: Any, workflow: Any) -> None:
    version = workflow_services.publish_workflow(actor=cast.owner, workflow=workflow)
    draft = start(cast, workflow)
    pinned = run_services.start_run(actor=cast.owner, workflow=workflow, input={"amount": 1},
                                    version=version.number)
    old = start(cast, workflow)
    Run.objects.filter(pk=old.pk).update(status="failed", created_at=timezone.now() - timedelta(days=10))
    client = client_for(cast.viewer)
    url = reverse("workflow-runs", args=[workflow.pk])

    assert run_ids(client.get(url).content.decode()) == [pinned.pk, draft.pk, old.pk]
    assert run_ids(client.get(url, {"status": "failed"}).content.decode()) == [old.pk]
    assert run_ids(client.get(url, {"version": "draft"}).content.decode()) == [draft.pk, old.pk]
    assert run_ids(client.get(url, {"version": str(version.number)}).content.decode()) == [pinned.pk]
    assert run_ids(client.get(url, {"created_by": str(cast.owner.pk)}).content.decode()) == [pinned.pk]
    since = (timezone.localdate() - timedelta(days=1)).isoformat()
    assert old.pk not in run_ids(client.get(url, {"since": since}).content.decode())


def started_by(body: str) -> list[tuple[str, bool]]:
    """The "Started by" select's options: (label, selected)."""
    select = body.split('<select name="created_by" id="f-who">', 1)[1].split("</select>", 1)[0]
    return [(label, bool(selected)) for selected, label in re.findall(r"<option value=\"[^\"]*\"( selected)?>([^<]*)<",
                                                                     select)]


def test_history_started_by_lists_the_teams_people_and_selects_an_id_or_a_username(cast: Any, workflow: Any,
                                                                                  make_user: Any) -> None:
    start(cast, workflow)  # the editor's run; the owner and the viewer have none
    make_user("outsider")
    client = client_for(cast.viewer)
    for url in (reverse("workflow-runs", args=[workflow.pk]), reverse("team-runs", args=[cast.team.pk]),
                reverse("run-list")):
        people = started_by(client.get(url).content.decode())
        assert people == [("Anyone", True), ("eddie", False), ("olivia", False), ("vera", False)], url
        assert ("olivia", True) in started_by(client.get(url, {"created_by": "olivia"}).content.decode())
        assert ("olivia", True) in started_by(client.get(url, {"created_by": str(cast.owner.pk)}).content.decode())
        nobody = started_by(client.get(url, {"created_by": "ghost"}).content.decode())
        assert nobody[-1] == ("ghost (no one here)", True) and ("Anyone", False) in nobody


def test_history_filter_request_from_htmx_gets_only_the_table(cast: Any, workflow: Any) -> None:
    start(cast, workflow)
    body = client_for(cast.viewer).get(reverse("workflow-runs", args=[workflow.pk]), {"status": "queued"},
                                       **htmx("run-table")).content.decode()
    assert body.lstrip().startswith('<div id="run-table"') and "<html" not in body


def test_history_refreshes_itself_only_while_a_shown_run_is_active(cast: Any, workflow: Any) -> None:
    run = start(cast, workflow)
    url = reverse("workflow-runs", args=[workflow.pk])
    table = re.search(r'<div id="run-table"[^>]*>', client_for(cast.viewer).get(url).content.decode())
    assert table and 'hx-trigger="every 2s"' in table.group(0)
    Run.objects.filter(pk=run.pk).update(status="completed")
    table = re.search(r'<div id="run-table"[^>]*>', client_for(cast.viewer).get(url).content.decode())
    assert table and "hx-trigger" not in table.group(0)


def test_history_pages(cast: Any, workflow: Any) -> None:
    for _ in range(27):
        start(cast, workflow)
    client = client_for(cast.viewer)
    first = client.get(reverse("team-runs", args=[cast.team.pk])).content.decode()
    second = client.get(reverse("team-runs", args=[cast.team.pk]), {"page": "2"}).content.decode()
    assert len(run_ids(first)) == 25 and len(run_ids(second)) == 2
    assert "page 1 of 2" in first and "Older" in first and "Newer" in second
    assert not set(run_ids(first)) & set(run_ids(second))


def test_team_and_global_history_only_show_my_teams(cast: Any, workflow: Any) -> None:
    mine = start(cast, workflow)
    other = workflow_services.create_workflow(actor=cast.stranger, team=cast.other_team, name="Theirs",
                                              document={**workflow.document, "id": "theirs"})
    theirs = run_services.start_run(actor=cast.stranger, workflow=other, input={"amount": 1})
    client = client_for(cast.viewer)
    assert run_ids(client.get(reverse("run-list")).content.decode()) == [mine.pk]
    assert client.get(reverse("team-runs", args=[cast.other_team.pk])).status_code == 404
    assert client.get(reverse("workflow-runs", args=[other.pk])).status_code == 404
    assert client.get(reverse("run-detail", args=[theirs.pk])).status_code == 404


def test_staff_get_a_link_into_the_admin_run_history(cast: Any, workflow: Any) -> None:
    url = reverse("workflow-runs", args=[workflow.pk])
    assert "Admin run history" not in client_for(cast.viewer).get(url).content.decode()
    cast.viewer.is_staff = True
    cast.viewer.save()
    body = client_for(cast.viewer).get(url).content.decode()
    assert f'{reverse("admin:designer_run_changelist")}?workflow__id__exact={workflow.pk}' in body


# --- detail -----------------------------------------------------------------------------------------------------


def live_div(body: str) -> str:
    match = re.search(r'<div id="run-live"[^>]*>', body)
    assert match, "the live region is on the page"
    return match.group(0)


def poller(body: str) -> str:
    """The element that polls a live run (``run-live``); empty when the page does not poll."""
    match = re.search(r'<div id="run-poll"[^>]*>', body)
    return match.group(0) if match else ""


def test_a_queued_run_polls_every_second(cast: Any, workflow: Any) -> None:
    run = start(cast, workflow)
    body = client_for(cast.viewer).get(reverse("run-detail", args=[run.pk])).content.decode()
    assert 'hx-trigger="every 1s"' in poller(body)
    assert f'hx-get="{reverse("run-live", args=[run.pk])}?since=0"' in poller(body)
    partial = client_for(cast.viewer).get(reverse("run-detail", args=[run.pk]), **htmx("run-live"))
    html = partial.content.decode()
    assert html.lstrip().startswith('<div id="run-live"') and "<html" not in html
    # The events table refreshes with the live region (it listens for run-progress on the body).
    assert "run-progress" in json.loads(partial["HX-Trigger"])


@pytest.mark.parametrize("status", ["completed", "failed", "cancelled", "interrupted"])
def test_polling_stops_once_the_run_waits_or_ends(cast: Any, workflow: Any, status: str) -> None:
    run = start(cast, workflow)
    Run.objects.filter(pk=run.pk).update(status=status)
    body = client_for(cast.viewer).get(reverse("run-detail", args=[run.pk])).content.decode()
    assert "hx-trigger" not in live_div(body) and poller(body) == ""


def test_viewer_has_no_cancel_button_editor_does(cast: Any, workflow: Any) -> None:
    run = start(cast, workflow)
    url = reverse("run-detail", args=[run.pk])
    assert "Cancel run" not in client_for(cast.viewer).get(url).content.decode()
    assert "Cancel run" in client_for(cast.editor).get(url).content.decode()
    assert client_for(cast.viewer).post(reverse("run-cancel", args=[run.pk])).status_code == 403


def test_cancelling_a_queued_run(cast: Any, workflow: Any) -> None:
    run = start(cast, workflow)
    body = client_for(cast.editor).post(reverse("run-cancel", args=[run.pk]), **htmx("run-live")).content.decode()
    assert Run.objects.get(pk=run.pk).status == "cancelled"
    assert 'data-status="cancelled"' in body and "Run cancelled." in body


def test_deleting_a_run_from_htmx_sends_the_browser_to_the_run_history(cast: Any, workflow: Any) -> None:
    run = start(cast, workflow)
    response = client_for(cast.editor).post(reverse("run-delete", args=[run.pk]), **htmx("run-live"))
    assert response["HX-Redirect"] == reverse("workflow-runs", args=[workflow.pk]) and "Location" not in response
    assert not Run.objects.filter(pk=run.pk).exists()


def test_stranger_gets_404_on_every_run_page(cast: Any, workflow: Any) -> None:
    run = start(cast, workflow)
    client = client_for(cast.stranger)
    for name, args in (("run-detail", [run.pk]), ("run-events", [run.pk]), ("run-frame", [run.pk, "frame_1"])):
        assert client.get(reverse(name, args=args)).status_code == 404, name
    for name in ("run-resume", "run-cancel"):
        assert client.post(reverse(name, args=[run.pk])).status_code == 404, name
    assert Run.objects.get(pk=run.pk).status == "queued"


# --- executed runs (the real executor, in-process) ----------------------------------------------------------------


@pytest.fixture
def demo(make_user: Any) -> dict[str, Any]:
    from django.contrib.auth import get_user_model

    from demo.data import load_demo
    from designer.models import Workflow

    load_demo()
    users = {name: get_user_model().objects.get(username=name) for name in ("demo", "viewer")}
    workflows = {w.slug: w for w in Workflow.objects.filter(team__slug="demo")}
    return {"users": users, "workflows": workflows, "stranger": make_user("stan")}


def run_demo(demo: dict[str, Any], slug: str) -> Run:
    from designer.runs.executor import execute

    workflow = demo["workflows"][slug]
    run = run_services.start_run(actor=demo["users"]["demo"], workflow=workflow,
                                 input=workflow.document["metadata"]["sample_input"])
    execute(run.pk)
    return Run.objects.get(pk=run.pk)


def progress_rows(body: str) -> list[tuple[str, int, int]]:
    """(node, done, total) per progress row, in page order."""
    return [(node, int(done), int(total)) for node, done, total in re.findall(
        r'class="progress-row[^"]*"[^>]*data-node="([^"]+)" data-done="(\d+)" data-total="(\d*)"', body)]


def test_a_finished_nested_run_shows_every_activation_complete(demo: dict[str, Any]) -> None:
    run = run_demo(demo, "customer-orders")
    assert run.status == "completed"
    body = client_for(demo["users"]["viewer"]).get(reverse("run-detail", args=[run.pk])).content.decode()

    rows = progress_rows(body)
    customers = len(run.input["customers"])
    assert rows[0] == ("customers", customers, customers)
    assert [node for node, _, _ in rows[1:]] == ["orders"] * customers  # one inner activation per customer
    assert all(done == total for _, done, total in rows)
    for index in range(customers):  # nested under their parent item, in item order
        assert f'<span class="muted">item [{index}] ›</span>' in body
    assert body.count('class="tl-row kind-item"') == customers + sum(total for _, _, total in rows[1:])
    assert '"totals"' in body and 'id="run-output"' in body


def test_a_finished_item_frame_shows_the_context_the_runtime_recorded(demo: dict[str, Any]) -> None:
    run = run_demo(demo, "customer-orders")
    price = run.events.filter(kind="node_started", node_id="price").order_by("seq").last()
    assert price is not None
    body = client_for(demo["users"]["viewer"]).get(
        reverse("run-frame", args=[run.pk, price.frame_id]), **htmx("frame-panel")).content.decode()

    assert body.lstrip().startswith('<aside id="frame-panel"')
    entries = re.findall(r'data-foreach="([^"]+)"', body)
    assert entries == ["customers", "orders"]  # outermost first
    last_customer = len(run.input["customers"]) - 1
    assert re.search(r'data-foreach="customers".*?<dd class="ctx-index">' + str(last_customer) + "<", body, re.S)
    assert "As recorded by the runtime" in body
    page = client_for(demo["users"]["viewer"]).get(reverse("run-frame", args=[run.pk, price.frame_id]))
    full = page.content.decode()  # without htmx: a page of its own
    assert page.status_code == 200 and "<html" in full and 'data-foreach="orders"' in full


def test_events_table_filters_by_kind_and_node(demo: dict[str, Any]) -> None:
    run = run_demo(demo, "customer-orders")
    client = client_for(demo["users"]["viewer"])
    body = client.get(reverse("run-events", args=[run.pk]), {"kind": "node_completed", "node": "price"},
                      **htmx("run-events")).content.decode()
    kinds = set(re.findall(r'data-kind="([^"]+)" data-node="([^"]*)"', body))
    expected = run.events.filter(kind="node_completed", node_id="price").count()
    assert kinds == {("node_completed", "price")}
    assert f"{expected} event" in body and "hx-trigger" not in body.split(">", 1)[0]


def test_answering_an_interrupt_in_the_page_resumes_the_run(demo: dict[str, Any]) -> None:
    from designer.runs.executor import execute

    run = run_demo(demo, "spending-approval")
    assert run.status == "interrupted"
    editor, viewer = client_for(demo["users"]["demo"]), client_for(demo["users"]["viewer"])
    url = reverse("run-detail", args=[run.pk])

    page = editor.get(url).content.decode()
    interrupt = run.interrupts[0]
    assert "Approve this spending request?" in page and f'id="interrupt-{interrupt["id"]}"' in page
    assert 'name="field.approved"' in page and 'name="field.comment"' in page
    assert 'name="field.approved"' not in viewer.get(url).content.decode()  # viewers cannot answer

    frame = editor.get(reverse("run-frame", args=[run.pk, interrupt["frame_id"]]), **htmx("frame-panel"))
    assert "Derived by the runtime from the run state" in frame.content.decode()

    response = editor.post(reverse("run-resume", args=[run.pk]),
                           {"interrupt_id": interrupt["id"], "field.approved": "on", "field.comment": "ok by me"},
                           **htmx("run-live"))
    assert 'hx-trigger="every 1s"' in poller(response.content.decode())  # queued again: polling resumes
    execute(run.pk)
    run.refresh_from_db()
    assert run.status == "completed"
    assert run.output["decision"]["approved"] is True
    finished = editor.get(url).content.decode()
    assert "Waiting for" not in finished
    # Who answered, and with what, stays on the run's page (for viewers too).
    [answer] = run.answers
    assert (answer["by"], answer["interrupt_id"], answer["value"]["comment"]) == ("demo", interrupt["id"], "ok by me")
    shown = viewer.get(url).content.decode()
    assert re.search(r'data-testid="answered-by">demo<', shown) and "Approve this spending request?" in shown


def answer_the_approval_with(demo: dict[str, Any], text: str) -> tuple[Run, dict[str, Any], Any]:
    """A demo spending-approval run waiting at its question, and the htmx answer of ``text`` as the answer's JSON."""
    run = run_demo(demo, "spending-approval")
    interrupt = run.interrupts[0]
    response = client_for(demo["users"]["demo"]).post(
        reverse("run-resume", args=[run.pk]),
        {"interrupt_id": interrupt["id"], "_mode": "json", "_json": text}, **htmx("run-live"))
    return run, interrupt, response


def test_a_resume_form_error_comes_back_to_that_form_only(demo: dict[str, Any]) -> None:
    run, interrupt, response = answer_the_approval_with(demo, "{not json")
    assert response["HX-Retarget"] == f"#interrupt-{interrupt['id']}"
    body = response.content.decode()
    assert body.lstrip().startswith(f'<form id="interrupt-{interrupt["id"]}"') and "Not valid JSON" in body
    assert "hx-preserve" not in body.split(">", 1)[0]  # the error must replace the preserved form
    assert Run.objects.get(pk=run.pk).status == "interrupted"


def test_stranger_cannot_see_a_demo_run(demo: dict[str, Any]) -> None:
    run = run_demo(demo, "spending-approval")
    assert client_for(demo["stranger"]).get(reverse("run-detail", args=[run.pk])).status_code == 404


def test_concurrent_interrupts_are_listed_and_answered_separately(cast: Any) -> None:
    from designer.runs.executor import execute
    from runtime import WorkflowBuilder

    graph = WorkflowBuilder("checks", "Checks", input_schema={
        "type": "object", "properties": {"items": {"type": "array", "items": {"type": "string"}}}})
    items = graph.foreach("items", "input.items", max_concurrency=2)
    confirm = graph.interrupt("confirm", prompt="Is this item fine?", labels=("accept", "reject"),
                              input=[{"target": "item", "path": items.item}],
                              resume_schema={"type": "object", "properties": {"note": {"type": "string"}}})
    graph.chain(items, "loop", confirm, "accept", items)
    graph.set_route(confirm, "reject", items)
    workflow = workflow_services.create_workflow(actor=cast.owner, team=cast.team, name="Checks",
                                                 document=graph.build().model_dump(mode="json"))
    run = run_services.start_run(actor=cast.editor, workflow=workflow, input={"items": ["bolt", "nut"]})
    execute(run.pk)
    run.refresh_from_db()
    assert run.status == "interrupted" and len(run.interrupts) == 2

    editor = client_for(cast.editor)
    page = editor.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert "Waiting for 2 answers" in page
    forms = re.findall(r'<form id="interrupt-([^"]+)" class="card interrupt" hx-preserve="true"', page)
    assert forms == [record["id"] for record in run.interrupts]
    assert page.count('name="label" value="accept"') == 2 and page.count('name="label" value="reject"') == 2

    first, second = run.interrupts
    response = editor.post(reverse("run-resume", args=[run.pk]),
                           {"interrupt_id": first["id"], "label": "reject", "field.note": "scratched"},
                           **htmx("run-live"))
    assert response.status_code == 200
    execute(run.pk)
    run.refresh_from_db()
    assert run.status == "interrupted" and [r["id"] for r in run.interrupts] == [second["id"]]
    page = editor.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert "Waiting for 1 answer" in page and f'id="interrupt-{first["id"]}"' not in page
    resumed = run.events.get(kind="resumed")
    assert resumed.data["label"] == "reject"

    editor.post(reverse("run-resume", args=[run.pk]), {"interrupt_id": second["id"], "label": "accept"})
    execute(run.pk)
    assert Run.objects.get(pk=run.pk).status == "completed"


def test_input_the_runtime_refuses_is_shown_at_its_field(cast: Any, workflow: Any) -> None:
    body = client_for(cast.editor).post(reverse("run-start", args=[workflow.pk]),
                                        {"_mode": "json", "_json": '{"amount": "lots"}'},
                                        **htmx("run-panel")).content.decode()
    assert not Run.objects.exists()
    field = re.search(r'<div class="sf-field kind-number has-error" data-field="amount".*?</div>', body, re.S)
    assert field and 'class="error"' in field.group(0)


def test_an_answer_the_runtime_refuses_comes_back_to_its_form(demo: dict[str, Any]) -> None:
    run, interrupt, response = answer_the_approval_with(demo, '{"approved": "yes"}')
    body = response.content.decode()
    assert response["HX-Retarget"] == f"#interrupt-{interrupt['id']}"
    assert re.search(r'data-field="approved".*?class="error"', body, re.S)
    run.refresh_from_db()
    assert run.status == "interrupted" and run.resume_request is None
