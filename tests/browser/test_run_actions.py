"""The run page's actions in headless Chromium, runs executed by a real worker process (``run_worker``):
a refused interrupt answer shows its errors in place (a 400 that htmx swaps, see base.html's htmx config), the
redrive button runs only the failed items again, and the re-run form starts a new run (a bad input is refused in
place, nothing started)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from designer.access import teams as team_services
from designer.models import Run
from designer.runs import services as run_services
from designer.workflows import services as workflow_services
from runtime import WorkflowBuilder
from tests.browser.run_page import show_the_settled_run
from tests.designer.runs_support import STEP_TASKS, flaky_calls, flaky_document

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def step_tasks(settings: Any, worker_env: dict[str, str]) -> None:
    settings.TRELLIS_TASK_MODULES = [STEP_TASKS]
    worker_env["TRELLIS_TASK_MODULES"] = STEP_TASKS


def asking_document() -> dict[str, Any]:
    """One question: how many (an integer of at least 1); the answer is the output."""
    g = WorkflowBuilder("asking", "Asking", input_schema={"type": "object"},
                        state_schema={"type": "object", "properties": {"answer": {"type": "object"}}})
    g.interrupt("ask", prompt="How many?", resume_schema={
        "type": "object", "properties": {"count": {"type": "integer", "minimum": 1}}, "required": ["count"]},
        output=[{"source": ".", "target": "answer"}])
    g.output("answer", "state.answer")
    return g.build().model_dump(mode="json")


def ran(make_user: Any, run_worker: Any, username: str, team_name: str, workflow_name: str,
        document: dict[str, Any], run_input: dict[str, Any]) -> tuple[Any, Run]:
    """A run of ``document`` that a new user ``username`` started in a new team, after a real worker ran it."""
    owner = make_user(username)
    team = team_services.create_team(actor=owner, name=team_name)
    workflow = workflow_services.create_workflow(actor=owner, team=team, name=workflow_name, document=document)
    run = run_services.start_run(actor=owner, workflow=workflow, input=run_input)
    run_worker()
    return owner, Run.objects.get(pk=run.pk)


def test_a_refused_interrupt_answer_shows_its_error_in_place(page: Page, live_server: Any, make_user: Any,
                                                             login: Any, run_worker: Any) -> None:
    owner, run = ran(make_user, run_worker, "ines", "Questions", "Asking", asking_document(), {})
    assert run.status == "interrupted"

    login(page, owner)
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    question = page.locator("form.interrupt")
    question.get_by_label("count").fill("0")
    with page.expect_response(lambda r: r.url.endswith("/resume/")) as answered:
        question.get_by_role("button", name="Answer").click()
    assert answered.value.status == 400
    # The form came back with the schema's complaint next to the field, and what was typed is kept.
    refused = page.locator("form.interrupt")
    expect(refused.locator(".sf-field.has-error .error")).to_contain_text("1")
    expect(refused.get_by_label("count")).to_have_value("0")
    assert Run.objects.get(pk=run.pk).status == "interrupted"

    refused.get_by_label("count").fill("3")
    refused.get_by_role("button", name="Answer").click()
    expect(page.locator("form.interrupt")).to_have_count(0)
    run_worker()
    show_the_settled_run(page)
    expect(page.locator("#run-status")).to_have_text("completed")
    assert json.loads(page.locator("#run-output").inner_text()) == {"answer": {"count": 3}}


def test_the_redrive_button_runs_only_the_failed_item_again(page: Page, live_server: Any, make_user: Any,
                                                             login: Any, run_worker: Any, step_tasks: None,
                                                             tmp_path: Path, artifacts_dir: Path) -> None:
    owner, run = ran(make_user, run_worker, "rhea", "Redrives", "Flaky", flaky_document(),
                     {"keys": ["a", "bad1", "b"], "folder": str(tmp_path)})
    assert run.status == "failed"

    login(page, owner)
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    page.on("dialog", lambda dialog: dialog.accept())
    page.locator("#redrive-form button").click()
    # Queued again with the redrive pending: the button is gone until the attempt has run.
    expect(page.locator("#run-status")).to_have_text("queued")
    expect(page.locator("#redrive-form")).to_have_count(0)
    run_worker()
    show_the_settled_run(page)
    expect(page.locator("#run-status")).to_have_text("completed")
    expect(page.locator("#run-attempt")).to_have_text("2")
    expect(page.locator("tr.attempt-head")).to_contain_text("Attempt 2")
    assert json.loads(page.locator("#run-output").inner_text()) == {"done": ["A", "BAD1", "B"]}
    assert flaky_calls(tmp_path) == {"a": 1, "bad1": 2, "b": 1}
    expect(page.locator("#redrive-form")).to_have_count(0)

    # The time between the failure and the redrive is a gap on the timeline, not axis: the page shows the active
    # time beside the wall time, and the gap's mark says what it waited for.
    expect(page.locator('[data-testid="timeline-gap"]')).to_have_count(1)
    expect(page.locator('[data-testid="timeline-gap"]')).to_contain_text("for a redrive")
    expect(page.locator("#run-active")).to_be_visible()
    expect(page.locator('[data-testid="timeline-wall"]')).to_be_visible()
    track = page.locator(".timeline .tl-row").nth(1).locator(".tl-track").bounding_box()
    bars = page.locator(".timeline a.tl-bar")
    assert track and bars.count() >= 4
    # Every bar keeps a readable width: the wait no longer squeezes the real work into a sliver.
    widths = [box["width"] for box in (bars.nth(i).bounding_box() for i in range(bars.count())) if box]
    assert max(widths) > track["width"] * 0.05
    # The axis's last tick ends inside the track, the gap's mark after it in the page notwithstanding.
    last_tick = page.locator(".timeline .tl-axis .tick").last.bounding_box()
    assert last_tick and last_tick["x"] + last_tick["width"] <= track["x"] + track["width"] + 0.5
    # The graph agrees with the run: the step the redrive ran again to completion is completed, not failed.
    call = page.locator('[data-testid="run-node"][data-node="call"]')
    expect(call).to_have_attribute("data-state", "completed")
    expect(call.get_by_test_id("run-counts")).to_have_text("3 done")
    for width, height in ((1440, 900), (1024, 768)):
        page.set_viewport_size({"width": width, "height": height})
        page.locator("section.trace").screenshot(path=artifacts_dir / f"run-redriven-timeline-{width}x{height}.png")

    # One attempt count everywhere: the admin's change page says what the run page says.
    type(owner).objects.filter(pk=owner.pk).update(is_staff=True, is_superuser=True)
    page.goto(f"{live_server.url}/admin/designer/run/{run.pk}/change/")
    expect(page.locator(".field-attempt .readonly")).to_have_text("2")
    page.locator(".field-attempt").scroll_into_view_if_needed()
    page.screenshot(path=artifacts_dir / "run-redriven-admin.png")


def test_the_rerun_form_refuses_bad_input_in_place_then_starts_a_new_run(
        page: Page, live_server: Any, make_user: Any, login: Any, run_worker: Any, step_tasks: None,
        tmp_path: Path) -> None:
    owner, run = ran(make_user, run_worker, "remy", "Reruns", "Keys", flaky_document(),
                     {"keys": ["a"], "folder": str(tmp_path)})
    assert run.output == {"done": ["A"]}

    login(page, owner)
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    page.locator("details.rerun summary").click()
    form = page.locator("#rerun-form")
    expect(form.locator("#rerun-input")).to_be_visible()
    assert json.loads(form.locator("#rerun-input").input_value()) == {"keys": ["a"], "folder": str(tmp_path)}

    form.locator("#rerun-input").fill('{"keys": "z"')
    form.get_by_role("button", name="Start the new run").click()
    expect(page.locator("#rerun-error")).to_contain_text("not valid JSON")
    form.locator("#rerun-input").fill(json.dumps({"keys": "z", "folder": str(tmp_path)}))
    form.get_by_role("button", name="Start the new run").click()
    expect(page.locator("#rerun-error")).to_contain_text("keys")  # the input schema's complaint
    assert Run.objects.count() == 1

    form.locator("#rerun-input").fill(json.dumps({"keys": ["z", "y"], "folder": str(tmp_path)}))
    form.get_by_role("button", name="Start the new run").click()
    page.wait_for_url(lambda url: url.rstrip("/").split("/")[-1] != str(run.pk))
    new = Run.objects.exclude(pk=run.pk).get()
    assert new.parent_id == run.pk
    expect(page.locator("#run-parent")).to_contain_text(f"#{run.pk}")
    run_worker()
    show_the_settled_run(page)
    expect(page.locator("#run-status")).to_have_text("completed")
    assert json.loads(page.locator("#run-output").inner_text()) == {"done": ["Z", "Y"]}


def test_a_completed_runs_tolerated_failed_items_are_redriven_from_the_run_page(
        page: Page, live_server: Any, make_user: Any, login: Any, run_worker: Any, settings: Any,
        worker_env: dict[str, str], tmp_path: Path) -> None:
    from tests.designer.runs.test_runs_distributed import BATCH_TASKS, flaky_then_summary

    settings.TRELLIS_TASK_MODULES = [BATCH_TASKS]
    worker_env.update({"TRELLIS_TASK_MODULES": BATCH_TASKS, "TRELLIS_FOREACH_DISTRIBUTE_ABOVE": "0",
                       "TRELLIS_BATCH_COMMIT_SECONDS": "0", "TRELLIS_TEST_TALLY": str(tmp_path / "tally.txt")})
    owner, run = ran(make_user, run_worker, "tess", "Tolerant", "Flaky spread", flaky_then_summary(),
                     {"xs": [1, -2, 3, -4, 5]})
    assert run.output == {"doubled": [2, None, 6, None, 10],
                                                 "summary": {"sum": 18, "missing": 2}}

    login(page, owner)
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    expect(page.locator("#run-status")).to_have_text("completed")
    button = page.locator("#redrive-form button")
    expect(button).to_have_text("Redrive 2 failed items")
    page.on("dialog", lambda dialog: dialog.accept())
    button.click()
    expect(page.locator("#run-status")).to_have_text("queued")
    run_worker()
    show_the_settled_run(page)
    expect(page.locator("#run-status")).to_have_text("completed")
    expect(page.locator("#run-attempt")).to_have_text("2")
    expect(page.locator("tr.attempt-head")).to_contain_text("2 failed items of foreach each run again")
    assert json.loads(page.locator("#run-output").inner_text()) == {"doubled": [2, 4, 6, 8, 10],
                                                                    "summary": {"sum": 30, "missing": 0}}
    expect(page.locator("#redrive-form")).to_have_count(0)  # nothing failed any more


def test_a_fork_answers_the_open_question_with_its_schema_form_errors_in_place(
        page: Page, live_server: Any, make_user: Any, login: Any, run_worker: Any) -> None:
    owner, run = ran(make_user, run_worker, "fern", "Fork answers", "Asking", asking_document(), {})
    assert run.status == "interrupted"

    login(page, owner)
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    page.locator(".events-table a.step-pick").last.click()  # the checkpoint with the question open
    panel = page.locator("#frame-panel.checkpoint-panel")
    answer = panel.locator(".fork-answer")
    expect(answer).to_have_count(1)
    # The question's own form, typed by its resume schema: an integer field, not a JSON box.
    expect(answer.get_by_label("count")).to_have_attribute("type", "number")
    answer.get_by_label("Answer ask").check()
    answer.get_by_label("count").fill("0")
    with page.expect_response(lambda r: "/fork/" in r.url) as forked:
        panel.locator("#fork-submit").click()
    assert forked.value.status == 400
    refused = page.locator("#frame-panel .fork-answer")
    expect(refused.locator(".sf-field.has-error .error")).to_contain_text("1")  # the schema's minimum
    expect(refused.get_by_label("count")).to_have_value("0")
    expect(refused.get_by_label("Answer ask")).to_be_checked()
    assert Run.objects.count() == 1

    refused.get_by_label("count").fill("4")
    page.locator("#fork-submit").click()
    page.wait_for_url(lambda url: url.rstrip("/").split("/")[-1] != str(run.pk))
    fork = Run.objects.exclude(pk=run.pk).get()
    assert fork.parent_id == run.pk and fork.fork_request["answer"]["value"] == {"count": 4}
    run_worker()
    show_the_settled_run(page)
    expect(page.locator("#run-status")).to_have_text("completed")
    assert json.loads(page.locator("#run-output").inner_text()) == {"answer": {"count": 4}}
